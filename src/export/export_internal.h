/* SPDX-License-Identifier: MIT */
/* Exporters: the aggregated profile model and output helpers every format uses. */
#ifndef SP_EXPORT_INTERNAL_H
#define SP_EXPORT_INTERNAL_H

/*
 * src/export is a separate layer built on the public API only (no src/base
 * headers): it reads a spool with a Replay, symbolizes each distinct stack
 * once with a Symbolizer and hands formats one aggregated model:
 *
 *   frames[]   interned symbolized frames (name, file, module, line, kind,
 *              flags, inline depth), deduplicated by content;
 *   stacks[]   one per distinct (pid, spool stack node): root-first frame
 *              indices in pool[pos .. pos+len), with raw[] the spool frame
 *              id each entry came from (inline chains share one raw id;
 *              a new raw frame starts at every entry of inline_depth 0);
 *   threads[]  the (pid, tid) pairs that have samples after the pid filter;
 *   counts[]   (thread, stack, count), sorted by thread then stack.
 *
 * Memory grows with the number of distinct stacks and frames, never with
 * the sample count. Timeline formats call sp__profile_each_sample(), a
 * second Replay pass that maps every sample to (timestamp, thread, stack)
 * in file order through the (pid, spool stack) -> stack map.
 *
 * Strings in frames are borrowed from the symbolizer and stay valid until
 * sp__profile_fini(). Names may hold any bytes: writers escape them with
 * sp__xout_json_str() / sp__xout_xml().
 *
 * Allocation goes through struct sp__xmem: the caller's sp_allocator from
 * the export options, or libc behind xmem.c (the only file that calls it).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/export.h>
#include <stackpulse/replay.h>
#include <stackpulse/sink.h>
#include <stackpulse/spool.h>
#include <stackpulse/symbolizer.h>
#include <stackpulse/text.h>

/* ---- memory (xmem.c) ---- */

struct sp__xmem {
	const struct sp_allocator *user; /* NULL: libc */
};

void *sp__xmem_alloc(const struct sp__xmem *mem, size_t size);
void *sp__xmem_calloc(const struct sp__xmem *mem, size_t n, size_t size);
void sp__xmem_free(const struct sp__xmem *mem, void *ptr, size_t size);
/* Resizes @ptr from @old_size to @new_size; NULL (and @ptr kept) on failure. */
void *sp__xmem_realloc(const struct sp__xmem *mem, void *ptr, size_t old_size,
		       size_t new_size);
/*
 * Makes room for @need elements of @elem bytes in *@arr (capacity *@cap),
 * doubling. Returns 0 or -ENOMEM.
 */
int sp__xmem_reserve(const struct sp__xmem *mem, void **arr, size_t *cap,
		     size_t need, size_t elem);

/* ---- u64 -> u32 open-addressing hash map (xmap.c) ---- */

/*
 * Keys are arbitrary u64 (callers hash composite keys into one); several
 * entries may share a key, so content-keyed users (frame interning) walk
 * candidates with sp__xmap_next(). Never shrinks; load factor <= 1/2.
 */
struct sp__xmap {
	uint64_t *keys;
	uint32_t *vals; /* UINT32_MAX marks an empty slot */
	size_t cap;	/* power of two or 0 */
	size_t len;
};

/* Inserts (@key, @val) (duplicates allowed). Returns 0 or -ENOMEM. */
int sp__xmap_put(struct sp__xmap *map, const struct sp__xmem *mem, uint64_t key,
		 uint32_t val);
/*
 * Iterates the values stored under @key: start with *@pos = 0; returns
 * true and sets *@val while there are more.
 */
bool sp__xmap_next(const struct sp__xmap *map, uint64_t key, size_t *pos,
		   uint32_t *val);
/* Returns the first value stored under @key, or UINT32_MAX. */
uint32_t sp__xmap_get(const struct sp__xmap *map, uint64_t key);
void sp__xmap_fini(struct sp__xmap *map, const struct sp__xmem *mem);
/* A 64-bit hash of bytes, chained through @seed. */
uint64_t sp__xhash(const void *data, size_t len, uint64_t seed);
uint64_t sp__xhash_u64(uint64_t v);

