/* SPDX-License-Identifier: MIT */
/* Library-default allocator: mimalloc, private to libstackpulse.so. */
#include <mimalloc.h>

#include "mem.h"

/*
 * Only the shared library links mimalloc, so only these mi_* calls use it:
 * the host program's malloc stays its own (research/feasibility.md §7).
 * Memory from here is never handed to the caller's free().
 */
void *sp__default_alloc(void *ctx, size_t size, size_t align)
{
	(void)ctx;
	return mi_malloc_aligned(size, align);
}

void sp__default_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	mi_free(ptr);
}

void *sp__default_realloc(void *ptr, size_t old_size, size_t new_size)
{
	(void)old_size;
	return mi_realloc_aligned(ptr, new_size, 16);
}
