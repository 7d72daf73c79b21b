/* SPDX-License-Identifier: MIT */
/* Ordering records from all rings by timestamp before they touch state. */
#ifndef SP_ENGINE_MERGE_H
#define SP_ENGINE_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "vec.h"

/** struct sp__merge_run is one ring's records, sorted by (time, key). */
struct sp__merge_run {
	struct sp__vec items; /* struct sp__merge_item */
	size_t head;	      /* released before it (until compacted) */
	bool unsorted;	      /* appended out of order: sort before merging */
};

/*
 * struct sp__merge_node is a loser tree node: the head of one run, its
 * order fields copied in so a comparison touches no run.
 */
struct sp__merge_node {
	uint64_t time;
	uint64_t key;
	uint32_t leaf; /* index in @leaves; SP__MERGE_NONE: exhausted */
};

#define SP__MERGE_NONE UINT32_MAX

/*
 * Each poll copies every ring's records into the queue, then releases, in
 * (time, key) order, those not newer than the clock reading taken before
 * the drain (the watermark): anything older than it was already in some
 * ring, so nothing released later can be older. Newer records wait for
 * the next poll (or a forced release on flush).
 *
 * A ring holds its records in time order, so the queue keeps one sorted
 * run per source and a release is a k-way merge of the runs' heads through a loser tree: log2(runs)
 * comparisons per record, of (time, key) kept in the tree's nodes, instead
 * of a sort of everything queued. A source is a ring (copied records:
 * the ring index is the key's high bits) or whatever the caller of
 * sp__merge_push_ref names: a reader thread keeps one run per ring of
 * its own, and the sequencer one run per reader, whose records come
 * merged already. A record older than the last of its run (a per-thread
 * ring written from two CPUs, a reader that handed over records early)
 * is inserted in place; a run out of order by more than a few records
 * is sorted at the next release.
 */
struct sp__merge {
	const struct sp__mem *mem;
	struct sp__vec runs;  /* struct sp__merge_run, by source */
	struct sp__vec bytes; /* record copies, 8-byte aligned */
	struct sp__vec spare; /* compaction target, swapped with bytes */
	struct sp__vec tree;  /* struct sp__merge_node, the loser tree */
	struct sp__vec leaves; /* struct sp__merge_run *: what a release merges */
	size_t count; /* records in the runs (released ones until compacted) */
	struct sp__merge_run none; /* always empty: the tree's padding leaves */
};

/*
 * struct sp__merge_item is one queued record. Ties in @time are broken by
 * @key, the record's source and position (ring index << 40 | records read
 * from that ring before it), never by arrival: inline and threaded
 * draining then release the same records in the same order. A record is
 * either copied into the queue (@ref NULL, at @off) or referenced in
 * place (@ref, kept alive by @owner until the consumer releases it).
 */
struct sp__merge_item {
	uint64_t time;
	uint64_t key;
	size_t off;
	size_t len;
	const void *ref;
	void *owner;
	uint64_t pos; /* inline mode: position in ring (@key >> 40) of a
		       * sample read in place, or SP__NO_HOLD */
	uint32_t type;
	int32_t pid; /* 0 when unknown */
};

#define SP__NO_HOLD UINT64_MAX

/* Builds the tie-break key of the @n-th record read from ring @ring. */
static inline uint64_t sp__merge_key(size_t ring, uint64_t n)
{
	return ((uint64_t)ring << 40) | (n & ((1ull << 40) - 1));
}

/** struct sp__span is one piece of a record to copy in. */
struct sp__span {
	const void *data;
	size_t len;
};

void sp__merge_init(struct sp__merge *m, const struct sp__mem *mem);
void sp__merge_fini(struct sp__merge *m);

/*
 * Queues the concatenation of @n spans as a record described by @it (its
 * time, key, type and pid are used). Returns 0 or -ENOMEM.
 */
int sp__merge_push(struct sp__merge *m, const struct sp__merge_item *it,
		   const struct sp__span *spans, size_t n);

/*
 * Queues @it referencing its bytes in place (@it->ref, @it->owner), in
 * run @run: records of one run come mostly in (time, key) order (a
 * reader's rings merged, or one of them).
 */
int sp__merge_push_ref(struct sp__merge *m, const struct sp__merge_item *it,
		       size_t run);

/* @rec is the record's bytes (copied or referenced). */
typedef int (*sp__merge_fn)(void *ctx, const struct sp__merge_item *it,
			    const void *rec);

/*
 * Hands out, oldest first, every queued record with time <= @watermark
 * (UINT64_MAX = all). Stops at the first error, which is returned; the
 * failed record and those after it stay queued.
 */
int sp__merge_release(struct sp__merge *m, uint64_t watermark, sp__merge_fn fn,
		      void *ctx);

/*
 * Copies every referenced record into the queue (a sample with the
 * callchain and stack it references) and calls @done with its owner and
 * old reference, so the sources' memory can be reused while the records
 * wait. Returns how many were copied or -ENOMEM (then none is: all stay
 * referenced).
 */
long sp__merge_copy_refs(struct sp__merge *m,
			 void (*done)(void *owner, const void *ref));

/* Number of queued records. */
size_t sp__merge_count(const struct sp__merge *m);

/* Whether a record of process @pid is still queued. */
bool sp__merge_has_pid(const struct sp__merge *m, int32_t pid);

/*
 * The smallest ring position (@pos) of a record of ring @ring still
 * queued, SP__NO_HOLD when none is held (inline mode's ring consumption).
 */
uint64_t sp__merge_min_pos(const struct sp__merge *m, size_t ring);

#endif /* SP_ENGINE_MERGE_H */
