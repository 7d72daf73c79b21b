/* SPDX-License-Identifier: MIT */
/* Unit test: a reader gives ring space back only past samples written. */

/*
 * A reader leaves each sample's callchain and stack in the perf ring and
 * holds its position until the sequencer writes it. Here the test is the
 * sequencer (it pops the reader's queue, writes nothing) and the kernel
 * (it writes records into an in-memory ring, and poison into every byte
 * the ring gives back, as a kernel producer would reuse them):
 * - the sequencer falls behind until held samples take half the ring:
 *   the next drains copy the new samples (for SP__COPY_NS), but must
 *   neither give back the held ones' space nor queue a record twice;
 *   unless the sequencer is polling (it stepped a moment ago): then new
 *   samples stay held, and the reader asks to be woken once some are
 *   written (pinned, cleared once they are);
 * - a starved reader's queued records are copied out by the sequencer
 *   (sp__merge_copy_refs): a kernel thread's sample (a callchain in the
 *   ring, no user stack) must come out with its callchain, and no record
 *   may point into the ring once its hold is released.
 * Every stack and callchain the sequencer reads is compared with the
 * bytes written: poison (0x78) means the ring was given back too early.
 */
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "check.h"
#include "merge.h"
#include "qsample.h"
#include "reader.h"
#include "reader_util.h"

#define PAGE 4096u
#define DATA 16384u /* ring data bytes */
#define STACK 512u  /* user stack bytes per sample */
#define NIPS 3u
#define POISON 0x78
#define SAMPLE_TYPE                                                            \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |          \
	 PERF_SAMPLE_STACK_USER)
/* The clock: every sample is old enough; moved on by the test only. */
static _Atomic uint64_t now_ns = 1000000000000ull;

static uint64_t clock_now(const struct sp__clock *c)
{
	(void)c;
	return atomic_load(&now_ns);
}

static const struct sp__clock test_clock = { clock_now };
/* The sequencer's last step: long ago until the test says. */
static _Atomic uint64_t stepped;

static unsigned char stack_byte(uint64_t time, size_t i)
{
	return (unsigned char)((time * 7 + i) % 97); /* never POISON */
}

static uint64_t ip_of(uint64_t time, size_t i)
{
	return 0xffffffff81000000ull + time * 16 + i;
}

/* Written by put_sample(), not yet published by publish(). */
static uint64_t written;

/*
 * Writes a sample of @time (@stack: with a user stack) as the kernel
 * does, unpublished: the reader sees a batch all at once or not at all,
 * whenever its drains come.
 */
static void put_sample(struct sp__ring *r, uint64_t time, bool stack)
{
	struct perf_event_mmap_page *m = r->base;
	unsigned char *data = (unsigned char *)r->base + PAGE, rec[1024];
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE };
	uint64_t head = m->data_head + written, v;
	uint32_t ids[2] = { 42, 43 };
	size_t i, n = sizeof(h);

	memcpy(rec + n, ids, 8);
	n += 8;
	memcpy(rec + n, &time, 8);
	n += 8;
	v = NIPS;
	memcpy(rec + n, &v, 8);
	n += 8;
	for (i = 0; i < NIPS; i++, n += 8) {
		v = ip_of(time, i);
		memcpy(rec + n, &v, 8);
	}
	v = stack ? STACK : 0; /* size 0: a kernel thread, no dyn_size */
	memcpy(rec + n, &v, 8);
	n += 8;
	if (stack) {
		for (i = 0; i < STACK; i++)
			rec[n + i] = stack_byte(time, i);
		n += STACK;
		memcpy(rec + n, &v, 8); /* dyn_size */
		n += 8;
	}
	h.size = (uint16_t)n;
	memcpy(rec, &h, sizeof(h));
	CHECK(head + n - __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE) <=
	      DATA);
	for (i = 0; i < n; i++)
		data[(head + i) & (DATA - 1)] = rec[i];
	written += n;
}

