/* SPDX-License-Identifier: MIT */
/* Workload: main -> wl_ladder_a -> b -> c -> d -> e, the leaf spins. */

/*
 * Each rung does work after its call returns, so no call is a tail call
 * and every rung keeps its own frame even at -O2 without frame pointers.
 *
 * `wl_ladder [SECONDS [CALLS]]`: with CALLS the run is a fixed amount of
 * work (CALLS trips down the ladder, SECONDS ignored), which is what a
 * CPU-inflation measurement needs (bench_record); 0 exits at once.
 */
#include "wl_common.h"

unsigned wl_ladder_a(unsigned x);
unsigned wl_ladder_b(unsigned x);
unsigned wl_ladder_c(unsigned x);
unsigned wl_ladder_d(unsigned x);
unsigned wl_ladder_e(unsigned x);

static volatile unsigned sink;

WL_NAMED unsigned wl_ladder_e(unsigned x)
{
	volatile unsigned acc = x;

	WL_SPIN(acc);
	return acc;
}

WL_NAMED unsigned wl_ladder_d(unsigned x)
{
	return wl_ladder_e(x + 1) ^ sink;
}

WL_NAMED unsigned wl_ladder_c(unsigned x)
{
	return wl_ladder_d(x + 2) ^ sink;
}

WL_NAMED unsigned wl_ladder_b(unsigned x)
{
	return wl_ladder_c(x + 3) ^ sink;
}

WL_NAMED unsigned wl_ladder_a(unsigned x)
{
	return wl_ladder_b(x + 4) ^ sink;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_duration(argc, argv);
	long calls = argc > 2 ? strtol(argv[2], NULL, 10) : -1;
	unsigned x = 1;

	if (calls >= 0)
		while (calls-- > 0)
			x = wl_ladder_a(x);
	else
		while (wl_now() < end)
			x = wl_ladder_a(x);
	sink = x;
	return wl_finish(0);
}
