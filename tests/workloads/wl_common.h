/* SPDX-License-Identifier: MIT */
/* Test workloads: argument parsing, the spin loop and the exit report. */
#ifndef WL_COMMON_H
#define WL_COMMON_H

/*
 * Every workload runs CPU-bound for argv[1] seconds (default 2) and keeps
 * nearly all of its time in one distinctively named leaf function, so a
 * recorder test can check stacks by name. The spin loop checks the clock
 * only every few milliseconds: almost no sample lands outside the named
 * functions (vDSO clock_gettime, libc start-up and exit are rare).
 *
 * Header-only (static inline functions), so each workload is one file
 * plus this one; the functions a test looks for live in the .c files and
 * are marked WL_NAMED so that -O2 neither inlines, clones nor merges them.
 *
 * When WL_RUSAGE_FILE is set, wl_finish() writes "user_s sys_s" of the
 * process (RUSAGE_SELF) there: the recorder bench uses it to separate the
 * target's CPU time from the recorder's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#ifdef __clang__
#define WL_NAMED __attribute__((noinline, used))
#else
#define WL_NAMED __attribute__((noipa, used))
#endif

/* Roughly a few milliseconds of work per call on current CPUs. */
#define WL_SPIN_ITERS 2000000u

static inline double wl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double wl_duration(int argc, char **argv)
{
	double d = argc > 1 ? strtod(argv[1], NULL) : 2.0;

	return d > 0 ? d : 2.0;
}

/*
 * WL_SPIN burns CPU inside the function that uses it (a macro, not a
 * function: the workloads build with -fno-inline, and the samples must
 * land in the named leaf, not in a helper).
 */
#define WL_SPIN(acc)                                                           \
	do {                                                                   \
		unsigned wl_i_;                                                \
		for (wl_i_ = 0; wl_i_ < WL_SPIN_ITERS; wl_i_++)                \
			(acc) = (acc)*1664525u + 1013904223u;                  \
	} while (0)

static inline int wl_finish(int status)
{
	const char *path = getenv("WL_RUSAGE_FILE");
	struct rusage ru;
	FILE *f;

	if (!path || getrusage(RUSAGE_SELF, &ru) != 0)
		return status;
	f = fopen(path, "w");
	if (!f)
		return status;
	fprintf(f, "%ld.%06ld %ld.%06ld\n", (long)ru.ru_utime.tv_sec,
		(long)ru.ru_utime.tv_usec, (long)ru.ru_stime.tv_sec,
		(long)ru.ru_stime.tv_usec);
	fclose(f);
	return status;
}

#endif /* WL_COMMON_H */
