/* SPDX-License-Identifier: MIT */
/* Recorder: the -O2 no-frame-pointer ladder unwinds e->d->c->b->a->main. */
#include "rec_util.h"
#include "workload_paths.h"

static const char *const chain[] = { "wl_ladder_e", "wl_ladder_d",
				     "wl_ladder_c", "wl_ladder_b",
				     "wl_ladder_a", "main" };

int main(void)
{
	const char *const argv[] = { WL_LADDER_PATH, REC_SECONDS, NULL };
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, count, total, in_leaf = 0;
	struct rec_run run;
	struct sp_sample s;

	rec_require_perf(false);
	rec_launch(argv, 0, &run);
	total = rec_check_main(&run, run.pid, WL_LADDER_PATH, 99);
	count = sp_snapshot_sample_count(run.snap);
	for (i = 0; i < count; i++) {
		size_t n = rec_stack(&run, i, &s, frames);
		int e = rec_find(frames, n, "wl_ladder_e");

		CHECK_EQ_INT(s.pid, run.pid);
		CHECK_EQ_INT(s.tid, run.pid); /* single-threaded */
		if (e < 0)
			continue;
		in_leaf += e == 0;
		if (!rec_has_run(frames, n, (size_t)e, chain, 6)) {
			rec_print_stack("broken ladder", &s, frames, n);
			CHECK(!"e->d->c->b->a->main in order");
		}
	}
	/* The leaf spins: most samples have wl_ladder_e as their leaf. */
	fprintf(stderr, "%zu of %zu samples in wl_ladder_e\n", in_leaf, total);
	CHECK(in_leaf * 2 > total);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
