/* SPDX-License-Identifier: MIT */
/* Whole spool stacks: the walk over cached frames and the internal stack cache. */

/*
 * sp_symbolizer_resolve_stack() returns pointers to cached frame results,
 * leaf first. Two ways to produce them on a repeat (features §1.10,
 * StackCache Internal/External):
 *
 *   external   walk the spool's prefix tree from the leaf node and look up
 *              (pid, frame) for each node: depth lookups per stack;
 *   internal   the first resolution of (pid, stack) also stores the
 *              pointer array it produced as a stack entry in the same
 *              lock-free table; a repeat is one lookup and a memcpy.
 *
 * Both read without locks and allocate nothing once warm. A miss takes
 * sym->lock, resolves every missing frame of the stack in one go (one
 * plug-in batch), and in internal mode inserts the stack entry. Stack
 * entries point into the frame entries of the same pid and are keyed by
 * that pid, so sp_symbolizer_update() drops both together
 * (sp__sym_cache_drop_pids): a stale stack can never be served. Resolving
 * a stack whose frames are all cached but which has no stack entry yet
 * still takes the lock once in internal mode, to create the entry.
 */
#include <errno.h>
#include <string.h>

#include "symbolizer_internal.h"

/*
 * One pass over stack @stack: stores pointers to cached frames (leaf
 * first, inline chains innermost first) and counts them in *@total.
 * Returns 0, 1 at the first frame that is not cached, or -EINVAL.
 */
static int stack_pass(struct sp_symbolizer *sym, uint32_t stack, int32_t pid,
		      const struct sp_resolved_frame **out, size_t cap,
		      size_t *total)
{
	uint32_t limit = sp_spool_stack_count(sym->spool), seen = 0;
	struct sp_stack_node node;
	size_t t = 0;

	while (stack != SP_NO_PARENT) {
		const struct sp__sym_entry *e;
		uint32_t j;

		/* Parents precede children in a valid spool; never loop. */
		if (seen++ >= limit ||
		    sp_spool_stack_node(sym->spool, stack, &node))
			return -EINVAL;
		e = sp__sym_cache_frame(&sym->cache, pid, node.frame);
		if (!e)
			return 1;
		for (j = 0; j < e->count; j++, t++)
			if (t < cap)
				out[t] = &e->frames[j];
		stack = node.parent;
	}
	*total = t;
	return 0;
}

static int collect_frames(struct sp_symbolizer *sym, uint32_t stack)
{
	uint32_t limit = sp_spool_stack_count(sym->spool), seen = 0;
	struct sp_stack_node node;

	sym->miss_ids.len = 0;
	while (stack != SP_NO_PARENT) {
		if (seen++ >= limit ||
		    sp_spool_stack_node(sym->spool, stack, &node))
			return -EINVAL;
		if (sp__vec_push(&sym->miss_ids, &sym->mem, &node.frame))
			return -ENOMEM;
		stack = node.parent;
	}
	return 0;
}

/* Copies the pointers of a cached stack; returns its full length. */
static size_t stack_copy(const struct sp__sym_stack *st,
			 const struct sp_resolved_frame **out, size_t cap)
{
	size_t n = st->count < cap ? st->count : cap;

	if (n)
		memcpy(out, st->frames, n * sizeof(*out));
	return st->count;
}

/* Builds the stack entry of (@pid, @stack), every frame cached (lock held). */
static int stack_insert(struct sp_symbolizer *sym, uint32_t stack, int32_t pid,
			const struct sp__sym_stack **out)
{
	struct sp__sym_stack *st;
	size_t total = 0, bytes;
	int err = stack_pass(sym, stack, pid, NULL, 0, &total);

	if (err)
		return err > 0 ? -EINVAL : err;
	if (total > UINT32_MAX)
		return -EINVAL;
	bytes = sizeof(*st) + total * sizeof(st->frames[0]);
	st = sp__mem_alloc(&sym->mem, bytes);
	if (!st)
		return -ENOMEM;
	st->hdr.key = sp__sym_key(pid, stack);
	st->hdr.bytes = bytes;
	st->hdr.kind = SP_SYM_KIND_STACK;
	st->hdr.reserved = 0;
	st->count = (uint32_t)total;
	st->reserved = 0;
	stack_pass(sym, stack, pid, st->frames, total, &total);
	err = sp__sym_cache_put(&sym->cache, &st->hdr);
	if (err) {
		sp__mem_free(&sym->mem, st, bytes);
		return err;
	}
	*out = st;
	return 0;
}

static bool internal_cache(const struct sp_symbolizer *sym)
{
	return sym->stack_cache == SP_STACK_CACHE_INTERNAL;
}

/* Miss path: resolve the whole stack and read it back, all under the lock. */
static int stack_slow(struct sp_symbolizer *sym, uint32_t stack, int32_t pid,
		      const struct sp_resolved_frame **out, size_t cap,
		      size_t *total)
{
	const struct sp__sym_stack *st = NULL;
	int err = 0;

	pthread_mutex_lock(&sym->lock);
	/* Another thread may have resolved it since our lock-free look. */
	if (internal_cache(sym))
		st = sp__sym_cache_stack(&sym->cache, pid, stack);
	if (!st)
		err = collect_frames(sym, stack);
	if (!st && !err)
		err = sp__sym_resolve_misses(sym, pid, sym->miss_ids.data,
					     sym->miss_ids.len);
	if (!st && !err && internal_cache(sym))
		err = stack_insert(sym, stack, pid, &st);
	if (!err && st)
		*total = stack_copy(st, out, cap);
	else if (!err)
		err = stack_pass(sym, stack, pid, out, cap, total);
	pthread_mutex_unlock(&sym->lock);
	return err > 0 ? -EINVAL : err;
}

/* Lock-free path: 0 when served, 1 when the stack needs stack_slow(). */
static int stack_fast(struct sp_symbolizer *sym, uint32_t stack, int32_t pid,
		      const struct sp_resolved_frame **out, size_t cap,
		      size_t *total)
{
	const struct sp__sym_stack *st;

	if (!internal_cache(sym))
		return stack_pass(sym, stack, pid, out, cap, total);
	st = sp__sym_cache_stack(&sym->cache, pid, stack);
	if (!st)
		return 1;
	*total = stack_copy(st, out, cap);
	return 0;
}

SP_API int sp_symbolizer_resolve_stack(struct sp_symbolizer *sym,
				       uint32_t stack, int32_t pid,
				       const struct sp_resolved_frame **out,
				       size_t cap)
{
	struct sp__sym_reader *r;
	size_t total = 0;
	int err = 1;

	if (!sym || (!out && cap) || !sp__sym_valid_pid(pid) ||
	    stack >= sp_spool_stack_count(sym->spool))
		return -EINVAL;
	r = sp__sym_cache_enter(&sym->cache);
	if (r) {
		err = stack_fast(sym, stack, pid, out, cap, &total);
		sp__sym_cache_leave(r);
	}
	if (err == 1)
		err = stack_slow(sym, stack, pid, out, cap, &total);
	if (err)
		return err;
	return total > INT32_MAX ? INT32_MAX : (int)total;
}
