/* SPDX-License-Identifier: MIT */
/* A checking allocator for the base unit tests: counts, verifies, fails on demand. */
#ifndef SP_TESTS_BASE_TEST_ALLOC_H
#define SP_TESTS_BASE_TEST_ALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "mem.h"

/*
 * Every block carries a 64-byte prefix holding the requested size, so
 * free() can check that the library passes back exactly the size it asked
 * for (the allocator hook contract in alloc.h). @fail_after counts down
 * successful allocations; once it reaches zero every request fails, which
 * lets a test put the n-th allocation of an operation on the failure path.
 * A negative @fail_after never fails.
 */
#define TEST_ALLOC_PREFIX 64

struct test_alloc {
	long fail_after;
	size_t live_blocks;
	size_t live_bytes;
	size_t allocs;
	size_t failures;
};

static inline void *test_alloc_fn(void *ctx, size_t size, size_t align)
{
	struct test_alloc *ta = ctx;
	unsigned char *p;

	CHECK(align != 0 && (align & (align - 1)) == 0 && align <= 64);
	CHECK(size != 0);
	if (ta->fail_after == 0) {
		ta->failures++;
		return NULL;
	}
	if (ta->fail_after > 0)
		ta->fail_after--;
	if (size > SIZE_MAX - 2 * TEST_ALLOC_PREFIX)
		return NULL;
	p = aligned_alloc(64, (TEST_ALLOC_PREFIX + size + 63) & ~(size_t)63);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof(size));
	ta->live_blocks++;
	ta->live_bytes += size;
	ta->allocs++;
	return p + TEST_ALLOC_PREFIX;
}

static inline void test_free_fn(void *ctx, void *ptr, size_t size)
{
	struct test_alloc *ta = ctx;
	unsigned char *p;
	size_t stored;

	CHECK_PTR(ptr);
	p = (unsigned char *)ptr - TEST_ALLOC_PREFIX;
	memcpy(&stored, p, sizeof(stored));
	CHECK_EQ(size, stored);
	CHECK(ta->live_blocks > 0);
	ta->live_blocks--;
	ta->live_bytes -= size;
	free(p);
}

/* Sets up @ta (never failing) and a struct sp__mem that routes to it. */
static inline void test_alloc_init(struct test_alloc *ta, struct sp__mem *mem)
{
	struct sp_allocator hook = { test_alloc_fn, test_free_fn, ta };

	memset(ta, 0, sizeof(*ta));
	ta->fail_after = -1;
	sp__mem_init(mem, &hook);
}

#endif /* SP_TESTS_BASE_TEST_ALLOC_H */
