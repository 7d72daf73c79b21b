/* SPDX-License-Identifier: MIT */
/* sp_strerror and sp_version: strings for the public error table. */
#define _GNU_SOURCE
#include <string.h>

#include <stackpulse/error.h>
#include <stackpulse/version.h>

SP_API const char *sp_strerror(int err)
{
	const char *s;

	if (err >= 0)
		return "success";
	switch (err) {
#define SP_ERROR_CASE(name, value, msg)                                        \
	case value:                                                            \
		return msg;
		SP_ERRORS(SP_ERROR_CASE)
#undef SP_ERROR_CASE
	default:
		break;
	}
	/* glibc's strerrordesc_np returns a static string and is thread-safe. */
	s = err > -4000 ? strerrordesc_np(-err) : NULL;
	return s ? s : "unknown error";
}

SP_API const char *sp_version(void)
{
	return "0.1.0";
}
