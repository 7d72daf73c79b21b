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

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "logging.h"
#include "perf_record.h"
#include "recorder_internal.h"

static int queue_sample(struct sp_recorder *rec, const void *r, size_t len)
{
	struct sp__perf_sample ps;
	struct sp__qsample q;
	struct sp__span spans[3];

	if (sp__perf_parse_sample(r, len, rec->sample_type, SP__PERF_REGS_MASK,
				  &ps)) {
		rec->sum.sample_events++; /* seen, but unusable */
		return 0;
	}
	memset(&q, 0, sizeof(q));
	q.ip = ps.ip;
	q.time = ps.time;
	q.pid = ps.pid;
	q.tid = ps.tid;
	q.cpu = ps.cpu;
	q.misc = ps.misc;
	q.nr_ips = ps.nr_ips;
	q.stack_len = ps.stack_len;
	q.regs = ps.regs;
	spans[0] = (struct sp__span){ &q, sizeof(q) };
	spans[1] = (struct sp__span){ ps.ips, ps.nr_ips * 8 };
	spans[2] = (struct sp__span){ ps.stack, ps.stack_len };
	return sp__merge_push(&rec->merge, ps.time, PERF_RECORD_SAMPLE, ps.pid,
			      spans, 3);
}

static int on_record(void *ctx, const struct sp__ring *ring, const void *r,
		     size_t len)
{
	struct sp_recorder *rec = ctx;
	const struct perf_event_header *h = r;
	struct sp__perf_id id;
	struct sp__span span = { r, len };

	(void)ring;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return queue_sample(rec, r, len);
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (sp__perf_parse_id(r, len, rec->sample_type, &id))
			return 0;
		return sp__merge_push(&rec->merge, id.time, h->type, id.pid,
				      &span, 1);
	default:
		return 0; /* THROTTLE/UNTHROTTLE and others carry no state */
	}
}

int sp__recorder_drain(struct sp_recorder *rec)
{
	size_t i;
	long n;

	for (i = 0; i < rec->rings.len; i++) {
		n = sp__ring_read(sp__vec_at(&rec->rings, i), rec->scratch,
				  on_record, rec);
		if (n == SP_ECORRUPT)
			sp__log(rec->logger, SP_LOG_WARN,
				"corrupt perf ring record; ring skipped ahead");
	}
	return 0;
}

int sp__recorder_release(struct sp_recorder *rec, uint64_t watermark)
{
	return sp__merge_release(&rec->merge, watermark, sp__recorder_apply,
				 rec);
}

void sp__recorder_reap(struct sp_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (p->state == SP__PROC_DYING &&
		    !sp__merge_has_pid(&rec->merge, p->pid))
			sp__recorder_retire(rec, p);
	}
}

static void on_pidfd(struct sp_recorder *rec, int fd)
{
	size_t i;

	epoll_ctl(rec->epfd, EPOLL_CTL_DEL, fd, NULL);
	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (p->pidfd == fd && p->state == SP__PROC_ALIVE)
			p->state = SP__PROC_DYING;
	}
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
		else if (evs[i].events & (EPOLLHUP | EPOLLERR))
			epoll_ctl(rec->epfd, EPOLL_CTL_DEL, fd, NULL);
	}
	return 0;
}

static bool rings_have_data(const struct sp_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->rings.len; i++)
		if (sp__ring_has_data(sp__vec_at(&rec->rings, i)))
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
	if (!rings_have_data(rec) && sp__merge_count(&rec->merge) == 0) {
		err = wait_events(rec, timeout_ms);
		if (err)
			return err;
	} else {
		wait_events(rec, 0); /* collect HUPs and pidfds anyway */
	}
	watermark = sp__now_ns();
	err = sp__recorder_drain(rec);
	if (!err)
		err = sp__recorder_release(rec, watermark);
	if (!err)
		err = sp__recorder_read_lost(rec, false);
	if (!err)
		err = sp__recorder_sweep(rec, false);
	if (!err && watermark - rec->last_flush_ns >= SP__FLUSH_NS) {
		err = sp_writer_flush(rec->writer);
		rec->last_flush_ns = watermark;
	}
	sp__recorder_reap(rec);
	if (out)
		*out = rec->poll;
	return err;
}
