/* SPDX-License-Identifier: MIT */
/* Unit test of sp__vec, sp__arena and the sp__mem helpers under them. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "arena.h"
#include "check.h"
#include "test_alloc.h"
#include "vec.h"

/*
 * All three sit on the allocator hook, so every test runs on the checking
 * allocator of test_alloc.h: it verifies the size passed to free, counts
 * live blocks (everything must be returned by fini) and can refuse the
 * n-th allocation to drive the failure paths, which must leave the object
 * exactly as it was.
 */

struct item {
	uint64_t a;
	uint32_t b;
	uint16_t c;
};

static struct item make_item(size_t i)
{
	struct item it;

	memset(&it, 0, sizeof(it)); /* padding too, for CHECK_MEM */
	it.a = i * 0x100000001ull;
	it.b = (uint32_t)~i;
	it.c = (uint16_t)(i * 3);
	return it;
}

static void check_items(const struct sp__vec *vec, size_t n)
{
	size_t i;

	CHECK_EQ(vec->len, n);
	for (i = 0; i < n; i++) {
		struct item want = make_item(i);

		CHECK_MEM(sp__vec_at(vec, i), sizeof(want), &want,
			  sizeof(want));
	}
}

static void test_vec_push_grow(const struct sp__mem *mem)
{
	struct sp__vec vec;
	size_t i, grows = 0, cap;

	sp__vec_init(&vec, sizeof(struct item));
	CHECK(vec.data == NULL);
	CHECK_EQ(vec.len, 0);
	CHECK_EQ(vec.elem, sizeof(struct item));
	cap = vec.cap;
	for (i = 0; i < 10000; i++) {
		struct item it = make_item(i);

		CHECK_OK(sp__vec_push(&vec, mem, &it));
		CHECK(vec.len <= vec.cap);
		if (vec.cap != cap) {
			/* Growth doubles (amortized O(1)) and keeps contents. */
			CHECK(cap == 0 || vec.cap == 2 * cap);
			check_items(&vec, i + 1);
			cap = vec.cap;
			grows++;
		}
	}
	CHECK(grows >= 10);
	check_items(&vec, 10000);
	/* A reserve that fits in the capacity does nothing. */
	CHECK_OK(sp__vec_reserve(&vec, mem, vec.cap - vec.len));
	CHECK_EQ(vec.cap, cap);
	sp__vec_fini(&vec, mem);
	CHECK(vec.data == NULL);
	CHECK_EQ(vec.len, 0);
	CHECK_EQ(vec.cap, 0);
}

static void test_vec_failures(struct test_alloc *ta, const struct sp__mem *mem)
{
	struct sp__vec vec;
	void *data;
	size_t i, cap;

	sp__vec_init(&vec, sizeof(struct item));
	ta->fail_after = 0;
	CHECK_EQ_INT(sp__vec_push(&vec, mem, &(struct item){ 0 }), -ENOMEM);
	CHECK(vec.data == NULL);
	CHECK_EQ(vec.len, 0);
	CHECK_EQ(vec.cap, 0);

	ta->fail_after = -1;
	for (i = 0; i < 8; i++) {
		struct item it = make_item(i);

		CHECK_OK(sp__vec_push(&vec, mem, &it));
	}
	data = vec.data;
	cap = vec.cap;
	CHECK_EQ(cap, vec.len); /* the next push must grow */
	ta->fail_after = 0;
	CHECK_EQ_INT(sp__vec_push(&vec, mem, &(struct item){ 0 }), -ENOMEM);
	CHECK(vec.data == data);
	CHECK_EQ(vec.cap, cap);
	check_items(&vec, 8);

	/* Sizes that overflow are refused before any allocation. */
	ta->fail_after = -1;
	CHECK_EQ_INT(sp__vec_reserve(&vec, mem, SIZE_MAX), -ENOMEM);
	CHECK_EQ_INT(sp__vec_reserve(&vec, mem, SIZE_MAX - 8), -ENOMEM);
	CHECK_EQ_INT(sp__vec_reserve(&vec, mem, SIZE_MAX / 2), -ENOMEM);
	CHECK_EQ_INT(sp__vec_reserve(&vec, mem, SIZE_MAX / sizeof(struct item)),
		     -ENOMEM);
	CHECK(vec.data == data);
	CHECK_EQ(vec.cap, cap);
	check_items(&vec, 8);
	sp__vec_fini(&vec, mem);
}

