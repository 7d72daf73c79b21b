/* SPDX-License-Identifier: MIT */
/* Allocation helpers on top of the allocator hook. */
#include <errno.h>
#include <string.h>

#include "mem.h"

void sp__mem_init(struct sp__mem *mem, const struct sp_allocator *user)
{
	if (user && user->alloc && user->free) {
		mem->hook = *user;
		return;
	}
	mem->hook.alloc = sp__default_alloc;
	mem->hook.free = sp__default_free;
	mem->hook.ctx = NULL;
}

void *sp__mem_alloc(const struct sp__mem *mem, size_t size)
{
	if (size == 0)
		return NULL;
	return mem->hook.alloc(mem->hook.ctx, size, 16);
}

void *sp__mem_calloc_aligned(const struct sp__mem *mem, size_t n, size_t size,
			     size_t align)
{
	void *p;

	if ((n != 0 && size > SIZE_MAX / n) || n * size == 0)
		return NULL;
	p = mem->hook.alloc(mem->hook.ctx, n * size, align < 16 ? 16 : align);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void *sp__mem_calloc(const struct sp__mem *mem, size_t n, size_t size)
{
	return sp__mem_calloc_aligned(mem, n, size, 16);
}

char *sp__mem_strndup(const struct sp__mem *mem, const char *s, size_t len)
{
	char *d = len < SIZE_MAX ? sp__mem_alloc(mem, len + 1) : NULL;

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

void sp__mem_free(const struct sp__mem *mem, void *ptr, size_t size)
{
	if (ptr)
		mem->hook.free(mem->hook.ctx, ptr, size);
}

int sp__mem_grow(const struct sp__mem *mem, void **ptr, size_t *cap, size_t len,
		 size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap * 2 : first;
	void *p;

	if (len < *cap)
		return 0;
	if (ncap < *cap || ncap > SIZE_MAX / elem)
		return -ENOMEM;
	p = sp__mem_realloc(mem, *ptr, *cap * elem, ncap * elem);
	if (!p)
		return -ENOMEM;
	*ptr = p;
	*cap = ncap;
	return 0;
}

void *sp__mem_realloc(const struct sp__mem *mem, void *ptr, size_t old_size,
		      size_t new_size)
{
	void *p;

	if (new_size == 0) {
		sp__mem_free(mem, ptr, old_size);
		return NULL;
	}
	/* The default allocator can grow big blocks without copying them. */
	if (mem->hook.alloc == sp__default_alloc && ptr)
		return sp__default_realloc(ptr, old_size, new_size);
	p = sp__mem_alloc(mem, new_size);
	if (!p)
		return NULL;
	if (ptr) {
		memcpy(p, ptr, old_size < new_size ? old_size : new_size);
		sp__mem_free(mem, ptr, old_size);
	}
	return p;
}
