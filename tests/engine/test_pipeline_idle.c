/* SPDX-License-Identifier: MIT */
/* Kernel test: an idle threaded recording sleeps (no thread spins). */

/*
 * A threaded recorder (4 unwinder threads and a reader) records a
 * process that only sleeps, for about 2 seconds, polled as an
 * application would. Nothing arrives, so every thread must sleep: the
 * process's CPU time over the window must stay under 5 % of one core.
 *
 * This is a spin detector, so it measures CPU time (getrusage), not wall
 * time, and that is what load on the machine does not inflate: one
 * thread spinning on an empty queue alone burns 100 % of a core, twenty
 * times the bound. The design's budget is 1 % (20 reader ticks a second
 * and the polls cost a few hundred microseconds); the bound is five
 * times that so that a busy machine (cache misses, slower wake-ups)
 * cannot fail it.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "eng_util.h"

#define IDLE_MS 2000
#define MAX_CORE_SHARE 0.05

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_pipeline_stats st = { .size = sizeof(st) };
	struct sp_recorder *rec;
	pid_t pid = eng_spawn_sleeper("30");
	double c0, w0, cpu, wall;
	char path[64];

	o.sample_hz = 10000;
	o.threads = 4;
	rec = eng_open_attached("idle", &o, pid, path, sizeof(path));
	eng_record_for(rec, 200, 100); /* past attaching */
	c0 = cpu_s();
	w0 = now_s();
	eng_record_for(rec, IDLE_MS, 100);
	cpu = cpu_s() - c0;
	wall = now_s() - w0;
	CHECK_OK(sp_recorder_pipeline_stats(rec, &st));
	fprintf(stderr,
		"idle %.3f s: process CPU %.4f s (%.2f %% of a core), "
		"%u readers, %u workers\n",
		wall, cpu, 100 * cpu / wall, st.readers, st.workers);
	CHECK_EQ(st.workers, 4);
	CHECK(st.readers >= 1);
	CHECK(cpu <= MAX_CORE_SHARE * wall);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	eng_kill_reap(pid);
	unlink(path);
	return T_EXIT_PASS;
}
