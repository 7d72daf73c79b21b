/* SPDX-License-Identifier: MIT */
/* The inline poll loop: wait, drain every ring, release in time order. */

/*
 * Readiness is only a hint: every poll drains every ring. Per-task events
 * report EPOLLHUP, level-triggered, once their task exits; such an fd is
 * removed from epoll at once (it stays open: closing an inheriting event
 * would stop sampling of the threads that inherited it), so the loop never
 * spins. A readable pidfd means the thread group died; it is removed too,
 * and the process is retired once none of its records is queued.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "drain.h"
#include "harness.h"
#include "jit_track.h"
#include "logging.h"
#include "pipeline.h"
#include "recorder_internal.h"
#include "writer_internal.h"

static int push_copy(void *ctx, const struct sp__merge_item *it,
		     const struct sp__span *spans, size_t n)
{
	struct sp_recorder *rec = ctx;

	return sp__merge_push(&rec->merge, it, spans, n);
}

int sp__recorder_drain(struct sp_recorder *rec)
{
	struct sp__drain d = { .sample_type = rec->sample_type,
			       .push = push_copy,
			       .ctx = rec,
			       .in_place = true,
			       .hold_until =
				       sp__recorder_clock(rec) + SP__HOLD_NS };
	size_t i;
	long n;

	if (rec->capture) {
		d.tap = sp__capture_tap;
		d.tap_ctx = rec;
	}
	for (i = 0; i < rec->rings.len; i++) {
		struct sp__ring *ring = sp__vec_at(&rec->rings, i);

		d.ring_index = i;
		d.ring_seq = &ring->seq;
		n = sp__drain_ring(&d, ring, rec->scratch);
		if (n == SP_ECORRUPT)
			sp__log(rec->logger, SP_LOG_WARN,
				"corrupt perf ring record; ring skipped ahead");
		if (d.err)
			return d.err;
	}
	rec->sum.sample_events += d.unusable; /* seen, but unusable */
	return 0;
}

static int release_one(void *ctx, const struct sp__merge_item *it,
		       const void *data)
{
	struct sp_recorder *rec = ctx;
	int err;

	rec->cur_owner = it->owner;
	rec->owner_taken = false;
	err = sp__recorder_apply(rec, it->type, data, it->len);
	if (!err && it->owner && !rec->owner_taken)
		sp__rblock_consume(it->owner);
	rec->cur_owner = NULL;
	return err;
}

/*
 * Inline mode: each ring goes back to the kernel up to its oldest record
 * still queued (a sample's stack is read from the ring when it is
 * released, so it must not be overwritten before).
 */
static void consume_rings(struct sp_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->rings.len; i++)
		((struct sp__ring *)sp__vec_at(&rec->rings, i))->hold =
			UINT64_MAX;
	for (i = 0; i < rec->merge.items.len; i++) {
		const struct sp__merge_item *it =
			sp__vec_at(&rec->merge.items, i);
		size_t r = (size_t)(it->key >> 40);
		struct sp__ring *ring;

		if (it->pos == SP__NO_HOLD || r >= rec->rings.len)
			continue; /* a copy, or not from a ring */
		ring = sp__vec_at(&rec->rings, r);
		if (it->pos < ring->hold)
			ring->hold = it->pos;
	}
	for (i = 0; i < rec->rings.len; i++) {
		struct sp__ring *ring = sp__vec_at(&rec->rings, i);

		sp__ring_consume(ring, ring->hold);
	}
}

int sp__recorder_release(struct sp_recorder *rec, uint64_t watermark)
{
	int err = sp__merge_release(&rec->merge, watermark, release_one, rec);

	if (!rec->pipe)
		consume_rings(rec);
	return err;
}

