/* SPDX-License-Identifier: MIT */
/* Private state of the Symbolizer core: the object, its result cache, helpers. */
#ifndef SP_SYMBOLIZER_INTERNAL_H
#define SP_SYMBOLIZER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ck_epoch.h>

#include "arena.h"
#include "map.h"
#include "sym_internal.h"
#include "vec.h"

/*
 * The core keeps one immutable entry per resolved (pid, frame id): a header
 * and the frame's inline chain, with every string the chain needs copied
 * behind it, in one allocation:
 *
 *   struct sp__sym_entry | frames[count] | "name\0file\0..."
 *
 * Copying makes an entry independent of the backend that produced it, so
 * perf maps and sparse kernel tables can be replaced on update without
 * touching entries of other processes. Module paths are not copied: they
 * point into the spool, which outlives the symbolizer.
 *
 * With the internal stack cache, a resolved (pid, stack id) is one more
 * entry in the same table: an array of pointers into the frame entries of
 * the same pid, leaf first, inline chains expanded. Invalidation drops a
 * pid's frames and stacks together, so a stack entry never outlives the
 * frames it points to.
 *
 *   struct sp__sym_stack | frames[count] (const struct sp_resolved_frame *)
 *
 * Entries live in an SPMC open-addressing table (sym_cache.c) that only
 * knows their common header (key, size): misses are computed and inserted
 * under sym->lock, hits are lock-free reads inside a ck_epoch section, and
 * a grown table's old slot array is freed through ck_epoch_call once no
 * reader can still see it. ck_ht/ck_hs were not used because their struct
 * ck_malloc callbacks carry no context pointer, so they cannot allocate
 * through the per-object allocator (STYLE R15) without process-global
 * state.
 */

/* What an entry is: one table holds all three kinds, told apart by this. */
enum sp__sym_kind {
	SP_SYM_KIND_FRAME = 0, /* struct sp__sym_entry */
	SP_SYM_KIND_STACK = 1, /* struct sp__sym_stack */
	SP_SYM_KIND_RAW = 2,   /* a module-table symbolizer's raw frame */
};

/* What the table knows of an entry: its key, kind and allocation size. */
struct sp__sym_hdr {
	uint64_t key;
	size_t bytes;  /* size of the whole allocation */
	uint32_t kind; /* enum sp__sym_kind */
	uint32_t reserved;
};

struct sp__sym_entry {
	struct sp__sym_hdr hdr; /* first: the table sees only this */
	uint32_t count;
	uint32_t reserved;
	struct sp_resolved_frame frames[];
};

struct sp__sym_stack {
	struct sp__sym_hdr hdr; /* first: the table sees only this */
	uint32_t count;
	uint32_t reserved;
	const struct sp_resolved_frame *frames[];
};

/* The entry a header found by the table belongs to (NULL stays NULL). */
static inline const struct sp__sym_entry *
sp__sym_entry_of(const struct sp__sym_hdr *h)
{
	return (const struct sp__sym_entry *)(const void *)h;
}

static inline const struct sp__sym_stack *
sp__sym_stack_of(const struct sp__sym_hdr *h)
{
	return (const struct sp__sym_stack *)(const void *)h;
}

/*
 * Key of (pid, frame or stack id): pid + 2 in the high 32 bits, the id in
 * the low ones. Every pid a spool can hold (threads 1 .. 2^31 - 1, and -1
 * for "no process") has a key, and none is 0 (an empty slot): the reader
 * and the symbolizer accept the same pids. Frames and stacks of one pid
 * share key values; the table tells them apart by kind, stored in the
 * slot next to the key (sym_cache.c).
 */
#define SP_SYM_PID_MIN (-1)
#define SP_SYM_PID_MAX INT32_MAX

static inline uint64_t sp__sym_key(int32_t pid, uint32_t id)
{
	return (uint64_t)((uint32_t)pid + 2u) << 32 | id;
}

static inline int32_t sp__sym_key_pid(uint64_t key)
{
	return (int32_t)((uint32_t)(key >> 32) - 2u);
}

/* Readers that may be inside an epoch section at the same time. */
#define SP_SYM_READERS 32

struct sp__sym_reader {
	_Alignas(64) ck_epoch_record_t rec;
	atomic_uint busy;
};

struct sp__sym_table;

