/* SPDX-License-Identifier: MIT */
/* Turning one queued sample into spool frames: kernel chain, then user. */

/*
 * Final stack = kernel callchain frames (leaf first, unpinned, mode
 * KERNEL) followed by the DWARF-unwound user frames. Kernel-mode samples
 * still carry the user registers and stack as of kernel entry, so they
 * are unwound as well. User callchain entries (never requested) are
 * counted and dropped. When nothing comes out, the sample IP alone is
 * written, so a sample is only lost when even that is missing.
 */
#include <errno.h>
#include <string.h>

#include <linux/perf_event.h>

#include "logging.h"
#include "recorder_internal.h"

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
		out[n].abs_ip = ip;
		out[n].file_relative_ip = ip;
		out[n].module_id = SP_NO_MODULE;
		out[n].mode = SP_FRAME_KERNEL;
		n++;
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
	uint64_t pc = s->regs.r[SP_X86_64_RIP];

	if (!p || p->state != SP__PROC_ALIVE || sp__process_covers(p, pc))
		return 0;
	return sp__recorder_reconcile(rec, p);
}

static size_t user_frames(struct sp_recorder *rec, const struct sp__qsample *s,
			  const unsigned char *stack, struct sp_frame *out,
			  size_t cap)
{
	const uint32_t need = (1u << SP_X86_64_RIP) | (1u << SP_X86_64_RSP);
	const struct sp_mapping *maps = NULL;
	struct sp__process *p = sp__procs_find(&rec->procs, s->pid);
	size_t nmaps = 0;
	int n;

	if (s->regs.abi == SP_REGS_ABI_NONE) {
		if (!is_kernel_mode(s))
			rec->sum.errors[SP_SAMPLE_ERR_USER_REGISTERS_MISSING]++;
		return 0;
	}
	if (s->regs.abi != SP_REGS_ABI_64 || (s->regs.valid & need) != need) {
		/* 32-bit tasks never enter the 64-bit unwinder. */
		rec->sum.errors[SP_SAMPLE_ERR_REGISTER_CAPTURE]++;
		return 0;
	}
	if (cover_pc(rec, p, s))
		sp__log(rec->logger, SP_LOG_DEBUG,
			"maps reconcile of pid %d failed", s->pid);
	if (p && p->state != SP__PROC_EXITED &&
	    sp__process_mappings(&rec->procs, p, &maps, &nmaps))
		return 0;
	n = sp_unwinder_unwind(rec->unwinder, &s->regs, stack,
			       (size_t)s->stack_len, s->regs.r[SP_X86_64_RSP],
			       maps, nmaps, out, cap, &rec->ustats);
	return n > 0 ? (size_t)n : 0;
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
	const uint64_t *ips = (const uint64_t *)(const void *)(s + 1);
	const unsigned char *stack = (const unsigned char *)(ips + s->nr_ips);
	struct sp_frame *f = rec->frames;
	size_t n, i;
	int err;

	rec->sum.sample_events++;
	rec->procs.time_ns = s->time;
	if (skipped(rec, s))
		return 0;
	n = kernel_frames(rec, ips, s->nr_ips, f, SP__FRAMES_MAX / 2);
	n += user_frames(rec, s, stack, f + n, SP__FRAMES_MAX - n);
	if (n == 0 && s->ip) {
		f[0].abs_ip = f[0].file_relative_ip = s->ip;
		f[0].module_id = SP_NO_MODULE;
		f[0].mode = is_kernel_mode(s) ? SP_FRAME_KERNEL : SP_FRAME_USER;
		n = 1;
	}
	if (n == 0) {
		rec->sum.empty_stack_samples++;
		return 0;
	}
	for (i = 0; i < n; i++)
		rec->sum.truncated_frame_markers += f[i].mode ==
						    SP_FRAME_TRUNCATED;
	err = sp_writer_sample(rec->writer, s->time, s->pid, s->tid, f, n);
	if (err == -EINVAL) {
		/* A frame the writer rejects must not stall the queue. */
		sp__log(rec->logger, SP_LOG_WARN,
			"sample of tid %d rejected by the writer", s->tid);
		return 0;
	}
	if (err)
		return err;
	rec->sum.samples++;
	rec->poll.samples++;
	return 0;
}
