/* SPDX-License-Identifier: MIT */
/* Exporters: building the aggregated profile from a spool (Replay pass). */

/*
 * One sequential Replay pass aggregates every sample that passes the pid
 * filter into (thread, stack) counts; each stack is symbolized the first
 * time it is seen (profile_frames.c). Memory is bounded by the distinct
 * threads, stacks and frames: a million samples of the same few hundred
 * stacks cost a few hundred entries. The Replay stays open so timeline
 * formats can make a second pass (sp__profile_each_sample()).
 *
 * Key packing for the u64 maps: (pid, spool stack) and (thread, stack)
 * are two 32-bit halves; the spool guarantees ids below 2^32.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

#define EXPORT_FLAGS                                                           \
	(SP_EXPORT_NO_INLINE | SP_EXPORT_ANNOTATE_PID |                        \
	 SP_EXPORT_ANNOTATE_TID | SP_EXPORT_ANNOTATE_KIND)

static uint64_t pack(uint32_t hi, uint32_t lo)
{
	return ((uint64_t)hi << 32) | lo;
}

/*
 * R4: copies the fields of @user that fit in @user_size, rejecting unknown
 * non-zero bytes and a size that is not a multiple of sizeof(size_t) (it
 * would end inside a field). This layer sees the public API only, so it
 * mirrors sp__opts_load() (src/base/opts.c) instead of calling it: keep the
 * two identical.
 */
static int xopts_load(const void *user, size_t user_size, void *out,
		      size_t out_size)
{
	const unsigned char *bytes = user;
	size_t i;

	memset(out, 0, out_size);
	if (!user)
		return 0;
	if (user_size < sizeof(size_t) || user_size % sizeof(size_t))
		return -EINVAL;
	for (i = out_size; i < user_size; i++)
		if (bytes[i])
			return -EINVAL;
	memcpy(out, user, user_size < out_size ? user_size : out_size);
	return 0;
}

static int read_opts(const struct sp_export_opts *opts,
		     struct sp_export_opts *o)
{
	int err = xopts_load(opts, opts ? opts->size : 0, o, sizeof(*o));

	if (err)
		return err;
	if ((o->flags & ~EXPORT_FLAGS) || o->pid < 0)
		return -EINVAL;
	return 0;
}

static int set_title(struct sp__profile *prof, const char *path,
		     const char *title)
{
	const char *base = strrchr(path, '/');

	if (!title)
		title = base && base[1] ? base + 1 : path;
	prof->title_size = strlen(title) + 1;
	prof->title = sp__xmem_alloc(&prof->mem, prof->title_size);
	if (!prof->title)
		return -ENOMEM;
	memcpy(prof->title, title, prof->title_size);
	return 0;
}

/*
 * A default title says what the time is when it is not on-CPU time, so
 * every format (speedscope's name, Firefox's product, pprof's comment,
 * the SVG's title) shows it; the value type says it too (pprof).
 */
static int mode_title(struct sp__profile *prof)
{
	const char *mode = sp__xmode_name(prof->spool);
	size_t n = prof->title_size - 1, m = strlen(mode);
	char *t;

	if (strcmp(mode, "cpu") == 0)
		return 0;
	t = sp__xmem_alloc(&prof->mem, n + m + 9);
	if (!t)
		return -ENOMEM;
	memcpy(t, prof->title, n);
	memcpy(t + n, " (", 2);
	memcpy(t + n + 2, mode, m);
	memcpy(t + n + 2 + m, " time)", 7);
	sp__xmem_free(&prof->mem, prof->title, prof->title_size);
	prof->title = t;
	prof->title_size = n + m + 9;
	return 0;
}

static int open_symbolizer(struct sp__profile *prof,
			   const struct sp_export_opts *o)
{
	const struct sp_symbolizer_opts *user = o->symbolizer;
	struct sp_symbolizer_opts so;
	int err;

	err = xopts_load(user, user ? user->size : 0, &so, sizeof(so));
	if (err)
		return err;
	so.size = sizeof(so);
	/* The export's allocator and logger are the symbolizer's defaults. */
	if (!so.allocator)
		so.allocator = o->allocator;
	if (!so.logger)
		so.logger = o->logger;
	/* Each distinct stack is resolved once: caching stacks buys nothing. */
	if (!user ||
	    user->size <= offsetof(struct sp_symbolizer_opts, stack_cache))
		so.stack_cache = SP_STACK_CACHE_EXTERNAL;
	if (o->flags & SP_EXPORT_NO_INLINE)
		so.flags |= SP_SYMBOLIZER_NO_INLINE;
	return sp_symbolizer_new(prof->spool, &so, &prof->symbolizer);
}