/* ---- the profile model (profile.c, profile_frames.c) ---- */

/* What a frame is drawn and categorized as. */
enum sp__xkind {
	SP__XKIND_NATIVE = 0,
	SP__XKIND_KERNEL = 1,
	SP__XKIND_PYTHON = 2,
	SP__XKIND_JIT = 3,	 /* perf-map / JIT code */
	SP__XKIND_TRUNCATED = 4, /* the "<stack truncated>" marker */
	SP__XKIND_UNKNOWN = 5,	 /* address only, no module */
};

struct sp__xframe {
	const char *name;	 /* never NULL */
	const char *system_name; /* mangled symbol of @name, NULL if none */
	const char *file;	 /* NULL when unknown */
	const char *module;	 /* NULL when none */
	uint32_t line;
	uint32_t kind;	       /* enum sp__xkind */
	uint32_t flags;	       /* SP_RESOLVED_* of the first occurrence */
	uint32_t inline_depth; /* 0 = a real (outermost) function */
	uint32_t module_id;    /* spool module id or SP_NO_MODULE */
	uint32_t decl_line;    /* the function's first line, 0 if unknown */
};

/*
 * A function as viewers group frames: one per (name, module, kind), and
 * for Python also per file (two scripts may both define "run"). Native
 * frames of one function may carry different files (code #included into
 * its body, e.g. CPython's generated_cases.c.h in the eval loop), so
 * @file is the one file all its frames agree on, or NULL; @decl_line
 * likewise the first line they agree on (per function in DWARF, so it
 * differs only between two functions of one name, such as two static
 * helpers in two files of a module), or 0.
 */
struct sp__xfunc {
	const char *name;
	const char *file; /* NULL when unknown or not the same in every frame */
	const char *module;
	uint32_t kind;
	uint32_t frame;	    /* first frames[] index of the function */
	uint32_t decl_line; /* 0 when unknown or not the same in every frame */
	bool mixed;	    /* frames disagree on the file */
	bool mixed_decl;    /* frames disagree on the first line */
};

struct sp__xstack {
	int32_t pid;
	uint32_t spool_stack; /* leaf stack node id in the spool */
	size_t pos;	      /* first entry in pool[] / raw[] */
	uint32_t len;	  /* entries, root first; 0 only if resolution failed */
	uint64_t samples; /* over all threads */
};

struct sp__xthread {
	int32_t pid;
	int32_t tid;
	uint32_t spool_thread; /* index in the spool's thread table */
	uint64_t samples;
	uint64_t first_ns; /* timestamps of its first and last sample */
	uint64_t last_ns;
};

struct sp__xcount {
	uint32_t thread; /* index in threads[] */
	uint32_t stack;	 /* index in stacks[] */
	uint64_t count;
};

struct sp__profile {
	struct sp__xmem mem;
	const struct sp_logger *logger;
	struct sp_replay *replay;
	const struct sp_spool *spool;
	struct sp_symbolizer *symbolizer;
	uint32_t flags; /* SP_EXPORT_* */
	int32_t pid;	/* filter, 0 = all */
	char *title;	/* opts->title or the file's basename; owned */
	size_t title_size;

	struct sp__xframe *frames;
	size_t nframes, frames_cap;
	struct sp__xstack *stacks;
	size_t nstacks, stacks_cap;
	uint32_t *pool; /* frame indices, root first */
	uint32_t *raw;	/* spool frame id of each pool entry */
	size_t pool_len, pool_cap, raw_cap;
	struct sp__xthread *threads;
	size_t nthreads, threads_cap;
	struct sp__xcount *counts;
	size_t ncounts, counts_cap;

	uint64_t total_samples;	    /* after the pid filter */
	uint64_t first_ns, last_ns; /* 0 / 0 when there are no samples */
	uint32_t max_depth;	    /* longest stack, in entries */

