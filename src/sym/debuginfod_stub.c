/* SPDX-License-Identifier: MIT */
/* debuginfod when stackpulse is built without libdebuginfod: never found. */
#include <errno.h>

#include "native_internal.h"

/*
 * meson selects this file instead of debuginfod.c when the libdebuginfod
 * dependency is missing (STYLE.md R20: no #ifdef in function bodies).
 */
int sp__debuginfod_find(const uint8_t *build_id, size_t len,
			const struct sp_logger *logger, char *path,
			size_t path_cap)
{
	(void)build_id;
	(void)len;
	(void)logger;
	(void)path;
	(void)path_cap;
	return -EOPNOTSUPP;
}
