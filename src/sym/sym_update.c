/* SPDX-License-Identifier: MIT */
/* Symbolizer state that changes over time: perf maps, kernel symbols, Tail updates. */

/*
 * A Tail batch can make cached answers stale in three ways, and
 * sp_symbolizer_update() handles each (research/stackpulse-features.md
 * §1.10):
 *
 *   perf map changed     a pid seen in the batch whose perf-<pid>.map has
 *                        a new identity (or appeared after a failed load):
 *                        the map is dropped, reloaded on the next miss,
 *                        and the pid's cached results are invalidated now;
 *   new kernel PCs       the sparse kernel table only covers the PCs known
 *                        when it was loaded: it is dropped and reloaded
 *                        lazily with the larger set (cached kernel names
 *                        stay right: their addresses have not moved);
 *   retirements          pids and modules retired by a batch may still be
 *                        referenced by that batch's samples, so they are
 *                        applied at the NEXT update: the pids' results are
 *                        dropped and reported, the plug-in is told about
 *                        each module, and the module's image is released;
 *                        a retired pid starts a new process generation;
 *   Python markers       "on" applies at once (the batch's own samples
 *                        need it), "off" at the next update like a
 *                        retirement; either change reloads and invalidates
 *                        the pid's perf map.
 *
 * Process generations of a pid are the frame-id ranges between its tag-7
 * retirements: the writer interns unpinned frames afresh after one, so a
 * frame id says which process it was recorded for. A Tail reports each
 * tag-7 exactly (a batch ends right after it, so the frame count then is
 * the boundary). A Snapshot or Replay only keeps modules' deactivated_at;
 * there a retirement at frame count b is taken for a process boundary
 * when every module of the pid with a lower id was retired at b or before
 * (tag 7 retires all of them; a tag-8 remap usually leaves older ones
 * active). Getting it wrong only ever withholds a perf map from older
 * frames, never lends one to the wrong process.
 *
 * New modules, frames and stack nodes need nothing: the symbolizer reads
 * them through the spool, which the Tail grows in place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "logging.h"
#include "symbolizer_internal.h"

/*
 * The spool store keeps the Python-runtime records of a Snapshot or Replay
 * (not of a Tail, whose batches hand them over instead). src/format offers
 * them publicly only through the reader objects, and the symbolizer is
 * given the spool, so the store is read directly: same library, same
 * build, read-only.
 */
#include "format_internal.h"

