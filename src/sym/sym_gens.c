/* SPDX-License-Identifier: MIT */
/* Process generations of a pid, and which perf map names each one's JIT code. */

/*
 * A pid can stand for several processes in one spool: an exec, or an exit
 * followed by a new process that got the same pid. Each is a generation:
 * the frame records between two tag-7 retirements of the pid (the writer
 * interns unpinned frames afresh after one, SPULSE3 §7 rule 3, so a frame
 * id says which process it was recorded for; a frame pinned to one of the
 * pid's modules belongs to that module's generation instead, since late
 * samples of a process can be written after its retirement).
 *
 *   frame ids   0 ........ b1 ........ b2 ............ (open)
 *   gens        [ gen 0  )[  gen 1   )[  gen 2 ...
 *
 * A generation's perf map is, in this order:
 *   1. its copy in the spool's JIT side directory (src/base/jit_side_names.h),
 *      which the recorder made when the generation ended (or when the
 *      recording did): exact for every generation, whatever happened to
 *      the pid afterwards;
 *   2. <perf_map_dir>/perf-<pid>.map, which only the pid's newest process
 *      can have written: the owner, i.e. the newest generation that
 *      defined modules (an exit ends a generation but starts no new one,
 *      so a process that exited during the recording keeps its map), and
 *      only when the owner carried a Python-runtime "on" marker or no
 *      generation of the pid did (a map a Python process left behind is
 *      not lent to a later non-Python process with its pid).
 * "Off" markers are not consulted: recorders write them when a process
 * exits or execs, right before the retirement that ends its generation,
 * so they say nothing the generations do not.
 *
 * A Snapshot or Replay knows every retirement and marker up front
 * (sp__sym_scan_generations); a Tail brings them batch by batch
 * (sp__sym_gens_update), and a pid whose generations changed is
 * invalidated so that its frames are resolved again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * A Snapshot's or Replay's spool keeps its Python-runtime records (public)
 * and the frame count at each (format's door for sym, spool_gens.h).
 */
#include "jit_side_names.h"
#include "logging.h"
#include "spool_gens.h"
#include "symbolizer_internal.h"

/* ---- generations of one pid ---- */

static struct sp__sym_gen *gen_at(const struct sp__sym_pid *p, size_t i)
{
	return sp__vec_at(&p->gens, i);
}

/* The generation holding frame position @pos: the last starting at or before. */
static struct sp__sym_gen *gen_of(const struct sp__sym_pid *p, uint32_t pos)
{
	size_t lo = 0, hi = p->gens.len;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (gen_at(p, mid)->start <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return gen_at(p, lo);
}

static struct sp__sym_gen *gen_last(const struct sp__sym_pid *p)
{
	return gen_at(p, p->gens.len - 1);
}

/* The newest generation that defined modules, else the newest. */
static struct sp__sym_gen *gen_owner(const struct sp__sym_pid *p)
{
	size_t i = p->gens.len;

	while (i-- > 0)
		if (gen_at(p, i)->content)
			return gen_at(p, i);
	return gen_last(p);
}

static int gen_push(struct sp_symbolizer *sym, struct sp__sym_pid *p,
		    uint32_t start)
{
	struct sp__sym_gen g = { .start = start, .end = SP_NEVER };

	return sp__vec_push(&p->gens, &sym->mem, &g);
}

/* The pid's state with at least its first generation. NULL: -ENOMEM. */
static struct sp__sym_pid *pid_gens(struct sp_symbolizer *sym, int32_t pid)
{
	struct sp__sym_pid *p = sp__sym_pid_state(sym, pid, true);

