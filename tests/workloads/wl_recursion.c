/* SPDX-License-Identifier: MIT */
/* Workload: main -> wl_recurse x40 -> wl_recursion_leaf, the leaf spins. */
#include "wl_common.h"

#define WL_DEPTH 40

unsigned wl_recurse(unsigned depth, unsigned x);
unsigned wl_recursion_leaf(unsigned x);

static volatile unsigned sink;

WL_NAMED unsigned wl_recursion_leaf(unsigned x)
{
	volatile unsigned acc = x;

	WL_SPIN(acc);
	return acc;
}

/* Not a tail call: the result is combined after the recursive call. */
WL_NAMED unsigned wl_recurse(unsigned depth, unsigned x)
{
	if (depth == 1)
		return wl_recursion_leaf(x) ^ sink;
	return wl_recurse(depth - 1, x + depth) ^ sink;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_duration(argc, argv);
	unsigned x = 1;

	while (wl_now() < end)
		x = wl_recurse(WL_DEPTH, x);
	sink = x;
	return wl_finish(0);
}
