/* SPDX-License-Identifier: MIT */
/* Recorder: 40 recursive -O2 frames without frame pointers, stopped attach. */

/*
 * The workload is spawned and attached with SP_ATTACH_STOP_WHILE_ATTACHING
 * while it runs; afterwards it must have been resumed (it exits on its
 * own), and every leaf sample shows all 40 wl_recurse frames then main.
 */
#include "rec_util.h"
#include "workload_paths.h"

#define DEPTH 40

int main(void)
{
	const char *const argv[] = { WL_RECURSION_PATH, REC_SECONDS, NULL };
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, count, total, leaves = 0;
	struct rec_run run;
	struct sp_sample s;

	rec_require_perf(false);
	rec_spawned(argv, SP_ATTACH_STOP_WHILE_ATTACHING, 0, &run);
	total = rec_check_main(&run, run.pid, WL_RECURSION_PATH, 99);
	count = sp_snapshot_sample_count(run.snap);
	for (i = 0; i < count; i++) {
		size_t j, n = rec_stack(&run, i, &s, frames);

		CHECK_EQ_INT(s.pid, run.pid);
		if (n == 0 || !rec_is(&frames[0], "wl_recursion_leaf"))
			continue;
		leaves++;
		for (j = 1; j <= DEPTH && j < n; j++)
			if (!rec_is(&frames[j], "wl_recurse"))
				break;
		if (j != DEPTH + 1 || j >= n || !rec_is(&frames[j], "main")) {
			rec_print_stack("leaf without 40 x wl_recurse + main",
					&s, frames, n);
			CHECK(!"40 recursive frames then main");
		}
	}
	fprintf(stderr, "%zu of %zu samples in wl_recursion_leaf\n", leaves,
		total);
	CHECK(leaves * 2 > total);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
