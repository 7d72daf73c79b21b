/* SPDX-License-Identifier: MIT */
/* Applying ordered side-band records to process and module state. */

/*
 * Records arrive here in timestamp order, so a sample always sees the
 * modules that were mapped when it was taken. Only executable user
 * mappings of tracked processes become modules. A COMM with the exec flag
 * starts a new image: every module of the process is retired (tag 7) and
 * the MMAP2 records that follow rebuild them. A leader's EXIT does not end
 * the process (its threads may go on); the group is gone only when its
 * pidfd (or /proc) says so.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "logging.h"
#include "perf_record.h"
#include "proc_maps.h"
#include "recorder_internal.h"

static struct sp__process *live_proc(struct sp_recorder *rec, int32_t pid)
{
	struct sp__process *p = sp__procs_find(&rec->procs, pid);

	return p && p->state != SP__PROC_EXITED ? p : NULL;
}

static bool path_is_file(const char *path)
{
	return path[0] == '/' || strcmp(path, "[vdso]") == 0;
}

static int apply_mmap2(struct sp_recorder *rec, const void *r, size_t len)
{
	struct sp__perf_mmap2 m;
	struct sp__map_desc d;
	struct sp__process *p;

	if (sp__perf_parse_mmap2(r, len, rec->rings.sample_type, &m))
		return 0;
	if ((m.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
		    PERF_RECORD_MISC_KERNEL ||
	    !(m.prot & PROT_EXEC) || !path_is_file(m.path))
		return 0;
	p = live_proc(rec, m.pid);
	if (!p) {
		int err = rec->policy->mmap(rec, m.pid, &p);

		if (err)
			return err;
	}
	if (!p || m.len == 0 || m.addr + m.len < m.addr)
		return 0;
	memset(&d, 0, sizeof(d));
	d.start = m.addr;
	d.end = m.addr + m.len;
	d.offset = m.pgoff;
	d.inode = m.ino;
	d.inode_generation = m.ino_generation;
	d.dev_major = m.maj;
	d.dev_minor = m.min;
	d.path = m.path;
	d.path_len = strlen(m.path);
	return sp__process_map(&rec->procs, p, &d);
}

static int apply_comm(struct sp_recorder *rec, const void *r, size_t len)
{
	struct sp__perf_comm c;
	struct sp__process *p;
	int err;

	if (sp__perf_parse_comm(r, len, rec->rings.sample_type, &c) || !c.exec)
		return 0;
	p = live_proc(rec, c.pid);
	err = rec->policy->exec(rec, c.pid, c.comm, &p);
	if (err)
		return err;
	if (!p)
		return 0;
	p->leader_exited = false;
	p->py_support = SP__PY_UNKNOWN; /* a new image: probe again */
	return sp__process_retire_all(&rec->procs, p);
}

/* The live hooks of both policies (policy.h): a followed child's pidfd. */
void sp__live_watch(struct sp_recorder *rec, struct sp__process *child)
{
	long fd = syscall(SYS_pidfd_open, (pid_t)child->pid, 0);

	child->pidfd = fd < 0 ? -1 : (int)fd;
	if (child->pidfd >= 0) {
		sp__recorder_ep_add(rec, child->pidfd, SP__EP_PIDFD);
		sp__proc_stat(child->pid, 0, &child->starttime, NULL);
	}
}

/* A leader's EXIT: the group is gone once nothing of it is left alive. */
bool sp__live_group_gone(struct sp_recorder *rec, struct sp__process *p)
{
	(void)rec;
	return sp__process_alive(p) == 0;
}

/* A forked child process (not a thread) of a tracked parent. */
static int apply_fork_child(struct sp_recorder *rec,
			    const struct sp__perf_task *t)
{
	struct sp__process *parent = live_proc(rec, t->ppid), *child;
	struct sp__process *old = live_proc(rec, t->pid);
	int err;

	if (!parent)
		return 0;
	/*
	 * The pid of a process whose death was seen, forked again: a reused
	 * pid. Its records all came before this one (time order), so the
	 * old generation is retired now, before the new one is tracked.
	 */
	if (old && (old->state == SP__PROC_DYING || old->leader_exited)) {
		err = sp__recorder_retire(rec, old);
		if (err)
			return err;
		old = NULL;
	}
	if (old)
		return 0;
	err = sp__procs_add(&rec->procs, t->pid, &child);
	if (err)
		return err;
	rec->policy->watch(rec, child);
	child->py_support = parent->py_support;
	child->parent = parent;
	return sp__process_clone_modules(&rec->procs, parent, child);
}