struct sp__sym_cache {
	const struct sp__mem *mem;
	_Atomic(struct sp__sym_table *) table;
	size_t count; /* entries; writer only */
	ck_epoch_t epoch;
	ck_epoch_record_t writer;	/* defers frees of grown tables */
	struct sp__sym_reader *readers; /* [SP_SYM_READERS] */
};

int sp__sym_cache_init(struct sp__sym_cache *cache, const struct sp__mem *mem);
/* Frees the table and every entry. No reader may run. */
void sp__sym_cache_fini(struct sp__sym_cache *cache);

/*
 * Enters a read section with a pooled epoch record. Returns NULL when all
 * records are taken; the caller then reads under sym->lock instead.
 */
struct sp__sym_reader *sp__sym_cache_enter(struct sp__sym_cache *cache);
void sp__sym_cache_leave(struct sp__sym_reader *reader);

/*
 * Lock-free lookup of the entry of @kind under @key; call inside a read
 * section or under the writer lock.
 */
const struct sp__sym_hdr *sp__sym_cache_get(const struct sp__sym_cache *cache,
					    uint64_t key, uint32_t kind);
/*
 * Same, for tables whose keys are hashes that may collide: returns the
 * first entry of @key and @kind for which @match(entry, @ctx) is true.
 */
const struct sp__sym_hdr *
sp__sym_cache_find(const struct sp__sym_cache *cache, uint64_t key,
		   uint32_t kind,
		   bool (*match)(const struct sp__sym_hdr *, const void *),
		   const void *ctx);
/*
 * Inserts @entry (its key and kind not present). Writer lock held.
 * 0 or -ENOMEM.
 */
int sp__sym_cache_put(struct sp__sym_cache *cache, struct sp__sym_hdr *entry);
/*
 * Frees every entry of the sorted @pids (every entry when @pids is NULL)
 * and rebuilds the table without them. No reader may run. Returns the
 * number of entries dropped or -ENOMEM (then nothing changed).
 */
long sp__sym_cache_drop_pids(struct sp__sym_cache *cache, const int32_t *pids,
			     size_t n);

/* Convenience lookups of the two kinds of entries. */
static inline const struct sp__sym_entry *
sp__sym_cache_frame(const struct sp__sym_cache *cache, int32_t pid,
		    uint32_t frame_id)
{
	return sp__sym_entry_of(sp__sym_cache_get(
		cache, sp__sym_key(pid, frame_id), SP_SYM_KIND_FRAME));
}

static inline const struct sp__sym_stack *
sp__sym_cache_stack(const struct sp__sym_cache *cache, int32_t pid,
		    uint32_t stack)
{
	return sp__sym_stack_of(sp__sym_cache_get(
		cache, sp__sym_key(pid, stack), SP_SYM_KIND_STACK));
}

/* Per-module state, indexed by spool module id. */
struct sp__sym_module {
	int status; /* 0 = not tried, 1 = ready, < 0 = error of the open */
	struct sp__image *img;	   /* own reference */
	struct sp__native *native; /* borrowed from sym->natives */
	uint64_t bias;
	bool has_bias;
};

/* A built-in backend and the image it was made for (own reference). */
struct sp__sym_native {
	struct sp__image *img;
	struct sp__native *native;
};

/*
 * Per-process perf-map state. A perf map is named by pid only, so it can
 * describe only the newest process that used the pid: frames of an older
 * process generation (frame ids below @gen_start: the writer interns
 * unpinned frames afresh after a tag-7 retirement) never read it, and
 * once the spool carries Python-runtime markers for the pid, the latest
 * one decides (research/stackpulse-features.md §1.7, §1.10).
 */
/*
 * One process generation of a pid (sym_gens.c): the frame records between
 * two of its tag-7 retirements, and the perf map that names its JIT code.
 */
struct sp__sym_gen {
	uint32_t start; /* first frame id */
	uint32_t end;	/* frame count at its retirement; SP_NEVER: open */
	bool content;	/* a module of the pid was defined in it */
	bool python;	/* it carried a Python-runtime "on" marker */
	bool tried;	/* @map was looked for */
	bool from_dir;	/* @map is perf_map_dir's file, not a side copy */
	struct sp__perf_map *map;
};

struct sp__sym_pid {
	int32_t pid;
	bool any_python;     /* some generation carried an "on" marker */
	bool dir_read;	     /* perf_map_dir's file was read since a change */
	struct sp__vec gens; /* struct sp__sym_gen by start; [0].start = 0 */
	uint64_t stat_id[4]; /* dev, ino, size, mtime of the dir's map read */
};

