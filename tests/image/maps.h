/* SPDX-License-Identifier: MIT */
/* Test helper: find this process's mappings in /proc/self/maps. */
#ifndef SP_TESTS_IMAGE_MAPS_H
#define SP_TESTS_IMAGE_MAPS_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "check.h"

struct test_map {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t dev; /* makedev(major, minor) */
	uint64_t ino;
	char perms[5];
	char path[512];
};

/* The mapping containing @addr; returns false when there is none. */
static inline bool maps_find(uint64_t addr, struct test_map *m)
{
	char line[1024];
	unsigned maj, min;
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	CHECK_PTR(f);
	while (!found && fgets(line, sizeof(line), f)) {
		m->path[0] = '\0';
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64
			   " %x:%x %" SCNu64 " %511[^\n]",
			   &m->start, &m->end, m->perms, &m->offset, &maj, &min,
			   &m->ino, m->path) < 7)
			continue;
		m->dev = makedev(maj, min);
		found = m->start <= addr && addr < m->end;
	}
	fclose(f);
	return found;
}

#endif /* SP_TESTS_IMAGE_MAPS_H */
