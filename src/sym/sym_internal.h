/* SPDX-License-Identifier: MIT */
/* Internal interfaces of src/sym: native, kernel and perf-map backends, and the core. */
#ifndef SP_SYM_INTERNAL_H
#define SP_SYM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/log.h>
#include <stackpulse/symbolizer.h>

#include "image.h"
#include "mem.h"

/*
 * src/sym is three backends under one core:
 *
 *   symbolizer.c, sym_cache.c,     the public API: resolution order, the
 *   sym_update.c, frame_names.c    shared per-(pid, frame) result cache,
 *                                  address-only names, flags, Tail updates
 *        |             |              |
 *   native (per image) kernel       perf maps
 *   symtab.c           kallsyms.c   perf_map.c
 *   dwarf_info.c       system_map.c python_frame.c
 *   debug_find.c
 *   debuginfod.c
 *
 * Backends fill struct sp_resolved_frame with strings they own; those
 * strings stay valid until the backend object is freed, which the core
 * does only in sp_symbolizer_free() or when a Tail update retires the
 * owner. The core fills frame_id, module_id, pc and the flags it decides
 * (PYTHON_RUNTIME, HIDDEN_DEFAULT, EVAL_FRAME, TRUNCATED_STACK).
 */

/* ---- native: one per ELF image (symtab.c, dwarf_info.c, native.c) ---- */

struct sp__native;

/*
 * Creates the native symbolizer of @img (takes a reference): a sorted
 * function table from .symtab/.dynsym of the image or of its debug file
 * (found by build-id under @debug_dirs, .gnu_debuglink, or debuginfod when
 * DEBUGINFOD_URLS is set; a debug file whose build-id differs is never
 * used). DWARF lines and inline ranges are loaded lazily per CU.
 * Returns 0, -ENOMEM (a file without symbols is not an error).
 */
int sp__native_new(const struct sp__mem *mem, struct sp__image *img,
		   const char *debug_dirs, const struct sp_logger *logger,
		   struct sp__native **out);
void sp__native_free(struct sp__native *native);

/* Lookup flags. */
#define SP_NATIVE_NO_INLINE 0x1u
#define SP_NATIVE_NO_LINES 0x2u

/*
 * Resolves @svma (address in the image's vaddr space) into up to @cap
 * frames, innermost inline frame first, the containing function last
 * (inline_depth counts down to 0). Fills name, file, line, column, offset,
 * inline_depth, kind (NATIVE) and origin (ELF). Thread-safe: lazy builds
 * are serialized inside; finished tables are read without locks.
 * Returns the number of frames (0 when no symbol covers @svma), -ENOMEM.
 */
int sp__native_lookup(struct sp__native *native, uint64_t svma, uint32_t flags,
		      struct sp_resolved_frame *out, size_t cap);

/* ---- kernel symbols (kallsyms.c, system_map.c) ---- */

struct sp__ksyms;

/*
 * Loads kernel symbols with perf's selection rules (types T/W/D/B either
 * case; address 0 dropped; labels "$...", ".L...", "L0..." dropped; core
 * symbols only at/after _text/_stext; "name [mod]" module symbols always;
 * equal addresses: the later line wins; malformed lines skipped).
 * @path: NULL for /proc/kallsyms. @pcs/@npcs: when non-NULL, only the
 * symbols that cover these sorted addresses are kept (sparse loading);
 * the file is streamed. When the host kallsyms is unusable (zeroed
 * addresses) and @path is NULL, falls back to System.map (candidates for
 * the running kernel, KASLR slide inferred from @pcs).
 * Returns 0, -ENOENT (explicit @path missing), -ENOMEM; an empty or
 * unusable table is returned as an object that resolves nothing.
 */
int sp__ksyms_load(const struct sp__mem *mem, const char *path,
		   const uint64_t *pcs, size_t npcs,
		   const struct sp_logger *logger, struct sp__ksyms **out);

/* Same, from bytes in memory (fuzzing, tests): kallsyms format. */
int sp__ksyms_parse(const struct sp__mem *mem, const char *data, size_t len,
		    const uint64_t *pcs, size_t npcs, struct sp__ksyms **out);
void sp__ksyms_free(struct sp__ksyms *ksyms);

