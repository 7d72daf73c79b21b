/* SPDX-License-Identifier: MIT */
/* Module-table symbolizers: a spool store built from the caller's table, raw frames interned on first sight. */

/*
 * An embedder that captures stacks by other means (eBPF, signals,
 * sp_unwinder_unwind()) has a module table and raw frames, no spool. The
 * simplest correct way to give it everything a spool-backed symbolizer
 * does (resolution order, perf maps, plug-in batches, the shared lock-free
 * cache) is to run the very same code over a spool store the symbolizer
 * owns:
 *
 *   caller's table --copy--> own_spool->modules   id = index in the table,
 *                                                 never deactivated
 *   raw frame --canonical form--> raw_index --> interned frame id
 *                                   | miss (under sym->lock):
 *                                   +--> own_spool->frames[id], seeing
 *                                        every module (SPULSE3 §6)
 *   (pid, frame id) --> the result cache, as for spool frames
 *
 * The canonical form is what the spool decoder would store (§5.2): a
 * pinned frame keeps module id and file-relative address, its absolute
 * address derived from the module; an unpinned frame keeps its absolute
 * address in both fields. So one frame given with or without @abs_ip gets
 * one id.
 *
 * raw_index is a second instance of the SPMC table of sym_cache.c. Its
 * keys are hashes of the canonical frame, so lookups compare the frame
 * itself (sp__sym_cache_find). Records are never removed (a module table
 * is fixed and update() does not apply), so a hit is two lock-free
 * lookups: raw_index, then the result cache. Nothing but a miss touches
 * own_spool: the module vector is immutable after creation and frames
 * are appended, and read, only under sym->lock. The one exception is the
 * id range check of sp_symbolizer_resolve_frame(), which reads the count
 * published in sym->raw_frames.
 *
 * The store is a spool of the symbolizer's own (sp_spool_new()), so it
 * is built and read through the public spool API only.
 */
#include <errno.h>
#include <string.h>

#include "hash.h"
#include "symbolizer_internal.h"

/* One interned raw frame: the index entry, its canonical frame, its id. */
struct raw_rec {
	struct sp__sym_hdr hdr; /* first: the table sees only this */
	struct sp_frame frame;
	uint32_t id;
};

/* What resolve_raw was asked, and how far it got. */
struct raw_req {
	int32_t pid;
	const struct sp_frame *frames;
	size_t n;
	const struct sp_resolved_frame **out;
	size_t cap;
	size_t total;
};

int sp__sym_table_init(struct sp_symbolizer *sym, const struct sp_module *mods,
		       size_t n)
{
	size_t i;
	int err = 0;

	/* SP_NO_MODULE is not an id. */
	if ((!mods && n) || n >= SP_NO_MODULE)
		return -EINVAL;
	err = sp_spool_new(&sym->mem.hook, &sym->own_spool);
	if (err)
		return err;
	sym->spool = sym->own_spool;
	for (i = 0; i < n && !err; i++)
		err = sp_spool_add_module(sym->own_spool, &mods[i], NULL);
	if (err)
		return err;
	err = sp__sym_cache_init(&sym->raw_index, &sym->mem);
	if (err)
		return err;
	sym->raw_ready = true;
	return 0;
}

void sp__sym_table_fini(struct sp_symbolizer *sym)
{
	if (sym->raw_ready)
		sp__sym_cache_fini(&sym->raw_index);
	sym->raw_ready = false;
	sp_spool_free(sym->own_spool);
	sym->own_spool = NULL;
}

uint32_t sp__sym_frame_limit(const struct sp_symbolizer *sym)
{
	if (!sym->own_spool)
		return sp_spool_frame_count(sym->spool);
	/* Pairs with the release store in intern(): the frame is stored. */
	return atomic_load_explicit(&sym->raw_frames, memory_order_acquire);
}

SP_API int sp_symbolizer_new_modules(const struct sp_module *modules,
				     size_t count,
				     const struct sp_symbolizer_opts *opts,
				     struct sp_symbolizer **out)
{
	if (!out)
		return -EINVAL;
	return sp__sym_new(NULL, modules, count, opts, out);
}

/* ---- raw frames ---- */

/* The pinned part of canon(): a file-relative address inside the module. */
static int canon_pinned(const struct sp_spool *s, const struct sp_frame *in,
			struct sp_frame *out)
{
	struct sp_module m;
	uint64_t rel = in->file_relative_ip;

	if (sp_spool_module(s, in->module_id, &m))
		return -EINVAL;
	if (rel < m.file_offset || rel - m.file_offset >= m.end - m.start)
		return -EINVAL;
	if (in->mode != (m.is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER))
		return -EINVAL;
	out->abs_ip = m.start + (rel - m.file_offset);
	if (in->abs_ip && in->abs_ip != out->abs_ip)
		return -EINVAL;
	out->file_relative_ip = rel;
	out->module_id = in->module_id;
	return 0;
}

/* The canonical form of a raw frame (see the top), or -EINVAL. */
static int canon(const struct sp_spool *s, const struct sp_frame *in,
		 struct sp_frame *out)
{
	memset(out, 0, sizeof(*out));
	out->module_id = SP_NO_MODULE;
	out->mode = in->mode;
	if (in->mode == SP_FRAME_TRUNCATED)
		return in->abs_ip || in->file_relative_ip ||
				       in->module_id != SP_NO_MODULE ?
			       -EINVAL :
			       0;
	if (in->mode != SP_FRAME_USER && in->mode != SP_FRAME_KERNEL)
		return -EINVAL;
	if (in->module_id != SP_NO_MODULE)
		return canon_pinned(s, in, out);
	out->abs_ip = in->abs_ip;
	out->file_relative_ip = in->abs_ip;
	return 0;
}