#define SP_SYM_MAX_CHAIN 64 /* inline frames kept per raw frame */

struct sp_symbolizer {
	struct sp__mem mem;
	const struct sp_spool *spool;
	const struct sp_logger *logger;
	uint32_t flags;
	bool has_plugin;
	struct sp_native_symbolizer plugin;
	const char *perf_map_dir;
	const char *jit_dir; /* side directory of the spool, NULL: none */
	const char *kallsyms_path;
	const char *debug_dirs;
	int32_t *perf_map_pids; /* sorted; NULL = every pid */
	size_t perf_map_pid_count;
	struct sp__arena arena; /* option strings */
	uint64_t page_size;

	struct sp__sym_cache cache;
	bool cache_ready;
	uint32_t stack_cache; /* enum sp_stack_cache */

	/* Module-table symbolizers only (sym_modules.c). */
	struct sp_spool *own_spool;	/* the table and interned raw frames */
	struct sp__sym_cache raw_index; /* raw frame -> interned id */
	bool raw_ready;
	atomic_uint raw_frames; /* frames interned; published after each */

	/* Serializes misses: everything below is touched only under it. */
	pthread_mutex_t lock;
	struct sp__image_cache *images;
	struct sp__image *vdso;
	int vdso_err;
	struct sp__vec modules;	     /* struct sp__sym_module by module id */
	struct sp__map native_index; /* image address -> index in natives */
	struct sp__vec natives;	     /* struct sp__sym_native */
	struct sp__map pid_index;    /* pid -> index in pids */
	struct sp__vec pids;	     /* struct sp__sym_pid */
	uint64_t perf_map_bytes;     /* held by all pids' maps */
	struct sp__ksyms *ksyms;
	bool ksyms_loaded;
	uint32_t ksyms_frames; /* frame count when kernel PCs were collected */
	struct sp_resolved_frame chain[SP_SYM_MAX_CHAIN];
	char name_buf[512];	   /* address-only name being built */
	struct sp__vec miss_ids;   /* uint32_t frame ids of one stack */
	struct sp__vec batch;	   /* struct sp_native_lookup */
	struct sp__vec batch_mods; /* struct sp_module of each lookup */
	struct sp__vec batch_ids;  /* uint32_t frame ids of the batch */
	struct sp__vec batch_out;  /* struct sp_resolved_frame */

	/* Update state (single owner). */
	struct sp__vec retire_pids; /* int32_t: released at the next update */
	struct sp__vec retire_modules; /* uint32_t: likewise */
	struct sp__vec invalid_pids; /* int32_t: reported by the last update */
	uint32_t modules_seen;	     /* module records checked by updates */
	struct sp__sym_jit *jit;     /* jitdump names (sym_jit.c) */
	uint32_t gen_modules_seen;   /* module records given to generations */
	/* What the last scan of a Snapshot's or Replay's generations saw. */
	size_t scan_modules, scan_python;
	uint64_t scan_retirements;
};

/* ---- frame_names.c ---- */

/*
 * Copies @n (<= SP_SYM_MAX_CHAIN) frames and their strings into one new
 * entry for @key; module strings equal to @borrowed_module (the spool's
 * path) are not copied. With @demangle, a mangled name becomes the
 * frame's name demangled, the symbol its mangled_name (demangle.c).
 * Returns NULL on exhaustion.
 */
struct sp__sym_entry *sp__sym_entry_new(const struct sp__mem *mem, uint64_t key,
					const struct sp_resolved_frame *frames,
					size_t n, const char *borrowed_module,
					bool demangle);
void sp__sym_entry_free(const struct sp__mem *mem, struct sp__sym_entry *entry);

/* The last path component of @path ("" stays ""). */
const char *sp__sym_basename(const char *path);
/* Is @path a bracketed pseudo mapping ("[heap]"), other than "[vdso]"? */
bool sp__sym_is_pseudo_path(const char *path);
/* Writes "<basename>+0x<ip>" / "[kernel]+0x<ip>" / "<0x<ip>>" to @buf. */
void sp__sym_address_name(char *buf, size_t len, const char *prefix,
			  uint64_t ip);
void sp__sym_unknown_name(char *buf, size_t len, uint64_t ip);

