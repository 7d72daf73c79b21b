/* SPDX-License-Identifier: MIT */
/* Reader threads: drain perf rings into blocks and an SPSC queue. */

/*
 * The reader never blocks the kernel for long and never grows: it sleeps
 * in epoll (ring wake-ups, its wake eventfd, and a 50 ms tick that keeps
 * its watermark moving while rings are idle), drains, publishes, and
 * notifies the sequencer through its eventfd only when it queued records
 * in this cycle or the one before (records newer than a watermark are
 * released by the next one). Rings whose owner event hung up are removed
 * from epoll, as in inline mode, and drained on every tick.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "reader.h"

static bool block_free(struct sp__rblock *b)
{
	uint64_t sealed = atomic_load(&b->sealed);

	return sealed != UINT64_MAX && atomic_load(&b->consumed) == sealed;
}

/* Seals the current block and takes a free one (NULL: none is free). */
static struct sp__rblock *next_block(struct sp__reader *r)
{
	size_t i;

	if (r->cur)
		atomic_store(&r->cur->sealed, r->cur->pushed);
	r->cur = NULL;
	for (i = 0; i < SP__RBLOCKS; i++) {
		struct sp__rblock *b = &r->blocks[i];

		if (block_free(b)) {
			b->used = 0;
			atomic_store(&b->sealed, UINT64_MAX);
			r->cur = b;
			break;
		}
	}
	return r->cur;
}

/* What precedes each record in a block: its hold, or NULL. */
#define REC_HDR sizeof(struct sp__rhold *)
/* Records kept back at most: beyond, they are queued unmerged. */
#define KEPT_MAX SP__RQUEUE

static int to_queue(void *ctx, const struct sp__merge_item *it, const void *rec)
{
	struct sp__reader *r = ctx;

	(void)rec;
	if (!sp__spsc_push(&r->queue, it))
		return -EAGAIN;
	r->dirty = true;
	return 0;
}

/*
 * Queues the kept records up to @upto (UINT64_MAX: all), in order.
 * Returns false when the queue filled first (the rest stay kept). The
 * sequencer merges whatever comes, in any order: merging here only
 * spares it the work.
 */
static bool hand_over(struct sp__reader *r, uint64_t upto)
{
	int err = sp__merge_release(&r->kept, upto, to_queue, r);

	atomic_store(&r->nkept, sp__merge_count(&r->kept));
	return !err;
}

static int put(struct sp__reader *r, const struct sp__merge_item *item,
	       const struct sp__span *spans, size_t n)
{
	struct sp__reader_ring *rr = r->cur_ring;
	struct sp__merge_item it = *item;
	struct sp__rhold *hold = NULL;
	size_t i, total = REC_HDR;
	unsigned char *dst;

	if (sp__merge_count(&r->kept) >= KEPT_MAX && !hand_over(r, UINT64_MAX))
		return -EAGAIN;
	if (item->pos != SP__NO_HOLD) { /* a sample left in the ring */
		if (rr->hold_tail - rr->hold_head == SP__RHOLDS)
			return -EAGAIN;
		hold = &rr->holds[rr->hold_tail & (SP__RHOLDS - 1)];
		hold->pos = item->pos;
		atomic_store_explicit(&hold->done, 0, memory_order_relaxed);
	}
	for (i = 0; i < n; i++)
		total += spans[i].len;
	total = (total + 7) & ~(size_t)7;
	if (!r->cur || r->cur->used + total > SP__RBLOCK_BYTES)
		if (!next_block(r))
			return -EAGAIN;
	dst = r->cur->data + r->cur->used;
	memcpy(dst, &hold, REC_HDR);
	it.ref = dst + REC_HDR;
	it.owner = r->cur;
	it.len = 0;
	for (i = 0; i < n; i++) {
		if (spans[i].len)
			memcpy(dst + REC_HDR + it.len, spans[i].data,
			       spans[i].len);
		it.len += spans[i].len;
	}
	if (sp__merge_push_ref(&r->kept, &it, (size_t)(rr - r->rings)))
		return -EAGAIN; /* the copy is simply overwritten later */
	r->cur->used += total;
	r->cur->pushed++;
	if (hold)
		rr->hold_tail++;
	return 0;
}

