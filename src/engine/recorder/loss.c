/* SPDX-License-Identifier: MIT */
/* Counting lost samples from the events' PERF_FORMAT_LOST counters. */

/*
 * The kernel counts every sample it could not write (ring full) on the
 * event that produced it (the parent event for inherited ones), so the
 * sum of the per-event counters is the exact loss. PERF_RECORD_LOST
 * records report the same losses again and are ignored when the counters
 * can be read. An event's counter is read one last time before its fd is
 * closed. A batch with any loss means records that described process and
 * module changes may be gone too: it counts as a lifecycle gap and
 * schedules a recovery sweep.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "recorder_internal.h"
#include "system.h"

uint64_t sp__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int add_checked(uint64_t *sum, uint64_t v)
{
	if (*sum + v < *sum)
		return -EPROTO;
	*sum += v;
	return 0;
}

/* The growth of @ev's lost counter since the last read. */
static int event_delta(struct sp__event *ev, uint64_t *delta)
{
	struct sp__perf_read r;
	ssize_t n = read(ev->fd, &r, sizeof(r));

	*delta = 0;
	if (n != (ssize_t)sizeof(r))
		return 0; /* an event being torn down: nothing to add */
	if (r.lost < ev->lost)
		return -EPROTO;
	*delta = r.lost - ev->lost;
	ev->lost = r.lost;
	return 0;
}

int sp__recorder_collect_lost_events(struct sp_recorder *rec,
				     struct sp__vec *events)
{
	uint64_t d;
	size_t i;
	int err;

	if (!rec->cfg.read_lost)
		return 0;
	for (i = 0; i < events->len; i++) {
		err = event_delta(sp__vec_at(events, i), &d);
		if (!err)
			err = add_checked(&rec->lost_pending, d);
		if (err)
			return err;
	}
	return 0;
}

int sp__recorder_collect_lost(struct sp_recorder *rec, struct sp__process *proc)
{
	return sp__recorder_collect_lost_events(rec, &proc->events);
}

static int count_batch(struct sp_recorder *rec)
{
	uint64_t n = rec->lost_pending;

	if (!n)
		return 0;
	rec->lost_pending = 0;
	if (add_checked(&rec->sum.lost_events, n))
		return -EPROTO;
	rec->poll.lost_events += n;
	rec->sum.lifecycle_gaps++;
	rec->sweep_pending = true;
	return 0;
}

int sp__recorder_read_lost(struct sp_recorder *rec, bool force)
{
	uint64_t now = sp__now_ns();
	size_t i;
	int err;

	if (!force && now - rec->last_lost_ns < SP__LOST_READ_NS)
		return 0;
	rec->last_lost_ns = now;
	for (i = 0; i < rec->procs.list.len; i++) {
		err = sp__recorder_collect_lost(
			rec, *(struct sp__process **)sp__vec_at(
				     &rec->procs.list, i));
		if (err)
			return err;
	}
	if (rec->sys) {
		err = sp__system_collect_lost(rec);
		if (err)
			return err;
	}
	return count_batch(rec);
}
