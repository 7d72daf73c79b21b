/* SPDX-License-Identifier: MIT */
/* Workload: main -> wl_deep_recurse x2000 -> wl_deep_leaf, the leaf spins. */
#include "wl_common.h"

/*
 * 2000 frames of 16 bytes (the return address and one saved register)
 * are deeper than the default depth limit of 1024 frames, yet the whole
 * stack, about 32 KiB, fits in a 65528-byte copy: only the limit cuts it.
 */
#define WL_DEPTH 2000

unsigned wl_deep_recurse(unsigned depth, unsigned x);
unsigned wl_deep_leaf(unsigned x);

static volatile unsigned sink;

WL_NAMED unsigned wl_deep_leaf(unsigned x)
{
	volatile unsigned acc = x;

	WL_SPIN(acc);
	return acc;
}

/* Not a tail call: the result is combined after the recursive call. */
WL_NAMED unsigned wl_deep_recurse(unsigned depth, unsigned x)
{
	if (depth == 1)
		return wl_deep_leaf(x) ^ sink;
	return wl_deep_recurse(depth - 1, x + depth) ^ sink;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_duration(argc, argv);
	unsigned x = 1;

	while (wl_now() < end)
		x = wl_deep_recurse(WL_DEPTH, x);
	sink = x;
	return wl_finish(0);
}
