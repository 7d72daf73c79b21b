/* SPDX-License-Identifier: MIT */
/* Threaded mode: reader threads, the sequencer's side, the unwinder pool. */
#ifndef SP_ENGINE_PIPELINE_H
#define SP_ENGINE_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "reader.h"

struct sp_recorder;

/*
 * The sequencer is the thread that owns the recorder (the one calling
 * sp_recorder_poll): it keeps every piece of process and module state
 * single-threaded, exactly as inline mode does. Readers drain rings in
 * the background, workers unwind; the sequencer merges, applies,
 * dispatches and writes in order.
 *
 * Ordering: the sequencer releases records up to the smallest published
 * reader watermark. A ring created after a reader's last drain may hold
 * records older than that reader's watermark, so until the reader
 * acknowledges a drain that covers the new ring, its contribution is held
 * at the last released watermark (records in a new ring are newer than
 * that: the ring did not exist when it was computed).
 */
struct sp__pipeline {
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
	int wakefd;	      /* readers -> sequencer */
};

/* Starts @workers unwinder threads and the readers (0 on success). */
int sp__pipeline_new(struct sp_recorder *rec, unsigned workers);
/* Stops every thread and frees the pipeline (jobs must be written). */
void sp__pipeline_free(struct sp_recorder *rec);

/*
 * One sequencer step: hand new rings to readers, pull queued records,
 * release those old enough (@all: every record, after a full drain of
 * every ring), write finished jobs (@all: wait for every job).
 */
int sp__pipeline_step(struct sp_recorder *rec, bool all);
/*
 * Switches the readers to rec->vclock (the replay harness's clock) and
 * forgets watermarks taken from the previous clock. Only before records.
 */
int sp__pipeline_set_clock(struct sp_recorder *rec);
/* procs->sync: writes every dispatched job (waits for the workers). */
int sp__pipeline_sync(void *ctx);
/* Writes finished jobs from the head of the window (@wait: all). */
int sp__pipeline_collect(struct sp_recorder *rec, bool wait);
/* Whether a step would make progress now (records queued, a job done). */
bool sp__pipeline_ready(const struct sp_recorder *rec);
/* Whether records or jobs are queued anywhere in the pipeline. */
bool sp__pipeline_pending(const struct sp_recorder *rec);

#endif /* SP_ENGINE_PIPELINE_H */
