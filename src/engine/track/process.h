/* SPDX-License-Identifier: MIT */
/* Per-process state: module generations, unwinder mappings, lifecycle. */
#ifndef SP_ENGINE_PROCESS_H
#define SP_ENGINE_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include <stackpulse/unwind.h>
#include <stackpulse/writer.h>

#include "mem.h"
#include "perf_event.h"
#include "pidtab.h"
#include "vec.h"

/*
 * Each tracked process owns its active modules (the ones not yet retired
 * by a tag 7/8 record) and a sorted sp_mapping array for the unwinder,
 * rebuilt lazily after a module change. Every module change goes to the
 * spool writer at once, in record order, so the spool's module generations
 * match what samples saw.
 */

struct sp__jit;
struct sp__jit_proc;

/** struct sp__module is one active module generation of a process. */
struct sp__jit_side;

struct sp__module {
	uint32_t id;	/* spool module id */
	uint32_t flags; /* SP_MAPPING_* */
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	uint64_t inode_generation;
	uint32_t dev_major;
	uint32_t dev_minor;
	char *path; /* verbatim, NUL-terminated */
	size_t path_len;
	char *unwind_path; /* where to read the file (map_files for deleted) */
	uint64_t jit_id;   /* JIT table of its code (jit_arena.h), 0: none */
	uint64_t jit_next_ns; /* when to look at its code again */
	uint32_t jit_tries;   /* looks left; 0: not a candidate (any more) */
};

/* Python perf support of a process (§1.7), probed once per exec. */
enum sp__py_support {
	SP__PY_UNKNOWN = 0,
	SP__PY_NO = 1,
	SP__PY_YES = 2,
};

enum sp__proc_state {
	SP__PROC_ALIVE = 0,
	SP__PROC_DYING = 1, /* group death seen, records may still be queued */
	SP__PROC_EXITED = 2,
};

/** struct sp__process is one tracked thread group. */
struct sp__process {
	int32_t pid;
	uint64_t starttime;
	int pidfd;
	enum sp__proc_state state;
	bool leader_exited;
	bool maps_dirty;
	uint64_t maps_gen; /* names @maps' contents: sp__maps_gen_next() */
	enum sp__py_support py_support;
	bool py_marked; /* the last tag-6 record of this pid said true */
	struct sp__vec modules; /* struct sp__module */
	struct sp__vec maps;	/* struct sp_mapping, sorted by start */
	struct sp__vec events;	/* struct sp__event, one per (thread, CPU) */
	uint64_t last_reconcile_ns;
	uint64_t attach_ticks; /* boot-time clock ticks when attach began */
	/*
	 * Children mode: the tracked process whose events this one's were
	 * inherited from (NULL for an attached one), and whether this one
	 * has exited with its events kept open because releasing them would
	 * tear down the inherited events of live descendants.
	 */
	struct sp__process *parent;
	bool events_held;
	struct sp__mver *mver;	  /* threaded mode: the current map version */
	struct sp__jit_proc *jit; /* JIT code state (jit_track.h), or NULL */
	uint64_t dying_ns;	  /* when the group's death was seen */
	bool sampled;		  /* a sample since the last recovery sweep */
	uint32_t jit_pending; /* modules with jit_tries left (jit_arena.h) */
	uint32_t jit_reads;   /* their code read whole so far (bounded) */
};

/*
 * Marks @proc's group dead as seen at @ns (the recorder's clock, or the
 * EXIT record's time): it is retired once every record older than @ns has
 * been applied, so the samples still in the rings keep its modules.
 */
static inline void sp__process_dying(struct sp__process *proc, uint64_t ns)
{
	proc->state = SP__PROC_DYING;
	proc->dying_ns = ns;
}

/** struct sp__procs is the process table and what module changes feed. */
struct sp__procs {
	const struct sp__mem *mem;
	const struct sp_logger *logger;
	struct sp_writer *writer;
	struct sp_unwinder *unwinder;
	struct sp__vec list;	 /* struct sp__process *, oldest first */
	struct sp__pidtab index; /* pid -> newest of @list with that pid */
	uint64_t time_ns;	 /* timestamp of the record being applied */
	/*
	 * Threaded mode: called before any record is written for a state
	 * change, so samples dispatched earlier (still being unwound) are
	 * written first and the spool order matches inline mode.
	 */
	int (*sync)(void *ctx);
	void *sync_ctx;
	/*
	 * Skip sp_unwinder_prepare() when a module appears: its table is
	 * built by the first unwind that needs it (threaded and system
	 * modes, where the thread applying modules must not stall).
	 */
	bool lazy_tables;
	/* Copies of JIT runtimes' data per generation (NULL: none). */
	struct sp__jit_side *jit_side;
	bool no_jit_code; /* SP_RECORDER_NO_JIT_CODE: never read their code */
	/* jitdump and GDB JIT state (jit_track.h); NULL: NO_JIT_CODE */
	struct sp__jit *jit;
};

