/* SPDX-License-Identifier: MIT */
/* The recording pipeline: rings -> ordered records -> unwound jobs. */
#ifndef SP_ENGINE_PIPELINE_H
#define SP_ENGINE_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <stackpulse/log.h>
#include <stackpulse/recorder.h>
#include <stackpulse/unwind.h>

#include "clock.h"
#include "drain.h"
#include "mem.h"
#include "merge.h"
#include "pool.h"
#include "rings.h"

/*
 * The pipeline moves records from the perf rings to whoever owns process
 * state (the recorder), in timestamp order, and unwinds the samples that
 * owner turns into jobs:
 *
 *   rings --drain--> merge queue --release (watermark)--> ops->apply
 *                                                            | job
 *   ops->write <--in dispatch order-- unwind (here or workers) <+
 *
 * It knows nothing of processes, modules or the spool: it calls back
 * through struct sp__pipeline_ops only, on the thread that calls
 * sp__pipeline_step() (the sequencer; ops->write_off on workers too),
 * and the owner calls down into it.
 *
 * Inline mode (no workers): a step drains every ring into the merge
 * queue (samples stay in the ring: it is consumed up to the oldest
 * record still queued), releases what is not newer than the watermark
 * taken before the drain, and each job is unwound and written at once.
 * Threaded mode (threaded.c): reader threads drain the rings, the
 * sequencer merges what they queued and releases it up to the smallest
 * reader watermark; jobs go to unwinder threads and are written in
 * dispatch order (by the workers themselves with ops->write_off), so the
 * spool is the same as in inline mode.
 *
 * A new stage (say, batching before the sequencer) goes into this room:
 * the owner keeps seeing only apply and write.
 */

/** struct sp__pipeline_ops is how the pipeline reaches its owner. */
struct sp__pipeline_ops {
	/*
	 * One record, in timestamp order; @data is valid during the call.
	 * An error stops the release; the record stays queued.
	 */
	int (*apply)(void *ctx, uint32_t type, const void *data, size_t len);
	/*
	 * One job, in dispatch order, once unwound. An error leaves it at
	 * the head of the window, offered again by the next step.
	 */
	int (*write)(void *ctx, struct sp__job *job);
	/*
	 * Optional (NULL: the sequencer writes every job). ops->write on a
	 * worker, in dispatch order too, under the writer lock, while the
	 * sequencer goes on applying records: it may touch only the spool
	 * writer and what only writes touch (see sp__pipeline_writes_hold),
	 * and keeps the job's references for ops->discard. Nonzero: nothing
	 * was written, the job needs the sequencer's ops->write.
	 */
	int (*write_off)(void *ctx, struct sp__job *job);
	/*
	 * Drops a job's references: a job that will never be written
	 * (closed without a flush), or one that ops->write_off wrote.
	 */
	void (*discard)(void *ctx, struct sp__job *job);
};

/** struct sp__pipeline_cfg is what sp__pipeline_new() builds from. */
struct sp__pipeline_cfg {
	const struct sp__mem *mem;
	const struct sp_logger *logger;
	struct sp_unwinder *unwinder;
	struct sp__rings *rings; /* must outlive the pipeline */
	unsigned workers;	 /* unwinder threads; 0 = inline mode */
	size_t job_frames;	 /* frames per job (sp__job_frames()) */
	const struct sp__pipeline_ops *ops;
	void *ctx;
};

struct sp__threaded;

/** struct sp__pipeline is one recorder's pipeline (either mode). */
struct sp__pipeline {
	const struct sp__mem *mem;
	const struct sp_logger *logger;
	struct sp_unwinder *unwinder;
	struct sp__rings *rings;
	const struct sp__pipeline_ops *ops;
	void *ctx;
	const struct sp__clock *clock;
	/* Optional: sees every record a drain consumes (fixture capture). */
	void (*tap)(void *ctx, size_t ring, const void *rec, size_t len);
	void *tap_ctx;
	struct sp__merge merge;
	/*
	 * While a record is applied, @cur_owner is the reader block holding
	 * it (NULL when it was copied); a sample handed to a worker sets
	 * @owner_taken so the block is released only once it is written.
	 */
	void *cur_owner;
	bool owner_taken;
	void *scratch;	     /* SP__RING_RECORD_MAX bytes (inline drains) */
	struct sp__job *job; /* inline mode's only job */
	struct sp__walk_memo *memo;   /* the sequencer's walk memo */
	size_t job_frames;	      /* frames of every job */
	struct sp__threaded *threads; /* NULL: inline mode */
	/*
	 * Inline mode: every record older than this was applied (the last
	 * watermark released; threaded mode keeps its own).
	 */
	uint64_t released;
	/* Counted here, added to the recorder's summary. */
	struct sp_unwind_stats ustats;
	uint64_t unusable; /* samples read that could not be parsed */
	uint64_t dropped;  /* records lost: the merge queue was out of memory */
};

/* Starts the pipeline (threaded mode: its threads). Returns 0 or -errno. */
int sp__pipeline_new(const struct sp__pipeline_cfg *cfg,
		     struct sp__pipeline **out);
/*
 * Stops every thread and frees the pipeline; jobs not written go to
 * ops->discard. NULL is a no-op.
 */
void sp__pipeline_free(struct sp__pipeline *p);

static inline bool sp__pipeline_is_threaded(const struct sp__pipeline *p)
{
	return p->threads != NULL;
}

/*
 * One step of the sequencer: moves what the rings hold into the merge
 * queue, releases (ops->apply) every record not newer than the
 * watermark and writes (ops->write) the jobs that are done. @upto is the
 * clock reading taken before the step: inline mode releases up to it
 * (its drain comes after the reading), threaded mode up to the readers'
 * watermarks. UINT64_MAX: everything (flush): every ring drained, every
 * record released, every job written.
 */
