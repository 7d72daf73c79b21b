/* SPDX-License-Identifier: MIT */
/* unwind's door for the engine: registering JIT code the unwinder can step exactly. */
#ifndef SP_UNWIND_UNWIND_JIT_H
#define SP_UNWIND_UNWIND_JIT_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

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

#endif /* SP_UNWIND_UNWIND_JIT_H */
