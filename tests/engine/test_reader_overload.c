/* SPDX-License-Identifier: MIT */
/* Unit test: a reader whose ring holds more than one drain can take. */

/*
 * Under overload (one process sampled at the kernel's maximum rate) a
 * ring can hold more samples than a reader has holds for (SP__RHOLDS),
 * and the kernel refills it as fast as it is read: a drain then never
 * reaches the ring's end. The reader must still move its watermark up
 * to what it read, or the sequencer writes nothing, the holds are never
 * released, and only copy-outs move anything (measured: 28,552 samples
 * written in 4 s at 100 kHz, against 216,020 in inline mode). Here the
 * test is the kernel (samples in an in-memory ring) and a sequencer that
 * polls (its last step a moment ago, so nothing is copied):
 * - 1,500 samples 10 us apart (100 kHz), one ring: the first drain holds
 *   SP__RHOLDS of them and stops; the watermark is the time of the first
 *   one it could not take less SP__STOP_MARGIN_NS, and exactly the
 *   samples up to it are queued, in order, still held in the ring;
 * - once they are written (consumed, poked), the reader gives their ring
 *   space back, reads the rest and publishes its clock reading again.
 */
#include <sys/eventfd.h>
#include <unistd.h>

#include "check.h"
#include "qsample.h"
#include "reader.h"
#include "reader_util.h"

#define DATA 65536u /* ring data bytes: 2,730 samples of 24 bytes */
#define SAMPLES 1500u
#define T0 1000000ull	       /* the first sample's time (ns) */
#define STEP 10000ull	       /* between two samples */
#define CLOCK 1000000000000ull /* the clock once they are written */

static _Atomic uint64_t now_ns = 100; /* before every sample, at first */

static uint64_t clock_now(const struct sp__clock *c)
{
	(void)c;
	return atomic_load(&now_ns);
}

static const struct sp__clock test_clock = { clock_now };
static _Atomic uint64_t stepped; /* the sequencer's last step */

static uint64_t tail_of(const struct sp__ring *r)
{
	const struct perf_event_mmap_page *m = r->base;

	return __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE);
}

/*
 * Pops @n records, waiting for the reader if need be, and checks they
 * are the samples from number @first on, in order, held in the ring;
 * then writes them (consumes them, as the sequencer does).
 */
static void write_queued(struct sp__reader *rd, size_t n, size_t first)
{
	struct sp__merge_item it;
	size_t got;

	for (got = 0; got < n; got++) {
		reader_pop_wait(rd, &it);
		CHECK_EQ(it.time, T0 + (first + got) * STEP);
		CHECK_EQ(it.len, sizeof(struct sp__qsample)); /* not copied */
		CHECK_EQ(((const struct sp__qsample *)it.ref)->time, it.time);
		sp__rblock_consume(it.owner, it.ref);
	}
	CHECK(!sp__spsc_pop(&rd->queue, &it));
}

int main(void)
{
	struct sp__ring ring = { 0 };
	struct sp__reader rd;
	struct sp__mem mem;
	uint64_t first, mark = T0 + SP__RHOLDS * STEP - SP__STOP_MARGIN_NS;
	size_t queued = (size_t)((mark - T0) / STEP) + 1;
	long long cover;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	unsigned i;

	CHECK(efd >= 0);
	CHECK(SAMPLES > SP__RHOLDS && SAMPLES * 24 <= DATA);
	CHECK(queued > 0 && queued < SP__RHOLDS);
	sp__mem_init(&mem, NULL);
	reader_ring_map(&ring, DATA);
	CHECK_OK(sp__reader_init(&rd, &mem, 4, efd, &test_clock));
	rd.stepped = &stepped;
	CHECK_OK(sp__reader_start(&rd));
	cover = sp__reader_add_ring(&rd, &ring, 0, READER_BARE_SAMPLE_TYPE);
	CHECK(cover > 0);
	reader_wait_cover(&rd, (uint64_t)cover);
	reader_wait_watermark(&rd, 100);

	/* All at once, then the clock past them all; the sequencer polls. */
	first = tail_of(&ring);
	for (i = 0; i < SAMPLES; i++)
		reader_put_sample(&ring, T0 + i * STEP);
	atomic_store(&stepped, UINT64_MAX); /* in a step: never slow */
	atomic_store(&now_ns, CLOCK);
	reader_wait_watermark(&rd, mark);
	write_queued(&rd, queued, 0);
	CHECK_EQ(tail_of(&ring), first); /* held until written */

	/* Written: the rest is read, the ring given back to the kernel. */
	sp__reader_poke(&rd);
	reader_wait_watermark(&rd, CLOCK);
	write_queued(&rd, SAMPLES - queued, queued);
	reader_drain(&rd);
	CHECK_EQ(tail_of(&ring),
		 ((struct perf_event_mmap_page *)ring.base)->data_head);
	CHECK(!sp__reader_has_unread(&rd));
	CHECK_EQ(atomic_load(&rd.unusable), 0);

	sp__reader_fini(&rd);
	munmap(ring.base, ring.mmap_len);
	close(efd);
	return 0;
}
