/* SPDX-License-Identifier: MIT */
/* Unit test: a reader queues its rings' records merged, up to its watermark. */

/*
 * A reader drains several rings per cycle and queues what it read in
 * (time, key) order, so the sequencer gets one sorted run per reader;
 * records newer than the cycle's clock reading (its watermark) wait in
 * the reader for the next cycle. Here the test is the kernel (it writes
 * samples into three in-memory rings) and the sequencer (it pops the
 * reader's queue):
 * - samples interleaved in time across the rings, one tie between two
 *   rings, come out in time order, the tie in ring order;
 * - a sample newer than the watermark is not queued by a tick's cycle
 *   and counts as pending (sp__reader_has_unread); the next cycle after
 *   the clock passed it queues it;
 * - a drain request (flush) queues everything read, however new.
 */
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "check.h"
#include "merge.h"
#include "qsample.h"
#include "reader.h"
#include "reader_util.h"

#define DATA 8192u /* ring data bytes */
#define NRINGS 3

/* Before every sample: the ticks' cycles keep all until the test says. */
static _Atomic uint64_t now_ns = 5;

static uint64_t clock_now(const struct sp__clock *c)
{
	(void)c;
	return atomic_load(&now_ns);
}

static const struct sp__clock test_clock = { clock_now };

/*
 * Pops @n records (waiting for the reader's ticks), checks their times
 * and rings against @want, @rings, and releases them.
 */
static void expect(struct sp__reader *rd, size_t n, const uint64_t *want,
		   const size_t *rings)
{
	struct sp__merge_item it;
	size_t got;

	for (got = 0; got < n; got++) {
		reader_pop_wait(rd, &it);
		CHECK_EQ(it.time, want[got]);
		CHECK_EQ(it.key >> 40, rings[got]);
		CHECK_EQ(((const struct sp__qsample *)it.ref)->time, want[got]);
		sp__rblock_consume(it.owner, it.ref);
	}
}

/* Waits until @rd published @w after a cycle that kept @kept records. */
static void wait_cycle(struct sp__reader *rd, uint64_t w, size_t kept)
{
	READER_WAIT(atomic_load(&rd->watermark) == w &&
		    atomic_load(&rd->nkept) == kept);
}

int main(void)
{
	static const uint64_t t1[] = { 10, 20, 30, 40, 50, 60, 100, 100 };
	static const size_t r1[] = { 0, 1, 2, 0, 1, 2, 0, 1 };
	struct sp__ring rings[NRINGS];
	struct sp__merge_item it;
	struct sp__reader rd;
	struct sp__mem mem;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	long long cover = 0;
	size_t i;

	CHECK(efd >= 0);
	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__reader_init(&rd, &mem, 4, efd, &test_clock));
	CHECK_OK(sp__reader_start(&rd));
	for (i = 0; i < NRINGS; i++) {
		reader_ring_map(&rings[i], DATA);
		cover = sp__reader_add_ring(&rd, &rings[i], i,
					    READER_BARE_SAMPLE_TYPE);
		CHECK(cover > 0);
	}
	reader_wait_cover(&rd, (uint64_t)cover); /* all three are drained */

	/* Each ring in order, the three interleaved; a tie at 100. A flush. */
	reader_put_sample(&rings[0], 10);
	reader_put_sample(&rings[0], 40);
	reader_put_sample(&rings[0], 100);
	reader_put_sample(&rings[1], 20);
	reader_put_sample(&rings[1], 50);
	reader_put_sample(&rings[1], 100);
	reader_put_sample(&rings[2], 30);
	reader_put_sample(&rings[2], 60);
	reader_drain(&rd);
	expect(&rd, 8, t1, r1);
	CHECK(!sp__spsc_pop(&rd.queue, &it));

	/* The clock at 2000: a tick's cycle queues two, keeps two. */
	reader_put_sample(&rings[0], 2500);
	reader_put_sample(&rings[1], 1800);
	reader_put_sample(&rings[1], 3000);
	reader_put_sample(&rings[2], 1500);
	atomic_store(&now_ns, 2000);
	wait_cycle(&rd, 2000, 2);
	expect(&rd, 2, (const uint64_t[]){ 1500, 1800 },
	       (const size_t[]){ 2, 1 });
	CHECK(!sp__spsc_pop(&rd.queue, &it));
	CHECK(sp__reader_has_unread(&rd));

	/* The clock passes one of them: the next cycle queues it. */
	atomic_store(&now_ns, 2600);
	wait_cycle(&rd, 2600, 1);
	expect(&rd, 1, (const uint64_t[]){ 2500 }, (const size_t[]){ 0 });
	CHECK(!sp__spsc_pop(&rd.queue, &it));

	/* A flush takes the newest too. */
	reader_drain(&rd);
	CHECK_EQ(atomic_load(&rd.nkept), 0);
	expect(&rd, 1, (const uint64_t[]){ 3000 }, (const size_t[]){ 1 });
	CHECK(!sp__reader_has_unread(&rd));

	sp__reader_fini(&rd);
	for (i = 0; i < NRINGS; i++)
		munmap(rings[i].base, rings[i].mmap_len);
	close(efd);
	return 0;
}