static void test_arena(struct test_alloc *ta, const struct sp__mem *mem)
{
	struct sp__arena arena;
	unsigned char *prev = NULL;
	size_t i, total = 0;

	sp__arena_init(&arena);
	CHECK_EQ(arena.total, 0);
	for (i = 1; i < 3000; i++) {
		size_t size = i % 97 + 1;
		unsigned char *p = sp__arena_alloc(&arena, mem, size);

		CHECK_PTR(p);
		CHECK_EQ((uintptr_t)p % 8, 0);
		memset(p, (int)(i & 0xff), size);
		/* The previous block must not have been overwritten. */
		if (prev)
			CHECK_EQ(prev[0], (unsigned char)((i - 1) & 0xff));
		prev = p;
		total += (size + 7) & ~(size_t)7;
	}
	CHECK_EQ(arena.total, total);
	CHECK(ta->live_blocks > 1); /* spilled into more blocks */
	/* A request above the block size gets a block of its own. */
	prev = sp__arena_alloc(&arena, mem, 3 * SP_ARENA_BLOCK);
	CHECK_PTR(prev);
	memset(prev, 0x5a, 3 * SP_ARENA_BLOCK);
	/* Sizes that overflow when rounded or with the header fail. */
	CHECK(sp__arena_alloc(&arena, mem, SIZE_MAX) == NULL);
	CHECK(sp__arena_alloc(&arena, mem, SIZE_MAX - 8) == NULL);
	sp__arena_fini(&arena, mem);
	CHECK_EQ(ta->live_blocks, 0);
	CHECK(arena.head == NULL);
	CHECK_EQ(arena.total, 0);
}

static void test_arena_strndup_and_failure(struct test_alloc *ta,
					   const struct sp__mem *mem)
{
	static const char src[] = "lib\0c.so.6";
	struct sp__arena arena;
	char *s;
	size_t total;

	sp__arena_init(&arena);
	s = sp__arena_strndup(&arena, mem, src, sizeof(src) - 1);
	CHECK_PTR(s);
	CHECK_MEM(s, sizeof(src), src, sizeof(src)); /* NULs kept, one added */
	s = sp__arena_strndup(&arena, mem, NULL, 0);
	CHECK_PTR(s);
	CHECK_EQ(s[0], '\0');
	CHECK(sp__arena_strndup(&arena, mem, src, SIZE_MAX) == NULL);

	/* Exhaustion returns NULL and leaves the arena usable. */
	total = arena.total;
	ta->fail_after = 0;
	CHECK(sp__arena_alloc(&arena, mem, SP_ARENA_BLOCK + 1) == NULL);
	CHECK_EQ(arena.total, total);
	s = sp__arena_alloc(&arena, mem, 16); /* still fits in the head */
	CHECK_PTR(s);
	ta->fail_after = -1;
	sp__arena_fini(&arena, mem);
	CHECK_EQ(ta->live_blocks, 0);
}