static uint64_t raw_key(const struct sp_frame *f)
{
	uint64_t w[3] = { f->abs_ip, f->file_relative_ip,
			  (uint64_t)f->module_id << 32 | f->mode };

	/* The top bit keeps 0, the empty slot, out of the key space. */
	return 1ull << 63 | sp__hash_words(w, 3);
}

static bool raw_match(const struct sp__sym_hdr *h, const void *ctx)
{
	const struct raw_rec *r = (const struct raw_rec *)(const void *)h;
	const struct sp_frame *f = ctx;

	return r->frame.abs_ip == f->abs_ip &&
	       r->frame.file_relative_ip == f->file_relative_ip &&
	       r->frame.module_id == f->module_id && r->frame.mode == f->mode;
}

/* The id of canonical frame @f, NULL-free lookup; false when not interned. */
static bool raw_lookup(const struct sp_symbolizer *sym,
		       const struct sp_frame *f, uint32_t *id)
{
	const struct sp__sym_hdr *h = sp__sym_cache_find(
		&sym->raw_index, raw_key(f), SP_SYM_KIND_RAW, raw_match, f);

	if (!h)
		return false;
	*id = ((const struct raw_rec *)(const void *)h)->id;
	return true;
}

/*
 * Interns canonical frame @f (lock held): appends it to the store, then
 * indexes it. A failed index only leaves an unused id behind.
 */
static int intern(struct sp_symbolizer *sym, const struct sp_frame *f,
		  uint32_t *id)
{
	struct raw_rec *rec;
	uint32_t fid;
	int err;

	if (raw_lookup(sym, f, id))
		return 0;
	rec = sp__mem_alloc(&sym->mem, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	err = sp_spool_add_frame(sym->own_spool, f, &fid);
	if (!err) {
		rec->hdr.key = raw_key(f);
		rec->hdr.bytes = sizeof(*rec);
		rec->hdr.kind = SP_SYM_KIND_RAW;
		rec->hdr.reserved = 0;
		rec->frame = *f;
		rec->id = fid;
		err = sp__sym_cache_put(&sym->raw_index, &rec->hdr);
	}
	if (err) {
		sp__mem_free(&sym->mem, rec, sizeof(*rec));
		return err < 0 ? err : -ENOMEM;
	}
	/* Publishes the stored frame to sp__sym_frame_limit()'s acquire. */
	atomic_store_explicit(&sym->raw_frames, fid + 1, memory_order_release);
	*id = fid;
	return 0;
}

/*
 * One pass over the request: pointers to cached results into q->out and
 * their count in q->total. Returns 0, 1 at the first frame not interned
 * or not resolved for the pid yet, or -EINVAL for a malformed frame.
 */
static int raw_pass(const struct sp_symbolizer *sym, struct raw_req *q)
{
	const struct sp__sym_entry *e;
	struct sp_frame f;
	size_t i, t = 0;
	uint32_t id, j;

	for (i = 0; i < q->n; i++) {
		if (canon(sym->own_spool, &q->frames[i], &f))
			return -EINVAL;
		if (!raw_lookup(sym, &f, &id))
			return 1;
		e = sp__sym_cache_frame(&sym->cache, q->pid, id);
		if (!e)
			return 1;
		for (j = 0; j < e->count; j++, t++)
			if (t < q->cap)
				q->out[t] = &e->frames[j];
	}
	q->total = t;
	return 0;
}

/* Miss path (lock held): intern and resolve every frame, then read back. */
static int raw_slow(struct sp_symbolizer *sym, struct raw_req *q)
{
	struct sp_frame f;
	uint32_t id;
	size_t i;
	int err;

	sym->miss_ids.len = 0;
	for (i = 0; i < q->n; i++) {
		if (canon(sym->own_spool, &q->frames[i], &f))
			return -EINVAL;
		err = intern(sym, &f, &id);
		if (!err)
			err = sp__vec_push(&sym->miss_ids, &sym->mem, &id);
		if (err)
			return err;
	}
	err = sp__sym_resolve_misses(sym, q->pid, sym->miss_ids.data,
				     sym->miss_ids.len);
	if (err)
		return err;
	err = raw_pass(sym, q);
	return err > 0 ? -EINVAL : err;
}

SP_API int sp_symbolizer_resolve_raw(struct sp_symbolizer *sym, int32_t pid,
				     const struct sp_frame *frames, size_t n,
				     const struct sp_resolved_frame **out,
				     size_t cap)
{
	struct raw_req q = { pid, frames, n, out, cap, 0 };
	struct sp__sym_reader *ri, *rc = NULL;
	int err = 1;

	if (!sym || !sym->own_spool || (!frames && n) || (!out && cap) ||
	    !sp__sym_valid_pid(pid))
		return -EINVAL;
	ri = sp__sym_cache_enter(&sym->raw_index);
	if (ri)
		rc = sp__sym_cache_enter(&sym->cache);
	if (rc) {
		err = raw_pass(sym, &q);
		sp__sym_cache_leave(rc);
	}
	if (ri)
		sp__sym_cache_leave(ri);
	if (err == 1) {
		pthread_mutex_lock(&sym->lock);
		err = raw_slow(sym, &q);
		pthread_mutex_unlock(&sym->lock);
	}
	if (err)
		return err;
	return q.total > INT32_MAX ? INT32_MAX : (int)q.total;
}