	if (p && !p->gens.len && gen_push(sym, p, 0))
		return NULL;
	return p;
}

static void gen_drop_map(struct sp_symbolizer *sym, struct sp__sym_gen *g)
{
	sym->perf_map_bytes -= sp__perf_map_bytes(g->map);
	sp__perf_map_free(g->map);
	g->map = NULL;
	g->tried = false;
	g->from_dir = false;
}

/* Every map of @p is looked for again, and its results are dropped. */
static int pid_changed(struct sp_symbolizer *sym, struct sp__sym_pid *p)
{
	size_t i;

	for (i = 0; i < p->gens.len; i++)
		gen_drop_map(sym, gen_at(p, i));
	p->dir_read = false;
	return sp__sym_invalidate(sym, p->pid);
}

void sp__sym_pid_fini(struct sp_symbolizer *sym, struct sp__sym_pid *p)
{
	size_t i;

	for (i = 0; i < p->gens.len; i++)
		gen_drop_map(sym, gen_at(p, i));
	sp__vec_fini(&p->gens, &sym->mem);
}

static int rescan_if_grown(struct sp_symbolizer *sym);

/* ---- finding a generation's map ---- */

/* (dev, ino, size, mtime) of the pid's map in perf_map_dir, zeros if absent. */
static void dir_map_stat(const struct sp_symbolizer *sym, int32_t pid,
			 uint64_t id[4])
{
	char path[4096];
	struct stat st;

	memset(id, 0, 4 * sizeof(id[0]));
	snprintf(path, sizeof(path), "%s/perf-%d.map", sym->perf_map_dir, pid);
	if (lstat(path, &st))
		return;
	id[0] = (uint64_t)st.st_dev;
	id[1] = (uint64_t)st.st_ino;
	id[2] = (uint64_t)st.st_size;
	id[3] = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
		(uint64_t)st.st_mtim.tv_nsec;
}

/* What one more map may take within SP_PERF_MAP_TOTAL_MAX (all pids). */
static uint64_t map_budget(const struct sp_symbolizer *sym)
{
	return SP_PERF_MAP_TOTAL_MAX - sym->perf_map_bytes;
}

/*
 * Charges a map loaded from @what with result @err against the total, or
 * logs one the total refused. Returns @err.
 */
static int map_charge(struct sp_symbolizer *sym, const char *what, int err,
		      const struct sp__perf_map *map)
{
	if (!err)
		sym->perf_map_bytes += sp__perf_map_bytes(map);
	else if (err == -ENOBUFS)
		sp__log(sym->logger, SP_LOG_WARN,
			"%s not loaded: perf maps would take more than %llu MiB",
			what,
			(unsigned long long)(SP_PERF_MAP_TOTAL_MAX >> 20));
	return err;
}

static struct sp__perf_map *load_side(struct sp_symbolizer *sym, int32_t pid,
				      const struct sp__sym_gen *g)
{
	struct sp__perf_map *map = NULL;
	char name[64], path[4096];
	int n, err;

	if (!sym->jit_dir)
		return NULL;
	sp__jit_side_name(name, sizeof(name), "perf", ".map", pid,
			  g->end == SP_NEVER ? SP__JIT_SIDE_OPEN : g->end);
	n = snprintf(path, sizeof(path), "%s/%s", sym->jit_dir, name);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	err = sp__perf_map_load_file(&sym->mem, path, pid, map_budget(sym),
				     &map, NULL);
	return map_charge(sym, path, err, map) ? NULL : map;
}

/* Whether perf_map_dir's file may name the frames of @g (see the top). */
static bool dir_map_allowed(const struct sp__sym_pid *p,
			    const struct sp__sym_gen *g)
{
	return g == gen_owner(p) && (g->python || !p->any_python);
}

/*
 * The index of the generation perf_map_dir's file serves, or -1: what a
 * Tail update compares before and after a change, so that only pids
 * whose answers can change are invalidated.
 */
static long dir_gen(const struct sp__sym_pid *p)
{
	const struct sp__sym_gen *g = gen_owner(p);

	return dir_map_allowed(p, g) ? (long)(g - gen_at(p, 0)) : -1;
}

static void gen_load(struct sp_symbolizer *sym, struct sp__sym_pid *p,
		     struct sp__sym_gen *g)
{
	int err;

