/* SPDX-License-Identifier: MIT */
/* Opening per-(thread, CPU) events and wiring them to the per-CPU rings. */

/*
 * The first event opened on a CPU maps that CPU's ring; every later event
 * on the CPU is redirected into it with PERF_EVENT_IOC_SET_OUTPUT (same
 * CPU and clock, feasibility §2). A ring that cannot be mapped at the
 * planned size is retried at half the size down to one record
 * (EPERM/ENOMEM: locked-memory limits), and the effective sizes go to the
 * summary. Without an explicit ring_samples a ring is sized from the rate
 * (perf_event.c: the ring fills at rate x stack size).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "logging.h"
#include "proc_maps.h"
#include "recorder_internal.h"

int sp__recorder_ep_add(struct sp_recorder *rec, int fd, uint64_t kind)
{
	struct epoll_event ev;

	if (kind == SP__EP_EVENT && rec->pipe)
		return 0; /* threaded mode: reader threads watch the rings */
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.u64 = (kind << 32) | (uint32_t)fd;
	return epoll_ctl(rec->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static size_t ring_cap(const struct sp_recorder *rec)
{
	uint64_t left = SP__RING_TOTAL_MAX - rec->ring_bytes_total;
	uint64_t cap = SP__RING_TOTAL_MAX / (uint64_t)rec->ncpus;

	if (cap > SP__RING_CPU_MAX)
		cap = SP__RING_CPU_MAX;
	return (size_t)(cap < left ? cap : left);
}

static void note_ring(struct sp_recorder *rec, size_t bytes)
{
	struct sp_recording_summary *s = &rec->sum;

	rec->ring_bytes_total += bytes;
	if (!s->minimum_ring_buffer_bytes ||
	    bytes < s->minimum_ring_buffer_bytes)
		s->minimum_ring_buffer_bytes = bytes;
	if (bytes > s->maximum_ring_buffer_bytes)
		s->maximum_ring_buffer_bytes = bytes;
}

static int ring_map_halving(struct sp_recorder *rec, struct sp__ring *ring,
			    int fd, int slot, size_t *bytes)
{
	size_t min = sp__perf_ring_bytes(&rec->cfg, 1, ring_cap(rec));
	int err;

	for (;;) {
		err = sp__ring_map(ring, fd, rec->cpus[slot], *bytes);
		if ((err != -EPERM && err != -ENOMEM) || *bytes / 2 < min)
			return err;
		*bytes /= 2;
	}
}

/*
 * Maps a new ring for cpu slot @slot from @fd. The ring keeps its own
 * duplicate of @fd, so the event stays a SET_OUTPUT target after its
 * process is retired and its fd closed.
 */
int sp__recorder_ring_new(struct sp_recorder *rec, int fd, int slot)
{
	uint64_t samples = rec->ring_samples ?
				   rec->ring_samples :
				   sp__perf_ring_default_samples(&rec->cfg);
	size_t bytes = sp__perf_ring_bytes(&rec->cfg, samples, ring_cap(rec));
	struct sp__ring ring;
	int own, err;

	if (!bytes)
		return -ENOMEM; /* the budget cannot hold one record */
	memset(&ring, 0, sizeof(ring));
	rec->cfg.wakeup_bytes = bytes / 8;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	err = ring_map_halving(rec, &ring, own, slot, &bytes);
	if (!err) {
		err = sp__vec_push(&rec->rings, &rec->mem, &ring);
		if (err)
			sp__ring_unmap(&ring);
	}
	if (err) {
		close(own);
		return err;
	}
	note_ring(rec, bytes);
	rec->cpu_ring[slot] = (int)rec->rings.len - 1;
	return 0;
}

/* Routes @fd into its CPU's ring; on success @proc owns the fd. */
static int event_wire(struct sp_recorder *rec, struct sp__process *proc, int fd,
		      int32_t tid, int slot)
{
	struct sp__event ev = { .fd = fd, .tid = tid };
	const struct sp__ring *ring;
	int err = -1;

	if (rec->cpu_ring[slot] >= 0) {
		ring = sp__vec_at(&rec->rings, (size_t)rec->cpu_ring[slot]);
		err = ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring->owner_fd);
		if (err)
			sp__log(rec->logger, SP_LOG_DEBUG,
				"SET_OUTPUT on cpu %d: %s; mapping a new ring",
				rec->cpus[slot], strerror(errno));
	}
	if (err) {
		err = sp__recorder_ring_new(rec, fd, slot);
		if (err)
			return err;
	}
	err = sp__vec_push(&proc->events, &rec->mem, &ev);
	if (!err)
		sp__recorder_ep_add(rec, fd, SP__EP_EVENT);
	return err;
}

int sp__recorder_open_events(struct sp_recorder *rec, struct sp__process *proc,
			     int32_t tid, bool on_exec)
{
	int slot, fd, err;

	for (slot = 0; slot < rec->ncpus; slot++) {
		fd = sp__perf_open(&rec->cfg, tid, rec->cpus[slot], on_exec);
		if (fd < 0)
			return fd;
		if (!rec->sample_type_fixed) {
			rec->sample_type = sp__perf_sample_type(&rec->cfg);
			rec->sample_type_fixed = true;
		}
		rec->sum.kernel_enabled = rec->cfg.kernel;
		err = event_wire(rec, proc, fd, tid, slot);
		if (err) {
			close(fd);
			return err;
		}
		if (rec->enabled && !on_exec &&
		    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
	}
	/* Kernel capture is settled by the first open: pin kernel frames. */
	return sp__kmod_open(rec);
}

static void ioctl_all(struct sp_recorder *rec, unsigned long req)
{
	size_t i, j;

	for (i = 0; i < rec->rings.len; i++)
		ioctl(((struct sp__ring *)sp__vec_at(&rec->rings, i))->owner_fd,
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

int sp__process_alive(const struct sp__process *proc)
{
	struct pollfd pfd;
	int n;

	if (proc->state == SP__PROC_EXITED)
		return 0;
	if (proc->pidfd < 0) {
		char st = 0;
		uint64_t start = 0;
		int err = sp__proc_stat(proc->pid, 0, &start, &st);

		if (err)
			return err == -ENOENT || err == -ESRCH ? 0 : err;
		return start == proc->starttime && st != 'Z' && st != 'X';
	}
	pfd.fd = proc->pidfd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	n = poll(&pfd, 1, 0);
	if (n < 0)
		return -errno;
	return n == 0;
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