/* (dev, ino, size, mtime) of the pid's map file, zeros when absent. */
static void map_stat(const struct sp_symbolizer *sym, int32_t pid,
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

const struct sp__perf_map *sp__sym_perf_map(struct sp_symbolizer *sym,
					    int32_t pid)
{
	struct sp__sym_pid *p = sp__sym_pid_state(sym, pid, true);
	uint64_t identity = 0;

	if (!p)
		return NULL;
	if (!p->tried) {
		p->tried = true;
		map_stat(sym, pid, p->stat_id);
		/* All maps together stay within SP_PERF_MAP_TOTAL_MAX. */
		p->load_err = sp__perf_map_load_within(
			&sym->mem, sym->perf_map_dir, pid,
			SP_PERF_MAP_TOTAL_MAX - sym->perf_map_bytes, &p->map,
			&identity);
		if (p->load_err)
			p->map = NULL;
		sym->perf_map_bytes += sp__perf_map_bytes(p->map);
		if (p->load_err == -ENOBUFS)
			sp__log(sym->logger, SP_LOG_WARN,
				"%s/perf-%d.map not loaded: perf maps would "
				"take more than %llu MiB",
				sym->perf_map_dir, (int)pid,
				(unsigned long long)(SP_PERF_MAP_TOTAL_MAX >>
						     20));
	}
	return p->map;
}

void sp__sym_pid_reset(struct sp_symbolizer *sym, struct sp__sym_pid *p)
{
	sym->perf_map_bytes -= sp__perf_map_bytes(p->map);
	sp__perf_map_free(p->map);
	p->map = NULL;
	p->tried = false;
	p->load_err = 0;
	memset(p->stat_id, 0, sizeof(p->stat_id));
}

/* ---- process generations and Python markers ---- */

/*
 * A module retirement at frame count b is a process boundary when the
 * module is the highest-numbered one of its pid retired at b and every
 * older module of the pid was retired at or before b (an exec or exit
 * retires everything at once; a munmap retires one module among live
 * ones). Checked for all modules at once in O(n log n): modules sorted by
 * (pid, id) give the older ones as a running maximum, and sorted by
 * (pid, retirement, id) the highest id of each retirement point.
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

static int scan_boundaries(struct sp_symbolizer *sym)
{
	size_t i, k = 0, n = sp_spool_module_count(sym->spool);
	struct sp_module m;
	struct gen_mod *g;
	int err = 0;

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
	for (i = 0; i < k && !err; i++) {
		struct sp__sym_pid *p;

		if (!g[i].boundary)
			continue;
		p = sp__sym_pid_state(sym, g[i].pid, true);
		if (!p)
			err = -ENOMEM;
		else if (g[i].deact > p->gen_start)
			p->gen_start = g[i].deact;
	}
	sp__mem_free(&sym->mem, g, n * sizeof(*g));
	return err;
}

int sp__sym_scan_generations(struct sp_symbolizer *sym)
{
	const struct sp_python_record *r = sym->spool->python.data;
	size_t i;

	/* A Tail's updates report boundaries and markers exactly. */
	if (!sym->spool->keep_python)
		return 0;
	for (i = 0; i < sym->spool->python.len; i++) {
		struct sp__sym_pid *p = sp__sym_pid_state(sym, r[i].pid, true);

		if (!p)
			return -ENOMEM;
		p->python = r[i].is_python_runtime ? 1 : 0;
	}
	return scan_boundaries(sym);
}

bool sp__sym_perf_map_trusted(struct sp_symbolizer *sym, int32_t pid,
			      uint32_t frame_id, const struct sp_module *mod)
{
	const struct sp__sym_pid *p = sp__sym_pid_state(sym, pid, false);

	if (!p)
		return true;
	if (p->python == 0 || frame_id < p->gen_start)
		return false;
	/* An anonymous module of an older generation of this pid. */
	return !mod || mod->pid != pid || mod->deactivated_at == SP_NEVER ||
	       mod->deactivated_at > p->gen_start;
}

/*
 * Sparse table of the spool's kernel PCs from the host's kallsyms; the
 * whole table for a module-table symbolizer (features §1.10).
 */
static struct sp__ksyms *load_host_ksyms(struct sp_symbolizer *sym)
{
	size_t n, cap = sp_spool_kernel_addresses(sym->spool, NULL, 0);
	struct sp__ksyms *ks = NULL;
	uint64_t *pcs;

	sym->ksyms_frames = sp_spool_frame_count(sym->spool);
	if (sym->own_spool) {
		/* A module table has no sampled PCs known up front: full table. */
		if (sp__ksyms_load(&sym->mem, NULL, NULL, 0, sym->logger, &ks))
			ks = NULL;
		return ks;
	}
	if (!cap)
		return NULL;
	pcs = sp__mem_alloc(&sym->mem, cap * sizeof(*pcs));
	if (!pcs)
		return NULL;
	n = sp_spool_kernel_addresses(sym->spool, pcs, cap);
	if (sp__ksyms_load(&sym->mem, NULL, pcs, n, sym->logger, &ks))
		ks = NULL;
	sp__mem_free(&sym->mem, pcs, cap * sizeof(*pcs));
	return ks;
}

const struct sp__ksyms *sp__sym_ksyms(struct sp_symbolizer *sym)
{
	if (!sym->ksyms_loaded) {
		sym->ksyms_loaded = true;
		sym->ksyms = load_host_ksyms(sym);
	}
	return sym->ksyms;
}

