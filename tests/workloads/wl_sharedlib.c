/* SPDX-License-Identifier: MIT */
/* Workload: main -> wl_sharedlib_call -> libwlshared.so entry/middle/leaf. */
#include "wl_common.h"
#include "wlshared.h"

unsigned wl_sharedlib_call(unsigned x);

static volatile unsigned sink;

WL_NAMED unsigned wl_sharedlib_call(unsigned x)
{
	return wl_shared_entry(x) ^ sink;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_duration(argc, argv);
	unsigned x = 1;

	while (wl_now() < end)
		x = wl_sharedlib_call(x);
	sink = x;
	return wl_finish(0);
}
