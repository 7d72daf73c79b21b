/* SPDX-License-Identifier: MIT */
/* System-wide recording: options, filters and the per-CPU events. */

/*
 * A system-mode recorder is an ordinary recorder (same writer, rings,
 * merge queue, process table, apply step) plus struct sp__system: one
 * event per CPU with pid = -1 (cgroup mode: the cgroup's directory fd and
 * PERF_FLAG_PID_CGROUP), each mapped as that CPU's ring. A CPU-wide event
 * sees every task that runs there, so no process needs events of its own
 * and nothing is ever stopped. The system options are checked, and the
 * cgroup opened, before the spool file is created (recorder.c), so a bad
 * cgroup path does not truncate an existing file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "kernel_module.h"
#include "logging.h"
#include "opts.h"
#include "system.h"

static int sysopts_check(const struct sp_system_opts *o)
{
	size_t i;

	if (o->flags & ~SP_SYSTEM_EXCLUDE_SELF)
		return -EINVAL;
	if ((o->npids && !o->pids) || (o->ncomms && !o->comms))
		return -EINVAL;
	for (i = 0; i < o->npids; i++)
		if (o->pids[i] <= 0)
			return -EINVAL;
	for (i = 0; i < o->ncomms; i++)
		if (!o->comms[i] || !o->comms[i][0])
			return -EINVAL;
	return o->cgroup_path && !o->cgroup_path[0] ? -EINVAL : 0;
}

int sp__system_prepare(const struct sp_system_opts *in,
		       struct sp_system_opts *o, int *cgfd)
{
	int err;

	*cgfd = -1;
	err = sp__opts_load(in, in ? in->size : 0, o, sizeof(*o));
	if (!err)
		err = sysopts_check(o);
	if (err)
		return err;
	o->size = sizeof(*o);
	if (!o->cgroup_path)
		return 0;
	*cgfd = sp__cgroup_open(o->cgroup_path);
	return *cgfd < 0 ? *cgfd : 0;
}

static int pid_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return x < y ? -1 : x > y;
}

static int filters_copy(struct sp_recorder *rec, const struct sp_system_opts *o)
{
	struct sp__system *sys = rec->sys;
	size_t i;

	if (o->npids) {
		sys->pids =
			sp__mem_calloc(&rec->mem, o->npids, sizeof(int32_t));
		if (!sys->pids)
			return -ENOMEM;
		memcpy(sys->pids, o->pids, o->npids * sizeof(int32_t));
		sys->npids = o->npids;
		qsort(sys->pids, sys->npids, sizeof(int32_t), pid_cmp);
	}
	if (o->ncomms) {
		sys->comms = sp__mem_calloc(&rec->mem, o->ncomms, SP__COMM_LEN);
		if (!sys->comms)
			return -ENOMEM;
		/* The kernel keeps 15 bytes of a name: compare those. */
		for (i = 0; i < o->ncomms; i++)
			strncpy(sys->comms[i], o->comms[i], SP__COMM_LEN - 1);
		sys->ncomms = o->ncomms;
	}
	return 0;
}

/*
 * Opens @src's event (NULL: the primary source) on @t and keeps it: the
 * primary one owns its CPU's ring, wall mode's context-switch event goes
 * into that ring.
 */
static int cpu_event(struct sp_recorder *rec, struct sp__perf_target *t,
		     int slot, const struct sp__event_source *src)
{
	struct sp__event ev;
	int fd, err;

	t->source = src;
	fd = sp__perf_open(&rec->cfg, t);
	if (fd < 0)
		return fd;
	memset(&ev, 0, sizeof(ev));
	ev.fd = fd;
	ev.tid = -1;
	err = sp__vec_push(&rec->sys->events, &rec->mem, &ev);
	if (err) {
		close(fd);
		return err;
	}
	if (src)
		return sp__rings_wire(&rec->rings, &rec->cfg, fd, slot);
	err = sp__rings_map(&rec->rings, &rec->cfg, fd, slot);
	return err ? err : sp__recorder_ep_add(rec, fd, SP__EP_EVENT);
}