/* Drops the sparse table when the batch brought kernel PCs it lacks. */
static void refresh_kernel(struct sp_symbolizer *sym)
{
	uint32_t id, count = sp_spool_frame_count(sym->spool);
	struct sp_frame f;

	if (sym->kallsyms_path || !sym->ksyms_loaded)
		return;
	for (id = sym->ksyms_frames; id < count; id++) {
		if (sp_spool_frame(sym->spool, id, &f) == 0 &&
		    f.mode == SP_FRAME_KERNEL)
			break;
	}
	if (id == count)
		return;
	sp__ksyms_free(sym->ksyms);
	sym->ksyms = NULL;
	sym->ksyms_loaded = false;
}

/*
 * New kernel mappings (a module load, a KASLR anchor) can move every
 * kernel name, and kernel frames are cached under every pid: the kernel
 * table is reset and all results are invalidated (§1.10 "full reset if
 * kernel mappings changed").
 */
static bool kernel_mappings_changed(struct sp_symbolizer *sym)
{
	uint32_t id, n = sp_spool_module_count(sym->spool);
	bool changed = false;
	struct sp_module m;

	for (id = sym->modules_seen; id < n && !changed; id++)
		changed = sp_spool_module(sym->spool, id, &m) == 0 &&
			  m.is_kernel;
	sym->modules_seen = n;
	if (!changed || (sym->flags & SP_SYMBOLIZER_NO_KERNEL) ||
	    sym->kallsyms_path)
		return false;
	sp__ksyms_free(sym->ksyms);
	sym->ksyms = NULL;
	sym->ksyms_loaded = false;
	return true;
}

static int invalidate(struct sp_symbolizer *sym, int32_t pid)
{
	return sp__vec_push(&sym->invalid_pids, &sym->mem, &pid);
}

/* Pids seen in the batch whose perf map file changed since it was read. */
static int check_perf_maps(struct sp_symbolizer *sym,
			   const struct sp_tail *tail)
{
	const int32_t *pids;
	size_t i, n = sp_tail_pids(tail, &pids);
	uint64_t id[4];

	for (i = 0; i < n; i++) {
		struct sp__sym_pid *p = sp__sym_pid_state(sym, pids[i], false);

		if (!p || !p->tried)
			continue;
		map_stat(sym, pids[i], id);
		if (memcmp(id, p->stat_id, sizeof(id)) == 0)
			continue;
		sp__sym_pid_reset(sym, p);
		if (invalidate(sym, pids[i]))
			return -ENOMEM;
	}
	return 0;
}

/* Marks "off" of the previous batch take effect now. */
static int apply_python_off(struct sp_symbolizer *sym)
{
	const int32_t *pids = sym->python_off.data;
	size_t i;

	for (i = 0; i < sym->python_off.len; i++) {
		struct sp__sym_pid *p = sp__sym_pid_state(sym, pids[i], true);

		if (!p || invalidate(sym, pids[i]))
			return -ENOMEM;
		sp__sym_pid_reset(sym, p);
		p->python = 0;
	}
	sym->python_off.len = 0;
	return 0;
}

/* The batch's Python markers: "on" now, "off" at the next update. */
static int apply_markers(struct sp_symbolizer *sym, const struct sp_tail *tail)
{
	const struct sp_python_record *r;
	size_t i, n = sp_tail_python_records(tail, &r);

	for (i = 0; i < n; i++) {
		struct sp__sym_pid *p = sp__sym_pid_state(sym, r[i].pid, true);

		if (!p)
			return -ENOMEM;
		if (!r[i].is_python_runtime) {
			if (sp__vec_push(&sym->python_off, &sym->mem,
					 &r[i].pid))
				return -ENOMEM;
			continue;
		}
		if (p->python == 1)
			continue;
		p->python = 1;
		sp__sym_pid_reset(sym, p);
		if (invalidate(sym, r[i].pid))
			return -ENOMEM;
	}
	return 0;
}

