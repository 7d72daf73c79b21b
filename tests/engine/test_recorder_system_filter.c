/* SPDX-License-Identifier: MIT */
/* System-wide recording with pid and comm filters keeps only those. */

/*
 * Two workloads run; the first recording keeps one of them by pid, the
 * second the other by command name. The pid-filtered spool must contain
 * samples and modules of the kept process only (a rejected process is
 * neither sampled nor tracked); the comm-filtered one only samples of
 * that program (tests running in parallel may start one of the same
 * name). Kept stacks reach main. A third recording only leaves out the
 * recording process itself (SP_SYSTEM_EXCLUDE_SELF).
 */
#include "sys_util.h"
#include "workload_paths.h"

/*
 * Every sample reaches main of @exe: with a comm filter, other tests'
 * workloads of the same name may be kept too, but nothing else may.
 */
static void check_all_in(struct rec_run *run, const char *exe)
{
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, n, count = sp_snapshot_sample_count(run->snap), bad = 0;
	struct sp_sample s;

	for (i = 0; i < count; i++) {
		n = rec_stack(run, i, &s, frames);
		if (rec_reaches_main(frames, n, exe))
			continue;
		if (bad++ < 3)
			rec_print_stack("not the kept program", &s, frames, n);
	}
	CHECK(bad * 20 <= count);
}

static void record_filtered(const struct sp_system_opts *so, int32_t keep,
			    const char *exe, int32_t other)
{
	struct sp_recorder *rec;
	struct rec_run run;

	rec = sys_open(&run, so);
	sys_poll_for(rec, 2000);
	sys_finish(rec, &run);
	sys_check_main(&run, keep, exe, 95);
	CHECK_EQ(sys_count(&run, other), 0);
	CHECK_EQ(sys_count(&run, (int32_t)getpid()), 0);
	if (so->npids)
		CHECK(sys_only(&run, &keep, 1));
	else
		check_all_in(&run, exe);
	rec_run_close(&run);
}

/* SP_SYSTEM_EXCLUDE_SELF drops the recording process, nothing else. */
static void record_not_self(int32_t busy)
{
	struct sp_system_opts so = { .size = sizeof(so) };
	struct sp_recorder *rec;
	struct rec_run run;

	so.flags = SP_SYSTEM_EXCLUDE_SELF;
	rec = sys_open(&run, &so);
	sys_poll_for(rec, 1000);
	sys_finish(rec, &run);
	CHECK_EQ(sys_count(&run, (int32_t)getpid()), 0);
	CHECK(sys_count(&run, busy) > 0);
	rec_run_close(&run);
}

int main(void)
{
	struct sp_system_opts so = { .size = sizeof(so) };
	const char *comm = "wl_recursion";
	int32_t pids[2];

	rec_require_perf(false);
	pids[0] = sys_spawn(WL_LADDER_PATH, "30");
	pids[1] = sys_spawn(WL_RECURSION_PATH, "30");
	sys_sleep_ms(200);
	so.pids = &pids[0];
	so.npids = 1;
	record_filtered(&so, pids[0], WL_LADDER_PATH, pids[1]);
	memset(&so, 0, sizeof(so));
	so.size = sizeof(so);
	so.comms = &comm;
	so.ncomms = 1;
	record_filtered(&so, pids[1], WL_RECURSION_PATH, pids[0]);
	record_not_self(pids[0]);
	kill(pids[0], SIGKILL);
	kill(pids[1], SIGKILL);
	waitpid(pids[0], NULL, 0);
	waitpid(pids[1], NULL, 0);
	return T_EXIT_PASS;
}
