/* SPDX-License-Identifier: MIT */
/* What a JIT's in-memory ELF object says about its code: symbols, .eh_frame. */
#ifndef SP_JIT_JIT_ELF_H
#define SP_JIT_JIT_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "mem.h"
#include "vec.h"

/*
 * GDB JIT objects are ELF files built in memory by the JIT. LLVM's
 * (MCJIT, ORC) are relocatable objects (ET_REL) whose section headers
 * carry the addresses the sections were loaded at, while their symbol
 * values stay section-relative and their .eh_frame stays unrelocated
 * (a debugger applies .rela.eh_frame itself); hand-made ones (LuaJIT,
 * tests) are often ET_EXEC or ET_DYN with absolute values. This reads
 * both into one shape:
 *
 *   text[]   the loaded executable sections [start, end), absolute
 *   syms[]   functions (STT_FUNC, or untyped symbols in code) inside
 *            text, absolute, sorted by start; size 0 runs to the next
 *            symbol or the end of its section
 *   eh_frame a private copy of .eh_frame with its relocations applied
 *            (R_X86_64_64/PC32/32/32S/PC64; R_AARCH64_ABS64/ABS32/
 *            PREL64/PREL32), and its load address
 *
 * Only 64-bit little-endian objects of the host's architecture
 * (SP__JIT_MACHINE) are read; others are SP_ECORRUPT. libelf checks
 * sections against the image size; counts are bounded here: at most
 * SP__JIT_ELF_MAX_SYMS symbols and SP__JIT_ELF_MAX_TEXT code sections,
 * names cut at 4 KiB.
 */

#define SP__JIT_ELF_MAX_SYMS (1u << 20)
#define SP__JIT_ELF_MAX_TEXT 256

struct sp__jit_elf_text {
	uint64_t start;
	uint64_t end;
};

struct sp__jit_elf_sym {
	uint64_t start;
	uint64_t end;
	const char *name; /* in the object's arena, NUL-terminated */
};

struct sp__jit_elf {
	struct sp__mem mem;
	struct sp__arena arena;
	struct sp__vec text; /* struct sp__jit_elf_text, sorted */
	struct sp__vec syms; /* struct sp__jit_elf_sym, sorted */
	uint8_t *eh_frame;   /* NULL when the object has none */
	size_t eh_len;
	uint64_t eh_addr;
	uint16_t type;		    /* ET_REL, ET_EXEC, ET_DYN */
	uint32_t eh_relocs_skipped; /* relocations of unknown type */
};

/*
 * Reads the object @image[0..@len) (not kept after the call). Returns 0,
 * SP_ECORRUPT (not a 64-bit ELF of the host's architecture and a known type, or unreadable
 * headers) or -ENOMEM. On success free @out with sp__jit_elf_fini().
 */
int sp__jit_elf_parse(const struct sp__mem *mem, const uint8_t *image,
		      size_t len, struct sp__jit_elf *out);
void sp__jit_elf_fini(struct sp__jit_elf *e);

/* Whether some code section of @e covers @addr. */
bool sp__jit_elf_covers(const struct sp__jit_elf *e, uint64_t addr);

#endif /* SP_JIT_JIT_ELF_H */
