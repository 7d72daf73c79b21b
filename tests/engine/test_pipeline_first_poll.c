/* SPDX-License-Identifier: MIT */
/* Kernel test: a threaded recorder's first poll after an attach steps. */

/*
 * An attach makes rings that no reader drains yet; the step hands them
 * to the readers. A poll that waited first (nothing to wait for: no
 * reader had a ring to wake it) slept its whole timeout while the
 * kernel filled the new rings: at 10 kHz and a 100 ms poll, the first
 * 1,000 samples or so of every recording were dropped. Here the target
 * only sleeps, so nothing at all would end that wait: a first poll with
 * a 60 s timeout must come back at once, and in any case well before
 * its timeout (the bound, 30 s, is half of it: not a speed target, the
 * difference between stepping and sleeping).
 */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "eng_util.h"

#define POLL_TIMEOUT_MS 60000
#define BOUND_S 30.0

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/bin/sleep", "sleep", "120", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	usleep(50000); /* let it exec */
	return pid;
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	pid_t pid = spawn_sleeper();
	double t0, took;
	char path[64];
	int r;

	o.sample_hz = 999;
	o.threads = 2;
	snprintf(path, sizeof(path), "/tmp/sp-first-poll-%d.spool",
		 (int)getpid());
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	t0 = now_s();
	CHECK_OK(sp_recorder_poll(rec, POLL_TIMEOUT_MS, NULL));
	took = now_s() - t0;
	fprintf(stderr, "first poll after the attach: %.3f s\n", took);
	CHECK(took < BOUND_S);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	eng_kill_reap(pid);
	unlink(path);
	return T_EXIT_PASS;
}