/* Retirements recorded by the previous update take effect now. */
static int apply_retirements(struct sp_symbolizer *sym)
{
	const int32_t *pids = sym->retire_pids.data;
	const uint32_t *mods = sym->retire_modules.data;
	size_t i;

	const uint32_t *bounds = sym->retire_bounds.data;

	for (i = 0; i < sym->retire_pids.len; i++) {
		struct sp__sym_pid *p = sp__sym_pid_state(sym, pids[i], true);

		if (!p || invalidate(sym, pids[i]))
			return -ENOMEM;
		sp__sym_pid_reset(sym, p);
		if (bounds[i] > p->gen_start)
			p->gen_start = bounds[i];
	}
	if (apply_python_off(sym))
		return -ENOMEM;
	for (i = 0; i < sym->retire_modules.len; i++) {
		struct sp__sym_module *m = NULL;

		if (sym->has_plugin && sym->plugin.retire_module)
			sym->plugin.retire_module(sym->plugin.ctx, mods[i]);
		if (mods[i] < sym->modules.len)
			m = sp__vec_at(&sym->modules, mods[i]);
		if (m && m->img)
			sp__image_unref(m->img);
		if (m)
			memset(m, 0, sizeof(*m));
	}
	sym->retire_pids.len = 0;
	sym->retire_bounds.len = 0;
	sym->retire_modules.len = 0;
	return 0;
}

static int remember_retirements(struct sp_symbolizer *sym,
				const struct sp_tail *tail)
{
	const int32_t *pids;
	const uint32_t *mods;
	size_t i, np = sp_tail_retired_pids(tail, &pids);
	size_t nm = sp_tail_retired_modules(tail, &mods);

	uint32_t bound = sp_spool_frame_count(sym->spool);

	/* Both lists grow together or not at all: they are read in pairs. */
	if (sp__vec_reserve(&sym->retire_pids, &sym->mem, np) ||
	    sp__vec_reserve(&sym->retire_bounds, &sym->mem, np))
		return -ENOMEM;
	for (i = 0; i < np; i++) {
		sp__vec_push(&sym->retire_pids, &sym->mem, &pids[i]);
		sp__vec_push(&sym->retire_bounds, &sym->mem, &bound);
	}
	for (i = 0; i < nm; i++)
		if (sp__vec_push(&sym->retire_modules, &sym->mem, &mods[i]))
			return -ENOMEM;
	return 0;
}

/* Sorts and deduplicates the invalidated pids (a handful per batch). */
static void sort_unique(struct sp__vec *v)
{
	int32_t *p = v->data;
	size_t i, j, n = v->len;

	for (i = 1; i < n; i++) {
		int32_t x = p[i];

		for (j = i; j > 0 && p[j - 1] > x; j--)
			p[j] = p[j - 1];
		p[j] = x;
	}
	for (i = 0, j = 0; i < n; i++)
		if (j == 0 || p[j - 1] != p[i])
			p[j++] = p[i];
	v->len = j;
}

SP_API int sp_symbolizer_update(struct sp_symbolizer *sym,
				const struct sp_tail *tail,
				struct sp_invalidation *out)
{
	long dropped;
	int err;

	if (!sym || !tail || !out || sp_tail_spool(tail) != sym->spool)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	sym->invalid_pids.len = 0;
	err = apply_retirements(sym);
	if (!err)
		err = apply_markers(sym, tail);
	if (!err)
		err = check_perf_maps(sym, tail);
	if (!err)
		err = remember_retirements(sym, tail);
	if (err)
		return err;
	refresh_kernel(sym);
	sort_unique(&sym->invalid_pids);
	out->all = kernel_mappings_changed(sym);
	dropped = sp__sym_cache_drop_pids(
		&sym->cache, out->all ? NULL : sym->invalid_pids.data,
		sym->invalid_pids.len);
	if (dropped < 0)
		return (int)dropped;
	out->pids = sym->invalid_pids.data;
	out->pid_count = sym->invalid_pids.len;
	return 0;
}
