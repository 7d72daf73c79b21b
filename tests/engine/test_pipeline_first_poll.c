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
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "eng_util.h"

#define POLL_TIMEOUT_MS 60000
#define BOUND_MS 30000

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	pid_t pid = eng_spawn_sleeper("120");
	struct timespec t0;
	int64_t took_ms;
	char path[64];

	o.sample_hz = 999;
	o.threads = 2;
	rec = eng_open_attached("first-poll", &o, pid, path, sizeof(path));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_OK(sp_recorder_poll(rec, POLL_TIMEOUT_MS, NULL));
	took_ms = eng_ms_since(&t0);
	fprintf(stderr, "first poll after the attach: %lld ms\n",
		(long long)took_ms);
	CHECK(took_ms < BOUND_MS);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	eng_kill_reap(pid);
	unlink(path);
	return T_EXIT_PASS;
}
