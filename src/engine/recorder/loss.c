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

#include "recorder_internal.h"

static int add_checked(uint64_t *sum, uint64_t v)
{
	if (*sum + v < *sum)
		return -EPROTO;
	*sum += v;
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
		err = sp__event_lost_delta(sp__vec_at(events, i), &d);
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
	err = rec->policy->collect_lost(rec); /* events no process owns */
	return err ? err : count_batch(rec);
}