/* One event per CPU (of the cgroup, if any), each its CPU's ring owner. */
static int cpus_open(struct sp_recorder *rec)
{
	struct sp__perf_target t = { .kind = SP__TARGET_CPU };
	int slot, err;

	if (rec->sys->cgroup_fd >= 0) {
		t.kind = SP__TARGET_CGROUP;
		t.cgroup_fd = rec->sys->cgroup_fd;
	}
	for (slot = 0; slot < rec->rings.ncpus; slot++) {
		t.cpu = rec->rings.cpus[slot];
		err = cpu_event(rec, &t, slot, NULL);
		if (!err && rec->cfg.extra)
			err = cpu_event(rec, &t, slot, rec->cfg.extra);
		if (err)
			return err;
	}
	sp__rings_fix_type(&rec->rings, &rec->cfg);
	rec->sum.kernel_enabled = rec->cfg.kernel;
	/* Now, not on the first kernel frame (the kallsyms scan is slow). */
	return sp__kmod_open(&rec->kmod, &rec->procs, rec->cfg.kernel);
}

static int cpus_enable(struct sp_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->sys->events.len; i++)
		if (ioctl(((struct sp__event *)sp__vec_at(&rec->sys->events, i))
				  ->fd,
			  PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
	return 0;
}

/*
 * Every CPU's ring carries every process's samples here, so the default
 * ring holds more of them than in process mode (within the same budget).
 */
#define SYSTEM_RING_SAMPLES 512

int sp__system_start(struct sp_recorder *rec, const struct sp_recorder_opts *ro,
		     const struct sp_system_opts *o, int cgfd)
{
	struct sp__system *sys = sp__mem_calloc(&rec->mem, 1, sizeof(*sys));
	int err;

	if (!sys) {
		if (cgfd >= 0)
			close(cgfd);
		return -ENOMEM;
	}
	sys->cgroup_fd = cgfd;
	sys->flags = o->flags;
	sys->self = (int32_t)getpid();
	if (!ro->ring_samples)
		rec->rings.ring_samples = SYSTEM_RING_SAMPLES;
	sp__vec_init(&sys->events, sizeof(struct sp__event));
	sp__vec_init(&sys->ignored, sizeof(int32_t));
	rec->sys = sys;
	/* Most modules of the machine are never sampled: no eager tables. */
	rec->procs.lazy_tables = true;
	err = filters_copy(rec, o);
	if (!err)
		err = cpus_open(rec);
	/*
	 * Enabled after the scan (which prepares every module of every
	 * process and takes a while), or the rings overflow meanwhile. What
	 * changes in between is caught later: a new pid by its first sample,
	 * a new mapping by the uncovered-PC reconcile.
	 */
	if (!err)
		err = sp__system_scan(rec);
	if (!err && rec->enabled)
		err = cpus_enable(rec);
	return err;
}

/* Adds the CPU events' lost deltas to the pending batch. */
static int collect_lost(struct sp_recorder *rec)
{
	return sp__recorder_collect_lost_events(rec, &rec->sys->events);
}

/*
 * Lost records may have hidden a fork that reused a rejected pid, so the
 * filters judge every pid again on its next sample.
 */
static void sweep_begin(struct sp_recorder *rec)
{
	rec->sys->ignored.len = 0;
}

static void system_free(struct sp_recorder *rec)
{
	struct sp__system *sys = rec->sys;
	size_t i;

	if (!sys)
		return;
	for (i = 0; i < sys->events.len; i++) {
		int fd = ((struct sp__event *)sp__vec_at(&sys->events, i))->fd;

		/* The ring holds a duplicate: disable, or it keeps sampling. */
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		close(fd);
	}
	sp__vec_fini(&sys->events, &rec->mem);
	sp__vec_fini(&sys->ignored, &rec->mem);
	if (sys->pids)
		sp__mem_free(&rec->mem, sys->pids,
			     sys->npids * sizeof(int32_t));
	if (sys->comms)
		sp__mem_free(&rec->mem, sys->comms, sys->ncomms * SP__COMM_LEN);
	if (sys->cgroup_fd >= 0)
		close(sys->cgroup_fd);
	sp__mem_free(&rec->mem, sys, sizeof(*sys));
	rec->sys = NULL;
}

const struct sp__policy sp__policy_system = {
	.per_process_events = false,
	.sweep_sampled_only = true,
	.prune = true,
	.sample = sp__system_sample,
	.mmap = sp__system_mmap,
	.exec = sp__system_exec,
	.follow_fork = sp__system_follow_fork,
	.watch = sp__live_watch,
	.group_gone = sp__live_group_gone,
	.sample_pc = sp__live_sample_pc,
	.jit_code = sp__live_jit_code,
	.jit_refresh = sp__live_jit_refresh,
	.sweep = sp__recorder_sweep,
	.sweep_begin = sweep_begin,
	.collect_lost = collect_lost,
	/* Disabled CPU events saw no fork/exec/mmap: read /proc again. */
	.resume = sp__system_scan,
	.free = system_free,
};
