/* SPDX-License-Identifier: MIT */
/* Loading sized option structs from callers built against any header version (R4). */
#ifndef SP_BASE_OPTS_H
#define SP_BASE_OPTS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Every options struct starts with `size_t size`. A caller compiled against
 * an older header passes a smaller struct (missing fields mean defaults);
 * a newer one passes a larger struct, accepted only when every byte we do
 * not know is zero. Every version of such a struct has a sizeof that is a
 * multiple of its alignment, hence of sizeof(size_t); any other size can
 * only end inside a field (half a pointer), so it is refused rather than
 * half-copied.
 *
 * Copies @user (which claims @user_size bytes; NULL means all defaults)
 * into @out (@out_size bytes, zero-filled first). Returns 0, or -EINVAL
 * for a size smaller than the size field or not a multiple of it, or
 * non-zero unknown bytes. The library's one reader of sized structs.
 */
int sp__opts_load(const void *user, size_t user_size, void *out,
		  size_t out_size);

/* Whether @size is a size some version of a sized struct can have. */
static inline bool sp__opts_size_ok(size_t size)
{
	return size >= sizeof(size_t) && size % sizeof(size_t) == 0;
}

/*
 * The output direction (sized stats structs the library fills): stores
 * the first @out->size bytes of @full (@full_size bytes, its own size
 * field included) into @out, whose size field is left as the caller set
 * it, so an older caller gets its part and a newer one keeps its extra
 * bytes untouched. Returns 0, or -EINVAL (NULL @out, or a size the input
 * rule refuses).
 */
int sp__opts_store(void *out, const void *full, size_t full_size);

#endif /* SP_BASE_OPTS_H */
