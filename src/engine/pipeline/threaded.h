/* SPDX-License-Identifier: MIT */
/* Threaded mode: reader threads, the sequencer's side, the unwinder pool. */
#ifndef SP_ENGINE_THREADED_H
#define SP_ENGINE_THREADED_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline.h"
#include "pool.h"
#include "reader.h"

/*
 * The sequencer is the thread that owns the recorder (the one calling
 * sp_recorder_poll): it keeps every piece of process and module state
 * single-threaded, exactly as inline mode does. Readers drain rings in
 * the background, workers unwind; the sequencer merges, applies and
 * dispatches. Jobs are written in dispatch order by whoever holds the
 * writer lock: in CPU mode mostly the workers (behind.c), which touch
 * only the spool writer and what writes count, else the sequencer.
 *
 * Ordering: the sequencer releases records up to the smallest published
 * reader watermark. A ring created after a reader's last drain may hold
 * records older than that reader's watermark, so until the reader
 * acknowledges a drain that covers the new ring, its contribution is held
 * at the last released watermark (records in a new ring are newer than
 * that: the ring did not exist when it was computed).
 */
struct sp__threaded {
	struct sp__reader *readers;
	unsigned nreaders;
	uint64_t *cover_req;	 /* per reader: request covering its rings */
	uint64_t *unusable_seen; /* per reader: unusable samples counted */
	struct sp__pool pool;
	size_t rings_given;   /* rings of the recorder handed to readers */
	uint64_t released;    /* the last watermark released */
	uint64_t copied;      /* records copied out of starved readers */
	uint64_t jobs;	      /* dispatched to workers */
	uint64_t jobs_inline; /* unwound by the sequencer (copied bytes) */
	uint64_t wait_calls;  /* the sequencer's polls in a full drain */
	int wakefd;	      /* readers and workers -> sequencer */
	/*
	 * Write-behind (behind.c): whoever holds @wlock writes done jobs
	 * from the head of the window, a worker through ops->write_off;
	 * @holds: the sequencer's (nested: a hold inside a write's).
	 */
	unsigned holds;
	char pad0[SP__CACHE_LINE];
	/* 0 free, 1 taken, 2 taken and someone sleeps on it (a futex). */
	_Atomic uint32_t wlock;
	char pad3[SP__CACHE_LINE];
	/* A worker met a job only the sequencer writes: workers wait. */
	_Atomic bool wstop;
	/* Jobs workers wrote (the lock holder's; statistics). */
	_Atomic uint64_t written_behind;
	/*
	 * (position << 1 | by_fd): the sequencer sleeps until the head
	 * reaches that position, on its eventfd (by_fd) or on
	 * @written_word; UINT64_MAX: it does not wait for writes.
	 */
	_Atomic uint64_t wake_at;
	_Atomic uint32_t written_word;
	char pad2[SP__CACHE_LINE];
	/* When the last step ended (clock time), UINT64_MAX during one. */
	_Atomic uint64_t stepped;
	char pad1[SP__CACHE_LINE];
};

/* Starts @workers unwinder threads and the readers (0 on success). */
int sp__threaded_new(struct sp__pipeline *p, unsigned workers);
/* Stops every thread and frees p->threads (unwritten jobs: discard). */
void sp__threaded_free(struct sp__pipeline *p);

/* sp__pipeline_step() of threaded mode (@all: UINT64_MAX was asked). */
int sp__threaded_step(struct sp__pipeline *p, bool all);
/* Writes finished jobs from the head of the window (@wait: all). */
int sp__threaded_collect(struct sp__pipeline *p, bool wait);
/* Switches the readers to p->clock; forgets the old clock's watermarks. */
int sp__threaded_set_clock(struct sp__pipeline *p);
bool sp__threaded_ready(const struct sp__pipeline *p);
/*
 * Both modes (pipeline.c): releases every queued record up to @watermark
 * to ops->apply; inline mode then gives ring space back.
 */
int sp__pipeline_release(struct sp__pipeline *p, uint64_t watermark);
bool sp__threaded_pending(const struct sp__pipeline *p);
/* Whether the job at the head of the window is done (not yet written). */
bool sp__threaded_head_done(const struct sp__pipeline *p);

/* behind.c: the writer lock and the workers' side of writing. */
void sp__behind_init(struct sp__pipeline *p);
/* Workers write through ops->write_off from now on (if it is set). */
void sp__behind_enable(struct sp__pipeline *p);
/*
 * Before the sequencer sleeps: the worker that writes the last job out
 * wakes it. Returns whether not to sleep (written already, or a job
 * waits for the sequencer). sp__behind_disarm() once awake.
 */
bool sp__behind_arm(struct sp__threaded *t);
/* A full window: sleeps until the next SP__POOL_BATCH jobs are written. */
void sp__behind_wait_batch(struct sp__threaded *t);
void sp__behind_disarm(struct sp__threaded *t);
/* The sequencer takes the lock: false when busy and not @wait. */
bool sp__behind_lock(struct sp__threaded *t, bool wait);
/* The sequencer lets go, then writes what finished meanwhile (if any). */
void sp__behind_unlock(struct sp__pipeline *p);

#endif /* SP_ENGINE_THREADED_H */
