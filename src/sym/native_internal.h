/* SPDX-License-Identifier: MIT */
/* Private pieces of the native backend: symbol table, DWARF tables, debug files. */
#ifndef SP_NATIVE_INTERNAL_H
#define SP_NATIVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

#include <stackpulse/log.h>

#include "image.h"
#include "mem.h"
#include "vec.h"

/*
 * One struct sp__native (native.c) per ELF image:
 *
 *   sp__native
 *   +-- img          the runtime image (reference)
 *   +-- debug        separate debug file as an sp__image, or NULL
 *   +-- symtab       sorted functions, built in sp__native_new (symtab.c)
 *   +-- dwarf        sp__dwarf_info: CU ranges and per-CU tables, built
 *                    lazily on the first lookup that wants lines
 *                    (dwarf_info.c)
 *
 * The symbol table is immutable once built. DWARF tables are built under
 * the owning image's lock (libdw is not thread-safe, research/
 * feasibility.md §3-§4) and published with release stores, so lookups of
 * finished tables take no lock.
 */

/* ---- symtab.c ---- */

/* One function: [addr, end); name borrowed from an ELF string table. */
struct sp__sym {
	uint64_t addr;
	uint64_t end;
	const char *name;
};

struct sp__symtab;

/*
 * Builds the sorted function table from the SHT_SYMTAB of @symtab_elf
 * (NULL: none) merged with the SHT_DYNSYM and the PLT stubs ("NAME@plt",
 * plt.c) of @dynsym_elf (NULL: none).
 * The caller holds the locks of the images owning both Elf handles; the
 * names stay valid as long as those Elf handles live. A file without
 * symbols gives an empty table. Returns 0 or -ENOMEM.
 */
int sp__symtab_build(const struct sp__mem *mem, Elf *symtab_elf,
		     Elf *dynsym_elf, struct sp__symtab **out);
void sp__symtab_free(struct sp__symtab *tab);
/* Does @elf have a SHT_SYMTAB section? Caller holds the owner's lock. */
bool sp__elf_has_symtab(Elf *elf);
size_t sp__symtab_count(const struct sp__symtab *tab);
/* The function covering @addr, or NULL. Lock-free (immutable table). */
const struct sp__sym *sp__symtab_find(const struct sp__symtab *tab,
				      uint64_t addr);
/* The same answer by a plain binary search (bench and test reference). */
const struct sp__sym *sp__symtab_find_bsearch(const struct sp__symtab *tab,
					      uint64_t addr);

/* ---- plt.c ---- */

/* The preferred name of the symbol starting at @addr, or NULL. */
struct sp__plt_names {
	const char *(*at)(void *ctx, uint64_t addr);
	void *ctx;
};

/* A PLT stub [addr, addr + size) and the function it jumps to. */
struct sp__plt_entry {
	uint64_t addr;
	uint64_t size;
	const char *name; /* borrowed: an ELF string, or from @names */
};

/*
 * Appends to @out (struct sp__plt_entry) the PLT stubs of x86-64 image
 * @elf (.plt, .plt.sec, .plt.got) that jump through a relocated GOT slot,
 * named after the relocation's symbol, or for IRELATIVE after
 * @names->at(addend). Other machines add nothing. The caller holds the
 * image lock. Returns 0 or -ENOMEM.
 */
int sp__plt_entries(const struct sp__mem *mem, Elf *elf,
		    const struct sp__plt_names *names, struct sp__vec *out);

/* ---- dwarf_info.c ---- */

/* Deepest inline nesting reported; deeper chains are cut at the inside. */
#define SP_DWARF_INLINE_MAX 64

/* Source position: file borrowed from the Dwarf (NULL = unknown). */
struct sp__src_loc {
	const char *file;
	uint32_t line;
	uint32_t column;
};

/*
 * One DW_TAG_inlined_subroutine instance: the abstract origin's name
 * (linkage name when there is one, as eu-addr2line prints it), where it
 * was called from, and its enclosing inline instance (-1: the enclosing
 * function itself). @origin_pc: when DWARF has no linkage name (GCC
 * gives none to a lambda's operator()), the entry of an out-of-line
 * copy of the same function in this CU, 0 if none: the ELF symbol there
 * is its linkage name (native.c).
 */
struct sp__inline {
	const char *name;
	struct sp__src_loc call;
	int32_t parent;
	uint32_t decl_line; /* the abstract origin's DW_AT_decl_line, or 0 */
	uint64_t origin_pc;
};

/*
 * An inline instance's (or a function's: dwarf_info.c) address range
 * while a CU table is built.
 */
struct inl_range {
	uint64_t lo;
	uint64_t hi;
	int32_t inl;
	uint32_t depth;
};

/* A disjoint address segment and the innermost instance covering it. */
struct inl_seg {
	uint64_t lo;
	uint64_t hi;
	int32_t inl;
};

