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

static int push(void *ctx, const struct sp__merge_item *item,
		const struct sp__span *spans, size_t n)
{
	struct sp__reader *r = ctx;
	struct sp__merge_item it = *item;
	size_t i, total = 0;
	unsigned char *dst;

	for (i = 0; i < n; i++)
		total += spans[i].len;
	total = (total + 7) & ~(size_t)7;
	if (!r->cur || r->cur->used + total > SP__RBLOCK_BYTES)
		if (!next_block(r))
			return -EAGAIN;
	dst = r->cur->data + r->cur->used;
	it.ref = dst;
	it.owner = r->cur;
	it.len = 0;
	for (i = 0; i < n; i++) {
		if (spans[i].len)
			memcpy(dst + it.len, spans[i].data, spans[i].len);
		it.len += spans[i].len;
	}
	if (!sp__spsc_push(&r->queue, &it))
		return -EAGAIN; /* the copy is simply overwritten later */
	r->cur->used += total;
	r->cur->pushed++;
	r->dirty = true;
	return 0;
}

/* Drains every ring once; false when a full queue or pool stopped it. */
static bool drain_all(struct sp__reader *r, size_t n)
{
	struct sp__drain d = { .push = push, .ctx = r };
	bool complete = true;
	size_t i;

	for (i = 0; i < n; i++) {
		struct sp__reader_ring *rr = &r->rings[i];

		d.sample_type = rr->sample_type;
		d.ring_index = rr->index;
		d.ring_seq = &rr->ring.seq;
		sp__drain_ring(&d, &rr->ring, r->scratch);
		if (d.err)
			complete = false;
	}
	if (d.unusable)
		atomic_fetch_add(&r->unusable, d.unusable);
	return complete;
}

/* Writes eventfd @fd; counted in @r's wake calls (benchmarks). */
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

/* Sleeps until the sequencer frees a block or queue slot (or a tick). */
static void wait_space(struct sp__reader *r)
{
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
		uint64_t t = sp__clock_read(atomic_load(&r->clock));
		size_t n = atomic_load(&r->nrings);

		if (drain_all(r, n)) {
			atomic_store(&r->watermark, t);
			atomic_store(&r->drain_ack, req);
			if (r->dirty || was_dirty || req != acked)
				notify(r, r->notify_fd);
			acked = req;
			was_dirty = r->dirty;
			r->dirty = false;
			if (req == atomic_load(&r->drain_req))
				wait_ready(r, SP__READER_TICK_MS);
		} else {
			wait_space(r);
		}
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
	if (!r->rings || !r->queue_buf || !r->scratch)
		return -ENOMEM;
	sp__spsc_init(&r->queue, r->queue_buf, SP__RQUEUE);
	for (i = 0; i < SP__RBLOCKS; i++) {
		r->blocks[i].data = sp__mem_alloc(mem, SP__RBLOCK_BYTES);
		if (!r->blocks[i].data)
			return -ENOMEM;
		/* Faulted in now, not by the first records of the run. */
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
	sp__mem_free(r->mem, r->rings, r->rings_cap * sizeof(*r->rings));
	sp__mem_free(r->mem, r->queue_buf, SP__RQUEUE * sizeof(*r->queue_buf));
	sp__mem_free(r->mem, r->scratch, SP__RING_RECORD_MAX);
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->wakefd >= 0)
		close(r->wakefd);
}

uint64_t sp__reader_request(struct sp__reader *r)
{
	uint64_t req = atomic_fetch_add(&r->drain_req, 1) + 1;

	notify(r, r->wakefd);
	return req;
}

long long sp__reader_add_ring(struct sp__reader *r, const struct sp__ring *ring,
			      size_t index, uint64_t sample_type)
{
	size_t n = atomic_load(&r->nrings);

	if (n == r->rings_cap)
		return -ENOSPC;
	r->rings[n].ring = *ring;
	r->rings[n].index = index;
	r->rings[n].sample_type = sample_type;
	ep_add(r->epfd, ring->owner_fd); /* a failed add: drained on ticks */
	atomic_store(&r->nrings, n + 1);
	return (long long)sp__reader_request(r);
}

void sp__rblock_consume(void *owner)
{
	struct sp__rblock *b = owner;

	atomic_store(&b->consumed, atomic_load(&b->consumed) + 1);
	if (atomic_load(&b->reader->starved))
		notify(b->reader, b->reader->wakefd);
}
