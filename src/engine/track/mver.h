/* SPDX-License-Identifier: MIT */
/* Immutable versions of a process's module map for unwinder threads. */
#ifndef SP_ENGINE_MVER_H
#define SP_ENGINE_MVER_H

#include <stdbool.h>
#include <stddef.h>

#include <stackpulse/unwind.h>

#include "mem.h"

struct sp__procs;
struct sp__process;

/*
 * Threaded mode unwinds a sample while the sequencer goes on changing the
 * process's modules, so a job carries a version: a copy of the sorted
 * mappings and their paths that is never modified. The process holds one
 * reference to its current version and every job one more; references
 * are taken and dropped only on the sequencer's thread (a job's is
 * dropped when it is written, after the worker is done with it), so a
 * plain counter suffices and versions are freed on that thread.
 */
struct sp__mver {
	size_t refs;
	uint64_t gen; /* of the process's maps it copies (process.h) */
	size_t bytes; /* allocation size */
	size_t n;
	struct sp_mapping maps[];
};

/*
 * The current version of @proc (rebuilt when its modules changed), with a
 * reference for the caller. Returns 0 or -ENOMEM.
 */
int sp__mver_get(struct sp__procs *procs, struct sp__process *proc,
		 struct sp__mver **out);
/*
 * Per sample, inline: @cur (the process's current version) with a
 * reference, unless its modules changed since (NULL: call sp__mver_get).
 */
static inline struct sp__mver *sp__mver_take(struct sp__mver *cur,
					     bool maps_dirty)
{
	if (!cur || maps_dirty)
		return NULL;
	cur->refs++;
	return cur;
}
void sp__mver_free(const struct sp__mem *mem, struct sp__mver *v);
/* Drops a reference (NULL is a no-op); per sample, so inline. */
static inline void sp__mver_put(const struct sp__mem *mem, struct sp__mver *v)
{
	if (v && --v->refs == 0)
		sp__mver_free(mem, v);
}

#endif /* SP_ENGINE_MVER_H */