/* A record that does not fit stops its ring's drain; its time is kept. */
static int push(void *ctx, const struct sp__merge_item *item,
		const struct sp__span *spans, size_t n)
{
	struct sp__reader *r = ctx;
	int err = put(r, item, spans, n);

	if (err)
		r->stop_time = item->time;
	return err;
}

/*
 * Gives @rr's ring back to the kernel up to its oldest sample not yet
 * written. Returns whether held samples still take half the ring or
 * more: the sequencer is behind, and holding more would have the kernel
 * drop records, so (if it is slow to poll) the drain copies this ring's
 * samples for now.
 */
static bool release_holds(struct sp__reader_ring *rr)
{
	const struct perf_event_mmap_page *m = rr->ring.base;
	uint64_t upto = rr->ring.read_pos;

	while (rr->hold_head != rr->hold_tail &&
	       atomic_load_explicit(
		       &rr->holds[rr->hold_head & (SP__RHOLDS - 1)].done,
		       memory_order_acquire))
		rr->hold_head++;
	if (rr->hold_head != rr->hold_tail)
		upto = rr->holds[rr->hold_head & (SP__RHOLDS - 1)].pos;
	sp__ring_consume(&rr->ring, upto);
	return rr->hold_head != rr->hold_tail &&
	       __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE) - upto >=
		       rr->ring.data_size / 2;
}

/*
 * Drains every ring once; false when full holds, blocks or queue stopped
 * it. *@mark: every record not read yet is newer (@now after a complete
 * drain): a stopped ring's next records are not older than the one that
 * did not fit by SP__STOP_MARGIN_NS or more.
 */
static bool drain_all(struct sp__reader *r, size_t n, uint64_t now,
		      uint64_t *mark)
{
	struct sp__drain d = { .push = push,
			       .ctx = r,
			       .in_place = true,
			       .hold_until = now + SP__HOLD_NS };
	bool complete = true, pinned = false;
	bool slow = !r->stepped || sp__seq_slow(atomic_load(r->stepped), now);
	size_t i;

	*mark = now;
	for (i = 0; i < n; i++) {
		struct sp__reader_ring *rr = &r->rings[i];

		if (release_holds(rr)) {
			pinned = true;
			if (slow)
				rr->copy_until = now + SP__COPY_NS;
		}
		d.in_place = now >= rr->copy_until;
		r->cur_ring = rr;
		d.sample_type = rr->sample_type;
		d.ring_index = rr->index;
		d.ring_seq = &rr->ring.seq;
		sp__drain_ring(&d, &rr->ring, r->scratch);
		atomic_store(&rr->scanned, rr->ring.read_pos);
		if (d.err) {
			uint64_t stop =
				r->stop_time > SP__STOP_MARGIN_NS ?
					r->stop_time - SP__STOP_MARGIN_NS :
					0;

			complete = false;
			if (stop < *mark)
				*mark = stop;
		}
	}
	atomic_store(&r->pinned, pinned); /* wake me when they are written */
	if (d.unusable)
		atomic_fetch_add(&r->unusable, d.unusable);
	return complete;
}

static void notify(struct sp__reader *r, int fd)
{
	uint64_t one = 1;

	atomic_fetch_add_explicit(&r->wake_calls, 1, memory_order_relaxed);
	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return; /* the sequencer's tick picks the records up anyway */
}

static void wait_ready(struct sp__reader *r, int timeout_ms)
{
	struct epoll_event evs[16];
	uint64_t v;
	int i, n;

	atomic_fetch_add_explicit(&r->wake_calls, 1, memory_order_relaxed);
	n = epoll_wait(r->epfd, evs, 16, timeout_ms);
	for (i = 0; i < n; i++) {
		int fd = (int)evs[i].data.u64;

		if (fd == r->wakefd) {
			if (read(fd, &v, sizeof(v)) < 0)
				continue;
		} else if (evs[i].events & (EPOLLHUP | EPOLLERR)) {
			epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, NULL);
		}
	}
}

/*
 * A drain stopped, but the watermark moved: the sequencer writes what is
 * older, which frees holds and blocks, and pokes this reader (pinned).
 * No copy-out: that is for a reader that cannot move its watermark.
 */
