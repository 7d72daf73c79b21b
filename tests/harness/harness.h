/* SPDX-License-Identifier: MIT */
/* The pipeline replay harness: capture a fixture, replay it without perf. */
#ifndef SP_ENGINE_HARNESS_H
#define SP_ENGINE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/recorder.h>

#include "fixture.h"
#include "pipeline.h"
#include "vec.h"

/*
 * The harness is test code: a static library for tests and benches only,
 * never part of libstackpulse. It reaches the recorder through one door,
 * recorder_hooks.h: a drain tap for capture, a virtual clock and a
 * tracking policy that never reads /proc for replay.
 *
 * Capture (inline mode only): after the targets are attached,
 * sp__capture_begin() writes the fixture header and the tracked processes
 * and modules into @out, then every record the polls read is appended
 * until sp__capture_end() (which fills in the ring count).
 *
 * Replay: a recorder opened with the capture's flags and no targets gets
 * the fixture's processes and modules, and one in-memory ring per
 * captured ring, laid out exactly like a perf ring, so the same readers,
 * sequencer and workers run as in a live recording. Records are fed in
 * time order in batches; a virtual clock stands in for CLOCK_MONOTONIC
 * and is advanced to the newest record of each batch, and the next batch
 * is fed only once the recorder released everything up to it, so inline
 * and threaded replays of one fixture release the same records in the
 * same order and write identical spools. Replay never looks at /proc:
 * the captured processes may be gone or their pids reused, so exits,
 * liveness, maps reconciles and recovery sweeps are left out.
 */
struct sp__capture;

/* @out must outlive the capture. Returns 0, -EINVAL (threaded), -ENOMEM. */
int sp__capture_begin(struct sp_recorder *rec, struct sp__vec *out,
		      struct sp__capture **capture);
/*
 * Ends @capture (freed), fills in the ring count. Returns 0, -ENODATA (no
 * ring), or the first error of appending a record.
 */
int sp__capture_end(struct sp__capture *capture);

struct sp__replay;

/* Most virtual rings a replay spreads a fixture over. */
#define SP__REPLAY_RINGS_MAX 256u /* a reader takes as many */

/*
 * @data must outlive the replay. @rings: 0 replays every captured ring
 * as it was; R > 0 spreads the records over R virtual rings, in time
 * order, each ring time-ordered as a perf ring is (to measure how the
 * pipeline scales with the CPU count). Returns 0, SP_ECORRUPT, -errno.
 */
int sp__replay_open(struct sp_recorder *rec, const void *data, size_t size,
		    uint32_t rings, struct sp__replay **out);
/*
 * Feeds every record, @batch at a time, polling as it goes, then flushes.
 * @samples receives how many sample records were fed (may be NULL).
 */
int sp__replay_run(struct sp__replay *rp, size_t batch, uint64_t *samples);
/*
 * Feeds records until a ring is full, then flushes at once (no poll),
 * and again until every record is fed: each flush finds the readers'
 * rings full of held records. Returns 0, -E2BIG (a record larger than
 * its ring), or the first error of a flush.
 */
int sp__replay_run_flushing(struct sp__replay *rp, uint64_t *samples);
/* CPU time the feeding itself took (to subtract from measurements). */
uint64_t sp__replay_feed_cpu_ns(const struct sp__replay *rp);
/* Wall time the feeding took (the pipeline's threads run meanwhile). */
uint64_t sp__replay_feed_wall_ns(const struct sp__replay *rp);
/* The pipeline's sleep and wake system calls so far (before close). */
void sp__replay_syscalls(const struct sp__replay *rp,
			 struct sp__pipeline_syscalls *out);
/* Frees the harness; call it after sp_recorder_close() (the recorder
 * reads the harness's clock until then). */
void sp__replay_free(struct sp__replay *rp);

#endif /* SP_ENGINE_HARNESS_H */
