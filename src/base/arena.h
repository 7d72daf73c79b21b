/* SPDX-License-Identifier: MIT */
/* Bump arena for many small allocations that live as long as their owner. */
#ifndef SP_BASE_ARENA_H
#define SP_BASE_ARENA_H

#include <stddef.h>

#include "mem.h"

/*
 * Blocks are chained; each block is [header | bytes ...]. Allocation bumps a
 * pointer in the newest block and falls back to a new block of at least
 * SP_ARENA_BLOCK bytes (or the request, if bigger). Everything is freed at
 * once by sp__arena_fini(). Used for module paths and other decoded
 * strings, so a reader needs no per-string frees.
 */
#define SP_ARENA_BLOCK 16384

struct sp__arena_block;

struct sp__arena {
	struct sp__arena_block *head;
	size_t used;  /* bytes used in head */
	size_t total; /* bytes handed out, all blocks */
};

void sp__arena_init(struct sp__arena *arena);
void sp__arena_fini(struct sp__arena *arena, const struct sp__mem *mem);

/* Returns @size bytes aligned to 8, or NULL on exhaustion. */
void *sp__arena_alloc(struct sp__arena *arena, const struct sp__mem *mem,
		      size_t size);

/* Copies @len bytes and appends a NUL; returns the copy or NULL. */
char *sp__arena_strndup(struct sp__arena *arena, const struct sp__mem *mem,
			const void *src, size_t len);

#endif /* SP_BASE_ARENA_H */
