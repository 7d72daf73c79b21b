/* SPDX-License-Identifier: MIT */
/* Workload: dlopen a copy of libwlshared.so by path and spin in it. */

/*
 * argv[1] seconds, argv[2] the library's path: any bytes, so a test can
 * map a file whose name is not UTF-8 (issue 20 item 11) and check that
 * the recording survives it and that report still names
 * wl_shared_entry -> middle -> leaf from that file.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "wl_common.h"

int main(int argc, char **argv)
{
	unsigned (*entry)(unsigned);
	volatile unsigned acc = 0;
	double end;
	void *lib;

	if (argc < 3) {
		fprintf(stderr, "usage: wl_dlopen SECONDS LIBRARY\n");
		return 2;
	}
	end = wl_now() + wl_duration(argc, argv);
	lib = dlopen(argv[2], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "wl_dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&entry = dlsym(lib, "wl_shared_entry");
	if (!entry) {
		fprintf(stderr, "wl_dlopen: %s\n", dlerror());
		return 1;
	}
	while (wl_now() < end)
		acc = entry(acc);
	return wl_finish(0);
}
