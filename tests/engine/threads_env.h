/* SPDX-License-Identifier: MIT */
/* Which recorder mode a kernel test runs in: inline or threaded. */
#ifndef SP_TESTS_THREADS_ENV_H
#define SP_TESTS_THREADS_ENV_H

#include <stdint.h>
#include <stdlib.h>

/*
 * The kernel tests run twice under meson: as registered (inline mode,
 * threads = 0) and as <name>_threaded with SP_TEST_THREADS=N, so every
 * recording behaviour is checked through the threaded pipeline as well.
 */
static inline uint32_t test_threads(void)
{
	const char *v = getenv("SP_TEST_THREADS");

	return v && *v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

#endif /* SP_TESTS_THREADS_ENV_H */
