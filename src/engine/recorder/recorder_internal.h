/* SPDX-License-Identifier: MIT */
/* The recorder object shared by the recorder room's files. */
#ifndef SP_ENGINE_RECORDER_INTERNAL_H
#define SP_ENGINE_RECORDER_INTERNAL_H

#include <stackpulse/recorder.h>
#include <stackpulse/writer.h>

#include "guardian.h"
#include "jit_side.h"
#include "jit_track.h"
#include "kernel_module.h"
#include "mem.h"
#include "offcpu.h"
#include "perf_event.h"
#include "pipeline.h"
#include "policy.h"
#include "process.h"
#include "qsample.h"
#include "recorder_hooks.h"
#include "rings.h"

/*
 * The Recorder composes the rooms below it; it is the only place that
 * knows them all:
 *
 *   perf/      @cfg (event source, fallback ladder), @rings (per CPU)
 *   track/     @procs (processes, modules, versions), @kmod
 *   pipeline/  @pipe: rings -> ordered records -> jobs, calling back
 *              apply.c (one record) and sample.c (one job's write)
 *   here       @policy: what is tracked and how (process or system
 *              mode), loss accounting, recovery, the public API
 *
 * Everything runs on the caller's thread (the sequencer); in threaded
 * mode the pipeline's own threads touch only rings and jobs.
 */

/* Kinds of epoll registrations (high 32 bits of epoll_data.u64). */
#define SP__EP_EVENT 1ull
#define SP__EP_PIDFD 2ull
#define SP__EP_WAKE 3ull /* threaded mode: readers have records */

/* Upper bound of unwinder threads in threaded mode. */
#define SP__WORKERS_MAX SP_RECORDER_THREADS_MAX

/* Pacing of loss reads and recovery sweeps during polls (§1.4). */
#define SP__LOST_READ_NS 100000000ull
#define SP__SWEEP_NS 250000000ull
/*
 * Buffered records reach the spool at least this often, so a Tail (spulse
 * top, a live UI) sees a recording while it runs, not only at its end.
 */
#define SP__FLUSH_NS 250000000ull
/* Per process, at most one uncovered-PC maps reconcile per this. */
#define SP__UNCOVERED_NS 100000000ull

struct sp__spool_file;
struct sp__system;

struct sp_recorder {
	struct sp__mem mem;
	const struct sp_logger *logger;
	struct sp_writer *writer;
	struct sp_unwinder *unwinder;
	struct sp__perf_cfg cfg;
	struct sp__rings rings;
	struct sp__procs procs;
	struct sp__kmod kmod; /* kernel text module (track/kernel_module.c) */
	struct sp__pipeline *pipe;
	const struct sp__policy *policy;     /* in force (a harness's, say) */
	const struct sp__policy *own_policy; /* the mode it was opened for */
	/* The system policy's state (system.c); NULL in process mode. */
	struct sp__system *sys;
	struct sp__recorder_hooks hooks; /* a test harness's (none: zeros) */
	int epfd;
	struct sp__jit_side jit_side; /* JIT side directory (track/jit_side.c) */
	struct sp__offcpu offcpu;     /* off-CPU and wall mode (offcpu.h) */
	struct sp_recording_summary sum;
	/*
	 * What writing samples counts, apart from @sum: threaded mode's
	 * workers write too (sp__recorder_sample_write_off), so read it
	 * holding them off (sp__pipeline_writes_hold).
	 */
	struct {
		uint64_t samples;
		uint64_t empty_stack_samples;
		uint64_t truncated_frame_markers;
	} wsum;
	uint64_t poll_written; /* @wsum.samples when the last poll ended */
	struct sp_poll_summary poll;
	char *path;		    /* spool path (NULL for a caller's sink) */
	struct sp__spool_file *out; /* its file until closed (spool_file.h) */
	struct sp__guardian guardian; /* for STOP attaches (guardian.h) */
	uint64_t lost_pending; /* lost deltas not yet counted as a batch */
	uint64_t last_lost_ns;
	uint64_t last_sweep_ns;
	uint64_t last_flush_ns;
	bool sweep_pending; /* a loss batch made lifecycle state uncertain */
	bool enabled;
	bool finished;
	bool tail_taken;
};

/* recorder.c */
/* The clock records are ordered by (a harness's, or CLOCK_MONOTONIC). */
const struct sp__clock *sp__recorder_clock(const struct sp_recorder *rec);

/* poll.c: waiting, stepping the pipeline, reaping. */
/*
 * Collects ready epoll events without waiting (hang-ups, pidfds of exited
 * processes), so flush and finish retire processes that died since the
 * last poll.
 */
void sp__recorder_collect(struct sp_recorder *rec);
/*
 * sp__recorder_flush is sp_recorder_flush() without the publish: an
 * attach may flush a recording that has not started yet.
 */
int sp__recorder_flush(struct sp_recorder *rec);
/*
 * sp__recorder_publish makes the spool path name the file (spool_file.h)
 * at the first poll, flush, finish or tail: a recorder closed before that
 * leaves the path as it was.
 */
int sp__recorder_publish(struct sp_recorder *rec);
/* Retires dying processes none of whose records is queued any more. */
void sp__recorder_reap(struct sp_recorder *rec);

/* apply.c: one ordered record's effect on state and spool (ops->apply). */
int sp__recorder_apply(void *ctx, uint32_t type, const void *data, size_t len);

