/* SPDX-License-Identifier: MIT */
/* JIT code at record time: jitdump unwinding info and GDB JIT objects per process. */
#ifndef SP_ENGINE_JIT_TRACK_H
#define SP_ENGINE_JIT_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include <stackpulse/recorder.h>

#include "gdbjit.h"
#include "mem.h"
#include "unwind_jit.h"
#include "vec.h"

/*
 * What the recorder learns about a process's generated code, and from
 * where (docs/how-to/jit.md):
 *
 *   jitdump    a module whose file is named jit-<pid>.dump (the JIT maps
 *              it so that perf sees it) is followed as it grows; each
 *              code load with unwinding info becomes a region with a CFI
 *              table (jit_dump.c). Names stay in that file.
 *   GDB JIT    a module whose ELF defines __jit_debug_descriptor makes
 *              the process's descriptor known (jit_desc.c); its entry
 *              list is checked at most every SP__JIT_CHECK_NS, walked
 *              again only when the descriptor changed or every
 *              SP__JIT_FULL_NS, and each new object becomes regions with
 *              the CFI of its .eh_frame (jit_gdb.c). The objects vanish
 *              with the code, so their function names are copied at once
 *              into a jitdump file of the recorder's, the sidecar
 *              (jit_sidecar.c), and while an object is registered its
 *              code span is a module of the process whose path is the
 *              sidecar (as perf inject maps a file over JIT code): its
 *              frames are its own, named from that file.
 *
 * Regions of one process form its index (unwind_jit.h). Unwinds read an
 * immutable snapshot of it, referenced by the job like a module-map
 * version; snapshots and tables are counted and freed on the
 * sequencer's thread only, like struct sp__mver.
 *
 * jitdump code that replaces other code at the same addresses (freed and
 * reused, or moved over) would let a spool frame, interned per module
 * and address for the whole recording, keep the old code's name. So
 * before the first sample at or after such a replacement, the anonymous
 * modules around it are written again as a new generation (tag 8 +
 * tag 1): the frames after it are new frames, named by the symbolizer at
 * their own time (struct sp__jit_regen). GDB JIT objects need none: each
 * has its own module.
 *
 * When an unwind stops inside memory that may hold JIT code of a process
 * with a JIT source, the process is checked at once (at most every
 * SP__JIT_RETRY_NS) and the sample unwound once more (the recorder's
 * recorder/jit_code.c, which owns the jobs). What reads the target or
 * files (sp__jit_refresh) is called through the recorder's policy, so a
 * replay of captured records reads nothing.
 */

#define SP__JIT_CHECK_NS 100000000ull	/* routine checks: 100 ms */
#define SP__JIT_FULL_NS 1000000000ull	/* objects read again: 1 s */
#define SP__JIT_RETRY_NS 10000000ull	/* refresh for a failed unwind */
#define SP__JIT_REGIONS_MAX (1u << 20)	/* per process */
#define SP__JIT_TABLE_CACHE 4096	/* distinct jitdump unwind infos */
#define SP__JIT_READ_BUDGET (16u << 20) /* jitdump bytes per poll */
#define SP__JIT_SCAN_BUDGET 8		/* images opened per poll */
#define SP__JIT_URGENT_BUDGET 64	/* the same, for stopped unwinds */

struct sp__procs;
struct sp__process;

/* A CFI table shared by regions and snapshots. */
struct sp__jit_table {
	struct sp__cfi_table *t;
	size_t refs;
	uint64_t base; /* svma of its first row */
	uint64_t span;
};

/*
 * A region and the table it holds a reference to; areas without a table
 * are code without unwinding data, kept to see when code is replaced.
 */
struct sp__jit_area {
	struct sp__jit_region r;
	struct sp__jit_table *tab;
	uint64_t code_index; /* jitdump code index (moves), object seq */
};

/* Code whose unwinding info is known, to recognise copies by their bytes. */
struct sp__jit_bytes {
	uint64_t hash;
	uint8_t *code;
	size_t len;
	struct sp__jit_table *tab;
};

/* A pending new generation of the anonymous modules over [lo, hi). */
struct sp__jit_regen {
	uint64_t time;
	uint64_t lo;
	uint64_t hi;
};

/*
 * An object of the GDB JIT list, as last read. Its code span is a module
 * of the process while it is registered (jit_gdb.c): @module, or
 * SP_NO_MODULE; @under/@under_path describe the mapping it covered, to
 * put back when the object goes.
 */
