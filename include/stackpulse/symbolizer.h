/* SPDX-License-Identifier: MIT */
/* stackpulse: the Symbolizer (native, kernel, JIT and Python frames, shared cache). */
#ifndef STACKPULSE_SYMBOLIZER_H
#define STACKPULSE_SYMBOLIZER_H

#include <stdbool.h>

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/log.h>
#include <stackpulse/spool.h>
#include <stackpulse/tail.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A Symbolizer turns the raw frames of a spool into names. Resolution order
 * per frame (docs and research/stackpulse-features.md §1.10):
 *   1. JIT code names for user frames whose module is unknown or an
 *      anonymous-class mapping: jitdump files the spool names (the
 *      runtime's jit-<pid>.dump, the recorder's copies of GDB JIT
 *      objects; docs/how-to/jit.md), then the perf map
 *      <dir>/perf-<pid>.map when allowed for the pid;
 *   2. native ELF symbols (+ DWARF lines and inline frames) for file-backed
 *      user modules, or the caller's native plug-in;
 *   3. kernel symbols (kallsyms, System.map) for kernel frames;
 *   4. an address-only fallback.
 * Results are cached per (pid, frame) in a table that many threads read
 * without locks; resolving a stack that was resolved before allocates
 * nothing. Resolution may run on several threads at once;
 * sp_symbolizer_update() and sp_symbolizer_free() must not.
 *
 * Two ways to build one (stackpulse's SymbolizerBuilder, features §1.10):
 *   - sp_symbolizer_new() over the spool of a Snapshot, Replay or Tail:
 *     frames and stacks are named by their spool ids;
 *   - sp_symbolizer_new_modules() over a module table of the caller's, for
 *     stacks captured by other means (eBPF, signals, sp_unwinder_unwind()):
 *     sp_symbolizer_resolve_raw() takes raw frames, pinned to a module of
 *     the table or absolute, and interns each distinct one under a
 *     symbolizer-local frame id, so it shares the same cache.
 * Docs: docs/how-to/module-table-symbolizer.md.
 *
 * Files named by the spool (module paths, debug files found from them,
 * dwz supplementary files, perf maps) are opened non-blocking and used
 * only when they are regular files: a FIFO or device at such a path
 * never blocks a reader. ELF files larger than 8 GiB are not opened;
 * perf maps are refused through a symbolic link, when larger than
 * 64 MiB, or owned by another user than root or the target's. A perf map
 * costs its size plus 16 bytes per line (at most about 4x for the
 * shortest lines); the maps one symbolizer holds stay within 1 GiB in
 * total, and a map past that is not loaded (a warning is logged; its
 * frames stay address-only).
 */
struct sp_symbolizer;

enum sp_resolved_kind {
	SP_RESOLVED_NATIVE = 0,
	SP_RESOLVED_PYTHON = 1,
	SP_RESOLVED_KERNEL = 2,
	SP_RESOLVED_UNKNOWN = 3,
};

enum sp_symbol_origin {
	SP_ORIGIN_ELF = 0,
	SP_ORIGIN_PERF_MAP = 1,
	SP_ORIGIN_KERNEL_SYMBOLS = 2,
	SP_ORIGIN_ADDRESS_ONLY = 3,
	SP_ORIGIN_PLUGIN = 4,
	SP_ORIGIN_JITDUMP = 5, /* a jitdump file (a JIT's, or GDB JIT names) */
};

/* Flags of struct sp_resolved_frame (hints; no UI policy applied). */
#define SP_RESOLVED_PYTHON_RUNTIME (1u << 0)
#define SP_RESOLVED_HIDDEN_DEFAULT (1u << 2)
#define SP_RESOLVED_JIT (1u << 3)
#define SP_RESOLVED_TRUNCATED_STACK (1u << 4)
#define SP_RESOLVED_EVAL_FRAME (1u << 5)
/* An off-CPU pseudo-frame ([off-cpu], [off-cpu:preempted]: spool.h). */
#define SP_RESOLVED_OFF_CPU (1u << 6)

/**
 * struct sp_resolved_frame is one symbolized frame. A raw frame may expand
 * to several (inline frames, innermost first: highest @inline_depth first).
 *
 * @name: function (or Python function) name; a PLT stub's is the
 *   function it jumps to with "@plt" ("rand@plt"); for address-only
 *   frames the display text of §1.10 ("libfoo.so+0x1234" with the ELF
 *   virtual address, as objdump and addr2line take it, or the file
 *   offset when the file could not be read; "[kernel]+0x...", "<0x...>",
 *   "<stack truncated>"). Inline frames carry the linkage (mangled) name
 *   where DWARF or an out-of-line copy has one. Never NULL.
 * @file / @line / @column: source location (NULL / 0 when unknown); for
 *   Python frames the .py file.
 * @module: module path or "[kernel]" / "[mod]" / perf map path; NULL when
 *   no module.
 * @offset: pc - symbol start (0 for address-only names).
 * @mangled_name: the symbol as the symbol table (or perf map) has it when
 *   @name is its demangled form (C++ Itanium ABI, Rust legacy and v0, as
 *   c++filt prints them; unless SP_SYMBOLIZER_NO_DEMANGLE), else NULL;
 *   what pprof calls the system name.
 * @pc: absolute address of the raw frame.
 * @frame_id: the raw frame's spool id, or for a module-table symbolizer
 *   the id it was interned under (usable with sp_symbolizer_resolve_frame).
 * @decl_line: the line where the function is defined: DWARF
 *   DW_AT_decl_line of the subprogram at @pc, or of the inlined
 *   function's abstract origin for an inline frame; one value per
 *   function, unlike @line. 0 when unknown: no DWARF, Python, perf-map,
 *   JIT, kernel and address-only frames (the spool does not carry a
 *   Python function's first line); a native plug-in may set it.
 * Strings are borrowed: valid until sp_symbolizer_free() (or an update
 * that invalidates the frame's process).
 */
struct sp_resolved_frame {
	const char *name;
	const char *file;
	const char *module;
	uint64_t pc;
	uint64_t offset;
	uint32_t line;
	uint32_t column;
	uint32_t kind;	       /* enum sp_resolved_kind */
	uint32_t origin;       /* enum sp_symbol_origin */
	uint32_t flags;	       /* SP_RESOLVED_* */
	uint32_t inline_depth; /* 0 = outermost (the real function) */
	uint32_t frame_id;     /* raw frame id it came from */
	uint32_t module_id;    /* SP_NO_MODULE when none */
	const char *mangled_name;
	uint32_t decl_line; /* first line of the function; 0 when unknown */
};

/** One request of a native plug-in batch. */
struct sp_native_lookup {
	int32_t pid;
	uint32_t module_id;
	const struct sp_module *module;
	uint64_t abs_ip;
	uint64_t file_relative_ip;
	uint64_t image_address; /* SVMA: address in the ELF's vaddr space, 0 if unknown */
};

/**
 * struct sp_native_symbolizer is a caller-supplied native backend. @lookup
 * must fill exactly one result per request (out[i] for lookups[i]): @name
 * NULL for unresolved. The strings it returns must stay valid until the
 * next call of @lookup; the library copies them right after @lookup
 * returns. @retire_module (optional) is told when a module generation is
 * retired.
 */
struct sp_native_symbolizer {
	int (*lookup)(void *ctx, const struct sp_native_lookup *lookups,
		      size_t n, struct sp_resolved_frame *out);
	void (*retire_module)(void *ctx, uint32_t module_id);
	void *ctx;
};

/* Flags of struct sp_symbolizer_opts. */
#define SP_SYMBOLIZER_NO_PERF_MAPS 0x1u /* never read perf maps */
#define SP_SYMBOLIZER_NO_KERNEL 0x2u	/* no kernel symbols */
#define SP_SYMBOLIZER_NO_INLINE 0x4u	/* no inline frames */
#define SP_SYMBOLIZER_NO_LINES 0x8u	/* no DWARF at all (symbols only) */
#define SP_SYMBOLIZER_NO_DEMANGLE                                              \
	0x10u			   /* names as the symbol tables have them */
#define SP_SYMBOLIZER_NO_JIT 0x20u /* never read jitdump files */

/**
 * enum sp_stack_cache chooses who keeps whole resolved stacks.
 * @SP_STACK_CACHE_INTERNAL: the symbolizer keeps every resolved (pid,
 *   stack) as an array of frame pointers, so resolving it again is one
 *   lookup and a copy; costs one pointer per resolved frame per distinct
 *   stack. Updates drop the entries of invalidated pids themselves.
 * @SP_STACK_CACHE_EXTERNAL: only per-frame results are cached; a repeated
 *   stack is walked node by node (still without allocating). Callers that
 *   keep prepared stacks of their own use this and apply the
 *   invalidations sp_symbolizer_update() reports.
 */
enum sp_stack_cache {
	SP_STACK_CACHE_INTERNAL = 0,
	SP_STACK_CACHE_EXTERNAL = 1,
};

/**
 * struct sp_symbolizer_opts configures sp_symbolizer_new() and
 * sp_symbolizer_new_modules(). Set @size to
 * sizeof(struct sp_symbolizer_opts); zero fields mean defaults.
 * @perf_map_dir: directory of perf-<pid>.map files (default /tmp).
 * @perf_map_pids/@perf_map_pid_count: when non-zero, only these pids' maps
 *   are read. Independently, a pid's map in @perf_map_dir is used only
 *   for frames of its newest process generation in the spool that
 *   defined modules (a process that exited during the recording keeps
 *   it), and not when a Python-runtime "on" marker came for another
 *   generation of the pid but not for that one (PID-reuse safety,
 *   features §1.7/§1.10).
 * @jit_dir: the spool's JIT side directory (the recorder's @jit_dir):
 *   the perf map each process generation had when it ended, used first
 *   for that generation's frames (exact also for a pid that was reused
 *   later). NULL: none. docs/explanation/jit.md.
 * @kallsyms_path: a preserved kallsyms file instead of the host's.
 * @debug_dirs: colon-separated debug roots (default: $STACKPULSE_DEBUG_DIRS,
 *   else /usr/lib/debug).
 * @native: plug-in replacing the built-in ELF/DWARF backend.
 * @stack_cache: enum sp_stack_cache (default internal). It concerns
 *   sp_symbolizer_resolve_stack() only: resolve_raw never keeps stacks.
 * @jit_dir: a directory searched first for the jitdump files the spool
 *   names, by their last path component (copies kept next to a spool,
 *   e.g. the recorder's <spool>.jit directory); NULL: only the recorded
 *   paths.
 */
struct sp_symbolizer_opts {
	size_t size;
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	uint32_t flags;
	const char *perf_map_dir;
	const int32_t *perf_map_pids;
	size_t perf_map_pid_count;
	const char *kallsyms_path;
	const char *debug_dirs;
	const struct sp_native_symbolizer *native;
	uint32_t stack_cache; /* enum sp_stack_cache */
	const char *jit_dir;
};

/**
 * sp_symbolizer_new creates a symbolizer for the modules and frames of
 * @spool (from a Snapshot, Replay or Tail).
 * @param spool Must outlive `symbolizer`.
 * @return 0, -EINVAL, -ENOENT (explicit kallsyms file missing), -ENOMEM.
 * Caller owns the result; free it with sp_symbolizer_free().
 * Thread: any. Allocates: yes. Blocks: yes.
 */
SP_API int sp_symbolizer_new(const struct sp_spool *spool,
			     const struct sp_symbolizer_opts *opts,
			     struct sp_symbolizer **out);

/**
 * sp_symbolizer_new_modules creates a symbolizer for a module table of the
 * caller's instead of a spool (stackpulse's SymbolizerBuilder::for_modules).
 * Module i of @modules gets id i: raw frames pin to it by that id (as
 * sp_unwinder_unwind() does with struct sp_mapping.module_id). The table
 * is copied (paths too) and fixed: when mappings change, build a new
 * symbolizer. Absolute frames are matched to the newest module of the
 * table that owns the address for the pid (SPULSE3 §6). Kernel symbols
 * come from one full kallsyms table (not sparse: the addresses are not
 * known up front); sp_symbolizer_update() does not apply.
 * @param modules,count the table; per module: @start < @end, @path of
 *        @path_len bytes (0 = strlen(@path); NULL = no path), @pid >= 1,
 *        or @is_kernel (pid ignored). @id and @deactivated_at are ignored.
 * @return 0, -EINVAL (bad option or module), -ENOENT (explicit kallsyms
 *         file missing), -ENOMEM.
 * Caller owns the result; free it with sp_symbolizer_free().
 * Thread: any. Allocates: yes. Blocks: yes.
 */
SP_API int sp_symbolizer_new_modules(const struct sp_module *modules,
				     size_t count,
				     const struct sp_symbolizer_opts *opts,
				     struct sp_symbolizer **out);

/**
 * sp_symbolizer_free releases everything. NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_symbolizer_free(struct sp_symbolizer *symbolizer);

/**
 * sp_symbolizer_resolve_frame resolves raw frame @frame_id as seen by
 * process @pid.
 * @param out receives a pointer to the frame's resolved frames (inline
 *        chain, innermost first). Borrowed: valid until sp_symbolizer_free()
 *        or an sp_symbolizer_update() that invalidates @pid.
 * @return the number of resolved frames (>= 1), -EINVAL (bad id), -ENOMEM.
 * Thread: any. Allocates: only on first resolution. Blocks: only then.
 */
SP_API int sp_symbolizer_resolve_frame(struct sp_symbolizer *symbolizer,
				       uint32_t frame_id, int32_t pid,
				       const struct sp_resolved_frame **out);

/**
 * sp_symbolizer_resolve_stack resolves stack node @stack (leaf to root)
 * for process @pid and stores up to @cap pointers to resolved frames,
 * leaf first with inline frames expanded innermost first. With the
 * internal stack cache the whole stack is kept after its first
 * resolution, so a repeat is one lookup.
 * @return the total number of resolved frames (may exceed @cap), -EINVAL,
 *         -ENOMEM.
 * Thread: any. Allocates: only for stacks (internal cache) or frames
 * (external) never resolved before.
 */
SP_API int sp_symbolizer_resolve_stack(struct sp_symbolizer *symbolizer,
				       uint32_t stack, int32_t pid,
				       const struct sp_resolved_frame **out,
				       size_t cap);

/**
 * sp_symbolizer_resolve_raw resolves caller-owned raw frames (leaf first)
 * for process @pid on a symbolizer made by sp_symbolizer_new_modules(),
 * and stores up to @cap pointers to resolved frames, leaf first with
 * inline frames expanded innermost first. No stack entry is kept: each
 * distinct raw frame is interned once and its result cached per pid, so
 * resolving frames seen before allocates nothing and takes no lock.
 * @param frames,n raw frames: pinned ones name a module of the table and
 *        a @file_relative_ip inside it (@abs_ip 0 or the matching
 *        absolute address; @mode that of the module); unpinned ones have
 *        @module_id SP_NO_MODULE and @abs_ip (@file_relative_ip ignored);
 *        markers have mode SP_FRAME_TRUNCATED and zero fields otherwise.
 * @return the total number of resolved frames (may exceed @cap), -EINVAL
 *         (a malformed frame, or a symbolizer made over a spool), -ENOMEM.
 *         Borrowed: valid until sp_symbolizer_free().
 * Thread: any. Allocates: only for frames never resolved before.
 */
SP_API int sp_symbolizer_resolve_raw(struct sp_symbolizer *symbolizer,
				     int32_t pid, const struct sp_frame *frames,
				     size_t n,
				     const struct sp_resolved_frame **out,
				     size_t cap);

/**
 * struct sp_invalidation reports what an update made stale in caches the
 * caller keeps (results for these pids must be resolved again). @all is
 * set when every result may have changed (new kernel mappings: kernel
 * frames are cached under every pid); the symbolizer's own cache was
 * emptied then. The symbolizer has already dropped the invalidated pids'
 * frames and (internal stack cache) stacks: pointers it returned for them
 * are no longer valid.
 */
struct sp_invalidation {
	bool all;
	const int32_t *pids; /* borrowed until the next update */
	size_t pid_count;
};

/**
 * sp_symbolizer_update applies one Tail batch (call it once per polled
 * batch, also empty ones, before resolving the batch): new modules, perf
 * map reloads when a map file changed, new kernel addresses, and
 * retirements (applied after the batch that still references them).
 * @return 0, -ENOMEM.
 * Thread: single-owner (no resolve may run). Allocates: yes.
 */
SP_API int sp_symbolizer_update(struct sp_symbolizer *symbolizer,
				const struct sp_tail *tail,
				struct sp_invalidation *out);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_SYMBOLIZER_H */
