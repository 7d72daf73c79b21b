/* SPDX-License-Identifier: MIT */
/* Opening per-(thread, CPU) events, enabling them, retiring processes. */

/*
 * Process mode opens one event per (thread, CPU); perf/rings.c wires each
 * into its CPU's ring (the first maps it, later ones SET_OUTPUT into it).
 * A process's events are closed when it is retired, unless children are
 * followed and a live descendant still samples through events it
 * inherited from them.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "logging.h"
#include "proc_maps.h"
#include "recorder_internal.h"
#include "system.h"

int sp__recorder_ep_add(struct sp_recorder *rec, int fd, uint64_t kind)
{
	struct epoll_event ev;

	if (kind == SP__EP_EVENT && sp__pipeline_is_threaded(rec->pipe))
		return 0; /* threaded mode: reader threads watch the rings */
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u64 = (kind << 32) | (uint32_t)fd;
	return epoll_ctl(rec->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Routes @fd into its CPU's ring; on success @proc owns the fd. */
static int event_wire(struct sp_recorder *rec, struct sp__process *proc, int fd,
		      int32_t tid, int slot)
{
	struct sp__event ev = { .fd = fd, .tid = tid };
	int err = sp__rings_wire(&rec->rings, &rec->cfg, fd, slot);

	if (!err)
		err = sp__vec_push(&proc->events, &rec->mem, &ev);
	if (!err)
		sp__recorder_ep_add(rec, fd, SP__EP_EVENT);
	return err;
}

/* One event of @src (NULL: the primary source) on @t, wired and enabled. */
static int open_one(struct sp_recorder *rec, struct sp__process *proc,
		    struct sp__perf_target *t, int slot,
		    const struct sp__event_source *src)
{
	int fd, err;

	t->source = src;
	fd = sp__perf_open(&rec->cfg, t);
	if (fd < 0)
		return fd;
	sp__rings_fix_type(&rec->rings, &rec->cfg);
	rec->sum.kernel_enabled = rec->cfg.kernel;
	err = event_wire(rec, proc, fd, t->tid, slot);
	if (err) {
		close(fd);
		return err;
	}
	if (rec->enabled && !t->on_exec && ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		return -errno;
	return 0;
}

int sp__recorder_open_events(struct sp_recorder *rec, struct sp__process *proc,
			     int32_t tid, bool on_exec)
{
	int slot, err;
	struct sp__perf_target t = { .kind = SP__TARGET_TASK,
				     .tid = tid,
				     .on_exec = on_exec };

	for (slot = 0; slot < rec->rings.ncpus; slot++) {
		t.cpu = rec->rings.cpus[slot];
		err = open_one(rec, proc, &t, slot, NULL);
		/* Wall mode: context switches beside cpu-clock, same ring. */
		if (!err && rec->cfg.extra)
			err = open_one(rec, proc, &t, slot, rec->cfg.extra);
		if (err)
			return err;
	}
	/* Kernel capture is settled by the first open: pin kernel frames. */
	return sp__kmod_open(&rec->kmod, &rec->procs, rec->cfg.kernel);
}

static void ioctl_all(struct sp_recorder *rec, unsigned long req)
{
	size_t i, j;

	sp__rings_ioctl(&rec->rings, req);
	/* System mode's events beside the ring owners (wall mode's). */
	for (i = 0; rec->sys && rec->cfg.extra && i < rec->sys->events.len; i++)
		ioctl(((struct sp__event *)sp__vec_at(&rec->sys->events, i))->fd,
		      req, 0);
	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		for (j = 0; j < p->events.len; j++)
			ioctl(((struct sp__event *)sp__vec_at(&p->events, j))
				      ->fd,
			      req, 0);
	}
}

int sp__recorder_set_enabled(struct sp_recorder *rec, bool on)
{
	/* Exited tasks' events refuse nothing useful; errors are not fatal. */
	ioctl_all(rec, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE);
	rec->enabled = on;
	return 0;
}

/* Whether a tracked, not yet retired process inherited @proc's events. */
static bool feeds_live_descendant(const struct sp_recorder *rec,
				  const struct sp__process *proc)
{
	const struct sp__process *a;
	size_t i;

	for (i = 0; i < rec->procs.list.len; i++) {
		const struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (p->state == SP__PROC_EXITED)
			continue;
		for (a = p->parent; a; a = a->parent)
			if (a == proc)
				return true;
	}
	return false;
}

/* Closes the held events no live descendant depends on any more. */
static int release_held(struct sp_recorder *rec)
{
	size_t i;
	int err = 0, lerr;

	if (!rec->cfg.children)
		return 0; /* nothing is ever held */
	for (i = 0; i < rec->procs.list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (!p->events_held || feeds_live_descendant(rec, p))
			continue;
		lerr = sp__recorder_collect_lost(rec, p);
		err = err ? err : lerr;
		sp__process_close_events(p, rec->epfd);
		p->events_held = false;
	}
	return err;
}

int sp__recorder_retire(struct sp_recorder *rec, struct sp__process *proc)
{
	int err, lerr, herr;

	if (proc->state == SP__PROC_EXITED)
		return 0;
	err = sp__process_retire_all(&rec->procs, proc);
	lerr = sp__recorder_collect_lost(rec, proc);
	/*
	 * Releasing (or disabling) a parent event tears down the events its
	 * forked children inherited, so a process that exits before its
	 * descendants keeps its events until the last of them is retired.
	 */
	if (rec->cfg.children && proc->events.len &&
	    feeds_live_descendant(rec, proc))
		proc->events_held = true;
	else
		sp__process_close_events(proc, rec->epfd);
	if (proc->pidfd >= 0) {
		epoll_ctl(rec->epfd, EPOLL_CTL_DEL, proc->pidfd, NULL);
		close(proc->pidfd);
		proc->pidfd = -1;
	}
	proc->state = SP__PROC_EXITED;
	herr = release_held(rec);
	if (err)
		return err;
	return lerr ? lerr : herr;
}