static void wait_written(struct sp__reader *r)
{
	atomic_fetch_add(&r->stalls, 1);
	atomic_store(&r->pinned, true);
	notify(r, r->notify_fd);
	wait_ready(r, SP__READER_TICK_MS);
}

/* Sleeps until the sequencer frees a block or queue slot (or a tick). */
static void wait_space(struct sp__reader *r)
{
	/* Kept records hold blocks too: the sequencer may copy them out. */
	hand_over(r, UINT64_MAX);
	atomic_fetch_add(&r->stalls, 1);
	atomic_store(&r->starved, true);
	notify(r, r->notify_fd); /* the sequencer copies queued records out */
	wait_ready(r, SP__READER_TICK_MS);
	atomic_store(&r->starved, false);
}

static void *reader_main(void *arg)
{
	struct sp__reader *r = arg;
	bool was_dirty = false;
	uint64_t acked = 0;

	while (!atomic_load(&r->stop)) {
		uint64_t req = atomic_load(&r->drain_req);
		uint64_t cover = atomic_load(&r->cover_req);
		uint64_t t = sp__clock_read(atomic_load(&r->clock));
		uint64_t w, before = atomic_load(&r->watermark);
		size_t n = atomic_load(&r->nrings);
		bool complete = drain_all(r, n, t, &w);

		/* A drain request (flush, finish) queues everything read. */
		if (!hand_over(r, complete && req != acked ? UINT64_MAX : w)) {
			wait_space(r);
			continue;
		}
		atomic_store(&r->watermark, w);
		atomic_store(&r->covered, cover); /* with the rings added */
		if (!complete) {
			/*
			 * Under overload a ring can hold more than one drain
			 * can take: the watermark moves with what was read,
			 * or nothing would be written until the kernel let go.
			 * A flush writes by it too while it waits for the
			 * drains (threaded.c); only a watermark stuck still
			 * needs copies.
			 */
			was_dirty = true;
			r->dirty = false;
			if (w > before)
				wait_written(r);
			else
				wait_space(r);
			continue;
		}
		atomic_store(&r->drain_ack, req);
		if (r->dirty || was_dirty || req != acked)
			notify(r, r->notify_fd);
		acked = req;
		was_dirty = r->dirty;
		r->dirty = false;
		if (req == atomic_load(&r->drain_req) &&
		    cover == atomic_load(&r->cover_req))
			wait_ready(r, SP__READER_TICK_MS);
	}
	return NULL;
}

static int ep_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint32_t)fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int sp__reader_init(struct sp__reader *r, const struct sp__mem *mem,
		    size_t rings_cap, int notify_fd,
		    const struct sp__clock *clock)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->mem = mem;
	atomic_init(&r->clock, clock);
	r->epfd = r->wakefd = -1;
	r->notify_fd = notify_fd;
	r->rings_cap = rings_cap;
	r->rings = sp__mem_calloc(mem, rings_cap, sizeof(*r->rings));
	r->queue_buf = sp__mem_calloc(mem, SP__RQUEUE, sizeof(*r->queue_buf));
	r->scratch = sp__mem_alloc(mem, SP__RING_RECORD_MAX);
	sp__merge_init(&r->kept, mem);
	if (!r->rings || !r->queue_buf || !r->scratch)
		return -ENOMEM;
	sp__spsc_init(&r->queue, r->queue_buf, SP__RQUEUE);
	for (i = 0; i < SP__RBLOCKS; i++) {
		r->blocks[i].data = sp__mem_alloc(mem, SP__RBLOCK_BYTES);
		if (!r->blocks[i].data)
			return -ENOMEM;
		/*
		 * Faulted in now, not by the first records of the run: the
		 * first free block is always taken, so these are the ones
		 * in use unless the sequencer falls behind.
		 */
		if (i < SP__RBLOCKS_WARM)
			memset(r->blocks[i].data, 0, SP__RBLOCK_BYTES);
		r->blocks[i].reader = r;
		atomic_init(&r->blocks[i].sealed, 0);
	}
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->epfd < 0 || r->wakefd < 0)
		return -errno;
	return ep_add(r->epfd, r->wakefd);
}

int sp__reader_start(struct sp__reader *r)
{
	int err = pthread_create(&r->thread, NULL, reader_main, r);

	r->started = !err;
	if (!err) /* named before anyone looks (top, ps, tests) */
		pthread_setname_np(r->thread, "sp-reader");
	return -err;
}