	/* Build-time and lookup maps. */
	struct sp__xmap stack_map; /* (pid, spool stack) -> stacks[] */
	uint32_t *thread_of; /* spool thread -> threads[], UINT32_MAX: none */
	size_t thread_of_cap;
	struct sp__xmap frame_ptr_map; /* resolved frame address -> frames[] */
	struct sp__xmap frame_map;     /* content hash -> frames[] */
	struct sp__xmap count_map;     /* (thread, stack) -> counts[] */
	struct sp__xmap main_map;      /* pid -> main module (xprocess.c) */
	/* Functions (sp__profile_functions), built on first use. */
	struct sp__xfunc *funcs;
	size_t nfuncs, funcs_cap;
	uint32_t *func_of_frame; /* frames[] -> funcs[] */
	struct sp__xmap func_map;
	const struct sp_resolved_frame **scratch; /* resolve_stack output */
	size_t scratch_cap;
};

/*
 * sp__profile_build opens @path, aggregates every sample that passes
 * @opts->pid and symbolizes each distinct stack once. @opts is validated
 * (size, unknown flags). On failure everything is released.
 * @return 0, -EINVAL, reader and symbolizer errors, -ENOMEM.
 */
int sp__profile_build(struct sp__profile *prof, const char *path,
		      const struct sp_export_opts *opts);
void sp__profile_fini(struct sp__profile *prof);

/*
 * sp__profile_add_stack symbolizes spool stack @spool_stack for @pid and
 * appends it as a new stacks[] entry (profile_frames.c; build-time only).
 */
int sp__profile_add_stack(struct sp__profile *prof, int32_t pid,
			  uint32_t spool_stack, uint32_t *idx);

/*
 * sp__profile_functions fills funcs[] and func_of_frame[] (once; later
 * calls return 0 at once). @return 0 or -ENOMEM.
 */
int sp__profile_functions(struct sp__profile *prof);

/*
 * sp__profile_each_sample replays the file and calls @fn for every sample
 * that passes the pid filter and belongs to threads[@first, @end), in
 * file order. Samples of other threads are skipped before their stack is
 * looked up, which matters to formats that make one pass per batch of
 * threads. A non-zero return of @fn stops the pass and is returned.
 */
int sp__profile_each_sample(struct sp__profile *prof, uint32_t first,
			    uint32_t end,
			    int (*fn)(void *ctx, uint64_t timestamp_ns,
				      uint32_t thread, uint32_t stack),
			    void *ctx);

/* Entries of stack @s, root first. */
static inline const uint32_t *
sp__profile_stack_frames(const struct sp__profile *prof, uint32_t s)
{
	return prof->pool + prof->stacks[s].pos;
}

/*
 * sp__profile_main_module returns the spool module id of @pid's main
 * executable (see xprocess.c), or SP_NO_MODULE; sp__profile_process_name
 * its file name (borrowed from the spool), or NULL when there is none.
 */
uint32_t sp__profile_main_module(struct sp__profile *prof, int32_t pid);
const char *sp__profile_process_name(struct sp__profile *prof, int32_t pid);

/*
 * sp__xbuildid reads the GNU build-id note of the ELF file @path into
 * @out (at most @cap bytes) when the file still is the module that was
 * recorded (same device and inode when the record has them). Opens
 * without blocking and reads only regular files, with bounded reads.
 * @return the build-id length, or 0 when there is none to trust.
 */
size_t sp__xbuildid(const struct sp_module *mod, unsigned char *out,
		    size_t cap);

/* sp__xkind_name: "native", "kernel", "python", "jit", "truncated", "unknown". */
const char *sp__xkind_name(uint32_t kind);
/* "cpu", "off-cpu" or "wall": what the samples' time is (sp_spool_mode). */
const char *sp__xmode_name(const struct sp_spool *spool);

/* ---- buffered output (xout.c) ---- */

/*
 * struct sp__xout buffers small writes and hands 64 KiB blocks to @emit
 * (a sink by default; the gzip formats install their own). Errors are
 * sticky: after the first failure writes are dropped and
 * sp__xout_finish() returns the error.
 */