static inline int sp__procs_sync(struct sp__procs *procs)
{
	return procs->sync ? procs->sync(procs->sync_ctx) : 0;
}

void sp__procs_init(struct sp__procs *procs, const struct sp__mem *mem,
		    struct sp_writer *writer, struct sp_unwinder *unwinder);
void sp__procs_fini(struct sp__procs *procs);

/* The tracked process @pid (exited ones included), or NULL. */
struct sp__process *sp__procs_find(const struct sp__procs *procs, int32_t pid);

/* Adds an empty process; Returns 0 or -ENOMEM. */
int sp__procs_add(struct sp__procs *procs, int32_t pid,
		  struct sp__process **out);

/*
 * Frees every retired process nothing refers to any more (no events held
 * for descendants, no fds). System-wide mode calls it after reaping, so a
 * long recording of a machine with process churn stays bounded.
 */
void sp__procs_prune(struct sp__procs *procs);

/* Removes and frees @proc (its fds are closed). */
void sp__procs_remove(struct sp__procs *procs, struct sp__process *proc);

/** struct sp__map_desc describes a new executable mapping. */
struct sp__map_desc {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	uint64_t inode_generation;
	uint32_t dev_major;
	uint32_t dev_minor;
	const char *path;
	size_t path_len;
};

/*
 * The description @m was registered from, for registering it again (a
 * fork's copy, a surviving fragment); @d borrows @m's path.
 */
void sp__module_desc(const struct sp__module *m, struct sp__map_desc *d);

/*
 * Whether @m is the mapping @d describes: same range, offset, file and
 * path. The inode generation is not compared: /proc/PID/maps has none.
 */
bool sp__module_matches(const struct sp__module *m,
			const struct sp__map_desc *d);

/*
 * Records a mapping of @proc: identical active mappings are kept as they
 * are; overlapped modules are retired (tag 8) and the parts that survive
 * are written again as new modules; then the new module is written.
 * Returns 0 or a writer error / -ENOMEM.
 */
int sp__process_map(struct sp__procs *procs, struct sp__process *proc,
		    const struct sp__map_desc *desc);

/*
 * Retires every module of @proc (tag 7), e.g. on exec or death, and ends
 * its Python marker (tag 6 false) if one is set.
 */
int sp__process_retire_all(struct sp__procs *procs, struct sp__process *proc);

/* Retires module @index of @proc (tag 8). */
int sp__process_retire_module(struct sp__procs *procs, struct sp__process *proc,
			      size_t index);

/* Registers every tracked entry of /proc/PID/maps. 0, -errno, writer error. */
int sp__process_load_maps(struct sp__procs *procs, struct sp__process *proc);

/*
 * Brings @proc's modules in line with /proc/PID/maps now: unchanged ones
 * keep their generation, vanished or changed ones are retired (tag 8), new
 * ones registered. A maps file with no tracked entry (a zombie leader)
 * keeps the last known modules. *@changed tells whether anything moved.
 * Returns 0, -errno (ENOENT/ESRCH: gone) or a writer error.
 */
int sp__process_reconcile(struct sp__procs *procs, struct sp__process *proc,
			  bool *changed);

/* Whether some module of @proc covers @addr. */
bool sp__process_covers(const struct sp__process *proc, uint64_t addr);

/* Gives @child copies of @parent's modules (written with the child's pid). */
int sp__process_clone_modules(struct sp__procs *procs,
			      const struct sp__process *parent,
			      struct sp__process *child);

/*
 * A generation for a module map's contents, from one process-wide
 * counter: never 0, never repeated (addresses of freed maps are reused,
 * so the unwinder's walk memo compares these, not pointers).
 */
uint64_t sp__maps_gen_next(void);

/* The sorted mappings for the unwinder (rebuilt if stale). */
int sp__process_mappings(struct sp__procs *procs, struct sp__process *proc,
			 const struct sp_mapping **maps, size_t *nmaps);

/* Removes the process's perf fds from @epfd (if >= 0) and closes them. */
void sp__process_close_events(struct sp__process *proc, int epfd);

/*
 * Whether @proc's thread group still lives: its pidfd, or /proc (same
 * start time, not a zombie) without one. 1 alive, 0 gone, -errno.
 */
int sp__process_alive(const struct sp__process *proc);

#endif /* SP_ENGINE_PROCESS_H */