void sp__reader_stop(struct sp__reader *r)
{
	if (!r->started)
		return;
	atomic_store(&r->stop, true);
	notify(r, r->wakefd);
	pthread_join(r->thread, NULL);
	r->started = false;
}

void sp__reader_fini(struct sp__reader *r)
{
	size_t i;

	sp__reader_stop(r);
	for (i = 0; i < SP__RBLOCKS; i++)
		sp__mem_free(r->mem, r->blocks[i].data, SP__RBLOCK_BYTES);
	for (i = 0; r->rings && i < atomic_load(&r->nrings); i++)
		sp__mem_free(r->mem, r->rings[i].holds,
			     SP__RHOLDS * sizeof(*r->rings[i].holds));
	sp__mem_free(r->mem, r->rings, r->rings_cap * sizeof(*r->rings));
	sp__mem_free(r->mem, r->queue_buf, SP__RQUEUE * sizeof(*r->queue_buf));
	sp__mem_free(r->mem, r->scratch, SP__RING_RECORD_MAX);
	sp__merge_fini(&r->kept); /* never written: closed without finish */
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->wakefd >= 0)
		close(r->wakefd);
}

/* Takes the next number of the request counter @c and wakes @r. */
static uint64_t request(struct sp__reader *r, _Atomic uint64_t *c)
{
	uint64_t req = atomic_fetch_add(c, 1) + 1;

	notify(r, r->wakefd);
	return req;
}

uint64_t sp__reader_request(struct sp__reader *r)
{
	return request(r, &r->drain_req);
}

long long sp__reader_add_ring(struct sp__reader *r, const struct sp__ring *ring,
			      size_t index, uint64_t sample_type)
{
	size_t n = atomic_load(&r->nrings);

	if (n == r->rings_cap)
		return -ENOSPC;
	/*
	 * Not cleared: the reader writes a hold before anyone reads it, so
	 * the pages are first touched there, when it drains the ring, not
	 * by the sequencer adopting it (four page faults a ring: 0.03 per
	 * sample, 0.15 us of the serial stage's, in a short replay over 64
	 * rings).
	 */
	r->rings[n].holds =
		sp__mem_alloc(r->mem, SP__RHOLDS * sizeof(*r->rings[n].holds));
	if (!r->rings[n].holds)
		return -ENOMEM;
	r->rings[n].hold_head = r->rings[n].hold_tail = 0;
	r->rings[n].copy_until = 0;
	r->rings[n].ring = *ring;
	atomic_init(&r->rings[n].scanned, ring->read_pos);
	r->rings[n].index = index;
	r->rings[n].sample_type = sample_type;
	ep_add(r->epfd, ring->owner_fd); /* a failed add: drained on ticks */
	atomic_store(&r->nrings, n + 1);
	/* A watermark, not a flush: a drain need not finish to cover it. */
	return (long long)request(r, &r->cover_req);
}

void sp__rblock_consume(void *owner, const void *ref)
{
	struct sp__rblock *b = owner;
	struct sp__rhold *hold;

	memcpy(&hold, (const unsigned char *)ref - REC_HDR, REC_HDR);
	if (hold) /* before the block can be reused */
		atomic_store_explicit(&hold->done, 1, memory_order_release);
	/* The sequencer's (a copy) and a worker's (a write) may meet here. */
	atomic_fetch_add(&b->consumed, 1);
	if (atomic_load(&b->reader->starved))
		notify(b->reader, b->reader->wakefd);
}

bool sp__reader_has_unread(struct sp__reader *r)
{
	size_t i, n = atomic_load(&r->nrings);

	for (i = 0; i < n; i++) {
		const struct sp__reader_ring *rr = &r->rings[i];
		const struct perf_event_mmap_page *m = rr->ring.base;

		if (__atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE) !=
		    atomic_load(&rr->scanned))
			return true;
	}
	return atomic_load(&r->nkept) != 0;
}

void sp__reader_poke(struct sp__reader *r)
{
	if (atomic_load_explicit(&r->pinned, memory_order_relaxed) &&
	    atomic_exchange(&r->pinned, false))
		notify(r, r->wakefd);
}
