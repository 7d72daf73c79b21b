/* SPDX-License-Identifier: MIT */
/* Turning the records of one perf ring into queued, ordered records. */
#ifndef SP_ENGINE_DRAIN_H
#define SP_ENGINE_DRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "merge.h"
#include "ring.h"

/*
 * The same parsing serves the inline poll (records copied into the merge
 * queue) and the reader threads (records copied into their blocks): a
 * drain hands each record that carries state or a sample to @push with
 * its merge item (time, key, type, pid) and the pieces to store. A sample
 * is stored as struct sp__qsample, then its callchain, then its stack.
 */
/*
 * Drains leave samples in the ring only up to this far past now; a later
 * timestamp (never from a sane kernel) is copied, so it cannot keep the
 * ring from being consumed.
 */
#define SP__HOLD_NS 1000000000ull

typedef int (*sp__drain_push_fn)(void *ctx, const struct sp__merge_item *it,
				 const struct sp__span *spans, size_t n);

struct sp__drain {
	uint64_t sample_type;
	sp__drain_push_fn push;
	void *ctx;
	size_t ring_index;  /* position of the ring: the key's high bits */
	uint64_t *ring_seq; /* records read from that ring so far */
	uint64_t unusable;  /* samples that could not be parsed */
	int err;	    /* the push error that stopped the last drain */
	/*
	 * A drain scans @ring from its read_pos and never consumes it: the
	 * caller gives the space back (sp__ring_consume) up to the oldest
	 * record still in use. In place: samples keep their callchain and
	 * stack in the ring (struct sp__qsample ext_*), and their item
	 * carries its position (its key names the ring). Not in place:
	 * every sample is copied whole, so the ring is not held any longer.
	 */
	struct sp__ring *ring;
	void *scratch;
	bool in_place;
	uint64_t hold_until; /* newer samples are copied, not held */
	/* Optional: sees every record consumed (fixture capture). */
	void (*tap)(void *ctx, size_t ring_index, const void *rec, size_t len);
	void *tap_ctx;
};

/*
 * Reads every record of @ring past its read_pos through @d, consuming
 * none. Returns the number of records, or SP_ECORRUPT (the ring skipped
 * ahead). A push error stops the drain with the failed record left
 * unread; it is kept in @d->err (0 when the ring was read to its end).
 */
long sp__drain_ring(struct sp__drain *d, struct sp__ring *ring, void *scratch);

#endif /* SP_ENGINE_DRAIN_H */