/* ---- symbolizer.c (called by sym_update.c, sym_stack.c, sym_modules.c) ---- */

/*
 * Creates a symbolizer over @spool, or when @spool is NULL over a store
 * built from the module table @mods/@n (sp__sym_table_init).
 */
int sp__sym_new(const struct sp_spool *spool, const struct sp_module *mods,
		size_t n, const struct sp_symbolizer_opts *opts,
		struct sp_symbolizer **out);
/* Resolves and caches every frame of @ids not cached yet (lock held). */
int sp__sym_resolve_misses(struct sp_symbolizer *sym, int32_t pid,
			   const uint32_t *ids, size_t count);

static inline bool sp__sym_valid_pid(int32_t pid)
{
	return pid >= SP_SYM_PID_MIN && pid <= SP_SYM_PID_MAX;
}

/* Looks up or creates the state of @pid (lock held). NULL on -ENOMEM. */
struct sp__sym_pid *sp__sym_pid_state(struct sp_symbolizer *sym, int32_t pid,
				      bool create);

/* ---- sym_update.c (called by symbolizer.c, lock held) ---- */

/* Kernel symbols, loaded on first use (sparse for the host's kallsyms). */
const struct sp__ksyms *sp__sym_ksyms(struct sp_symbolizer *sym);
/* Reports @pid as invalidated by the update under way. 0 or -ENOMEM. */
int sp__sym_invalidate(struct sp_symbolizer *sym, int32_t pid);

/* ---- sym_gens.c (called with the lock held, or by the single owner) ---- */

/*
 * The perf map of the generation of @pid that frame @frame_id (module
 * context @mod, NULL when none) belongs to, loaded on first use: the side
 * directory's copy of that generation, else perf_map_dir's file for the
 * pid's newest generation when the marker rules allow it. NULL: none.
 */
const struct sp__perf_map *sp__sym_gen_perf_map(struct sp_symbolizer *sym,
						int32_t pid, uint32_t frame_id,
						const struct sp_module *mod);
/* Frees the perf maps and generations of @p. */
void sp__sym_pid_fini(struct sp_symbolizer *sym, struct sp__sym_pid *p);
/*
 * Reads the process generations and Python-runtime markers a Snapshot or
 * Replay spool holds now (at sp_symbolizer_new). Returns 0 or -ENOMEM.
 */
int sp__sym_scan_generations(struct sp_symbolizer *sym);
/*
 * Applies one Tail batch to the generations: its markers, its new
 * modules, its retirements (in that order: a batch ends right after a
 * retirement), and perf_map_dir files that changed. Invalidated pids go
 * to sp__sym_invalidate(). Returns 0 or -ENOMEM.
 */
int sp__sym_gens_update(struct sp_symbolizer *sym, const struct sp_tail *tail);

/* ---- sym_jit.c: JIT code names from jitdump files (lock held) ---- */

struct sp__sym_jit;
/* Sets up sym->jit; @dir is the jit_dir option (copied by the caller). */
int sp__sym_jit_new(struct sp_symbolizer *sym, const char *dir);
void sp__sym_jit_free(struct sp_symbolizer *sym);
/*
 * Names user frame @frame_id of @pid at @pc into sym->chain[0] from a
 * jitdump file of the pid; @mod is the frame's module (NULL: none).
 * Returns 1, 0 (no name) or -ENOMEM.
 */
int sp__sym_jit_chain(struct sp_symbolizer *sym, int32_t pid, uint32_t frame_id,
		      uint64_t pc, const struct sp_module *mod);
/* Whether module @m is itself a jitdump file (a GDB JIT object's code). */
bool sp__sym_jit_module(const struct sp_module *m);

/* ---- sym_modules.c: module-table symbolizers ---- */

/*
 * Builds sym->own_spool from the table (validated: -EINVAL) and the raw
 * frame index. Returns 0, -EINVAL, -ENOMEM.
 */
int sp__sym_table_init(struct sp_symbolizer *sym, const struct sp_module *mods,
		       size_t n);
/* Frees what sp__sym_table_init built (after the result cache). */
void sp__sym_table_fini(struct sp_symbolizer *sym);
/* Frame ids below this may be resolved; safe to call without the lock. */
uint32_t sp__sym_frame_limit(const struct sp_symbolizer *sym);

#endif /* SP_SYMBOLIZER_INTERNAL_H */