/*
 * Sorts @ranges (struct inl_range) and appends to @segs (struct inl_seg)
 * the disjoint segments, ascending, each with its innermost instance
 * (dwarf_inline.c). Returns 0 or -ENOMEM.
 */
int sp__inline_segments(const struct sp__mem *mem, struct sp__vec *ranges,
			struct sp__vec *segs);

struct sp__dwarf_info;

/*
 * Prepares lazy DWARF access to @owner (the image holding .debug_info:
 * the debug file or the runtime image; takes a reference). Nothing is
 * read until the first lookup. @mem_cap bounds the bytes of line and
 * inline tables kept (0 = default, 512 MiB); CUs past the cap resolve
 * without lines. A dwz supplementary file is looked for under
 * @debug_dirs (sp__debug_find_alt; borrowed, may be NULL); without it the
 * image has no DWARF. Returns 0 or -ENOMEM.
 */
int sp__dwarf_info_new(const struct sp__mem *mem, struct sp__image *owner,
		       const char *debug_dirs, const struct sp_logger *logger,
		       size_t mem_cap, struct sp__dwarf_info **out);
void sp__dwarf_info_free(struct sp__dwarf_info *di);

/*
 * Looks up @addr: *@loc gets the line-table row (file NULL when none),
 * *@decl_line the DW_AT_decl_line of the subprogram containing @addr (0
 * when none or unknown), and @chain[0..n) the inline instances
 * containing @addr, innermost first (only when @want_inline). Entries
 * are borrowed until
 * sp__dwarf_info_free(). Thread-safe: builds the CU's tables on first use
 * under the owner's lock. Returns n >= 0, or -ENOMEM.
 */
int sp__dwarf_info_lookup(struct sp__dwarf_info *di, uint64_t addr,
			  bool want_inline, struct sp__src_loc *loc,
			  uint32_t *decl_line, const struct sp__inline **chain,
			  size_t cap);

/* Bytes held by built tables (bench, tests). */
size_t sp__dwarf_info_bytes(const struct sp__dwarf_info *di);

/* ---- debug_find.c ---- */

/*
 * Finds the separate debug file of @img: <dir>/.build-id/xx/rest.debug
 * for each colon-separated @debug_dirs root (NULL: $STACKPULSE_DEBUG_DIRS,
 * else /usr/lib/debug), then .gnu_debuglink (CRC-32 checked; the image's
 * directory, its .debug/ subdirectory, <root>/<image dir>/), then
 * debuginfod when DEBUGINFOD_URLS is set. A candidate whose build-id
 * differs from the image's is never used. Returns 0 and a new image
 * reference in *@out, -ENOENT when there is none, or -ENOMEM.
 */
int sp__debug_find(const struct sp__mem *mem, struct sp__image *img,
		   const char *debug_dirs, const struct sp_logger *logger,
		   struct sp__image **out);

/*
 * Finds the dwz supplementary file named by a .gnu_debugaltlink (@name,
 * build-id @bid/@bid_len) of @img: <root>/.build-id/xx/rest.debug, then
 * @name (absolute, or relative to @img's directory); its build-id must be
 * @bid. Returns 0 and a new image reference, -ENOENT, or -ENOMEM.
 */
int sp__debug_find_alt(const struct sp__mem *mem, struct sp__image *img,
		       const char *name, const void *bid, size_t bid_len,
		       const char *debug_dirs, const struct sp_logger *logger,
		       struct sp__image **out);

/* CRC-32 as used by .gnu_debuglink (zlib's, polynomial 0xedb88320). */
uint32_t sp__debuglink_crc32(uint32_t crc, const void *buf, size_t len);

/* Does @elf have a non-empty .debug_info? Caller holds the owner's lock. */
bool sp__elf_has_dwarf(Elf *elf);

/* ---- native.c ---- */

struct sp__native;

/* Symbols in the table and bytes of DWARF tables built so far (bench). */
void sp__native_stats(const struct sp__native *native, size_t *symbols,
		      size_t *dwarf_bytes);

/* The image's symbol table (bench, tests); immutable. */
const struct sp__symtab *sp__native_symtab(const struct sp__native *native);

/* ---- debuginfod.c (or debuginfod_stub.c when built without it) ---- */

/*
 * Fetches the debug file for @build_id through libdebuginfod into the
 * stackpulse cache dir (STACKPULSE_DEBUGINFOD_CACHE_DIR >
 * $XDG_CACHE_HOME/stackpulse/debuginfod > ~/.cache/stackpulse/debuginfod >
 * $TMPDIR/stackpulse-debuginfod) and writes its path to @path. Only when
 * DEBUGINFOD_URLS is set and not empty. Returns 0, -ENOENT (not found,
 * not configured), -EOPNOTSUPP (built without libdebuginfod),
 * -ENAMETOOLONG, or another -errno.
 */
int sp__debuginfod_find(const uint8_t *build_id, size_t len,
			const struct sp_logger *logger, char *path,
			size_t path_cap);

#endif /* SP_NATIVE_INTERNAL_H */
