/* SPDX-License-Identifier: MIT */
/* Library-default allocator: the C library (static library, sanitizer builds). */
#include <stdlib.h>

#include "mem.h"

void *sp__default_alloc(void *ctx, size_t size, size_t align)
{
	void *p = NULL;

	(void)ctx;
	if (align <= 16)
		return malloc(size);
	if (posix_memalign(&p, align, size) != 0)
		return NULL;
	return p;
}

void sp__default_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	free(ptr);
}

void *sp__default_realloc(void *ptr, size_t old_size, size_t new_size)
{
	(void)old_size;
	return realloc(ptr, new_size);
}
