/* SPDX-License-Identifier: MIT */
/* Recorder: frames inside libwlshared.so unwind through to main. */
#include "rec_util.h"
#include "workload_paths.h"

static const char *const chain[] = { "wl_shared_leaf", "wl_shared_middle",
				     "wl_shared_entry", "wl_sharedlib_call",
				     "main" };

/* Every frame named wl_shared_* must belong to libwlshared.so. */
static void check_modules(const struct sp_sample *s,
			  const struct rec_frame *frames, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct rec_frame *f = &frames[i];

		if (!f->name || strncmp(f->name, "wl_shared_", 10) != 0)
			continue;
		if (!f->base || strcmp(f->base, "libwlshared.so") != 0) {
			rec_print_stack("library frame outside the library", s,
					frames, n);
			CHECK(!"wl_shared_* frames are in libwlshared.so");
		}
	}
}

int main(void)
{
	const char *const argv[] = { WL_SHAREDLIB_PATH, REC_SECONDS, NULL };
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, count, total, in_lib = 0;
	struct rec_run run;
	struct sp_sample s;

	rec_require_perf(false);
	rec_launch(argv, 0, &run);
	total = rec_check_main(&run, run.pid, WL_SHAREDLIB_PATH, 99);
	count = sp_snapshot_sample_count(run.snap);
	for (i = 0; i < count; i++) {
		size_t n = rec_stack(&run, i, &s, frames);
		int leaf = rec_find(frames, n, "wl_shared_leaf");

		CHECK_EQ_INT(s.pid, run.pid);
		check_modules(&s, frames, n);
		if (leaf < 0)
			continue;
		in_lib += leaf == 0;
		if (!rec_has_run(frames, n, (size_t)leaf, chain, 5)) {
			rec_print_stack("broken library chain", &s, frames, n);
			CHECK(!"leaf->middle->entry->call->main in order");
		}
	}
	fprintf(stderr, "%zu of %zu samples with the leaf in the library\n",
		in_lib, total);
	CHECK(in_lib * 2 > total);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
