/* SPDX-License-Identifier: MIT */
/* Turning one queued sample into spool frames: kernel chain, then user. */

/*
 * Final stack = kernel callchain frames (leaf first, kernel_module.c)
 * followed by the DWARF-unwound user frames. Kernel-mode samples
 * still carry the user registers and stack as of kernel entry, so they
 * are unwound as well. User callchain entries (never requested) are
 * counted and dropped. When nothing comes out, the sample IP alone is
 * written, so a sample is only lost when even that is missing.
 */
#include <errno.h>
#include <string.h>

#include <linux/perf_event.h>

#include "jit_arena.h"
#include "jit_track.h"
#include "logging.h"
#include "mver.h"
#include "pipeline.h"
#include "recorder_internal.h"
#include "unwind_stats.h"

/* Appends kernel frames of the callchain; returns how many. */
static size_t kernel_frames(struct sp_recorder *rec, const uint64_t *ips,
			    uint64_t nr, struct sp_frame *out, size_t cap)
{
	uint64_t ctx = PERF_CONTEXT_KERNEL, i, ip;
	size_t n = 0;

	for (i = 0; i < nr; i++) {
		memcpy(&ip, &ips[i], sizeof(ip));
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = ip;
			continue;
		}
		if (ctx != PERF_CONTEXT_KERNEL) {
			rec->sum.ignored_user_callchain_frames++;
			continue;
		}
		if (n == cap)
			break;
		sp__kmod_frame(rec, ip, &out[n++]);
	}
	return n;
}

