/* SPDX-License-Identifier: MIT */
/* Private interface between kallsyms.c and system_map.c: the symbol table. */
#ifndef SP_SYM_KSYMS_INTERNAL_H
#define SP_SYM_KSYMS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "sym_internal.h"

/*
 * A kernel symbol table is one sorted array of non-overlapping ranges
 * [addr, end) with unique addresses, names in an arena:
 *
 *   syms: | addr end name module | addr end name module | ...   (by addr)
 *   arena: "_stext\0do_syscall_64\0[ext4]\0..."
 *
 * The range of a symbol ends where the next kept symbol starts. A symbol
 * with no next symbol of the same module (the last core symbol, the last
 * symbol of a module, the last symbol overall) ends at the smaller of the
 * next start and a bound: _etext for core symbols below _etext,
 * otherwise SP_KSYM_SPAN past its start. This keeps the last core text
 * symbol from swallowing the gap up to the first module.
 *
 * A sparse table holds only the symbols some requested PC falls into, with
 * the same ranges as the full table would give them, so a lookup of a
 * requested PC answers the same in both modes.
 *
 * While a table is built, @end holds the start of the next kept symbol
 * (when @has_next) and @seq the input line number (equal addresses: the
 * later line wins); ksyms_finish() turns them into the final ranges.
 */
/* 1 MiB: bound of a last symbol, window of a System.map match. */
#define SP_KSYM_SPAN (1ull << 20)
/* Longer lines are malformed (the kernel's KSYM_NAME_LEN is 512). */
#define SP_KSYM_LINE_MAX 1024

struct sp__ksym {
	uint64_t addr;
	uint64_t end;
	const char *name;
	const char *module; /* NULL for core symbols ("[kernel]") */
	uint32_t seq;
	uint8_t has_next;
	uint8_t next_same; /* next kept symbol is in the same module */
};

struct sp__ksyms {
	struct sp__mem mem;
	struct sp__arena arena;
	struct sp__ksym *syms;
	size_t n;
	size_t cap;
	uint64_t text;	   /* lowest of _text/_stext, 0 when neither appeared */
	uint64_t etext;	   /* _etext, 0 when absent */
	size_t zero_lines; /* well-formed lines with address 0 */
	size_t nonzero_lines; /* well-formed lines with a real address */
	bool sparse;
};

/*
 * Reads kallsyms-format text from @fd (streamed; must be seekable for the
 * unsorted fallback) or, when @fd < 0, from @data/@len. @pcs non-NULL
 * selects sparse loading of those addresses (any order; sorted copy taken).
 * Returns 0 or -ENOMEM, -errno (read/lseek failure).
 */
int sp__ksyms_read(const struct sp__mem *mem, int fd, const char *data,
		   size_t len, const uint64_t *pcs, size_t npcs,
		   struct sp__ksyms **out);

/*
 * Turns a table being built into final ranges: unless @linked (sparse
 * loads link as they go), sorts by address, keeps the later line of equal
 * addresses and links each symbol to the next; then drops core symbols
 * below the _text/_stext anchor and computes every end (ksyms_table.c).
 */
void sp__ksyms_finish(struct sp__ksyms *ksyms, bool linked);

/* Opens a regular file (procfs counts) without blocking on a FIFO. */
int sp__ksyms_open_file(const char *path);

/* Is there any real address (kallsyms not zeroed by kptr_restrict)? */
bool sp__ksyms_is_usable(const struct sp__ksyms *ksyms);

/* The symbol whose start is the greatest <= @addr (ignores its end). */
const struct sp__ksym *sp__ksyms_floor(const struct sp__ksyms *ksyms,
				       uint64_t addr);

/*
 * Keeps only the symbols covering some of @pcs (sorted), names copied to
 * a fresh arena. Returns 0 or -ENOMEM (table unchanged).
 */
int sp__ksyms_compact(struct sp__ksyms *ksyms, const uint64_t *pcs,
		      size_t npcs);

/* Moves every symbol by @slide (two's complement), dropping wrapped ones. */
void sp__ksyms_shift(struct sp__ksyms *ksyms, uint64_t slide);

/* Sorted copy of @pcs in *@out (caller frees @npcs * 8 bytes), or NULL. */
uint64_t *sp__ksyms_sorted_pcs(const struct sp__mem *mem, const uint64_t *pcs,
			       size_t npcs);

/* ---- System.map fallback (system_map.c) ---- */

/*
 * Picks the KASLR slide of an unrelocated table @map for the runtime
 * addresses @pcs (sorted): candidates 0 and (lowest PC aligned down to
 * 2 MiB) - _text; a candidate counts only with >= 8 PCs requested and
 * >= 8 PCs matched (PC within SP_KSYM_SPAN past a symbol); best = most
 * matches, then smallest total offset; 0 when none qualifies.
 */
uint64_t sp__system_map_infer_slide(const struct sp__ksyms *map,
				    const uint64_t *pcs, size_t npcs);

/*
 * Parses System.map text, infers and applies the slide (*@slide receives
 * it), keeps only the symbols of @pcs when non-NULL. Returns 0, -ENOMEM.
 */
int sp__system_map_parse(const struct sp__mem *mem, const char *data,
			 size_t len, const uint64_t *pcs, size_t npcs,
			 uint64_t *slide, struct sp__ksyms **out);

/* Same from a file. Returns 0, -ENOENT, -EINVAL (not a regular file), -errno. */
int sp__system_map_load_path(const struct sp__mem *mem, const char *path,
			     const uint64_t *pcs, size_t npcs, uint64_t *slide,
			     struct sp__ksyms **out);

/*
 * Tries the System.map candidates of kernel @release (NULL: uname -r) in
 * order. Returns 0, -ENOENT (no candidate readable), -ENOMEM.
 */
int sp__system_map_load(const struct sp__mem *mem, const char *release,
			const uint64_t *pcs, size_t npcs,
			const struct sp_logger *logger, struct sp__ksyms **out);

#endif /* SP_SYM_KSYMS_INTERNAL_H */