	g->tried = true;
	g->map = load_side(sym, p->pid, g);
	if (g->map || !dir_map_allowed(p, g))
		return;
	dir_map_stat(sym, p->pid, p->stat_id);
	p->dir_read = true;
	err = sp__perf_map_load_within(&sym->mem, sym->perf_map_dir, p->pid,
				       map_budget(sym), &g->map, NULL);
	if (map_charge(sym, "perf map", err, g->map))
		g->map = NULL;
	g->from_dir = g->map != NULL;
}

/*
 * Where the generation of a frame is read: a frame pinned to a user
 * module of the pid belongs to the module's generation (the one its
 * retirement ended, or the newest while it is active), any other to the
 * generation its id falls in.
 */
static uint32_t frame_position(int32_t pid, uint32_t frame_id,
			       const struct sp_module *mod)
{
	if (!mod || mod->is_kernel || mod->pid != pid)
		return frame_id;
	if (mod->deactivated_at == SP_NEVER)
		return UINT32_MAX;
	return mod->deactivated_at ? mod->deactivated_at - 1 : 0;
}

const struct sp__perf_map *sp__sym_gen_perf_map(struct sp_symbolizer *sym,
						int32_t pid, uint32_t frame_id,
						const struct sp_module *mod)
{
	struct sp__sym_pid *p;
	struct sp__sym_gen *g;

	if (rescan_if_grown(sym))
		return NULL;
	p = pid_gens(sym, pid);
	if (!p)
		return NULL;
	g = gen_of(p, frame_position(pid, frame_id, mod));
	if (!g->tried)
		gen_load(sym, p, g);
	return g->map;
}

/* ---- a Snapshot or Replay: everything up front ---- */

/*
 * A module retirement at frame count b is a process boundary when the
 * module is the highest-numbered one of its pid retired at b and every
 * older module of the pid was retired at or before b (an exec or exit
 * retires everything at once; a munmap retires one module among live
 * ones). Checked for all modules at once in O(n log n): modules sorted by
 * (pid, id) give the older ones as a running maximum, and sorted by
 * (pid, retirement, id) the highest id of each retirement point. Getting
 * it wrong only ever withholds a perf map, never lends one to another
 * process.
 */
struct gen_mod {
	int32_t pid;
	uint32_t id;
	uint32_t deact;
	bool boundary;
};

static int by_pid_id(const void *a, const void *b)
{
	const struct gen_mod *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_pid_deact_id(const void *a, const void *b)
{
	const struct gen_mod *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->deact != y->deact)
		return x->deact < y->deact ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Marks the older-modules condition; then keeps it only on the highest. */
static void mark_boundaries(struct gen_mod *g, size_t n)
{
	uint32_t older_max = 0;
	size_t i;

	qsort(g, n, sizeof(*g), by_pid_id);
	for (i = 0; i < n; i++) {
		if (i == 0 || g[i].pid != g[i - 1].pid)
			older_max = 0;
		g[i].boundary = g[i].deact != SP_NEVER &&
				older_max <= g[i].deact;
		if (g[i].deact > older_max)
			older_max = g[i].deact;
	}
	qsort(g, n, sizeof(*g), by_pid_deact_id);
	for (i = 0; i + 1 < n; i++)
		if (g[i + 1].pid == g[i].pid && g[i + 1].deact == g[i].deact)
			g[i].boundary = false; /* a higher id retired with it */
}

/*
 * With @g sorted by (pid, retirement): each boundary ends the pid's open
 * generation and opens the next; then every module marks the generation
 * it was defined in (retired in (start, end], or active in the last).
 */
static int build_gens(struct sp_symbolizer *sym, const struct gen_mod *g,
		      size_t n)
{
	struct sp__sym_pid *p;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!g[i].boundary)
			continue;
		p = pid_gens(sym, g[i].pid);
		if (!p)
			return -ENOMEM;
		gen_last(p)->end = g[i].deact;
		if (gen_push(sym, p, g[i].deact))
			return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		p = pid_gens(sym, g[i].pid);
		if (!p)
			return -ENOMEM;
		if (g[i].deact == SP_NEVER)
			gen_last(p)->content = true;
		else if (g[i].deact > 0)
			gen_of(p, g[i].deact - 1)->content = true;
	}
	return 0;
}

static int scan_modules(struct sp_symbolizer *sym)
{
	size_t i, k = 0, n = sp_spool_module_count(sym->spool);
	struct sp_module m;
	struct gen_mod *g;
	int err;

	if (!n)
		return 0;
	g = sp__mem_calloc(&sym->mem, n, sizeof(*g));
	if (!g)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		sp_spool_module(sym->spool, (uint32_t)i, &m);
		if (m.is_kernel || m.pid <= 0)
			continue;
		g[k].pid = m.pid;
		g[k].id = (uint32_t)i;
		g[k++].deact = m.deactivated_at;
	}
	mark_boundaries(g, k);
	err = build_gens(sym, g, k);
	sp__mem_free(&sym->mem, g, n * sizeof(*g));
	return err;
}

/*
 * What a Snapshot's or Replay's spool has decoded so far: its Python
 * records with the frame count at each, and the counts a rescan compares.
 * False for a spool that keeps no Python records (a Tail's).
 */
struct store {
	const struct sp_python_record *python;
	const uint32_t *at;
	size_t npython;
	size_t modules;
	uint64_t retirements;
};

static bool store_get(const struct sp_spool *s, struct store *out)
{
	size_t nat;

	if (sp_spool_python_records(s, &out->python, &out->npython) ||
	    sp__spool_python_at(s, &out->at, &nat) || nat != out->npython)
		return false;
	out->modules = sp_spool_module_count(s);
	out->retirements = sp__spool_retirements(s);
	return true;
}

/* "On" markers mark the generation they came in (a marker at a
 * generation's first frame position is that generation's). */
static int scan_markers(struct sp_symbolizer *sym, const struct store *st)
{
	size_t i;

	for (i = 0; i < st->npython; i++) {
		struct sp__sym_pid *p;

		if (!st->python[i].is_python_runtime)
			continue;
		p = pid_gens(sym, st->python[i].pid);
		if (!p)
			return -ENOMEM;
		gen_of(p, st->at[i])->python = true;
		p->any_python = true;
	}
	return 0;
}

