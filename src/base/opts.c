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
