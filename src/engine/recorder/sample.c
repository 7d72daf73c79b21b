/* SPDX-License-Identifier: MIT */
/* Turning one queued sample into spool frames: kernel chain, then user. */

/*
 * Final stack = kernel callchain frames (leaf first, kernel_module.c)
 * followed by the DWARF-unwound user frames. The pipeline unwinds a job
 * (at once inline, in a worker thread otherwise) and hands it back here
 * to be written, in order. Kernel-mode samples
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
#include "stack_hash.h"

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
		sp__kmod_frame(&rec->kmod, &rec->procs, rec->cfg.kernel, ip,
			       &out[n++]);
	}
	return n;
}

static bool is_kernel_mode(const struct sp__qsample *s)
{
	return (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
	       PERF_RECORD_MISC_KERNEL;
}

/* Python's trampolines are read once their arena is filled. */
void sp__live_jit_code(struct sp_recorder *rec, struct sp__process *p,
		       uint64_t now_ns)
{
	sp__jit_arena_check(&rec->procs, p, now_ns);
}

/* The policy checks the user PC of a live process's sample. */
static int cover_pc(struct sp_recorder *rec, struct sp__process *p, uint64_t pc)
{
	if (!p || p->state != SP__PROC_ALIVE)
		return 0;
	return rec->policy->sample_pc(rec, p, pc);
}

/*
 * Checks the user registers of a sample of @p (NULL: unknown) and finds
 * the module map to unwind with: the process's live mappings (inline)
 * or a reference to an immutable version (threaded, stored in
 * @job->ver). Returns whether to unwind.
 */
