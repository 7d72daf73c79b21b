/* SPDX-License-Identifier: MIT */
/* Bump arena. */
#include <string.h>

#include "arena.h"

struct sp__arena_block {
	struct sp__arena_block *next;
	size_t size; /* usable bytes after the header */
	_Alignas(16) unsigned char bytes[];
};

void sp__arena_init(struct sp__arena *arena)
{
	arena->head = NULL;
	arena->used = 0;
	arena->total = 0;
}

void sp__arena_fini(struct sp__arena *arena, const struct sp__mem *mem)
{
	struct sp__arena_block *b = arena->head;

	while (b) {
		struct sp__arena_block *next = b->next;

		sp__mem_free(mem, b, sizeof(*b) + b->size);
		b = next;
	}
	sp__arena_init(arena);
}

void *sp__arena_alloc(struct sp__arena *arena, const struct sp__mem *mem,
		      size_t size)
{
	struct sp__arena_block *b;
	size_t need = (size + 7) & ~(size_t)7;
	size_t bsize;

	if (need < size)
		return NULL;
	b = arena->head;
	if (b && b->size - arena->used >= need) {
		void *p = b->bytes + arena->used;

		arena->used += need;
		arena->total += need;
		return p;
	}
	bsize = need > SP_ARENA_BLOCK ? need : SP_ARENA_BLOCK;
	if (bsize > SIZE_MAX - sizeof(*b))
		return NULL;
	b = sp__mem_alloc(mem, sizeof(*b) + bsize);
	if (!b)
		return NULL;
	b->size = bsize;
	b->next = arena->head;
	arena->head = b;
	arena->used = need;
	arena->total += need;
	return b->bytes;
}

char *sp__arena_strndup(struct sp__arena *arena, const struct sp__mem *mem,
			const void *src, size_t len)
{
	char *p;

	if (len == SIZE_MAX)
		return NULL;
	p = sp__arena_alloc(arena, mem, len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, src, len);
	p[len] = '\0';
	return p;
}
