/* SPDX-License-Identifier: MIT */
/* Inline instance ranges flattened into disjoint innermost-instance segments. */
#include <errno.h>
#include <stdlib.h>

#include "native_internal.h"

/*
 * The ranges of a CU's inline instances nest like the DIE tree (a callee
 * instance lies inside its caller's), but one instance may have many
 * ranges and hostile DWARF may overlap siblings. A lookup wants the
 * innermost instance at an address in O(log n), so the ranges are cut at
 * every boundary into disjoint segments, each naming the deepest
 * instance covering it (ties: the first in DIE order, as dwarf_getscopes
 * descends into the first matching child). Adjacent segments with the
 * same instance merge.
 *
 *   ranges  [a---------------f)  depth 0 (caller)
 *               [b----d)         depth 1
 *   segs    [a-b)[b----d)[d--f)
 *            0    1      0
 */

#define ACTIVE_MAX 256

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

static int cmp_inl_range(const void *pa, const void *pb)
{
	const struct inl_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->inl < b->inl ? -1 : a->inl > b->inl;
}

/* Sorted, de-duplicated range boundaries. */
static int boundaries(const struct sp__mem *mem, const struct sp__vec *rv,
		      struct sp__vec *pts)
{
	const struct inl_range *r = rv->data;
	uint64_t *p;
	size_t i, n = 0;

	if (rv->len == 0)
		return 0;
	if (sp__vec_reserve(pts, mem, 2 * rv->len) < 0)
		return -ENOMEM;
	p = pts->data;
	for (i = 0; i < rv->len; i++) {
		p[n++] = r[i].lo;
		p[n++] = r[i].hi;
	}
	qsort(p, n, sizeof(*p), cmp_u64);
	pts->len = 0;
	for (i = 0; i < n; i++) {
		if (i == 0 || p[i] != p[pts->len - 1])
			p[pts->len++] = p[i];
	}
	return 0;
}

/* The deepest active range (ties: the first instance in DIE order). */
static int32_t innermost(const struct inl_range *r, const size_t *active,
			 size_t nactive)
{
	size_t i, best = active[0];

	for (i = 1; i < nactive; i++) {
		const struct inl_range *a = &r[active[i]], *b = &r[best];

		if (a->depth > b->depth ||
		    (a->depth == b->depth && a->inl < b->inl))
			best = active[i];
	}
	return r[best].inl;
}

static int push_seg(const struct sp__mem *mem, struct sp__vec *segs,
		    uint64_t lo, uint64_t hi, int32_t inl)
{
	struct inl_seg s = { lo, hi, inl }, *last;

	last = segs->len ? sp__vec_at(segs, segs->len - 1) : NULL;
	if (last && last->hi == lo && last->inl == inl) {
		last->hi = hi;
		return 0;
	}
	return sp__vec_push(segs, mem, &s);
}

/*
 * Sweeps the boundaries left to right with the set of ranges covering
 * the current elementary interval, and emits each interval with its
 * innermost instance. The active set is bounded (overlap beyond
 * ACTIVE_MAX only happens in hostile input; extra ranges are dropped).
 */
int sp__inline_segments(const struct sp__mem *mem, struct sp__vec *rv,
			struct sp__vec *segs)
{
	const struct inl_range *r = rv->data;
	size_t active[ACTIVE_MAX], nactive = 0, next = 0, i, j;
	struct sp__vec pts;
	const uint64_t *p;
	int err;

	sp__vec_init(&pts, sizeof(uint64_t));
	if (rv->len == 0)
		return 0;
	qsort(rv->data, rv->len, sizeof(struct inl_range), cmp_inl_range);
	err = boundaries(mem, rv, &pts);
	p = pts.data;
	for (i = 0; err == 0 && i + 1 < pts.len; i++) {
		for (j = 0; j < nactive;) {
			if (r[active[j]].hi <= p[i])
				active[j] = active[--nactive];
			else
				j++;
		}
		for (; next < rv->len && r[next].lo <= p[i]; next++) {
			if (nactive < ACTIVE_MAX && r[next].hi > p[i])
				active[nactive++] = next;
		}
		if (nactive)
			err = push_seg(mem, segs, p[i], p[i + 1],
				       innermost(r, active, nactive));
	}
	sp__vec_fini(&pts, mem);
	return err;
}