static bool user_prepare(struct sp_recorder *rec, struct sp__process *p,
			 const struct sp__qsample *s, struct sp__job *job)
{
	job->maps = NULL;
	job->nmaps = 0;
	job->maps_gen = 0;
	job->ver = NULL;
	job->jit = NULL;
	if (s->regs.abi == SP_REGS_ABI_NONE) {
		if (!is_kernel_mode(s))
			rec->sum.errors[SP_SAMPLE_ERR_USER_REGISTERS_MISSING]++;
		return false;
	}
	if (!(s->misc & SP__QSAMPLE_USER_PC)) {
		/* 32-bit tasks never enter the 64-bit unwinder. */
		rec->sum.errors[SP_SAMPLE_ERR_REGISTER_CAPTURE]++;
		return false;
	}
	if (p)
		p->sampled = true;
	/* The policy reads Python's trampolines once an arena is filled. */
	if (p && p->jit_pending && p->py_marked && !rec->procs.no_jit_code)
		rec->policy->jit_code(rec, p, s->time);
	if (cover_pc(rec, p, s->user_pc))
		sp__log(rec->logger, SP_LOG_DEBUG,
			"maps reconcile of pid %d failed", s->pid);
	if (!p || p->state == SP__PROC_EXITED)
		return true;
	job->jit = sp__jit_snap_none(p->jit) ? NULL :
					       sp__jit_snap_get(&rec->procs, p);
	if (!sp__pipeline_is_threaded(rec->pipe)) {
		if (sp__process_mappings(&rec->procs, p, &job->maps,
					 &job->nmaps))
			return false;
		job->maps_gen = p->maps_gen;
		return true;
	}
	job->ver = sp__mver_take(p->mver, p->maps_dirty);
	if (!job->ver && sp__mver_get(&rec->procs, p, &job->ver))
		return false;
	job->maps = job->ver->maps;
	job->nmaps = job->ver->n;
	job->maps_gen = job->ver->gen;
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

int sp__recorder_sample(struct sp_recorder *rec, const struct sp__qsample *s)
{
	const uint64_t *ips = sp__qsample_ips(s);
	struct sp__process *p;
	struct sp__job tmp, *job;
	bool unwind, out;
	int err;

	rec->sum.sample_events++;
	rec->procs.time_ns = s->time;
	if (skipped(rec, s))
		return 0;
	/* May write module records: before this sample takes its slot. */
	p = sp__procs_find(&rec->procs, s->pid);
	err = sp__jit_before_sample(rec, p, s->time);
	if (err)
		return err;
	unwind = user_prepare(rec, p, s, &tmp);
	/* A span starts (offcpu.h); arming may dispatch a job before it. */
	out = rec->offcpu.mode != SP_PROFILE_CPU &&
	      (s->misc & SP__QSAMPLE_UNIT_PERIOD);
	err = out ? sp__offcpu_arm(rec, s->tid, s->time) : 0;
	if (!err)
		err = sp__pipeline_job(rec->pipe, &job);
	if (err) {
		sp__mver_put(&rec->mem, tmp.ver);
		sp__jit_snap_put(&rec->mem, tmp.jit);
		return err;
	}
	job->s = s;
	job->detached = false;
	job->tag = out ? SP__JOB_SWITCH_OUT : SP__JOB_SAMPLE;
	job->time = s->time;
	job->ip = s->ip;
	job->pid = s->pid;
	job->tid = s->tid;
	job->kernel_mode = is_kernel_mode(s);
	job->unwind = unwind;
	job->maps = tmp.maps;
	job->nmaps = tmp.nmaps;
	job->maps_gen = tmp.maps_gen;
	job->ver = tmp.ver;
	job->jit = tmp.jit;
	job->nk = (uint32_t)kernel_frames(rec, ips, s->nr_ips, job->frames,
					  SP__KERNEL_FRAMES);
	job->jit_index = sp__jit_snap_index(job->jit);
	err = sp__pipeline_submit(rec->pipe, job);
	/* Threaded, copied: its stack is valid now only (its job waits). */
	if (!err && sp__pipeline_is_threaded(rec->pipe) && !job->block)
		err = sp__jit_retry(rec, job, true);
	if (!err && out)
		err = sp__offcpu_armed(rec, s->tid);
	return err;
}

/* Returned by sample_put(@off): the sequencer writes this job. */
#define SEQUENCER_WRITES 1

/*
 * The frames of @job into the spool; 0 also when the writer refused.
 * @off: on a worker (sp__recorder_sample_write_off), which writes only a
 * sample whose bytes stay in a reader block and needs no JIT retry.
 */
static int sample_put(struct sp_recorder *rec, struct sp__job *job, bool off)
{
	bool threaded = sp__pipeline_is_threaded(rec->pipe);
	struct sp_frame *f = job->frames;
	size_t n;
	int err;

	if (off && (job->tag != SP__JOB_SAMPLE || !job->block ||
		    sp__jit_retry_due(rec, job)))
		return SEQUENCER_WRITES;
	/*
	 * Inline mode: its stack is in the ring until written; a worker's
	 * job: in the reader block (a copied one was retried when submitted).
	 */
	if (job->tag <= SP__JOB_SWITCH_OUT && (!threaded || job->block)) {
		err = sp__jit_retry(rec, job, threaded);
		if (err)
			return err;
	}
	n = job->n;
	if (n == 0 && job->ip && job->tag <= SP__JOB_SWITCH_OUT) {
		f[0].abs_ip = f[0].file_relative_ip = job->ip;
		f[0].module_id = SP_NO_MODULE;
		f[0].mode = job->kernel_mode ? SP_FRAME_KERNEL : SP_FRAME_USER;
		n = 1;
	}
	if (job->tag != SP__JOB_SAMPLE)
		return sp__offcpu_write(rec, job, f, n);
	/* Its interval is accounted for, written or not (offcpu.h). */
	if (rec->offcpu.mode == SP_PROFILE_WALL)
		sp__offcpu_on_cpu(rec, job->tid, job->time);
	if (n == 0) {
		rec->wsum.empty_stack_samples++;
		return 0;
	}
	/* Hashed where it was unwound, unless the frames changed since. */
	if (job->hashed == n)
		err = sp__writer_sample_hashed(rec->writer, job->time, job->pid,
					       job->tid, f, n, job->hash);
	else
		err = sp_writer_sample(rec->writer, job->time, job->pid,
				       job->tid, f, n);
	if (err == -EINVAL) {
		if (off) /* nothing written: the sequencer logs it */
			return SEQUENCER_WRITES;
		/* A frame the writer rejects must not stall the queue. */
		sp__log(rec->logger, SP_LOG_WARN,
			"sample of tid %d rejected by the writer", job->tid);
		return 0;
	}
	if (err)
		return off ? SEQUENCER_WRITES : err;
	/* Only the unwinder puts a marker, always as the stack's last frame. */
	rec->wsum.truncated_frame_markers += f[n - 1].mode ==
					     SP_FRAME_TRUNCATED;
	rec->wsum.samples++;
	return 0;
}

int sp__recorder_sample_write(void *ctx, struct sp__job *job)
{
	struct sp_recorder *rec = ctx;
	int err = sample_put(rec, job, false);

	/* Written (or dropped): the module map version (threaded mode's) goes. */
	if (!err && job->ver) {
		sp__mver_put(&rec->mem, job->ver);
		job->ver = NULL;
	}
	/* And its JIT index; inline mode's job is filled anew after an error. */
	if (!err || !sp__pipeline_is_threaded(rec->pipe)) {
		sp__jit_snap_put(&rec->mem, job->jit);
		job->jit = NULL;
		job->jit_index = NULL;
	}
	return err;
}

/* Its references stay for ops->discard: they are the sequencer's. */
int sp__recorder_sample_write_off(void *ctx, struct sp__job *job)
{
	return sample_put(ctx, job, true);
}

void sp__recorder_sample_discard(void *ctx, struct sp__job *job)
{
	struct sp_recorder *rec = ctx;

	sp__mver_put(&rec->mem, job->ver);
	job->ver = NULL;
	sp__jit_snap_put(&rec->mem, job->jit);
	job->jit = NULL;
	job->jit_index = NULL;
}
