/* SPDX-License-Identifier: MIT */
/* System-wide recording finds running and newly started workloads. */

/*
 * Two workloads run before the recorder opens (their state comes from the
 * /proc scan, without stopping them); a third is forked while recording
 * (its state comes from the fork, exec and mmap records of the per-CPU
 * events). Every one of them must have samples whose stacks reach its own
 * main, the ladder must unwind in order, and the spool must also hold
 * processes other than the workloads (it is system-wide). A second
 * recorder checks the API contract: attach is refused, bad options fail
 * before anything is created, and without kernel capture the scan does
 * not track kernel threads (kthreadd, pid 2, stands for them).
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "recorder_internal.h"
#include "sys_util.h"
#include "workload_paths.h"

static const char *const ladder[] = { "wl_ladder_e", "wl_ladder_d",
				      "wl_ladder_c", "wl_ladder_b",
				      "wl_ladder_a", "main" };

static void check_ladder(struct rec_run *run, int32_t pid)
{
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, n, count = sp_snapshot_sample_count(run->snap);
	struct sp_sample s;
	int e;

	for (i = 0; i < count; i++) {
		n = rec_stack(run, i, &s, frames);
		if (s.pid != pid ||
		    (e = rec_find(frames, n, "wl_ladder_e")) < 0)
			continue;
		if (!rec_has_run(frames, n, (size_t)e, ladder, 6)) {
			rec_print_stack("broken ladder", &s, frames, n);
			CHECK(!"e->d->c->b->a->main in order");
		}
	}
}

static void check_others(const struct rec_run *run, const int32_t *pids)
{
	size_t i, count = sp_snapshot_sample_count(run->snap), other = 0;
	struct sp_sample s;

	for (i = 0; i < count; i++) {
		CHECK_OK(sp_snapshot_sample(run->snap, i, &s));
		CHECK(s.pid > 0);
		other += s.pid != pids[0] && s.pid != pids[1] &&
			 s.pid != pids[2];
	}
	/* This test process itself polls and unwinds: it is sampled too. */
	fprintf(stderr, "%zu samples of other processes\n", other);
	CHECK(sys_count(run, (int32_t)getpid()) > 0);
}

/* A system-mode open with default recorder options. */
static int open_system(const char *path, const struct sp_system_opts *so,
		       struct sp_recorder **out)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };

	o.system = so;
	return sp_recorder_open(path, &o, out);
}

static void check_contract(void)
{
	struct sp_system_opts bad = { .size = sizeof(bad) };
	const int32_t zero = 0;
	const char *empty = "";
	struct sp_recorder *rec = NULL;
	struct rec_run run;

	bad.npids = 1;
	CHECK_EQ_INT(open_system("/nonexistent/x", &bad, &rec), -EINVAL);
	bad.pids = &zero;
	CHECK_EQ_INT(open_system("/nonexistent/x", &bad, &rec), -EINVAL);
	bad.npids = 0;
	bad.comms = &empty;
	bad.ncomms = 1;
	CHECK_EQ_INT(open_system("/nonexistent/x", &bad, &rec), -EINVAL);
	bad.ncomms = 0;
	bad.flags = 0x80;
	CHECK_EQ_INT(open_system("/nonexistent/x", &bad, &rec), -EINVAL);
	/* Not a cgroup: fails before the spool file is created. */
	bad.flags = 0;
	bad.cgroup_path = "/tmp";
	CHECK_EQ_INT(open_system("/nonexistent/x", &bad, &rec), -EINVAL);
	CHECK(rec == NULL);
	rec = sys_open(&run, NULL);
	CHECK(sp__procs_find(&rec->procs, 2) == NULL);
	CHECK(sp__procs_find(&rec->procs, (int32_t)getpid()) != NULL);
	CHECK_EQ_INT(sp_recorder_attach(rec, (int32_t)getpid(),
					SP_ATTACH_RUNNING),
		     -EINVAL);
	CHECK_OK(sp_recorder_disable(rec));
	CHECK_OK(sp_recorder_enable(rec)); /* re-enable rescans /proc */
	CHECK(sp__procs_find(&rec->procs, 2) == NULL);
	sys_finish(rec, &run);
	rec_run_close(&run);
}

int main(void)
{
	int32_t pids[3];
	struct sp_recorder *rec;
	struct rec_run run;

	rec_require_perf(false);
	check_contract();
	pids[0] = sys_spawn(WL_LADDER_PATH, "5");
	pids[1] = sys_spawn(WL_RECURSION_PATH, "5");
	sys_sleep_ms(200); /* let ld.so finish: the scan reads final maps */
	rec = sys_open(&run, NULL);
	sys_poll_for(rec, 500);
	pids[2] = sys_spawn(WL_SHAREDLIB_PATH, "3");
	sys_poll_until_exit(rec, pids, 3);
	sys_finish(rec, &run);
	sys_check_main(&run, pids[0], WL_LADDER_PATH, 95);
	sys_check_main(&run, pids[1], WL_RECURSION_PATH, 95);
	sys_check_main(&run, pids[2], WL_SHAREDLIB_PATH, 95);
	check_ladder(&run, pids[0]);
	check_others(&run, pids);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
