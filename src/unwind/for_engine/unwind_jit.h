/* SPDX-License-Identifier: MIT */
/* unwind's door for the engine: JIT code the unwinder can step. */
#ifndef SP_UNWIND_UNWIND_JIT_H
#define SP_UNWIND_UNWIND_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

#include "mem.h"

/*
 * src/unwind/for_engine/ holds what the unwinder offers the engine beyond
 * the public API, and nothing else: the engine's include path names this
 * folder, never src/unwind itself, so the engine cannot reach the
 * unwinder's internals (CFI tables, template decoders: jit_table.h,
 * unwind_internal.h).
 *
 * Anonymous executable code with no CFI (CPython's -X perf trampoline
 * arenas) can still be stepped exactly when its bytes are one template
 * tiled over the mapping (src/unwind/jit_table.h). The recorder reads
 * the code from the target, registers it here and gets an id; the
 * module's mapping then names the table:
 *
 *   struct sp_mapping { .flags = SP__MAPPING_JIT, .inode = id, ... }
 */

/* sp_mapping.flags bit: @inode is a JIT table id, not a file's inode. */
#define SP__MAPPING_JIT 0x80000000u

/*
 * sp__unwinder_jit_tiled builds the table of @code (@len bytes, a whole
 * mapping as read from the target) when it is one template tiled from
 * its start, and registers it in @unwinder (the same bytes always get
 * the same id). Returns 0 with *@id set, -EINVAL (not tiled code, or a
 * NULL argument; always on an architecture without a template decoder),
 * -ENOMEM or -E2BIG.
 * Thread: any. Allocates: yes. Blocks: on the unwinder's table lock.
 */
int sp__unwinder_jit_tiled(struct sp_unwinder *unwinder, const void *code,
			   size_t len, uint64_t *id);

/*
 * JIT code lives in anonymous memory, so no ELF file gives its CFI. Two
 * sources do: jitdump UNWINDING_INFO records (Python 3.13 -X perf_jit
 * trampolines) and the .eh_frame of GDB JIT objects (LLVM MCJIT). The
 * recorder turns each into a table (sp__cfi_table_from_eh_frame) and
 * keeps, per process, an immutable index of the code ranges they cover:
 *
 *   regions[]  sorted by start: [start, end) of one piece of code, the
 *              time span it is valid in ([from, until), ns of the
 *              sample clock), its table, and bias = pc - svma
 *   max_end[i] the largest end among regions[0..i] (backward walks)
 *
 * Ranges of different regions may overlap when code was freed and its
 * memory reused: a sample picks the region valid at the sample's time,
 * else (clocks a little apart) the latest one that began before it.
 * The index and its tables belong to the recorder; an unwind only reads.
 */

struct sp__cfi_table;

struct sp__jit_region {
	uint64_t start;
	uint64_t end;
	uint64_t from;	/* valid from this sample time on */
	uint64_t until; /* ... up to here (UINT64_MAX: still valid) */
	uint64_t bias;	/* svma in the table = pc - bias */
	const struct sp__cfi_table *table;
};

struct sp__jit_index {
	const struct sp__jit_region *regions;
	const uint64_t *max_end;
	size_t n;
};

/*
 * Builds the table of raw .eh_frame bytes placed at @vaddr (pc-relative
 * pointers are resolved against it), through a minimal in-memory ELF and
 * the normal builder. Returns 0, SP_ECORRUPT, -E2BIG (over 16 MiB of
 * CFI) or -ENOMEM. Free with sp__cfi_table_free().
 */
int sp__cfi_table_from_eh_frame(const struct sp__mem *mem, const void *eh,
				size_t len, uint64_t vaddr,
				struct sp__cfi_table **out);
void sp__cfi_table_free(struct sp__cfi_table *table);

/* The lowest svma a table covers and how many bytes from there. */
void sp__cfi_table_range(const struct sp__cfi_table *table, uint64_t *base,
			 uint64_t *span);
/* Memory a table holds, in bytes. */
size_t sp__cfi_table_bytes(const struct sp__cfi_table *table);

/* The region covering @pc at sample time @t (rules above), or NULL. */
const struct sp__jit_region *sp__jit_index_find(const struct sp__jit_index *ix,
						uint64_t pc, uint64_t t);

/*
 * Narrows [*lo, *hi) (containing @pc, which no region valid now covers)
 * so that no region of @ix overlaps it: the walk may then treat the whole
 * span as one stretch without JIT unwinding data. A pc inside a region
 * that is not valid at this time gets [pc, pc + 1).
 */
void sp__jit_index_gap(const struct sp__jit_index *ix, uint64_t pc,
		       uint64_t *lo, uint64_t *hi);

/*
 * A walk memo (src/unwind/walk_memo.h) keeps the last walk of a few
 * threads, so that the next sample of a thread reuses the outer frames
 * that did not change, exactly: same frames, same counters. One per
 * thread that unwinds (each pool worker, the sequencer); preallocated,
 * about 1.5 MiB. sp__walk_memo_counters: its hits (walks that reused
 * frames), misses and the frames reused (benchmarks, tests).
 * Thread: one at a time. Allocates: in _new only.
 */
struct sp__walk_memo;

int sp__walk_memo_new(const struct sp__mem *mem, struct sp__walk_memo **out);
void sp__walk_memo_free(struct sp__walk_memo *memo);
void sp__walk_memo_counters(const struct sp__walk_memo *memo, uint64_t *hits,
			    uint64_t *misses, uint64_t *frames_reused);

/*
 * sp_unwinder_unwind() with JIT code: @jit (NULL: none) is consulted for
 * every pc, and @time is the sample's timestamp. With @memo, the walk
 * of thread @tid reuses and records frames; @gen names the contents of
 * @maps (a generation from one counter that never repeats, 0: unknown,
 * the memo is not used), as addresses are reused after free. A walk
 * with JIT code in @jit does not use the memo. Same contract otherwise.
 */
int sp__unwinder_unwind_jit(struct sp_unwinder *unwinder,
			    const struct sp_regs *regs, const void *stack,
			    size_t stack_len, uint64_t stack_addr,
			    const struct sp_mapping *maps, size_t nmaps,
			    const struct sp__jit_index *jit, uint64_t time,
			    struct sp__walk_memo *memo, int32_t tid,
			    uint64_t gen, struct sp_frame *frames, size_t cap,
			    struct sp_unwind_stats *stats);

/*
 * After sp__unwinder_unwind_jit() with @memo returned @n frames: whether
 * the memo knows their base/frame_hash.h state after frames [1, @n)
 * (outermost first), then in *@h. It does when the walk was kept (a
 * walk that reused an older one's frames then hashed only its new
 * ones), so the caller's stack hash mixes in frames [0, 1) and whatever
 * it puts before them (sp__stack_hash_resume). Thread: @memo's.
 */
bool sp__walk_memo_tail(const struct sp__walk_memo *memo, size_t n,
			uint64_t *h);

#endif /* SP_UNWIND_UNWIND_JIT_H */
