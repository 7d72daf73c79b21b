/* SPDX-License-Identifier: MIT */
/* Helpers of src/engine's own kernel tests: children, fds, skips. */
#ifndef SP_TESTS_ENG_UTIL_H
#define SP_TESTS_ENG_UTIL_H

/*
 * Small inline helpers shared by the test_recorder_* kernel tests: a busy
 * child, fd counting (leak checks), polling for a while, and the one skip
 * rule (exit 77 only when perf_event_open itself is refused).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/recorder.h>

#include "check.h"
#include "perf_skip.h"

static inline pid_t eng_spawn_busy(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		/* A failed CHECK in the test must not leave it spinning. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sh", "sh", "-c", "while :; do :; done",
		      (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	usleep(50000); /* let it exec */
	return pid;
}

/* A child that only sleeps, for @secs seconds (sleep(1)'s argument). */
static inline pid_t eng_spawn_sleeper(const char *secs)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sleep", "sleep", secs, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	usleep(50000); /* let it exec */
	return pid;
}

/* Runs a tests/workloads program for @secs seconds (its argv[1]). */
static inline pid_t eng_spawn_workload(const char *path, const char *secs)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(path, path, secs, (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	return pid;
}

static inline void eng_kill_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The engine tests' name of the shared skip rule (tests/perf_skip.h). */
#define eng_skip_if_refused skip_if_refused

/*
 * A recorder writing /tmp/sp-@name-PID.spool (its path into @path),
 * attached to the running @pid; skips (and kills @pid) when the kernel
 * refuses perf_event_open.
 */
static inline struct sp_recorder *
eng_open_attached(const char *name, const struct sp_recorder_opts *o, pid_t pid,
		  char *path, size_t cap)
{
	struct sp_recorder *rec;
	int r;

	snprintf(path, cap, "/tmp/sp-%s-%d.spool", name, (int)getpid());
	CHECK_OK(sp_recorder_open(path, o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	return rec;
}

static inline int eng_fd_count(void)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK_PTR(d);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static inline int64_t eng_ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)(t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Polls every @step_ms for @ms; each poll must succeed. */
static inline void eng_record_for(struct sp_recorder *rec, int ms, int step_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		CHECK_OK(sp_recorder_poll(rec, step_ms, NULL));
	while (eng_ms_since(&t0) < ms);
}

#endif /* SP_TESTS_ENG_UTIL_H */
