/* SPDX-License-Identifier: MIT */
/* Helpers of the reader thread's unit tests (test_reader_*). */
#ifndef SP_TESTS_READER_UTIL_H
#define SP_TESTS_READER_UTIL_H

#include <poll.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include <linux/perf_event.h>

#include "check.h"
#include "reader.h"

/* Waits, 1 ms at a time, until @cond holds; fails after 20 s. */
#define READER_WAIT(cond)                                                      \
	do {                                                                   \
		int ms_;                                                       \
		for (ms_ = 0; !(cond); ms_++) {                                \
			CHECK(ms_ < 20000);                                    \
			poll(NULL, 0, 1);                                      \
		}                                                              \
	} while (0)

/*
 * Maps an in-memory ring of @data bytes (a power of two) after one page,
 * as perf lays one out; never in epoll, so drained on requests, pokes
 * and ticks. Unmap with munmap(r->base, r->mmap_len).
 */
static inline void reader_ring_map(struct sp__ring *r, size_t data)
{
	memset(r, 0, sizeof(*r));
	r->mmap_len = 4096 + data;
	r->data_size = data;
	r->owner_fd = -1;
	r->base = mmap(NULL, r->mmap_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(r->base != MAP_FAILED);
}

/* Pops @rd's next queued record into @it, waiting for one. */
static inline void reader_pop_wait(struct sp__reader *rd,
				   struct sp__merge_item *it)
{
	READER_WAIT(sp__spsc_pop(&rd->queue, it));
}

/* What reader_put_sample() writes: pid, tid and time. */
#define READER_BARE_SAMPLE_TYPE (PERF_SAMPLE_TID | PERF_SAMPLE_TIME)

/*
 * Writes and publishes a sample of @time into the in-memory ring @r (its
 * data after the first page), as the kernel does.
 */
static inline void reader_put_sample(struct sp__ring *r, uint64_t time)
{
	struct perf_event_mmap_page *m = r->base;
	unsigned char *data = (unsigned char *)r->base + r->mmap_len -
			      r->data_size,
		      rec[24];
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 24 };
	uint32_t ids[2] = { 42, 43 };
	uint64_t head = m->data_head;
	size_t i;

	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, ids, 8);
	memcpy(rec + 16, &time, 8);
	CHECK(head + h.size -
		      __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE) <=
	      r->data_size);
	for (i = 0; i < h.size; i++)
		data[(head + i) & (r->data_size - 1)] = rec[i];
	__atomic_store_n(&m->data_head, head + h.size, __ATOMIC_RELEASE);
}

/* Waits until @rd published the watermark @w. */
static inline void reader_wait_watermark(struct sp__reader *rd, uint64_t w)
{
	READER_WAIT(atomic_load(&rd->watermark) == w);
}

/* Waits until a watermark of @rd covers the rings added up to @cover. */
static inline void reader_wait_cover(struct sp__reader *rd, uint64_t cover)
{
	READER_WAIT(atomic_load(&rd->covered) >= cover);
}

/* Asks @rd for a full drain and waits until it is done. */
static inline void reader_drain(struct sp__reader *rd)
{
	uint64_t req = sp__reader_request(rd);

	READER_WAIT(atomic_load(&rd->drain_ack) >= req);
}

#endif /* SP_TESTS_READER_UTIL_H */
