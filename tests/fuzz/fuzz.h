/* SPDX-License-Identifier: MIT */
/* Shared helpers of the fuzz targets: the entry point, checks, allocators. */
#ifndef SP_TESTS_FUZZ_H
#define SP_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse/alloc.h>
#include <stackpulse/error.h>

/*
 * Every target defines LLVMFuzzerTestOneInput() and links either with
 * libFuzzer (fuzz_<name>) or with replay_main.c (replay_<name>, run by
 * meson over tests/corpus/<name>/). A broken invariant calls abort(),
 * which both drivers report as a crash; the message names the check.
 *
 * struct fuzz_alloc is an accounting allocator for the R15 hook: it checks
 * that every free passes the size that was allocated, counts what is still
 * outstanding (a leak the library hides from LSan by pooling would show up
 * here), and can fail the N-th allocation to drive the -ENOMEM paths.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
	abort();
}

#define FUZZ_CHECK(cond)                                                       \
	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))

/* FNV-1a over the input: a cheap deterministic choice of cut points. */
static inline uint64_t fuzz_hash(const uint8_t *data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3ull;
	return h;
}

/* Copies @size bytes to an exactly sized heap block, so ASan sees overreads. */
static inline uint8_t *fuzz_dup(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1);

	FUZZ_CHECK(p != NULL);
	if (size)
		memcpy(p, data, size);
	return p;
}

struct fuzz_alloc {
	struct sp_allocator hook;
	uint64_t allocs;      /* successful allocations so far */
	uint64_t outstanding; /* blocks not yet freed */
	uint64_t fail_at;     /* 1-based allocation number to fail, 0 = never */
	bool failed;
};

#define FUZZ_ALLOC_HDR 64

static inline void *fuzz_alloc_fn(void *ctx, size_t size, size_t align)
{
	struct fuzz_alloc *a = ctx;
	void *p;

	FUZZ_CHECK(size > 0);
	FUZZ_CHECK(align > 0 && align <= 64 && (align & (align - 1)) == 0);
	if (a->fail_at && a->allocs + 1 == a->fail_at && !a->failed) {
		a->failed = true;
		return NULL;
	}
	if (size > SIZE_MAX - FUZZ_ALLOC_HDR ||
	    posix_memalign(&p, 64, FUZZ_ALLOC_HDR + size))
		return NULL;
	memcpy(p, &size, sizeof(size));
	a->allocs++;
	a->outstanding++;
	return (char *)p + FUZZ_ALLOC_HDR;
}

static inline void fuzz_free_fn(void *ctx, void *ptr, size_t size)
{
	struct fuzz_alloc *a = ctx;
	char *base = (char *)ptr - FUZZ_ALLOC_HDR;
	size_t stored;

	FUZZ_CHECK(ptr != NULL);
	memcpy(&stored, base, sizeof(stored));
	/* R15: free receives the size that was requested from alloc. */
	FUZZ_CHECK(stored == size);
	FUZZ_CHECK(a->outstanding > 0);
	a->outstanding--;
	free(base);
}

static inline void fuzz_alloc_init(struct fuzz_alloc *a, uint64_t fail_at)
{
	memset(a, 0, sizeof(*a));
	a->hook.alloc = fuzz_alloc_fn;
	a->hook.free = fuzz_free_fn;
	a->hook.ctx = a;
	a->fail_at = fail_at;
}

#endif /* SP_TESTS_FUZZ_H */
