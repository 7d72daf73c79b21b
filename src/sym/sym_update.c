/* SPDX-License-Identifier: MIT */
/* Symbolizer state that changes over time: perf maps, kernel symbols, Tail updates. */

/*
 * A Tail batch can make cached answers stale in three ways, and
 * sp_symbolizer_update() handles each (research/stackpulse-features.md
 * §1.10):
 *
 *   generations          the batch's Python markers, new modules and
 *                        retirements change which perf map names a pid's
 *                        frames, and a perf map file in perf_map_dir may
 *                        have changed (sym_gens.c): such pids' cached
 *                        results are invalidated now;
 *   new kernel PCs       the sparse kernel table only covers the PCs known
 *                        when it was loaded: it is dropped and reloaded
 *                        lazily with the larger set (cached kernel names
 *                        stay right: their addresses have not moved);
 *   retirements          pids and modules retired by a batch may still be
 *                        referenced by that batch's samples, so they are
 *                        released at the NEXT update: the pids' results
 *                        are dropped and reported, the plug-in is told
 *                        about each module, and the module's image is
 *                        released.
 *
 * New modules, frames and stack nodes need nothing else: the symbolizer
 * reads them through the spool, which the Tail grows in place.
 */
#include <errno.h>
#include <string.h>

#include "symbolizer_internal.h"

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

int sp__sym_invalidate(struct sp_symbolizer *sym, int32_t pid)
{
	return sp__vec_push(&sym->invalid_pids, &sym->mem, &pid);
}

/*
 * What the previous update retired is released now: the pids' results
 * are dropped and reported (a process that is gone needs them no more),
 * the plug-in is told about each module and its image is released.
 */
static int release_retired(struct sp_symbolizer *sym)
{
	const uint32_t *mods = sym->retire_modules.data;
	const int32_t *pids = sym->retire_pids.data;
	size_t i;

	for (i = 0; i < sym->retire_pids.len; i++)
		if (sp__sym_invalidate(sym, pids[i]))
			return -ENOMEM;
	sym->retire_pids.len = 0;

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
	sym->retire_modules.len = 0;
	return 0;
}

static int remember_retirements(struct sp_symbolizer *sym,
				const struct sp_tail *tail)
{
	const uint32_t *mods;
	const int32_t *pids;
	size_t i, nm = sp_tail_retired_modules(tail, &mods);
	size_t np = sp_tail_retired_pids(tail, &pids);

	for (i = 0; i < np; i++)
		if (sp__vec_push(&sym->retire_pids, &sym->mem, &pids[i]))
			return -ENOMEM;
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
	err = release_retired(sym);
	if (!err)
		err = sp__sym_gens_update(sym, tail);
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