static void test_mem_helpers(struct test_alloc *ta, const struct sp__mem *mem)
{
	unsigned char *p, *q;
	size_t i;

	CHECK(sp__mem_alloc(mem, 0) == NULL);
	CHECK(sp__mem_calloc(mem, SIZE_MAX / 2, 3) == NULL);
	CHECK_EQ(ta->live_blocks, 0);
	p = sp__mem_calloc(mem, 10, 10);
	CHECK_PTR(p);
	CHECK_EQ((uintptr_t)p % 16, 0);
	for (i = 0; i < 100; i++)
		CHECK_EQ(p[i], 0);
	memset(p, 7, 100);
	q = sp__mem_realloc(mem, p, 100, 300);
	CHECK_PTR(q);
	for (i = 0; i < 100; i++)
		CHECK_EQ(q[i], 7);
	/* Failure leaves the old block valid and owned by the caller. */
	ta->fail_after = 0;
	CHECK(sp__mem_realloc(mem, q, 300, 600) == NULL);
	ta->fail_after = -1;
	CHECK_EQ(q[99], 7);
	p = sp__mem_realloc(mem, q, 300, 50);
	CHECK_PTR(p);
	CHECK_EQ(p[49], 7);
	CHECK(sp__mem_realloc(mem, p, 50, 0) == NULL); /* frees */
	sp__mem_free(mem, NULL, 123);
	CHECK_EQ(ta->live_blocks, 0);
}

/* An allocator that remembers the alignment it was asked for. */
static void *align_alloc(void *ctx, size_t size, size_t align)
{
	void *p = NULL;

	*(size_t *)ctx = align;
	return posix_memalign(&p, align, size) ? NULL : p;
}

static void align_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	free(ptr);
}

/* sp__mem_calloc_aligned asks the hook for the alignment (16 at least). */
static void test_mem_aligned(const struct sp__mem *def)
{
	struct sp_allocator hook = { align_alloc, align_free, NULL };
	struct sp__mem mem;
	size_t asked = 0, i;
	unsigned char *p;

	hook.ctx = &asked;
	sp__mem_init(&mem, &hook);
	p = sp__mem_calloc_aligned(&mem, 3, 100, 64);
	CHECK_PTR(p);
	CHECK_EQ(asked, 64);
	CHECK_EQ((uintptr_t)p % 64, 0);
	for (i = 0; i < 300; i++)
		CHECK_EQ(p[i], 0);
	sp__mem_free(&mem, p, 300);
	p = sp__mem_calloc_aligned(&mem, 1, 8, 8);
	CHECK_PTR(p);
	CHECK_EQ(asked, 16); /* never less than sp__mem_alloc's */
	sp__mem_free(&mem, p, 8);
	asked = 0;
	CHECK(sp__mem_calloc_aligned(&mem, SIZE_MAX / 2, 3, 64) == NULL);
	CHECK(sp__mem_calloc_aligned(&mem, 0, 64, 64) == NULL);
	CHECK_EQ(asked, 0); /* refused before the hook */
	/* The library's default allocator aligns too. */
	for (i = 0; i < 8; i++) {
		p = sp__mem_calloc_aligned(def, i + 1, 384, 64);
		CHECK_PTR(p);
		CHECK_EQ((uintptr_t)p % 64, 0);
		CHECK_EQ(p[(i + 1) * 384 - 1], 0);
		sp__mem_free(def, p, (i + 1) * 384);
	}
}

int main(void)
{
	struct test_alloc ta;
	struct sp__mem mem, def;
	struct sp__vec vec;
	int x = 5;

	test_alloc_init(&ta, &mem);
	test_vec_push_grow(&mem);
	test_vec_failures(&ta, &mem);
	test_arena(&ta, &mem);
	test_arena_strndup_and_failure(&ta, &mem);
	test_mem_helpers(&ta, &mem);
	CHECK_EQ(ta.live_blocks, 0);
	CHECK_EQ(ta.live_bytes, 0);
	CHECK(ta.allocs > 20);

	/* NULL selects the library default, which must work as well. */
	sp__mem_init(&def, NULL);
	test_mem_aligned(&def);
	sp__vec_init(&vec, sizeof(x));
	CHECK_OK(sp__vec_push(&vec, &def, &x));
	CHECK_EQ(*(int *)sp__vec_at(&vec, 0), 5);
	sp__vec_fini(&vec, &def);
	return T_EXIT_PASS;
}
