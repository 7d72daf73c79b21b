/* SPDX-License-Identifier: MIT */
/* A tiny shared library for the self-unwind tests (linked -z lazy). */
#include "self.h"

static volatile int dso_sink;

/* Called through the executable's PLT; calls back through a pointer. */
SELF_NOIPA int dso_entry(void (*cb)(void *), void *arg)
{
	cb(arg);
	dso_sink++;
	return dso_sink;
}

SELF_NOIPA int dso_entry2(void (*cb)(void *), void *arg)
{
	int r = dso_entry(cb, arg); /* through this library's own PLT */

	dso_sink++;
	return r;
}
