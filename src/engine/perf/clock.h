/* SPDX-License-Identifier: MIT */
/* The clock of perf timestamps, and the clock records are ordered by. */
#ifndef SP_ENGINE_CLOCK_H
#define SP_ENGINE_CLOCK_H

#include <stdint.h>

/*
 * Every event is opened with use_clockid = CLOCK_MONOTONIC, so a record's
 * timestamp and sp__now_ns() are one time line: a clock reading taken
 * before a ring is drained is a watermark (every record older than it is
 * in the ring by then). The ordering stage reads that watermark through a
 * struct sp__clock, which is CLOCK_MONOTONIC in a recording and a virtual
 * clock when the test harness replays a fixture (tests/harness).
 */

/* CLOCK_MONOTONIC now, in ns (the clock of every perf timestamp). */
uint64_t sp__now_ns(void);

/** struct sp__clock is a source of watermarks (any thread may read it). */
struct sp__clock {
	uint64_t (*now)(const struct sp__clock *clock);
};

/* sp__now_ns() as a struct sp__clock. */
extern const struct sp__clock sp__clock_monotonic;

static inline uint64_t sp__clock_read(const struct sp__clock *clock)
{
	return clock->now(clock);
}

#endif /* SP_ENGINE_CLOCK_H */
