/* SPDX-License-Identifier: MIT */
/* Helpers of the system-wide and cgroup Recorder tests. */
#ifndef SP_TESTS_SYS_UTIL_H
#define SP_TESTS_SYS_UTIL_H

/*
 * These tests record the whole machine (or a cgroup) while tests/workloads
 * programs run, then check the spool with rec_util.c's namer: which pids
 * have samples, whether their stacks reach main, which pids own modules.
 * Workloads are forked with PR_SET_PDEATHSIG, so a failed CHECK never
 * leaves one spinning. The only skip is the kernel refusing a CPU-wide
 * event (not root, no CAP_PERFMON, paranoid settings).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rec_util.h"
#include "threads_env.h"

/* Fewer than rec_check_main() wants: a busy machine starves workloads. */
#define SYS_MIN_SAMPLES 20

static inline pid_t sys_spawn(const char *path, const char *seconds)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(path, path, seconds, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	return pid;
}

/* Milliseconds since @t0 (CLOCK_MONOTONIC). */
static inline long sys_ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long)(t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/*
 * Polls @rec until the @n children in @pids exited (0 each), 60 s max.
 * A deadline, not a count of polls: on a machine busy with other
 * processes' side-band records every poll returns at once.
 */
static inline void sys_poll_until_exit(struct sp_recorder *rec,
				       const int32_t *pids, size_t n)
{
	size_t i, left = n;
	bool done[16] = { false };
	struct timespec t0;
	int status, err;
	pid_t r;

	CHECK(n <= 16);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (left && sys_ms_since(&t0) < 60000) {
		err = sp_recorder_poll(rec, 50, NULL);
		if (err != -EINTR)
			CHECK_OK(err);
		for (i = 0; i < n; i++) {
			if (done[i] ||
			    (r = waitpid(pids[i], &status, WNOHANG)) == 0)
				continue;
			CHECK_EQ_INT(r, pids[i]);
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			done[i] = true;
			left--;
		}
	}
	CHECK(left == 0);
}

static inline void sys_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Opens a system-mode recorder at 999 Hz into @run->spool, or skips. */
static void sys_log(void *ctx, enum sp_log_level level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "log %d: %s\n", (int)level, msg);
}

static const struct sp_logger sys_logger = { sys_log, NULL, SP_LOG_DEBUG };

static inline struct sp_recorder *sys_open(struct rec_run *run,
					   const struct sp_system_opts *so)
{
	static const struct sp_system_opts all = { .size = sizeof(all) };
	struct sp_recorder_opts opts = { .size = sizeof(opts) };
	struct sp_recorder *rec = NULL;
	const char *dir = getenv("TMPDIR");
	int err;

	memset(run, 0, sizeof(*run));
	opts.sample_hz = 999;
	if (getenv("SP_TEST_LOG"))
		opts.logger = &sys_logger;
	opts.threads = test_threads();
	snprintf(run->spool, sizeof(run->spool), "%s/sp-sys-%d.spool",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	opts.system = so ? so : &all;
	err = sp_recorder_open(run->spool, &opts, &rec);
	if (err == -EACCES || err == -EPERM) {
		fprintf(stderr, "skip: system-wide perf events refused: %s\n",
			sp_strerror(err));
		unlink(run->spool);
		exit(T_EXIT_SKIP);
	}
	CHECK_OK(err);
	return rec;
}

/* Polls @rec for @ms milliseconds. */
static inline void sys_poll_for(struct sp_recorder *rec, long ms)
{
	struct timespec t0;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (sys_ms_since(&t0) < ms) {
		err = sp_recorder_poll(rec, 50, NULL);
		if (err != -EINTR)
			CHECK_OK(err);
	}
}

/* Finishes @rec and opens its spool in @run. */
static inline void sys_finish(struct sp_recorder *rec, struct rec_run *run)
{
	CHECK_OK(sp_recorder_finish(rec));
	run->summary.size = sizeof(run->summary);
	sp_recorder_summary(rec, &run->summary);
	sp_recorder_close(rec);
	CHECK_OK(sp_snapshot_open(run->spool, NULL, &run->snap));
	run->defs = sp_snapshot_spool(run->snap);
	fprintf(stderr,
		"%" PRIu64 " samples, %" PRIu64 " lost, %zu in the spool\n",
		run->summary.samples, run->summary.lost_events,
		sp_snapshot_sample_count(run->snap));
}

/*
 * At least @min_percent of @pid's samples reach main of @exe, and there
 * are SYS_MIN_SAMPLES of them; prints the first stacks that do not.
 */
static inline void sys_check_main(struct rec_run *run, int32_t pid,
				  const char *exe, unsigned min_percent)
{
	rec_check_main_n(run, pid, exe, min_percent, SYS_MIN_SAMPLES);
}

/* Samples of @pid in the spool. */
static inline size_t sys_count(const struct rec_run *run, int32_t pid)
{
	size_t i, n = 0, count = sp_snapshot_sample_count(run->snap);
	struct sp_sample s;

	for (i = 0; i < count; i++) {
		CHECK_OK(sp_snapshot_sample(run->snap, i, &s));
		n += s.pid == pid;
	}
	return n;
}

/* Whether every sample and every module belongs to one of @pids. */
static inline bool sys_only(const struct rec_run *run, const int32_t *pids,
			    size_t npids)
{
	size_t i, k, count = sp_snapshot_sample_count(run->snap);
	struct sp_sample s;
	struct sp_module m;
	bool ok = true, hit;

	for (i = 0; i < count; i++) {
		CHECK_OK(sp_snapshot_sample(run->snap, i, &s));
		for (k = 0, hit = false; k < npids; k++)
			hit |= s.pid == pids[k];
		if (!hit && ok)
			fprintf(stderr, "sample of pid %d\n", (int)s.pid);
		ok &= hit;
	}
	/* Ids may start at 0 or 1: one past the count covers both. */
	for (i = 0; i <= sp_spool_module_count(run->defs); i++) {
		if (sp_spool_module(run->defs, (uint32_t)i, &m) || m.is_kernel)
			continue;
		for (k = 0, hit = false; k < npids; k++)
			hit |= m.pid == pids[k];
		if (!hit && ok)
			fprintf(stderr, "module %.*s of pid %d\n",
				(int)m.path_len, m.path, (int)m.pid);
		ok &= hit;
	}
	return ok;
}

#endif /* SP_TESTS_SYS_UTIL_H */
