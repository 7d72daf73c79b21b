/* SPDX-License-Identifier: MIT */
/* Exporters: allocation through the caller's sp_allocator or libc. */

/*
 * src/export sits above the library's internals and may not use src/base
 * (DESIGN.md §2), so it carries this tiny allocator shim: the caller's
 * struct sp_allocator from the export options when given, else the C
 * library. This is the only file of the layer that calls malloc.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

void *sp__xmem_alloc(const struct sp__xmem *mem, size_t size)
{
	if (size == 0)
		return NULL;
	if (mem->user)
		return mem->user->alloc(mem->user->ctx, size, 16);
	return malloc(size);
}

void *sp__xmem_calloc(const struct sp__xmem *mem, size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = sp__xmem_alloc(mem, n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void sp__xmem_free(const struct sp__xmem *mem, void *ptr, size_t size)
{
	if (!ptr)
		return;
	if (mem->user)
		mem->user->free(mem->user->ctx, ptr, size);
	else
		free(ptr);
}

void *sp__xmem_realloc(const struct sp__xmem *mem, void *ptr, size_t old_size,
		       size_t new_size)
{
	void *p;

	if (!mem->user)
		return new_size ? realloc(ptr, new_size) : NULL;
	p = sp__xmem_alloc(mem, new_size);
	if (!p)
		return NULL;
	if (ptr)
		memcpy(p, ptr, old_size < new_size ? old_size : new_size);
	sp__xmem_free(mem, ptr, old_size);
	return p;
}

int sp__xmem_reserve(const struct sp__xmem *mem, void **arr, size_t *cap,
		     size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	p = sp__xmem_realloc(mem, *arr, *cap * elem, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}