static void publish(struct sp__ring *r)
{
	struct perf_event_mmap_page *m = r->base;

	__atomic_store_n(&m->data_head, m->data_head + written,
			 __ATOMIC_RELEASE);
	written = 0;
}

/* The kernel reuses every byte given back: poison from head to tail. */
static void poison_free(struct sp__ring *r)
{
	struct perf_event_mmap_page *m = r->base;
	unsigned char *data = (unsigned char *)r->base + PAGE;
	uint64_t tail = __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE);
	uint64_t pos;

	for (pos = m->data_head; pos < tail + DATA; pos++)
		data[pos & (DATA - 1)] = POISON;
}

/* The sample's callchain and stack are the ones written at its time. */
static void check_sample(const struct sp__qsample *q)
{
	const uint64_t *ips = sp__qsample_ips(q);
	const unsigned char *st = sp__qsample_stack(q);
	uint64_t ip;
	size_t i;

	CHECK_EQ(q->pid, 42);
	CHECK_EQ(q->nr_ips, NIPS);
	for (i = 0; i < NIPS; i++) {
		memcpy(&ip, &ips[i], 8);
		CHECK_EQ(ip, ip_of(q->time, i));
	}
	CHECK(q->stack_len == STACK || q->stack_len == 0);
	for (i = 0; i < q->stack_len; i++)
		CHECK_EQ(st[i], stack_byte(q->time, i));
}

static size_t pop_all(struct sp__reader *rd, struct sp__merge_item *out,
		      size_t cap)
{
	size_t n = 0;

	while (n < cap && sp__spsc_pop(&rd->queue, &out[n]))
		n++;
	return n;
}

static uint64_t tail_of(const struct sp__ring *r)
{
	const struct perf_event_mmap_page *m = r->base;

	return __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE);
}

static int check_released(void *ctx, const struct sp__merge_item *it,
			  const void *rec)
{
	const struct sp__qsample *q = rec;

	(*(size_t *)ctx)++;
	CHECK_EQ(it->type, PERF_RECORD_SAMPLE);
	CHECK(!q->ext_ips && !q->ext_stack); /* nothing left in the ring */
	check_sample(q);
	return 0;
}