static bool is_kernel_mode(const struct sp__qsample *s)
{
	return (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
	       PERF_RECORD_MISC_KERNEL;
}

/*
 * The user PC of a sample outside every module of its process means a
 * mapping record was missed: reconcile with /proc (rate-limited).
 */
static int cover_pc(struct sp_recorder *rec, struct sp__process *p,
		    const struct sp__qsample *s)
{
	uint64_t pc = 0;

	sp_regs_get(&s->regs, SP_REG_PC, &pc); /* checked by user_prepare */
	if (!p || p->state != SP__PROC_ALIVE || rec->replay ||
	    sp__process_covers(p, pc))
		return 0;
	return sp__recorder_reconcile(rec, p);
}

/*
 * Checks the user registers and finds the module map to unwind with:
 * the process's live mappings (inline) or a reference to an immutable
 * version (threaded, stored in @job->ver). Returns whether to unwind.
 */
static bool user_prepare(struct sp_recorder *rec, const struct sp__qsample *s,
			 struct sp__job *job)
{
	struct sp__process *p = sp__procs_find(&rec->procs, s->pid);
	uint64_t pc, sp;

	job->maps = NULL;
	job->nmaps = 0;
	job->ver = NULL;
	job->jit = NULL;
	if (s->regs.abi == SP_REGS_ABI_NONE) {
		if (!is_kernel_mode(s))
			rec->sum.errors[SP_SAMPLE_ERR_USER_REGISTERS_MISSING]++;
		return false;
	}
	if (s->regs.abi != SP_REGS_ABI_64 ||
	    sp_regs_get(&s->regs, SP_REG_PC, &pc) ||
	    sp_regs_get(&s->regs, SP_REG_SP, &sp)) {
		/* 32-bit tasks never enter the 64-bit unwinder. */
		rec->sum.errors[SP_SAMPLE_ERR_REGISTER_CAPTURE]++;
		return false;
	}
	if (p)
		p->sampled = true;
	/* Python's trampolines are read once their arena is filled. */
	if (p && p->jit_pending && p->py_marked && !rec->replay &&
	    !rec->procs.no_jit_code)
		sp__jit_arena_check(&rec->procs, p, s->time);
	if (cover_pc(rec, p, s))
		sp__log(rec->logger, SP_LOG_DEBUG,
			"maps reconcile of pid %d failed", s->pid);
	if (!p || p->state == SP__PROC_EXITED)
		return true;
	job->jit = sp__jit_snap_get(rec, p);
	if (!rec->pipe)
		return !sp__process_mappings(&rec->procs, p, &job->maps,
					     &job->nmaps);
	if (sp__mver_get(&rec->procs, p, &job->ver))
		return false;
	job->maps = job->ver->maps;
	job->nmaps = job->ver->n;
	return true;
}

static bool skipped(struct sp_recorder *rec, const struct sp__qsample *s)
{
	if (s->tid == 0) {
		rec->sum.idle_tid_samples++;
		return true;
	}
	if (s->pid <= 0) {
		rec->sum.missing_pid_samples++;
		return true;
	}
	if (s->tid < 0) {
		rec->sum.missing_tid_samples++;
		return true;
	}
	if (s->time == 0) {
		rec->sum.missing_timestamp_samples++;
		return true;
	}
	return false;
}

/* The job to fill: the inline one, or a free slot of the window. */
static int job_reserve(struct sp_recorder *rec, struct sp__job **out)
{
	struct sp__pool *pool;
	int err;

	if (!rec->pipe) {
		*out = rec->job;
		/* Its own counters, added when written: a retry replaces them. */
		rec->job->stats = &rec->job->own;
		return 0;
	}
	pool = &rec->pipe->pool;
	if (sp__pool_full(pool)) {
		sp__pool_head(pool, true);
		err = sp__pipeline_collect(rec, false);
		if (err)
			return err;
	}
	*out = sp__pool_reserve(pool);
	return 0;
}

int sp__recorder_sample(struct sp_recorder *rec, const struct sp__qsample *s)
{
	const uint64_t *ips = sp__qsample_ips(s);
	struct sp__job tmp, *job;
	bool unwind;
	int err;

	rec->sum.sample_events++;
	rec->procs.time_ns = s->time;
	if (skipped(rec, s))
		return 0;
	/* May write module records: before this sample takes its slot. */
	err = sp__jit_before_sample(rec, sp__procs_find(&rec->procs, s->pid),
				    s->time);
	if (err)
		return err;
	unwind = user_prepare(rec, s, &tmp);
	err = job_reserve(rec, &job);
	if (err) {
		sp__mver_put(&rec->mem, tmp.ver);
		sp__jit_snap_put(&rec->mem, tmp.jit);
		return err;
	}
	job->s = s;
	job->time = s->time;
	job->ip = s->ip;
	job->pid = s->pid;
	job->tid = s->tid;
	job->kernel_mode = is_kernel_mode(s);
	job->unwind = unwind;
	job->maps = tmp.maps;
	job->nmaps = tmp.nmaps;
	job->ver = tmp.ver;
	job->jit = tmp.jit;
	job->nk = (uint32_t)kernel_frames(rec, ips, s->nr_ips, job->frames,
					  SP__KERNEL_FRAMES);
	if (!rec->pipe) {
		sp__job_unwind(rec->unwinder, job);
		err = sp__jit_retry(rec, job, false);
		if (!err)
			err = sp__recorder_sample_write(rec, job);
		sp__jit_snap_put(&rec->mem, job->jit);
		job->jit = NULL;
		return err;
	}
	if (rec->cur_owner) { /* in a reader block: unwound by a worker */
		job->block = rec->cur_owner;
		rec->owner_taken = true;
		sp__pool_dispatch(&rec->pipe->pool);
		rec->pipe->jobs++;
	} else { /* copied into the merge queue, which moves: unwind now */
		sp__pool_dispatch_done(&rec->pipe->pool);
		rec->pipe->jobs_inline++;
		/* Its stack is valid now only; its job is in the window. */
		return sp__jit_retry(rec, job, true);
	}
	return 0;
}

int sp__recorder_sample_write(struct sp_recorder *rec, struct sp__job *job)
{
	struct sp_frame *f = job->frames;
	size_t n, i;
	int err;

	/* A worker's job: its stack stays in the reader block until now. */
	if (rec->pipe && job->block) {
		err = sp__jit_retry(rec, job, true);
		if (err)
			return err;
	}
	n = job->n;
	if (n == 0 && job->ip) {
		f[0].abs_ip = f[0].file_relative_ip = job->ip;
		f[0].module_id = SP_NO_MODULE;
		f[0].mode = job->kernel_mode ? SP_FRAME_KERNEL : SP_FRAME_USER;
		n = 1;
	}
	if (job->stats != &rec->ustats) {
		sp__unwind_stats_add(&rec->ustats, job->stats);
		memset(job->stats, 0, sizeof(*job->stats)); /* once only */
	}
	if (n == 0) {
		rec->sum.empty_stack_samples++;
		return 0;
	}
	err = sp_writer_sample(rec->writer, job->time, job->pid, job->tid, f,
			       n);
	if (err == -EINVAL) {
		/* A frame the writer rejects must not stall the queue. */
		sp__log(rec->logger, SP_LOG_WARN,
			"sample of tid %d rejected by the writer", job->tid);
		return 0;
	}
	if (err)
		return err;
	for (i = 0; i < n; i++)
		rec->sum.truncated_frame_markers += f[i].mode ==
						    SP_FRAME_TRUNCATED;
	rec->sum.samples++;
	rec->poll.samples++;
	return 0;
}
