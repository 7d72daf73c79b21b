/* SPDX-License-Identifier: MIT */
/* Recorder with SP_RECORDER_INHERIT_CHILDREN: samples of an exec'd child. */

/*
 * wl_forkexec forks and its child execs wl_ladder while the parent waits.
 * Following children, the recorder must attribute samples to the child
 * pid and, after the exec, name them with the ladder's own image.
 */
#include "rec_util.h"
#include "workload_paths.h"

static const char *const chain[] = { "wl_ladder_e", "wl_ladder_d",
				     "wl_ladder_c", "wl_ladder_b",
				     "wl_ladder_a", "main" };

int main(void)
{
	const char *const argv[] = { WL_FORKEXEC_PATH, REC_SECONDS, NULL };
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, count, child = 0, ladder = 0;
	int32_t child_pid = 0;
	struct rec_run run;
	struct sp_sample s;

	rec_require_perf(false);
	rec_launch(argv, SP_RECORDER_INHERIT_CHILDREN, &run);
	count = sp_snapshot_sample_count(run.snap);
	for (i = 0; i < count; i++) {
		size_t n = rec_stack(&run, i, &s, frames);
		int e;

		if (s.pid == run.pid)
			continue;
		CHECK(child_pid == 0 || s.pid == child_pid); /* one child */
		child_pid = s.pid;
		child++;
		e = rec_find(frames, n, "wl_ladder_e");
		if (e < 0)
			continue;
		ladder++;
		if (!rec_has_run(frames, n, (size_t)e, chain, 6)) {
			rec_print_stack("broken ladder in the child", &s,
					frames, n);
			CHECK(!"e->d->c->b->a->main in the child");
		}
	}
	fprintf(stderr, "%zu child samples (pid %d), %zu in the ladder\n",
		child, (int)child_pid, ladder);
	CHECK(child >= REC_MIN_SAMPLES);
	CHECK(ladder * 2 > child);
	rec_check_main(&run, child_pid, WL_LADDER_PATH, 95);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