static int scan_store(struct sp_symbolizer *sym, const struct store *st)
{
	size_t i;
	int err;

	for (i = 0; i < sym->pids.len; i++) {
		struct sp__sym_pid *p = sp__vec_at(&sym->pids, i);

		sp__sym_pid_fini(sym, p);
		p->any_python = false;
		p->dir_read = false;
	}
	sym->scan_modules = st->modules;
	sym->scan_python = st->npython;
	sym->scan_retirements = st->retirements;
	err = scan_modules(sym);
	return err ? err : scan_markers(sym, st);
}

int sp__sym_scan_generations(struct sp_symbolizer *sym)
{
	struct store st;

	/* A Tail's updates report retirements and markers batch by batch. */
	if (!store_get(sym->spool, &st))
		return 0;
	return scan_store(sym, &st);
}

/*
 * A Replay decodes its store as it is read, so a symbolizer made over it
 * first may see more retirements and markers at its first resolve.
 */
static int rescan_if_grown(struct sp_symbolizer *sym)
{
	struct store st;

	if (!store_get(sym->spool, &st) ||
	    (sym->scan_modules == st.modules &&
	     sym->scan_python == st.npython &&
	     sym->scan_retirements == st.retirements))
		return 0;
	return scan_store(sym, &st);
}

/* ---- a Tail: batch by batch ---- */

/* The batch's "on" markers: for the generation open while it was written. */
static int update_markers(struct sp_symbolizer *sym, const struct sp_tail *tail)
{
	const struct sp_python_record *r;
	size_t i, n = sp_tail_python_records(tail, &r);
	struct sp__sym_gen *g;
	long before;

	for (i = 0; i < n; i++) {
		struct sp__sym_pid *p;

		if (!r[i].is_python_runtime)
			continue;
		p = pid_gens(sym, r[i].pid);
		if (!p)
			return -ENOMEM;
		g = gen_last(p);
		if (g->python)
			continue;
		before = dir_gen(p);
		g->python = true;
		p->any_python = true;
		if (dir_gen(p) != before && pid_changed(sym, p))
			return -ENOMEM;
	}
	return 0;
}

/* Modules the batch defined give their pid's open generation content. */
static int update_content(struct sp_symbolizer *sym)
{
	uint32_t id, n = sp_spool_module_count(sym->spool);
	struct sp_module m;
	long before;

	for (id = sym->gen_modules_seen; id < n; id++) {
		struct sp__sym_pid *p;

		if (sp_spool_module(sym->spool, id, &m) || m.is_kernel ||
		    m.pid <= 0)
			continue;
		p = pid_gens(sym, m.pid);
		if (!p)
			return -ENOMEM;
		if (gen_last(p)->content)
			continue;
		before = dir_gen(p);
		gen_last(p)->content = true;
		if (dir_gen(p) != before && pid_changed(sym, p))
			return -ENOMEM;
	}
	sym->gen_modules_seen = n;
	return 0;
}

/*
 * The batch's retirements end their pids' open generations: a batch ends
 * right after a tag-7 record, so the frame count now is the boundary. The
 * new generation has no modules yet, so the owner does not change; only
 * a side directory now has the ended generation's own copy.
 */
static int update_retirements(struct sp_symbolizer *sym,
			      const struct sp_tail *tail)
{
	const int32_t *pids;
	size_t i, n = sp_tail_retired_pids(tail, &pids);
	uint32_t bound = sp_spool_frame_count(sym->spool);

	for (i = 0; i < n; i++) {
		struct sp__sym_pid *p = pid_gens(sym, pids[i]);

		if (!p)
			return -ENOMEM;
		gen_last(p)->end = bound;
		if (gen_push(sym, p, bound))
			return -ENOMEM;
		if (sym->jit_dir && pid_changed(sym, p))
			return -ENOMEM;
	}
	return 0;
}

/* Pids seen in the batch whose perf_map_dir file changed since it was read. */
static int update_dir_maps(struct sp_symbolizer *sym,
			   const struct sp_tail *tail)
{
	const int32_t *pids;
	size_t i, n = sp_tail_pids(tail, &pids);
	uint64_t id[4];

	for (i = 0; i < n; i++) {
		struct sp__sym_pid *p = sp__sym_pid_state(sym, pids[i], false);

		/* Also after a failed read: it may succeed now. */
		if (!p || !p->dir_read)
			continue;
		dir_map_stat(sym, pids[i], id);
		if (memcmp(id, p->stat_id, sizeof(id)) == 0)
			continue;
		if (pid_changed(sym, p))
			return -ENOMEM;
	}
	return 0;
}

int sp__sym_gens_update(struct sp_symbolizer *sym, const struct sp_tail *tail)
{
	int err = update_markers(sym, tail);

	if (!err)
		err = update_content(sym);
	if (!err)
		err = update_retirements(sym, tail);
	if (!err)
		err = update_dir_maps(sym, tail);
	return err;
}
