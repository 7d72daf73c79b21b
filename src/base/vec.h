/* SPDX-License-Identifier: MIT */
/* Growable arrays of fixed-size elements through the allocator hook. */
#ifndef SP_BASE_VEC_H
#define SP_BASE_VEC_H

#include <stddef.h>
#include <string.h>

#include "mem.h"

/*
 * A vec stores @len elements of @elem bytes in @data (capacity @cap).
 * Callers index it through a typed pointer: ((struct foo *)v.data)[i].
 * Growth doubles, so appends are amortized O(1); a failed growth leaves the
 * vec unchanged.
 */
struct sp__vec {
	void *data;
	size_t len;
	size_t cap;
	size_t elem;
};

void sp__vec_init(struct sp__vec *vec, size_t elem);
void sp__vec_fini(struct sp__vec *vec, const struct sp__mem *mem);

/* Ensures room for @n more elements. Returns 0 or -ENOMEM. */
int sp__vec_reserve(struct sp__vec *vec, const struct sp__mem *mem, size_t n);

/* Appends a copy of @item when growth is needed (see sp__vec_push). */
int sp__vec_push_slow(struct sp__vec *vec, const struct sp__mem *mem,
		      const void *item);

/* Appends a copy of @item. Returns 0 or -ENOMEM. */
static inline int sp__vec_push(struct sp__vec *vec, const struct sp__mem *mem,
			       const void *item)
{
	if (vec->len == vec->cap)
		return sp__vec_push_slow(vec, mem, item);
	memcpy((char *)vec->data + vec->len * vec->elem, item, vec->elem);
	vec->len++;
	return 0;
}

/* Pointer to element @i (no bounds check; callers check against len). */
static inline void *sp__vec_at(const struct sp__vec *vec, size_t i)
{
	return (char *)vec->data + i * vec->elem;
}

#endif /* SP_BASE_VEC_H */