struct sp__xout {
	int (*emit)(void *ctx, const void *buf, size_t len);
	void *ctx;
	const struct sp__xmem *mem;
	char *buf;
	size_t len, cap;
	int err;
};

/* Writes to @sink (borrowed). Returns 0 or -ENOMEM. */
int sp__xout_init_sink(struct sp__xout *out, const struct sp__xmem *mem,
		       struct sp_sink *sink);
int sp__xout_init_fn(struct sp__xout *out, const struct sp__xmem *mem,
		     int (*emit)(void *ctx, const void *buf, size_t len),
		     void *ctx);
/* Emits what is buffered; returns the sticky error or 0. Does not free. */
int sp__xout_flush(struct sp__xout *out);
/* Flushes and releases the buffer; returns the first error or 0. */
int sp__xout_finish(struct sp__xout *out);

void sp__xout_write(struct sp__xout *out, const void *buf, size_t len);
void sp__xout_str(struct sp__xout *out, const char *s);
/* The slow path of sp__xout_char(): flush, then append. */
void sp__xout_char_flush(struct sp__xout *out, char c);
/*
 * Appends @c. Inline because timeline formats write a separator per
 * sample: millions of calls in a large export.
 */
static inline void sp__xout_char(struct sp__xout *out, char c)
{
	if (out->len < out->cap)
		out->buf[out->len++] = c;
	else
		sp__xout_char_flush(out, c);
}
void sp__xout_u64(struct sp__xout *out, uint64_t v);
void sp__xout_i64(struct sp__xout *out, int64_t v);
/* Fixed-point with @decimals digits (0..9), e.g. SVG coordinates. */
void sp__xout_fixed(struct sp__xout *out, double v, int decimals);

/*
 * sp__xout_json_str writes @s as a JSON string literal, quotes included:
 * first through sp_text_escape() (controls, DEL, C1 and every byte of an
 * invalid sequence as the text \xNN), then '"' and '\' escaped, so the
 * output is always valid UTF-8 JSON whatever the input.
 */
void sp__xout_json_str(struct sp__xout *out, const char *s);
/*
 * sp__xout_xml writes @s as XML character data or attribute text: first
 * through sp_text_escape() (controls, DEL, C1 and invalid UTF-8 bytes as
 * \xNN), then & < > " ' as entities.
 */
void sp__xout_xml(struct sp__xout *out, const char *s);
/*
 * sp__utf8_seq returns the length (1..4) of the valid UTF-8 sequence at
 * @s (at most @len bytes), or 0 if the bytes there are not valid UTF-8.
 */
size_t sp__utf8_seq(const unsigned char *s, size_t len);

/* ---- the flame graph's merged tree (svg_tree.c) ---- */

/*
 * Stacks merged by frame name and kind at each level, under one synthetic
 * root ("all", node 0, depth 0). Children are linked in name order.
 */
struct sp__fnode {
	uint32_t frame; /* representative frames[] index (none for the root) */
	uint32_t parent;
	uint32_t child; /* first child, UINT32_MAX when none */
	uint32_t next;	/* next sibling */
	uint32_t depth;
	uint64_t total; /* samples in this subtree */
};

struct sp__ftree {
	struct sp__fnode *nodes;
	size_t nnodes, cap;
};

int sp__ftree_build(struct sp__ftree *tree, struct sp__profile *prof);
void sp__ftree_fini(struct sp__ftree *tree, const struct sp__xmem *mem);

/* ---- formats (one file each) ---- */

int sp__export_folded(struct sp__profile *prof, struct sp_sink *sink);
int sp__export_svg(struct sp__profile *prof, struct sp_sink *sink, bool icicle);
int sp__export_speedscope(struct sp__profile *prof, struct sp_sink *sink);
int sp__export_firefox(struct sp__profile *prof, struct sp_sink *sink);
int sp__export_pprof(struct sp__profile *prof, struct sp_sink *sink);

#endif /* SP_EXPORT_INTERNAL_H */