static int apply_task(struct sp_recorder *rec, uint32_t type, const void *r,
		      size_t len)
{
	struct sp__perf_task t;
	struct sp__process *p;

	if (sp__perf_parse_task(r, len, &t))
		return 0;
	if (type == PERF_RECORD_FORK) {
		if (t.pid == t.ppid || !rec->policy->follow_fork(rec, t.pid))
			return 0;
		return apply_fork_child(rec, &t);
	}
	/* A thread that exits has run since its last switch out. */
	if (t.tid > 0) {
		int err = sp__offcpu_apply_cut(rec, SP__JOB_EXIT, t.pid, t.tid,
					       t.time);

		if (err)
			return err;
	}
	p = live_proc(rec, t.pid);
	if (!p)
		return 0;
	if (t.tid == t.pid)
		p->leader_exited = true;
	if (p->leader_exited && p->state == SP__PROC_ALIVE &&
	    rec->policy->group_gone(rec, p)) {
		/* Its records are all older than this EXIT's time. */
		sp__process_dying(p, rec->procs.time_ns);
	}
	return 0;
}

/*
 * PERF_RECORD_LOST repeats what the events' lost counters say, so it
 * counts only when they cannot be read; LOST_SAMPLES (samples dropped
 * before reaching the ring) is counted always, but as no lifecycle gap.
 */
static void apply_lost(struct sp_recorder *rec, uint64_t lost, bool gap)
{
	if (!lost)
		return;
	rec->sum.lost_events += lost;
	rec->poll.lost_events += lost;
	if (!gap)
		return;
	rec->sum.lifecycle_gaps++;
	rec->sweep_pending = true;
}

/* The policy decides first whether a sample is kept (system filters). */
static int apply_sample(struct sp_recorder *rec, const struct sp__qsample *s)
{
	int keep = rec->policy->sample(rec, s->pid);

	return keep <= 0 ? keep : sp__recorder_sample(rec, s);
}

/*
 * Side-band records carry their time in the sample_id_all trailer. A
 * PERF_RECORD_LOST's is when its ring had room again: the loss began
 * after the ring's record before it (offcpu.h), returned in @began.
 */
static void note_time(struct sp_recorder *rec, uint32_t type, const void *r,
		      size_t len, uint64_t *began)
{
	struct sp__perf_id id;

	*began = 0;
	if (sp__perf_parse_id(r, len, rec->rings.sample_type, &id))
		return;
	rec->procs.time_ns = id.time;
	if (type == PERF_RECORD_LOST)
		*began = sp__offcpu_loss_start(rec, id.cpu);
	sp__offcpu_note(rec, id.cpu, id.time);
}

int sp__recorder_apply(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct sp_recorder *rec = ctx;
	const struct sp__qsample *s = data;
	uint64_t lost = 0, began = 0;

	if (type != PERF_RECORD_SAMPLE)
		note_time(rec, type, data, len, &began);
	switch (type) {
	case PERF_RECORD_SAMPLE:
		if (rec->offcpu.mode != SP_PROFILE_CPU) /* per sample */
			sp__offcpu_note(rec, s->cpu, s->time);
		return apply_sample(rec, s);
	case PERF_RECORD_MMAP2:
		return apply_mmap2(rec, data, len);
	case PERF_RECORD_COMM:
		return apply_comm(rec, data, len);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return apply_task(rec, type, data, len);
	case PERF_RECORD_LOST:
		if (!rec->cfg.read_lost &&
		    !sp__perf_parse_lost(data, len, &lost))
			apply_lost(rec, lost, true);
		/*
		 * A switch-in may be among them: open spans end where the
		 * loss began, never later (the thread may have run since).
		 */
		return sp__offcpu_apply_cut(rec, SP__JOB_LOSS, 0, 0, began);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return sp__offcpu_apply_switch(rec, type, data, len);
	case PERF_RECORD_LOST_SAMPLES:
		if (!sp__perf_parse_lost_samples(data, len, &lost))
			apply_lost(rec, lost, false);
		return 0;
	case PERF_RECORD_THROTTLE:
		rec->sum.throttle_events++; /* samples were not taken */
		return 0;
	default:
		return 0;
	}
}
