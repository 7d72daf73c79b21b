/* SPDX-License-Identifier: MIT */
/* The poll loop: wait, step the pipeline, count losses, sweep, reap. */

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

#include "logging.h"
#include "pipeline.h"
#include "recorder_internal.h"

void sp__recorder_reap(struct sp_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (p->state == SP__PROC_DYING &&
		    !sp__pipeline_has_records(rec->pipe, p->pid, p->dying_ns))
			sp__recorder_retire(rec, p);
	}
	if (rec->policy->prune)
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
			sp__process_dying(
				p, sp__clock_read(sp__recorder_clock(rec)));
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
	if (!sp__pipeline_ready(rec->pipe)) {
		err = wait_events(rec,
				  sp__pipeline_timeout(rec->pipe, timeout_ms));
		if (err)
			return err;
	} else {
		wait_events(rec, 0); /* collect HUPs and pidfds anyway */
	}
	watermark = sp__clock_read(sp__recorder_clock(rec));
	err = sp__pipeline_step(rec->pipe, watermark);
	if (!err)
		err = sp__recorder_read_lost(rec, false);
	if (!err)
		err = rec->policy->sweep(rec, false);
	if (!err)
		err = sp__jit_poll(rec);
	sp__pipeline_writes_hold(rec->pipe); /* the writer, its counts */
	if (!err && watermark - rec->last_flush_ns >= SP__FLUSH_NS) {
		err = sp_writer_push(rec->writer);
		rec->last_flush_ns = watermark;
	}
	/* Written since the last poll ended (threaded: workers write too). */
	rec->poll.samples += rec->wsum.samples - rec->poll_written;
	rec->poll_written = rec->wsum.samples;
	sp__pipeline_writes_let_go(rec->pipe);
	sp__recorder_reap(rec);
	if (out)
		*out = rec->poll;
	return err;
}
