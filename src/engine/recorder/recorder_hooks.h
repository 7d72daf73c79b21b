/* SPDX-License-Identifier: MIT */
/* How a test harness plugs into a recorder: one hooks struct. */
#ifndef SP_ENGINE_RECORDER_HOOKS_H
#define SP_ENGINE_RECORDER_HOOKS_H

#include <stddef.h>

#include "clock.h"
#include "mem.h"
#include "perf_event.h"
#include "pipeline.h"
#include "policy.h"
#include "process.h"
#include "rings.h"

struct sp_recorder;

/*
 * The fixture capture and replay harness (tests/harness, never linked
 * into libstackpulse) sees a recorder only through this header: it
 * installs its hooks and reaches the parts it feeds or reads. A recorder
 * without hooks runs exactly the same code with the defaults below, so
 * the recording paths carry no test-only branches.
 */
struct sp__recorder_hooks {
	/* Where ordering watermarks come from (NULL: CLOCK_MONOTONIC). */
	const struct sp__clock *clock;
	/* Sees every record an inline drain consumes (NULL: none). */
	void (*tap)(void *ctx, size_t ring, const void *rec, size_t len);
	void *tap_ctx;
	/* Replaces the tracking policy (NULL: the recorder's own). */
	const struct sp__policy *policy;
};

/*
 * Installs @hooks (copied; NULL removes them) before any record was fed.
 * A clock change forgets the watermarks of the old one. Returns 0,
 * -EINVAL (a tap in threaded mode) or an error of the pipeline's drain.
 */
int sp__recorder_set_hooks(struct sp_recorder *rec,
			   const struct sp__recorder_hooks *hooks);

/** struct sp__recorder_parts is what a harness may reach (borrowed). */
struct sp__recorder_parts {
	const struct sp__mem *mem;
	struct sp__perf_cfg *cfg;
	struct sp__rings *rings;
	struct sp__procs *procs;
	struct sp__pipeline *pipe;
	const struct sp__policy *policy; /* the recorder's own */
};

/* Borrowed: valid until sp_recorder_close(@rec). */
void sp__recorder_parts(struct sp_recorder *rec,
			struct sp__recorder_parts *out);

#endif /* SP_ENGINE_RECORDER_HOOKS_H */