/*
 * sample.c: one queued sample to spool frames. The pipeline unwinds its
 * job and hands it back to sp__recorder_sample_write(), in order.
 */
int sp__recorder_sample(struct sp_recorder *rec, const struct sp__qsample *s);
int sp__recorder_sample_write(void *ctx, struct sp__job *job);
/*
 * ops->write_off (CPU mode only): a worker writes @job, touching only
 * the writer and @wsum; 1 for a job the sequencer must write (a JIT
 * retry, a copied sample, one the writer rejects, which it logs, or a
 * write error, which it returns).
 */
int sp__recorder_sample_write_off(void *ctx, struct sp__job *job);
void sp__recorder_sample_discard(void *ctx, struct sp__job *job);

/*
 * jit_code.c: JIT code of jitdump files and GDB JIT lists (track's
 * jit_track.h), around samples and polls.
 */
/* sp__jit_before_sample() for a process with something to do. */
int sp__jit_sample_due(struct sp_recorder *rec, struct sp__process *p,
		       uint64_t time);

/*
 * Before a sample of @p at @time: a due check, new modules, regenerations.
 * Per sample, inline: most processes have no JIT source.
 */
static inline int sp__jit_before_sample(struct sp_recorder *rec,
					struct sp__process *p, uint64_t time)
{
	if (!p || sp__jit_sample_idle(p->jit))
		return 0;
	return sp__jit_sample_due(rec, p, time);
}

/* Whether the unwind ended with a marker after at least one user frame. */
static inline bool sp__job_marker_ended(const struct sp__job *job)
{
	return job->n >= job->nk + 2 &&
	       job->frames[job->n - 1].mode == SP_FRAME_TRUNCATED;
}

/* sp__jit_retry() for a job that ended with a marker. */
int sp__jit_retry_marked(struct sp_recorder *rec, struct sp__job *job,
			 bool writing);

/*
 * After @job was unwound: if it stopped inside possible JIT code of a
 * process with a JIT source, refresh that process (rate-limited) and
 * unwind once more. Only where the job's stack bytes are still valid.
 * @writing: called while jobs are being written (threaded mode), where
 * no module may change: new GDB JIT objects get their modules later.
 * Only an unwind that ended with a marker may have stopped in JIT code;
 * most samples end at the outermost frame: tested first, inline.
 */
static inline bool sp__jit_retry_due(const struct sp_recorder *rec,
				     const struct sp__job *job)
{
	return sp__job_marker_ended(job) && rec->procs.jit && job->unwind;
}

static inline int sp__jit_retry(struct sp_recorder *rec, struct sp__job *job,
				bool writing)
{
	if (!sp__jit_retry_due(rec, job))
		return 0;
	return sp__jit_retry_marked(rec, job, writing);
}
/* Each poll: the routine checks of every tracked process (paced). */
int sp__jit_poll(struct sp_recorder *rec);

/* attach.c / events.c */
int sp__recorder_open_events(struct sp_recorder *rec, struct sp__process *proc,
			     int32_t tid, bool on_exec);
int sp__recorder_set_enabled(struct sp_recorder *rec, bool on);
/* Registers @fd of @kind (SP__EP_*) with the recorder's epoll. */
int sp__recorder_ep_add(struct sp_recorder *rec, int fd, uint64_t kind);
/*
 * Marks @proc finished: tag 7, pidfd closed, fds closed (children mode:
 * held open while a tracked descendant that inherited them lives).
 */
int sp__recorder_retire(struct sp_recorder *rec, struct sp__process *proc);

/* loss.c: PERF_FORMAT_LOST deltas. */
/* Adds the lost deltas of @proc's events to the pending batch. */
int sp__recorder_collect_lost(struct sp_recorder *rec,
			      struct sp__process *proc);
/* The same for a vector of struct sp__event (system mode's CPU events). */
int sp__recorder_collect_lost_events(struct sp_recorder *rec,
				     struct sp__vec *events);
/*
 * Reads every live event's lost counter (at most every 100 ms unless
 * @force); a non-zero batch is counted, bumps lifecycle_gaps and schedules
 * a recovery sweep. Returns 0 or -EPROTO (a counter went backwards or the
 * total overflowed).
 */
int sp__recorder_read_lost(struct sp_recorder *rec, bool force);

/* recovery.c: the loss recovery sweep and thread refresh. */
/*
 * Runs a pending sweep (at most every 250 ms unless @force): each tracked
 * process is checked for death or pid reuse, reconciled with its maps and
 * its threads refreshed. A failed sweep stays pending.
 */
int sp__recorder_sweep(struct sp_recorder *rec, bool force);
/* Reconciles @proc with /proc/PID/maps (rate-limited per process). */
int sp__recorder_reconcile(struct sp_recorder *rec, struct sp__process *proc);

/* discover.c */
/*
 * Children mode: attaches every live descendant of a tracked process
 * that the recorder has no record of (its FORK record was lost). One
 * forked after its parent's events existed inherited them and only gets
 * its process state (modules from /proc); an older one gets events of
 * its own (sp_recorder_attach). Returns 0 or -ENOMEM; other failures of
 * single processes are logged and skipped.
 */
int sp__recorder_discover(struct sp_recorder *rec);

#endif /* SP_ENGINE_RECORDER_INTERNAL_H */
