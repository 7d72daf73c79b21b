/* SPDX-License-Identifier: MIT */
/* Fuzz target: the exporter's build-id reader (src/export/xbuildid.c) on any file bytes. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "export_internal.h"
#include "fuzz.h"

/*
 * The input is the content of a module's file, served from a memfd
 * through /proc/self/fd/N (a regular file, so the reader really parses
 * it). Invariants: no crash or overread whatever the ELF header, program
 * headers and notes claim; the length returned fits the buffer; and a
 * second read of the same bytes gives the same build-id.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	unsigned char a[64], b[64];
	struct sp_module mod = { 0 };
	size_t n;

	if (fd < 0) {
		fd = memfd_create("fuzz_buildid", MFD_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	FUZZ_CHECK(ftruncate(fd, 0) == 0);
	FUZZ_CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
	mod.path = path;
	mod.path_len = strlen(path);
	n = sp__xbuildid(&mod, a, sizeof(a));
	FUZZ_CHECK(n <= sizeof(a));
	FUZZ_CHECK(sp__xbuildid(&mod, b, sizeof(b)) == n);
	FUZZ_CHECK(memcmp(a, b, n) == 0);
	return 0;
}
