/* SPDX-License-Identifier: MIT */
/* Workload: main -> wl_recurse xN -> wl_recursion_leaf, the leaf spins. */
#include <string.h>

#include "wl_common.h"

/*
 * argv[2], when given, is the depth N (default 40). Each wl_recurse
 * frame takes 16 bytes (its return address and the alignment slot), so
 * 2000 frames are deeper than the default depth limit of 1024 frames
 * yet fit, about 32 KiB, in a 65528-byte stack copy. argv[3] "cpu"
 * counts the duration in this process's CPU time instead of wall time,
 * so that a loaded machine does not shrink the sample count
 * (bench_python --workload native).
 */
#define WL_DEPTH 40
#define WL_DEPTH_MAX 100000

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

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double (*now)(void) =
		argc > 3 && strcmp(argv[3], "cpu") == 0 ? cpu_now : wl_now;
	double end = now() + wl_duration(argc, argv);
	unsigned x = 1, depth = argc > 2 ? (unsigned)atoi(argv[2]) : WL_DEPTH;

	if (depth < 1 || depth > WL_DEPTH_MAX)
		depth = WL_DEPTH;
	while (now() < end)
		x = wl_recurse(depth, x);
	sink = x;
	return wl_finish(0);
}
