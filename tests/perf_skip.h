/* SPDX-License-Identifier: MIT */
/* Test helper: the one skip rule of the kernel tests (perf_event_open refused). */
#ifndef SP_TESTS_PERF_SKIP_H
#define SP_TESTS_PERF_SKIP_H

/*
 * A kernel test skips (exit 77, R21) only when the kernel refuses
 * perf_event_open itself: -EACCES or -EPERM (perf_event_paranoid, a
 * seccomp or container policy), -ENOSYS (no perf_event_open) or -ENOENT
 * (no such software event on this kernel). Any other error is the test's
 * to judge. Only the public API is used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <stackpulse/error.h>

#include "check.h"

static inline void skip_if_refused(int err)
{
	if (err == -EACCES || err == -EPERM || err == -ENOSYS ||
	    err == -ENOENT) {
		fprintf(stderr, "skip: perf_event_open refused: %s\n",
			sp_strerror(err));
		exit(T_EXIT_SKIP);
	}
}

#endif /* SP_TESTS_PERF_SKIP_H */