struct sp__jit_object {
	struct sp__gdbjit_entry e;
	uint64_t hash;
	uint64_t from;
	uint64_t text_lo; /* span of its code sections */
	uint64_t text_hi;
	uint64_t seq;
	uint32_t module;
	bool map_pending;
	bool has_under;
	bool live;
	bool seen; /* in the walk being applied */
	uint64_t under_offset;
	char *under_path; /* NUL-terminated copy, or NULL */
	size_t under_len;
};

struct sp__jit_snap;
struct sp__jitdump_reader;
struct sp__jit;

/* Per-process JIT state (struct sp__process.jit). */
struct sp__jit_proc {
	struct sp__jit *jit;
	int32_t pid;
	uint32_t next_module; /* modules with a lower spool id were looked at */
	/* jitdump (jit_dump.c) */
	struct sp__jitdump_reader *dump;
	uint32_t dump_module; /* spool id of its marker module */
	bool dump_failed;
	uint8_t *pend_eh; /* the last unwinding record's .eh_frame */
	size_t pend_len;
	size_t pend_cap;
	bool pend_unwind;
	struct sp__vec templates; /* struct sp__jit_bytes (jit_dump.c) */
	/* GDB JIT (jit_gdb.c) */
	uint64_t desc_addr;	     /* 0: none known */
	uint32_t desc_module;	     /* spool id of the module defining it */
	struct sp__gdbjit_desc desc; /* as last read */
	bool desc_read;
	uint64_t next_check_ns;
	uint64_t next_full_ns;
	uint64_t last_refresh_ns; /* any check, for the retry limit */
	uint64_t gdb_seen_ns;	  /* the list was as known at this time */
	struct sp__vec objects;	  /* struct sp__jit_object */
	struct sp__vec entries;	  /* struct sp__gdbjit_entry, scratch */
	uint64_t live_bytes;
	uint64_t object_seq;
	bool modules_pending; /* objects' modules to map or retire */
	/* regions, snapshots, regenerations (jit_track.c) */
	struct sp__vec areas; /* struct sp__jit_area */
	struct sp__vec live; /* jitdump code each address holds (jit_track.c) */
	bool dirty;
	struct sp__jit_snap *snap;
	bool snap_empty;       /* @snap indexes nothing (no sample takes it) */
	struct sp__vec regens; /* struct sp__jit_regen, by time */
	/* sidecar (jit_sidecar.c) */
	int side_fd;
	bool side_failed;
	uint64_t side_index;
	char *side_path; /* absolute, while open */
};

/* Recorder-wide JIT state (struct sp__procs.jit). */
struct sp__jit {
	struct sp__mem mem;
	const struct sp_logger *logger;
	int dir_err; /* the side directory failed once: no more sidecars */
	uint64_t side_seq;
	uint64_t page_size;
	struct sp__vec cache;	   /* struct sp__jit_table *: jitdump dedup */
	struct sp__vec cache_keys; /* uint64_t hash, then uint64_t length */
	struct sp__vec descs;	   /* struct sp__jit_desc_cache (jit_desc.c) */
	uint64_t last_poll_ns;
	unsigned scan_budget; /* images jit_desc.c may open until the next poll */
	unsigned urgent_budget; /* the same, for SP__JIT_URGENT scans */
	struct sp_jit_stats st;
};

/* ---- jit_track.c: lifetime, tables, regions, snapshots, hooks ---- */

int sp__jit_new(const struct sp__mem *mem, const struct sp_logger *logger,
		struct sp__jit **out);
void sp__jit_free(struct sp__jit *jit);

/* The state of @p, created on first use (NULL on -ENOMEM). */
struct sp__jit_proc *sp__jit_proc_of(struct sp__jit *jit,
				     struct sp__process *p);
/* Frees a process's state (NULL is a no-op). */
void sp__jit_proc_free(struct sp__jit_proc *jp);
/*
 * The process exited or exec'd at @time: its regions end, its sidecar is
 * closed, and what it learns next starts from scratch.
 */
void sp__jit_proc_end(struct sp__jit_proc *jp, uint64_t time);

/* Counted table references. */
struct sp__jit_table *sp__jit_table_new(struct sp__jit *jit,
					struct sp__cfi_table *t);
