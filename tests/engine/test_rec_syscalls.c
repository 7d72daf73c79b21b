/* SPDX-License-Identifier: MIT */
/* Recorder with kernel callchains: kernel frames at the leaf end. */

/*
 * wl_syscalls spends most of its time in read(/dev/zero) and getpid, so
 * with SP_RECORDER_KERNEL many samples start with kernel frames (kernel
 * addresses, mode KERNEL) followed by the user stack captured at syscall
 * entry, which still reaches wl_syscall_loop and main. A kernel frame
 * never follows a user frame.
 */
#include "rec_util.h"
#include "workload_paths.h"

/* Kernel text is in the upper half of the address space on x86-64. */
#define KERNEL_HALF 0xffff800000000000ull

static bool kernel_then_user(const struct rec_frame *frames, size_t n)
{
	size_t i = 0;

	while (i < n && frames[i].mode == SP_FRAME_KERNEL) {
		if (frames[i].abs_ip < KERNEL_HALF)
			return false;
		i++;
	}
	for (; i < n; i++)
		if (frames[i].mode == SP_FRAME_KERNEL)
			return false;
	return true;
}

int main(void)
{
	const char *const argv[] = { WL_SYSCALLS_PATH, REC_SECONDS, NULL };
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, count, total, kernel_leaf = 0, full = 0;
	struct rec_run run;
	struct sp_sample s;

	rec_require_perf(true);
	rec_launch(argv, SP_RECORDER_KERNEL, &run);
	CHECK_EQ(run.summary.kernel_enabled, 1);
	/* Samples taken in the kernel carry the user stack of the syscall. */
	total = rec_check_main(&run, run.pid, WL_SYSCALLS_PATH, 90);
	count = sp_snapshot_sample_count(run.snap);
	for (i = 0; i < count; i++) {
		size_t n = rec_stack(&run, i, &s, frames);

		CHECK_EQ_INT(s.pid, run.pid);
		if (!kernel_then_user(frames, n)) {
			rec_print_stack("kernel frames out of place", &s,
					frames, n);
			CHECK(!"kernel frames first, at kernel addresses");
		}
		if (n == 0 || frames[0].mode != SP_FRAME_KERNEL)
			continue;
		kernel_leaf++;
		if (rec_find(frames, n, "wl_syscall_loop") >= 0 &&
		    rec_reaches_main(frames, n, WL_SYSCALLS_PATH))
			full++;
	}
	fprintf(stderr,
		"%zu of %zu samples with a kernel leaf, %zu of them reach "
		"wl_syscall_loop and main\n",
		kernel_leaf, total, full);
	CHECK(kernel_leaf * 4 > total);
	CHECK(full * 10 >= kernel_leaf * 9);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