/* Spool thread ids are dense table indices, so an array maps them. */
static int thread_index(struct sp__profile *prof, const struct sp_sample *s,
			uint32_t *idx)
{
	size_t old_cap = prof->thread_of_cap;
	struct sp__xthread *t;
	int err;

	if (s->thread < old_cap && prof->thread_of[s->thread] != UINT32_MAX) {
		*idx = prof->thread_of[s->thread];
		return 0;
	}
	err = sp__xmem_reserve(&prof->mem, (void **)&prof->threads,
			       &prof->threads_cap, prof->nthreads + 1,
			       sizeof(*prof->threads));
	if (!err)
		err = sp__xmem_reserve(&prof->mem, (void **)&prof->thread_of,
				       &prof->thread_of_cap,
				       (size_t)s->thread + 1,
				       sizeof(*prof->thread_of));
	if (err)
		return err;
	memset(prof->thread_of + old_cap, 0xff,
	       (prof->thread_of_cap - old_cap) * sizeof(*prof->thread_of));
	t = &prof->threads[prof->nthreads];
	*t = (struct sp__xthread){ .pid = s->pid,
				   .tid = s->tid,
				   .spool_thread = s->thread,
				   .first_ns = s->timestamp_ns };
	*idx = (uint32_t)prof->nthreads++;
	prof->thread_of[s->thread] = *idx;
	return 0;
}

static int count_sample(struct sp__profile *prof, uint32_t thread,
			uint32_t stack)
{
	uint64_t key = pack(thread, stack);
	uint32_t c = sp__xmap_get(&prof->count_map, key);
	int err;

	if (c == UINT32_MAX) {
		err = sp__xmem_reserve(&prof->mem, (void **)&prof->counts,
				       &prof->counts_cap, prof->ncounts + 1,
				       sizeof(*prof->counts));
		c = (uint32_t)prof->ncounts;
		if (!err)
			err = sp__xmap_put(&prof->count_map, &prof->mem, key,
					   c);
		if (err)
			return err;
		prof->counts[c] = (struct sp__xcount){ thread, stack, 0 };
		prof->ncounts++;
	}
	prof->counts[c].count++;
	return 0;
}

static int add_sample(struct sp__profile *prof, const struct sp_sample *s)
{
	uint64_t key = pack((uint32_t)s->pid, s->stack);
	uint32_t thread, stack = sp__xmap_get(&prof->stack_map, key);
	int err;

	if (stack == UINT32_MAX) {
		err = sp__profile_add_stack(prof, s->pid, s->stack, &stack);
		if (!err)
			err = sp__xmap_put(&prof->stack_map, &prof->mem, key,
					   stack);
		if (err)
			return err;
	}
	err = thread_index(prof, s, &thread);
	if (!err)
		err = count_sample(prof, thread, stack);
	if (err)
		return err;
	prof->stacks[stack].samples++;
	prof->threads[thread].samples++;
	prof->threads[thread].last_ns = s->timestamp_ns;
	if (!prof->total_samples++)
		prof->first_ns = s->timestamp_ns;
	prof->last_ns = s->timestamp_ns;
	return 0;
}