/*
 * Resolves a kernel address: name = symbol, offset = addr - symbol,
 * module = "[kernel]" or "[mod]", kind KERNEL, origin KERNEL_SYMBOLS.
 * Returns 1, or 0 when nothing covers @addr.
 */
int sp__ksyms_lookup(const struct sp__ksyms *ksyms, uint64_t addr,
		     struct sp_resolved_frame *out);

/* ---- perf maps (perf_map.c, python_frame.c) ---- */

struct sp__perf_map;

/*
 * Loads <dir>/perf-<pid>.map safely: O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC,
 * regular file only (no FIFO, no symlink), at most 64 MiB, owned by root
 * or by the owner of /proc/<pid> when that still exists (the checks of
 * sp__file_open_data). Returns 0, -ENOENT, -EPERM (unsafe file), -EFBIG,
 * -ENOMEM. *@identity receives
 * (dev, ino, size, mtime) hashed, to detect a changed file on update.
 */
int sp__perf_map_load(const struct sp__mem *mem, const char *dir, int32_t pid,
		      struct sp__perf_map **out, uint64_t *identity);
/*
 * The same, when at most @budget bytes may be spent on the map at its
 * peak (text, entries, and the sort's scratch while it sorts): -ENOBUFS
 * when it would take more. Nothing is read beyond what fits.
 */
int sp__perf_map_load_within(const struct sp__mem *mem, const char *dir,
			     int32_t pid, uint64_t budget,
			     struct sp__perf_map **out, uint64_t *identity);
/* Bytes @map holds (0 for NULL), charged against a symbolizer's total. */
size_t sp__perf_map_bytes(const struct sp__perf_map *map);

/*
 * The perf maps one symbolizer holds at a time, in bytes: 1 GiB. Each map
 * is at most 64 MiB of text and costs at most about 5x that (a file of
 * 6-byte lines); past this total, further maps are not loaded and their
 * frames stay address-only (a warning is logged once per map).
 */
#define SP_PERF_MAP_TOTAL_MAX (1ull << 30)
/*
 * sp__perf_map_load_within for a map file at @path (a copy kept in a JIT
 * side directory), with the same checks.
 */
int sp__perf_map_load_file(const struct sp__mem *mem, const char *path,
			   int32_t pid, uint64_t budget,
			   struct sp__perf_map **out, uint64_t *identity);

/* Parses perf-map text (START LEN NAME lines, §1.10 rules). */
int sp__perf_map_parse(const struct sp__mem *mem, const char *data, size_t len,
		       const char *path, struct sp__perf_map **out);
void sp__perf_map_free(struct sp__perf_map *map);

/*
 * Resolves @addr: the last symbol with start <= addr < start + len.
 * "py::" names become Python frames (kind PYTHON, file/function split,
 * flags JIT); others kind NATIVE, origin PERF_MAP, flags JIT, module =
 * the map's path, offset = addr - start. Returns 1, or 0 when no entry.
 */
int sp__perf_map_lookup(const struct sp__perf_map *map, uint64_t addr,
			struct sp_resolved_frame *out);

/* Module paths whose frames may come from perf maps (anonymous classes). */
bool sp__perf_map_eligible(const char *module_path);

/* ---- demangling (demangle.c) ---- */

/* Longest mangled name demangled (libiberty's stack use grows with it). */
#define SP__DEMANGLE_IN_MAX 4096

/* Whether @name may be mangled (C++ "_Z...", Rust legacy or "_R..."). */
bool sp__demangle_candidate(const char *name);

/*
 * The demangled form of @name as c++filt prints it, in a new block of
 * @mem of *@size bytes (NUL-terminated); NULL when @name is not a mangled
 * name, does not parse, is too long, or memory ran out.
 */
char *sp__demangle(const struct sp__mem *mem, const char *name, size_t *size);

/* ---- names and flags shared by the core (frame_names.c) ---- */

/* Is this module a Python runtime (python3.X binary or libpython)? */
bool sp__is_python_runtime_path(const char *path);
/* PyEval_EvalFrameDefault / PyEval_EvalFrameEx / _TAIL_CALL_*.llvm.* */
bool sp__is_eval_frame_name(const char *name);

#endif /* SP_SYM_INTERNAL_H */