void sp__jit_table_put(const struct sp__mem *mem, struct sp__jit_table *tab);

/*
 * Adds a region over [start, end) valid from @from, with @tab (a new
 * reference is taken; NULL: code without unwinding data, which only
 * ends what it covers). Regions it overlaps end at @from; when they held
 * other code, the modules around get a new generation at @from.
 */
int sp__jit_add_region(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
		       uint64_t from, uint64_t bias, struct sp__jit_table *tab,
		       uint64_t code_index);
/*
 * Adds a region for code recognised by its bytes (sp__jit_dump_infer):
 * for unwinding only, it replaces nothing and nothing replaces it.
 */
int sp__jit_add_inferred(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
			 uint64_t from, uint64_t bias,
			 struct sp__jit_table *tab);
/* Ends every region within [start, end) at @until (code removed). */
void sp__jit_end_regions(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
			 uint64_t until);
/* Asks for a new generation of the modules over [lo, hi) at @time. */
int sp__jit_want_regen(struct sp__jit_proc *jp, uint64_t time, uint64_t lo,
		       uint64_t hi);

/*
 * The index for a sample of @p (NULL when the process has none), with a
 * reference the job drops with sp__jit_snap_put() once written.
 */
struct sp__jit_snap *sp__jit_snap_get(struct sp__procs *procs,
				      struct sp__process *p);
/*
 * Whether a sample of a process with @jp (NULL: none) would take no
 * snapshot: nothing learned since one that indexes nothing. Per sample,
 * inline: most processes have no JIT code.
 */
static inline bool sp__jit_snap_none(const struct sp__jit_proc *jp)
{
	return !jp || (!jp->dirty && jp->snap_empty);
}
/* Out of line: sp__jit_snap_put() and sp__jit_snap_index() of a snapshot. */
void sp__jit_snap_drop(const struct sp__mem *mem, struct sp__jit_snap *s);
const struct sp__jit_index *sp__jit_snap_ix(const struct sp__jit_snap *s);

/* Drops a reference (NULL, most jobs': nothing, inline). */
static inline void sp__jit_snap_put(const struct sp__mem *mem,
				    struct sp__jit_snap *s)
{
	if (s)
		sp__jit_snap_drop(mem, s);
}

/* The snapshot's index (NULL for none). */
static inline const struct sp__jit_index *
sp__jit_snap_index(const struct sp__jit_snap *s)
{
	return s ? sp__jit_snap_ix(s) : NULL;
}

/* Flags of sp__jit_refresh(). */
#define SP__JIT_SCAN 0x1u    /* look at modules added since the last scan */
#define SP__JIT_WRITING 0x2u /* jobs are being written: no module changes */
/*
 * With SP__JIT_SCAN: an unwind stopped in memory that may be JIT code,
 * and the sample is written next. The scan takes the urgent budget
 * (SP__JIT_URGENT_BUDGET images per poll, over every process), so that
 * a process just attached is not unwound without its GDB JIT objects
 * for the polls that routine scans (8 images each) take to reach the
 * image with the descriptor (libLLVM is lli's tenth).
 */
#define SP__JIT_URGENT 0x4u
/*
 * Reads what is new for @jp at @now: with SP__JIT_SCAN first the JIT
 * sources among @p's new modules, then jitdump records and the GDB JIT
 * list; unless SP__JIT_WRITING, maps the new objects' modules. Reads the
 * target and files: the recorder calls it through its policy.
 */
int sp__jit_refresh(struct sp__procs *procs, struct sp__process *p,
		    struct sp__jit_proc *jp, uint64_t now, unsigned flags);
/*
 * Whether @p, with a JIT source, is due for its routine check now (at
 * most every SP__JIT_CHECK_NS; the next one is then scheduled); *@now
 * is the clock then (read only for a process with a source).
 */
bool sp__jit_check_due(struct sp__process *p, struct sp__jit_proc *jp,
		       uint64_t *now);
/*
 * Before a sample of @p at @time takes its slot: maps the modules of
 * GDB JIT objects learned since, and writes the due regenerations (a
 * caller on every sample tests sp__jit_due_pending first, inline).
 */
int sp__jit_apply_due(struct sp__procs *procs, struct sp__process *p,
		      uint64_t time);

static inline bool sp__jit_due_pending(const struct sp__jit_proc *jp)
{
	return jp->modules_pending || jp->regens.len;
}