void sp__recorder_reap(struct sp_recorder *rec)
{
	uint64_t released = rec->pipe ? rec->pipe->released : rec->released_ns;
	size_t i;

	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		/*
		 * The dead group's last records may still sit in a ring (or
		 * a reader): a recorder behind by seconds has that much in
		 * its rings. They are all applied once the released
		 * watermark passed the moment its death was seen.
		 */
		if (p->dying_ns >= released)
			continue;
		if (p->state == SP__PROC_DYING &&
		    !sp__merge_has_pid(&rec->merge, p->pid))
			sp__recorder_retire(rec, p);
	}
	if (rec->sys)
		sp__procs_prune(&rec->procs);
}

static void on_pidfd(struct sp_recorder *rec, int fd)
{
	size_t i;

	epoll_ctl(rec->epfd, EPOLL_CTL_DEL, fd, NULL);
	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (p->pidfd == fd && p->state == SP__PROC_ALIVE)
			sp__process_dying(p, sp__recorder_clock(rec));
	}
}

static void drain_eventfd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0)
		return; /* EAGAIN: someone else reset it */
}

static int wait_events(struct sp_recorder *rec, int timeout_ms)
{
	struct epoll_event evs[64];
	int i, n;

	n = epoll_wait(rec->epfd, evs, 64, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		uint64_t kind = evs[i].data.u64 >> 32;
		int fd = (int)(uint32_t)evs[i].data.u64;

		if (kind == SP__EP_PIDFD)
			on_pidfd(rec, fd);
		else if (kind == SP__EP_WAKE)
			drain_eventfd(fd); /* the step below pulls */
		else if (evs[i].events & (EPOLLHUP | EPOLLERR))
			epoll_ctl(rec->epfd, EPOLL_CTL_DEL, fd, NULL);
	}
	return 0;
}

bool sp__recorder_rings_pending(const struct sp_recorder *rec)
{
	size_t i;

	if (rec->pipe)
		return sp__pipeline_pending(rec);
	for (i = 0; i < rec->rings.len; i++)
		if (sp__ring_has_unread(sp__vec_at(&rec->rings, i)))
			return true;
	return false;
}

void sp__recorder_collect(struct sp_recorder *rec)
{
	wait_events(rec, 0); /* EINTR: the next call collects them */
}

int sp_recorder_poll(struct sp_recorder *rec, int timeout_ms,
		     struct sp_poll_summary *out)
{
	uint64_t watermark;
	int err;

	if (!rec)
		return -EINVAL;
	memset(&rec->poll, 0, sizeof(rec->poll));
	if (rec->finished)
		return -EPIPE;
	err = sp__recorder_publish(rec);
	if (err)
		return err;
	/* Workers do not wake this thread: with jobs out, look again soon. */
	if (rec->pipe && sp__pool_inflight(&rec->pipe->pool) &&
	    (timeout_ms < 0 || timeout_ms > SP__READER_TICK_MS))
		timeout_ms = SP__READER_TICK_MS;
	if (rec->pipe ? !sp__pipeline_ready(rec) :
			!sp__recorder_rings_pending(rec) &&
				sp__merge_count(&rec->merge) == 0) {
		err = wait_events(rec, timeout_ms);
		if (err)
			return err;
	} else {
		wait_events(rec, 0); /* collect HUPs and pidfds anyway */
	}
	watermark = sp__recorder_clock(rec);
	if (rec->pipe) {
		err = sp__pipeline_step(rec, false);
	} else {
		err = sp__recorder_drain(rec);
		if (!err)
			err = sp__recorder_release(rec, watermark);
		if (!err)
			rec->released_ns = watermark;
	}
	if (!err)
		err = sp__recorder_read_lost(rec, false);
	if (!err && !rec->replay)
		err = sp__recorder_sweep(rec, false);
	if (!err)
		err = sp__jit_poll(rec);
	if (!err && watermark - rec->last_flush_ns >= SP__FLUSH_NS) {
		err = sp__writer_push(rec->writer);
		rec->last_flush_ns = watermark;
	}
	sp__recorder_reap(rec);
	if (out)
		*out = rec->poll;
	return err;
}
