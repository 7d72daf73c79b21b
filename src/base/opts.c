/* SPDX-License-Identifier: MIT */
/* Sized option structs. */
#include <errno.h>
#include <string.h>

#include "opts.h"

int sp__opts_load(const void *user, size_t user_size, void *out,
		  size_t out_size)
{
	const unsigned char *bytes = user;
	size_t i;

	memset(out, 0, out_size);
	if (!user)
		return 0;
	if (!sp__opts_size_ok(user_size))
		return -EINVAL;
	for (i = out_size; i < user_size; i++)
		if (bytes[i])
			return -EINVAL;
	memcpy(out, user, user_size < out_size ? user_size : out_size);
	return 0;
}

int sp__opts_store(void *out, const void *full, size_t full_size)
{
	size_t size;

	if (!out)
		return -EINVAL;
	memcpy(&size, out, sizeof(size));
	if (!sp__opts_size_ok(size))
		return -EINVAL;
	if (size > full_size)
		size = full_size;
	/* Past the size field: the caller's own size stays as it was. */
	memcpy((char *)out + sizeof(size_t),
	       (const char *)full + sizeof(size_t), size - sizeof(size_t));
	return 0;
}
