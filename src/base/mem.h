/* SPDX-License-Identifier: MIT */
/* Internal allocation through the per-object allocator hook (R15). */
#ifndef SP_BASE_MEM_H
#define SP_BASE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/alloc.h>

/*
 * struct sp__mem is the resolved allocator an object keeps: either a copy
 * of the caller's struct sp_allocator or the library default. The default
 * comes from mem_default_*.c, chosen by meson: mimalloc for the shared
 * library, the C library for the static one and sanitizer builds. Nothing
 * else in src/ calls malloc.
 */
struct sp__mem {
	struct sp_allocator hook;
};

/* Fills @mem from @user (NULL = library default). */
void sp__mem_init(struct sp__mem *mem, const struct sp_allocator *user);

/* Returns @size bytes aligned to 16, or NULL. @size 0 returns NULL. */
void *sp__mem_alloc(const struct sp__mem *mem, size_t size);

/* Returns zeroed memory, or NULL on overflow of @n * @size or exhaustion. */
void *sp__mem_calloc(const struct sp__mem *mem, size_t n, size_t size);

/*
 * Zeroed memory aligned to @align (a power of two, at most 64: struct
 * sp_allocator), or NULL; freed with sp__mem_free like any other block.
 */
void *sp__mem_calloc_aligned(const struct sp__mem *mem, size_t n, size_t size,
			     size_t align);

/* Frees a block of @size bytes; NULL is a no-op. */
void sp__mem_free(const struct sp__mem *mem, void *ptr, size_t size);

/*
 * A NUL-terminated copy of @s[0..len) (free it with sp__mem_free(mem, p,
 * len + 1)), or NULL.
 */
char *sp__mem_strndup(const struct sp__mem *mem, const char *s, size_t len);

/*
 * Grows or shrinks a block from @old_size to @new_size bytes, keeping the
 * common prefix. On failure returns NULL and leaves @ptr untouched.
 */
void *sp__mem_realloc(const struct sp__mem *mem, void *ptr, size_t old_size,
		      size_t new_size);

/*
 * Makes room for one more element in an array of @elem-byte elements that
 * holds @len of *@cap: doubles the capacity (starting at @first), checked
 * against overflow. Returns 0 or -ENOMEM; on failure nothing changes.
 */
int sp__mem_grow(const struct sp__mem *mem, void **ptr, size_t *cap, size_t len,
		 size_t elem, size_t first);

/* The library default, provided by mem_default_libc.c or mem_default_mi.c. */
void *sp__default_alloc(void *ctx, size_t size, size_t align);
void sp__default_free(void *ctx, void *ptr, size_t size);
/* Resizes a block of the default allocator in place when it can. */
void *sp__default_realloc(void *ptr, size_t old_size, size_t new_size);

#endif /* SP_BASE_MEM_H */
