/* SPDX-License-Identifier: MIT */
/* libwlshared.so: wl_shared_entry -> middle -> leaf, the leaf spins. */
#include "wlshared.h"
#include "wl_common.h"

unsigned wl_shared_middle(unsigned x);
unsigned wl_shared_leaf(unsigned x);

static volatile unsigned sink;

WL_NAMED unsigned wl_shared_leaf(unsigned x)
{
	volatile unsigned acc = x;

	WL_SPIN(acc);
	return acc;
}

WL_NAMED unsigned wl_shared_middle(unsigned x)
{
	return wl_shared_leaf(x + 1) ^ sink;
}

WL_NAMED unsigned wl_shared_entry(unsigned x)
{
	return wl_shared_middle(x + 2) ^ sink;
}
