/* SPDX-License-Identifier: MIT */
/* Test helper: an allocator hook that counts the bytes live and their peak. */
#ifndef SP_TESTS_PEAK_ALLOC_H
#define SP_TESTS_PEAK_ALLOC_H

/*
 * Memory bounds are asserted on what the library asks its allocator for
 * (tests/export/test_export_huge.c, the issue 20 tests): exact, unlike
 * RSS, and the same on a loaded machine. Only the public API is used.
 */
#include <stdlib.h>

#include <stackpulse/alloc.h>

struct peak_count {
	size_t live;
	size_t peak;
};

static inline void *peak_count_alloc(void *ctx, size_t size, size_t align)
{
	struct peak_count *c = ctx;
	void *p = NULL;

	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
			   size))
		return NULL;
	c->live += size;
	if (c->live > c->peak)
		c->peak = c->live;
	return p;
}

static inline void peak_count_free(void *ctx, void *ptr, size_t size)
{
	struct peak_count *c = ctx;

	c->live -= size;
	free(ptr);
}

/* The hook counting into @c (which must outlive every use of it). */
static inline struct sp_allocator peak_count_hook(struct peak_count *c)
{
	struct sp_allocator a = { peak_count_alloc, peak_count_free, c };

	return a;
}

#endif /* SP_TESTS_PEAK_ALLOC_H */
