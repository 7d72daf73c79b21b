/* SPDX-License-Identifier: MIT */
/* Finding tiled JIT trampolines (CPython -X perf arenas) in a target's memory. */
#ifndef SP_ENGINE_JIT_ARENA_H
#define SP_ENGINE_JIT_ARENA_H

#include <stdbool.h>
#include <stdint.h>

struct sp__procs;
struct sp__process;
struct sp__module;

/*
 * CPython's -X perf trampolines live in anonymous executable arenas that
 * have no CFI, and the frame-pointer fallback cannot step them (CPython
 * 3.12 and 3.13 keep no frame pointer there), so every Python stack used
 * to end at its first trampoline. The recorder reads each anonymous
 * executable module of a process marked as a Python runtime with perf
 * support (process_vm_readv, once, on the thread applying records) and
 * hands the bytes to the unwinder (unwind's door for the engine,
 * src/unwind/for_engine/unwind_jit.h), which accepts them only when they
 * are one decoded template tiled over the arena, and returns a table id;
 * the module's mapping then carries SP__MAPPING_JIT and the id, and its
 * frames are stepped exactly.
 *
 * An arena is filled right after it is mapped and before any of its
 * trampolines runs, so a read that finds it still zeroed is retried at a
 * later sample (at most every 20 ms, for about a second; such a look
 * reads one page). Reads are bounded: modules of at most 1 MiB, each
 * read whole once, at most 64 of them per process.
 */

/* Looks at a candidate's code before giving up on it (still zeroed). */
#define SP__JIT_ARENA_TRIES 50

/* Whether @m may be such an arena (anonymous, small): checked later. */
bool sp__jit_arena_candidate(const struct sp__module *m);

/*
 * Checks the candidate modules of @proc that are due at @now_ns; marks
 * the mappings of those that are arenas. Cheap when none is pending.
 */
void sp__jit_arena_check(struct sp__procs *procs, struct sp__process *proc,
			 uint64_t now_ns);

#endif /* SP_ENGINE_JIT_ARENA_H */
