/* SPDX-License-Identifier: MIT */
/* Loading sized option structs from callers built against any header version (R4). */
#ifndef SP_BASE_OPTS_H
#define SP_BASE_OPTS_H

#include <stddef.h>

/*
 * Every options struct starts with `size_t size`. A caller compiled against
 * an older header passes a smaller struct (missing fields mean defaults);
 * a newer one passes a larger struct, accepted only when every byte we do
 * not know is zero.
 *
 * Copies @user (which claims @user_size bytes; NULL means all defaults)
 * into @out (@out_size bytes, zero-filled first). Returns 0, or -EINVAL
 * for a size smaller than the size field or non-zero unknown bytes.
 */
int sp__opts_load(const void *user, size_t user_size, void *out,
		  size_t out_size);

#endif /* SP_BASE_OPTS_H */
