/* SPDX-License-Identifier: MIT */
/* Helpers of the reader thread's unit tests (test_reader_*). */
#ifndef SP_TESTS_READER_UTIL_H
#define SP_TESTS_READER_UTIL_H

#include <poll.h>
#include <stdatomic.h>

#include "check.h"
#include "reader.h"

/* Asks @rd for a full drain and waits (20 s at most) until it is done. */
static inline void reader_drain(struct sp__reader *rd)
{
	uint64_t req = sp__reader_request(rd);
	int ms;

	for (ms = 0; atomic_load(&rd->drain_ack) < req; ms++) {
		CHECK(ms < 20000);
		poll(NULL, 0, 1);
	}
}

#endif /* SP_TESTS_READER_UTIL_H */
