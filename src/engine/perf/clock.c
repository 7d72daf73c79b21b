/* SPDX-License-Identifier: MIT */
/* The clock of perf timestamps, and the clock records are ordered by. */
#include <time.h>

#include "clock.h"

uint64_t sp__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t monotonic_now(const struct sp__clock *clock)
{
	(void)clock;
	return sp__now_ns();
}

const struct sp__clock sp__clock_monotonic = { monotonic_now };