static int cmp_count(const void *a, const void *b)
{
	const struct sp__xcount *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

static int aggregate(struct sp__profile *prof)
{
	struct sp_sample s;
	int r;

	while ((r = sp_replay_next(prof->replay, &s)) == 1) {
		if (prof->pid && s.pid != prof->pid)
			continue;
		r = add_sample(prof, &s);
		if (r)
			return r;
	}
	if (r < 0)
		return r;
	/* counts[] indices are about to change; the map is not needed after. */
	sp__xmap_fini(&prof->count_map, &prof->mem);
	if (prof->ncounts)
		qsort(prof->counts, prof->ncounts, sizeof(*prof->counts),
		      cmp_count);
	return 0;
}

int sp__profile_build(struct sp__profile *prof, const char *path,
		      const struct sp_export_opts *opts)
{
	struct sp_export_opts o;
	struct sp_reader_opts ro = { .size = sizeof(ro) };
	int err;

	memset(prof, 0, sizeof(*prof));
	if (!path)
		return -EINVAL;
	err = read_opts(opts, &o);
	if (err)
		return err;
	prof->mem.user = o.allocator;
	prof->logger = o.logger;
	prof->flags = o.flags;
	prof->pid = o.pid;
	ro.allocator = o.allocator;
	ro.logger = o.logger;
	err = set_title(prof, path, o.title);
	if (!err)
		err = sp_replay_open(path, &ro, &prof->replay);
	if (err)
		goto err_fini;
	prof->spool = sp_replay_spool(prof->replay);
	err = open_symbolizer(prof, &o);
	if (!err)
		err = aggregate(prof);
	if (!err && !o.title)
		err = mode_title(prof);
	if (!err)
		return 0;
err_fini:
	sp__profile_fini(prof);
	return err;
}

int sp__profile_each_sample(struct sp__profile *prof, uint32_t first,
			    uint32_t end,
			    int (*fn)(void *ctx, uint64_t timestamp_ns,
				      uint32_t thread, uint32_t stack),
			    void *ctx)
{
	struct sp_sample s;
	uint32_t thread, stack;
	int r = sp_replay_rewind(prof->replay);

	while (r == 0 && (r = sp_replay_next(prof->replay, &s)) == 1) {
		r = 0;
		if (prof->pid && s.pid != prof->pid)
			continue;
		/* The file cannot change under an open Replay. */
		if (s.thread >= prof->thread_of_cap)
			return -EIO;
		thread = prof->thread_of[s.thread];
		if (thread == UINT32_MAX)
			return -EIO;
		if (thread < first || thread >= end)
			continue;
		stack = sp__xmap_get(&prof->stack_map,
				     pack((uint32_t)s.pid, s.stack));
		if (stack == UINT32_MAX)
			return -EIO;
		r = fn(ctx, s.timestamp_ns, thread, stack);
	}
	return r;
}

void sp__profile_fini(struct sp__profile *prof)
{
	const struct sp__xmem *mem = &prof->mem;

	sp__xmap_fini(&prof->stack_map, mem);
	sp__xmem_free(mem, prof->thread_of,
		      prof->thread_of_cap * sizeof(*prof->thread_of));
	sp__xmap_fini(&prof->frame_ptr_map, mem);
	sp__xmap_fini(&prof->frame_map, mem);
	sp__xmap_fini(&prof->count_map, mem);
	sp__xmap_fini(&prof->main_map, mem);
	sp__xmap_fini(&prof->func_map, mem);
	sp__xmem_free(mem, prof->funcs, prof->funcs_cap * sizeof(*prof->funcs));
	if (prof->func_of_frame)
		sp__xmem_free(mem, prof->func_of_frame,
			      (prof->nframes + 1) *
				      sizeof(*prof->func_of_frame));
	sp__xmem_free(mem, prof->scratch,
		      prof->scratch_cap * sizeof(*prof->scratch));
	sp__xmem_free(mem, prof->frames,
		      prof->frames_cap * sizeof(*prof->frames));
	sp__xmem_free(mem, prof->stacks,
		      prof->stacks_cap * sizeof(*prof->stacks));
	sp__xmem_free(mem, prof->pool, prof->pool_cap * sizeof(*prof->pool));
	sp__xmem_free(mem, prof->raw, prof->raw_cap * sizeof(*prof->raw));
	sp__xmem_free(mem, prof->threads,
		      prof->threads_cap * sizeof(*prof->threads));
	sp__xmem_free(mem, prof->counts,
		      prof->counts_cap * sizeof(*prof->counts));
	sp__xmem_free(mem, prof->title, prof->title_size);
	sp_symbolizer_free(prof->symbolizer);
	sp_replay_close(prof->replay);
	memset(prof, 0, sizeof(*prof));
}