/*
 * Whether a sample of a process with @jp (NULL: none) has nothing to
 * check or apply.
 */
static inline bool sp__jit_sample_idle(const struct sp__jit_proc *jp)
{
	return !jp || (!jp->dump && !jp->desc_addr && !sp__jit_due_pending(jp));
}
/*
 * Could @pc, where an unwind of @p stopped, be in JIT code: in one of
 * @jp's areas, in anonymous (or JIT pseudo) memory, or in no module?
 */
bool sp__jit_suspect(const struct sp__process *p, const struct sp__jit_proc *jp,
		     uint64_t pc);

/* ---- jit_desc.c, jit_dump.c, jit_gdb.c, jit_sidecar.c ---- */

/*
 * Looks at @p's modules added since the last call for JIT sources, as
 * far as the scan budget goes (@urgent: the urgent one).
 */
int sp__jit_scan_modules(struct sp__procs *procs, struct sp__process *p,
			 struct sp__jit_proc *jp, bool urgent);
/*
 * Whether @p has a module sp__jit_scan_modules() has not looked at and
 * could look at now (urgent budget left): a JIT source mapped since the
 * last check, such as the jitdump marker of a process whose first
 * samples arrive in the same batch as the marker's mmap record, or an
 * image not reached yet by the routine scans of a process just attached.
 */
bool sp__jit_modules_unseen(const struct sp__jit *jit,
			    const struct sp__process *p,
			    const struct sp__jit_proc *jp);
void sp__jit_desc_cache_init(struct sp__jit *jit);
void sp__jit_desc_cache_free(struct sp__jit *jit);

/* Opens the jitdump of module @path (a jit-<pid>.dump name) for @jp. */
int sp__jit_dump_open(struct sp__jit_proc *jp, const char *path,
		      uint32_t module_id);
/* Reads what the dump gained (its records carry their own times). */
int sp__jit_dump_refresh(struct sp__jit_proc *jp);
void sp__jit_dump_close(struct sp__jit_proc *jp);
/*
 * When the bytes around @pc in the target equal the code of a load that
 * came with unwinding info (a template), adds that code's region at its
 * place from @time on. Returns whether it did.
 */
bool sp__jit_dump_infer(struct sp__jit_proc *jp, uint64_t pc, uint64_t time);
/* Drops the templates (process end). */
void sp__jit_templates_clear(struct sp__jit_proc *jp);
/* Whether @path's last component is jit-<@pid>.dump. */
bool sp__jit_dump_name(const char *path, int32_t pid);

/*
 * Checks the GDB JIT list of @jp at @now: the descriptor, then (changed,
 * or a full check due, or @force) the entries and new objects. Regions
 * and names at once; the objects' modules wait for sp__jit_gdb_apply().
 */
int sp__jit_gdb_check(struct sp__procs *procs, struct sp__jit_proc *jp,
		      uint64_t now, bool force);
/*
 * Maps the modules of new objects of @jp and retires those of removed
 * ones, in process @p. Writes module records: only where modules may
 * change (not while jobs are being written).
 */
int sp__jit_gdb_apply(struct sp__procs *procs, struct sp__process *p,
		      struct sp__jit_proc *jp);
/* Every object of @jp is gone at @until (the process ended: no modules). */
void sp__jit_gdb_end(struct sp__jit_proc *jp, uint64_t until);

/* Reads @len bytes of process @pid at @addr: 0, -EFAULT, -ESRCH, -errno. */
int sp__jit_vm_read(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Writes the functions of a new GDB JIT object to @jp's sidecar (opened
 * on first use). Sidecar I/O errors are counted and stop the sidecar,
 * never the recording: 0 or -ENOMEM.
 */
struct sp__jit_elf;
int sp__jit_sidecar_object(struct sp__procs *procs, struct sp__jit_proc *jp,
			   const struct sp__jit_elf *e, uint64_t stamp);
/* The sidecar's absolute path, or NULL (none: names are not kept). */
const char *sp__jit_sidecar_path(const struct sp__jit_proc *jp);
/* Closes @jp's sidecar with a CODE_CLOSE record at @time. */
void sp__jit_sidecar_close(struct sp__jit_proc *jp, uint64_t time);

#endif /* SP_ENGINE_JIT_TRACK_H */
