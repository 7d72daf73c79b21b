/* SPDX-License-Identifier: MIT */
/* Children mode: a child keeps being sampled after its parent exits. */

/*
 * sh forks wl_ladder into the background and exits at once. The child's
 * events are inherited from sh's, and releasing a parent event tears its
 * inherited events down, so a recorder that closes the events of an
 * exited process stops sampling the child right after its fork. The
 * child must instead be sampled over its whole life: at least half of
 * what 999 Hz over its CPU time (its own getrusage, WL_RUSAGE_FILE)
 * gives, with samples in the last third of its life. Once both are
 * gone, the events kept open for the child must be closed: the recorder
 * holds no fd beyond one per ring.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse/launch.h>
#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "recorder_internal.h"
#include "threads_env.h"
#include "workload_paths.h"

struct orphan_run {
	char spool[256];
	char rusage[256];
	int32_t sh_pid;
	uint64_t t_start; /* CLOCK_MONOTONIC ns, the clock of samples */
	uint64_t t_end;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The child's CPU seconds once it wrote them at exit, else -1. */
static double child_cpu(const struct orphan_run *run)
{
	double u, s;
	FILE *f = fopen(run->rusage, "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%lf %lf", &u, &s);
	fclose(f);
	return n == 2 ? u + s : -1;
}

/* Records until sh is reaped and the orphan has exited (60 s at most). */
static double record(struct sp_recorder *rec, struct orphan_run *run)
{
	const char *const argv[] = { "sh", "-c", WL_LADDER_PATH " 1.5 & exit 0",
				     NULL };
	struct sp_launch *launch = NULL;
	int i, status = 0, reaped = 0, err;
	double cpu = -1;

	CHECK_OK(sp_launch_suspended("/bin/sh", (char *const *)(uintptr_t)argv,
				     NULL, &launch));
	run->sh_pid = sp_launch_pid(launch);
	err = sp_recorder_attach(rec, run->sh_pid, SP_ATTACH_ON_EXEC);
	eng_skip_if_refused(err);
	CHECK_EQ_INT(err, SP_ATTACHED);
	run->t_start = now_ns();
	CHECK_OK(sp_launch_resume(launch));
	for (i = 0; i < 600 && (!reaped || cpu < 0 ||
				sp_recorder_active_process_count(rec) > 0);
	     i++) {
		CHECK_OK(sp_recorder_poll(rec, 100, NULL));
		if (!reaped)
			reaped = sp_launch_try_wait(launch, &status);
		CHECK(reaped >= 0);
		cpu = child_cpu(run);
	}
	run->t_end = now_ns();
	CHECK(i < 600);
	/* Level-triggered pidfds: these polls see every death and reap. */
	CHECK_OK(sp_recorder_poll(rec, 0, NULL));
	CHECK_OK(sp_recorder_poll(rec, 0, NULL));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sp_launch_free(launch);
	return cpu;
}

int main(void)
{
	struct sp_recorder_opts opts = { .size = sizeof(opts) };
	const char *dir = getenv("TMPDIR");
	struct sp_recorder *rec = NULL;
	struct sp_snapshot *snap = NULL;
	struct orphan_run run;
	struct sp_sample s;
	size_t i, n = 0, late = 0;
	uint64_t third;
	double cpu, want;
	int base;

	opts.threads = test_threads();
	memset(&run, 0, sizeof(run));
	dir = dir && *dir ? dir : "/tmp";
	snprintf(run.spool, sizeof(run.spool), "%s/sp-orphan-%d.spool", dir,
		 (int)getpid());
	snprintf(run.rusage, sizeof(run.rusage), "%s/sp-orphan-%d.rusage", dir,
		 (int)getpid());
	unlink(run.rusage);
	CHECK_EQ_INT(setenv("WL_RUSAGE_FILE", run.rusage, 1), 0);
	opts.sample_hz = 999;
	opts.flags = SP_RECORDER_INHERIT_CHILDREN;
	eng_skip_if_refused(sp_recorder_open(run.spool, &opts, &rec));
	CHECK_PTR(rec);
	base = eng_fd_count();
	cpu = record(rec, &run);
	CHECK_OK(sp_recorder_finish(rec));
	CHECK_EQ_INT(eng_fd_count(), base + (int)sp__rings_count(&rec->rings));
	sp_recorder_close(rec);
	CHECK_OK(sp_snapshot_open(run.spool, NULL, &snap));
	third = run.t_start + (run.t_end - run.t_start) * 2 / 3;
	for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		if (s.pid == run.sh_pid)
			continue;
		n++;
		late += s.timestamp_ns >= third;
	}
	want = 999.0 * cpu / 2;
	fprintf(stderr,
		"child: %.3f s CPU, %zu samples (%zu in the last "
		"third), want >= %.0f\n",
		cpu, n, late, want);
	CHECK((double)n >= want);
	CHECK(late > 0);
	sp_snapshot_close(snap);
	unlink(run.spool);
	unlink(run.rusage);
	return T_EXIT_PASS;
}