int sp__pipeline_step(struct sp__pipeline *p, uint64_t upto);

/* Whether a step would make progress now (records queued, a job done). */
bool sp__pipeline_ready(const struct sp__pipeline *p);
/* Whether records or jobs wait anywhere: rings, readers, queue, window. */
bool sp__pipeline_pending(const struct sp__pipeline *p);
/*
 * How long the sequencer may sleep in epoll for @timeout_ms wanted. With
 * jobs out, also asks the worker that finishes the next batch of them to
 * write the wake fd (0: one is done already, do not sleep).
 */
int sp__pipeline_timeout(struct sp__pipeline *p, int timeout_ms);
/* The readers' eventfd the sequencer sleeps on (-1 in inline mode). */
int sp__pipeline_wake_fd(const struct sp__pipeline *p);

/*
 * Whether records of @pid may still be queued: in the merge queue, or in
 * a ring (or a reader) when @seen_ns is not yet released.
 */
bool sp__pipeline_has_records(const struct sp__pipeline *p, int32_t pid,
			      uint64_t seen_ns);

/* Threaded mode's halves of the two below (threaded.c). */
int sp__threaded_job(struct sp__pipeline *p, struct sp__job **out);
int sp__threaded_submit(struct sp__pipeline *p, struct sp__job *job);

/*
 * The job for the sample being applied (ops->apply of a sample): the
 * inline job, or the next slot of the window (written first when full).
 * Fill it, then sp__pipeline_submit() it. Returns 0 or a write error.
 * Per sample, so inline mode's path is inline.
 */
static inline int sp__pipeline_job(struct sp__pipeline *p, struct sp__job **out)
{
	if (p->threads)
		return sp__threaded_job(p, out);
	*out = p->job;
	return 0;
}

/*
 * A job's unwind counters join the pipeline's once it is written
 * (ops->write may unwind it again, replacing them), and are cleared for
 * the job's next use.
 */
static inline void sp__pipeline_count(struct sp__pipeline *p,
				      struct sp__job *job)
{
	struct sp_unwind_stats *st = job->stats;

	if (job->stats_rare) {
		sp_unwind_stats_add(&p->ustats, st);
		memset(st, 0, sizeof(*st));
		return;
	}
	/* Per sample: only these three are set (the worker checked). */
	p->ustats.samples += st->samples;
	p->ustats.frames += st->frames;
	p->ustats.truncated += st->truncated;
	st->samples = st->frames = st->truncated = 0;
}

/*
 * Unwinds @job: inline mode at once, then writes it (ops->write);
 * threaded mode hands it to a worker when its bytes stay in a reader
 * block, else unwinds it here. Returns 0 or the write error.
 */
static inline int sp__pipeline_submit(struct sp__pipeline *p,
				      struct sp__job *job)
{
	int err;

	if (p->threads)
		return sp__threaded_submit(p, job);
	sp__job_unwind(p->unwinder, p->memo, job);
	err = p->ops->write(p->ctx, job);
	if (!err)
		sp__pipeline_count(p, job);
	else /* the record is applied again: a new unwind */
		memset(job->stats, 0, sizeof(*job->stats));
	return err;
}

/* The walk memo of the sequencer's unwinds (unwind_jit.h). */
static inline struct sp__walk_memo *
sp__pipeline_memo(const struct sp__pipeline *p)
{
	return p->memo;
}

/*
 * Writes every job dispatched so far (procs->sync; @p as void *): the
 * spool writer is the caller's until it dispatches again. Inside a write
 * (a JIT retry's) it is the caller's already: nothing to do.
 */
int sp__pipeline_sync(void *p);

/*
 * Threaded mode with ops->write_off: workers write while the sequencer
 * applies. The sequencer holds them off around any other use of the
 * spool writer (outside a sync) and while it reads what writes count;
 * let go writes what finished meanwhile. Inline mode: nothing.
 */
void sp__pipeline_writes_hold(struct sp__pipeline *p);
void sp__pipeline_writes_let_go(struct sp__pipeline *p);

/* The clock watermarks come from (before any record is fed). */
int sp__pipeline_set_clock(struct sp__pipeline *p,
			   const struct sp__clock *clock);
/* The drain tap (NULL: none); inline mode only, -EINVAL otherwise. */
int sp__pipeline_set_tap(struct sp__pipeline *p,
			 void (*tap)(void *ctx, size_t ring, const void *rec,
				     size_t len),
			 void *ctx);
/* Asks every reader for a drain now (threaded mode; else nothing). */
void sp__pipeline_kick(struct sp__pipeline *p);
/*
 * Whether every record up to @t was released and written and nothing
 * waits (what a replay feeding batches waits for).
 */
bool sp__pipeline_caught_up(const struct sp__pipeline *p, uint64_t t);

/*
 * struct sp__pipeline_syscalls counts the system calls the pipeline's
 * threads made to sleep and to wake each other (for benchmarks; the
 * recorder's own epoll wait is not in them).
 */
struct sp__pipeline_syscalls {
	uint64_t futex;	  /* the pool: waits and wakes */
	uint64_t eventfd; /* readers: epoll waits, eventfd writes; drains */
};

/* Fills @out (zeros in inline mode). Thread: the sequencer's. */
void sp__pipeline_syscalls(const struct sp__pipeline *p,
			   struct sp__pipeline_syscalls *out);

/* Fills @st (its @size set by the caller) from the threads' counters. */
void sp__pipeline_stats(const struct sp__pipeline *p,
			struct sp_pipeline_stats *st);

#endif /* SP_ENGINE_PIPELINE_H */