int main(void)
{
	struct sp__merge_item items[64];
	struct sp__reader rd;
	struct sp__merge mg;
	struct sp__ring ring = { 0 };
	struct sp__mem mem;
	uint64_t t, first;
	size_t i, n, m, seen = 0;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	CHECK(efd >= 0);
	sp__mem_init(&mem, NULL);
	reader_ring_map(&ring, DATA);
	CHECK_OK(sp__reader_init(&rd, &mem, 4, efd, &test_clock));
	rd.stepped = &stepped;
	CHECK_OK(sp__reader_start(&rd));
	CHECK(sp__reader_add_ring(&rd, &ring, 0, SAMPLE_TYPE) > 0);

	/* 16 samples (9.3 KiB): held in place, nothing given back. */
	first = tail_of(&ring);
	for (t = 1; t <= 16; t++)
		put_sample(&ring, t, true);
	publish(&ring);
	reader_drain(&rd);
	n = pop_all(&rd, items, 64);
	CHECK_EQ(n, 16);
	for (i = 0; i < n; i++)
		CHECK_EQ(items[i].len, sizeof(struct sp__qsample));
	CHECK_EQ(tail_of(&ring), first);

	/*
	 * Not written yet, and they take over half the ring: the next 8
	 * samples are copied, the 16 still held, each queued once.
	 */
	for (; t <= 24; t++)
		put_sample(&ring, t, true);
	publish(&ring);
	reader_drain(&rd);
	m = pop_all(&rd, items + n, 64 - n);
	CHECK_EQ(m, 8);
	for (i = n; i < n + m; i++) {
		const struct sp__qsample *q = items[i].ref;

		CHECK_EQ(q->time, 17 + (i - n));
		CHECK(!q->ext_stack); /* copied */
	}
	CHECK_EQ(tail_of(&ring), first); /* the held samples' space stays */
	n += m;
	poison_free(&ring);
	for (i = 0; i < n; i++)
		check_sample(items[i].ref);

	/* All written: the ring is given back whole at the next drain. */
	for (i = 0; i < n; i++)
		sp__rblock_consume(items[i].owner, items[i].ref);
	reader_drain(&rd);
	CHECK_EQ(tail_of(&ring),
		 ((struct perf_event_mmap_page *)ring.base)->data_head);

	/* Still behind a moment ago: a new sample is copied, not held. */
	put_sample(&ring, 25, true);
	publish(&ring);
	reader_drain(&rd);
	CHECK_EQ(pop_all(&rd, items, 64), 1);
	CHECK(!((const struct sp__qsample *)items[0].ref)->ext_stack);
	check_sample(items[0].ref);
	sp__rblock_consume(items[0].owner, items[0].ref);
	atomic_fetch_add(&now_ns, SP__COPY_NS); /* caught up long enough */

	/*
	 * The sequencer copies queued records out of a starving reader: a
	 * kernel thread's sample keeps its callchain although its hold is
	 * released and its ring space reused.
	 */
	put_sample(&ring, 100, false);
	put_sample(&ring, 101, true);
	publish(&ring);
	reader_drain(&rd);
	n = pop_all(&rd, items, 64);
	CHECK_EQ(n, 2);
	for (i = 0; i < n; i++) /* held again */
		CHECK_EQ(items[i].len, sizeof(struct sp__qsample));
	sp__merge_init(&mg, &mem);
	for (i = 0; i < n; i++)
		CHECK_OK(sp__merge_push_ref(&mg, &items[i], 0));
	CHECK_EQ(sp__merge_copy_refs(&mg, sp__rblock_consume), 2);
	reader_drain(&rd); /* the holds are released: all given back */
	CHECK_EQ(tail_of(&ring),
		 ((struct perf_event_mmap_page *)ring.base)->data_head);
	poison_free(&ring);
	CHECK_OK(sp__merge_release(&mg, UINT64_MAX, check_released, &seen));
	CHECK_EQ(seen, 2);

	/*
	 * A sequencer that polls but is behind: the ring half held, its new
	 * samples are held too, and the reader asks to be poked.
	 */
	atomic_store(&stepped, atomic_load(&now_ns));
	first = tail_of(&ring);
	for (t = 200; t < 220; t++)
		put_sample(&ring, t, true);
	publish(&ring);
	reader_drain(&rd);
	reader_drain(&rd); /* finds the ring half held */
	CHECK(atomic_load(&rd.pinned));
	for (; t < 224; t++)
		put_sample(&ring, t, true);
	publish(&ring);
	reader_drain(&rd);
	n = pop_all(&rd, items, 64);
	CHECK_EQ(n, 24);
	for (i = 0, m = 0; i < n; i++) {
		const struct sp__qsample *q = items[i].ref;

		CHECK_EQ(q->time, 200 + i);
		m += !q->ext_stack;
	}
	CHECK(m <= 1); /* held, but for one that wraps at the ring's end */
	CHECK_EQ(tail_of(&ring), first);
	poison_free(&ring);
	for (i = 0; i < n; i++) {
		check_sample(items[i].ref);
		sp__rblock_consume(items[i].owner, items[i].ref);
	}
	sp__reader_poke(&rd); /* what the sequencer does after writing */
	reader_drain(&rd); /* a tick's cycle may have set it again meanwhile */
	CHECK(!atomic_load(&rd.pinned));
	CHECK_EQ(tail_of(&ring),
		 ((struct perf_event_mmap_page *)ring.base)->data_head);

	sp__merge_fini(&mg);
	sp__reader_fini(&rd);
	munmap(ring.base, ring.mmap_len);
	close(efd);
	return 0;
}
