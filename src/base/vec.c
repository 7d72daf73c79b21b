/* SPDX-License-Identifier: MIT */
/* Growable arrays. */
#include <errno.h>
#include <string.h>

#include "vec.h"

void sp__vec_init(struct sp__vec *vec, size_t elem)
{
	vec->data = NULL;
	vec->len = 0;
	vec->cap = 0;
	vec->elem = elem;
}

void sp__vec_fini(struct sp__vec *vec, const struct sp__mem *mem)
{
	sp__mem_free(mem, vec->data, vec->cap * vec->elem);
	sp__vec_init(vec, vec->elem);
}

int sp__vec_reserve(struct sp__vec *vec, const struct sp__mem *mem, size_t n)
{
	size_t cap = vec->cap ? vec->cap : 8;
	void *data;

	if (n > SIZE_MAX - vec->len)
		return -ENOMEM;
	if (vec->len + n <= vec->cap)
		return 0;
	while (cap < vec->len + n) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (cap > SIZE_MAX / vec->elem)
		return -ENOMEM;
	data = sp__mem_realloc(mem, vec->data, vec->cap * vec->elem,
			       cap * vec->elem);
	if (!data)
		return -ENOMEM;
	vec->data = data;
	vec->cap = cap;
	return 0;
}

int sp__vec_push_slow(struct sp__vec *vec, const struct sp__mem *mem,
		      const void *item)
{
	int err = sp__vec_reserve(vec, mem, 1);

	if (err)
		return err;
	memcpy(sp__vec_at(vec, vec->len), item, vec->elem);
	vec->len++;
	return 0;
}
