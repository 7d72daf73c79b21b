/* SPDX-License-Identifier: MIT */
/* Immutable versions of a process's module map for unwinder threads. */

/*
 * A version is one allocation: the header, the mappings, then their paths
 * (each NUL-terminated), so a job never points into module records that a
 * later exec or munmap frees.
 */
#include <errno.h>
#include <string.h>

#include "mver.h"
#include "process.h"

static struct sp__mver *build(const struct sp__mem *mem,
			      const struct sp_mapping *maps, size_t n)
{
	size_t i, bytes = sizeof(struct sp__mver) + n * sizeof(*maps);
	struct sp__mver *v;
	char *str;

	for (i = 0; i < n; i++)
		bytes += maps[i].path ? strlen(maps[i].path) + 1 : 0;
	v = sp__mem_alloc(mem, bytes);
	if (!v)
		return NULL;
	v->refs = 1;
	v->bytes = bytes;
	v->n = n;
	if (n)
		memcpy(v->maps, maps, n * sizeof(*maps));
	str = (char *)(v->maps + n);
	for (i = 0; i < n; i++) {
		size_t len;

		if (!maps[i].path)
			continue;
		len = strlen(maps[i].path) + 1;
		memcpy(str, maps[i].path, len);
		v->maps[i].path = str;
		str += len;
	}
	return v;
}

int sp__mver_get(struct sp__procs *procs, struct sp__process *proc,
		 struct sp__mver **out)
{
	const struct sp_mapping *maps;
	struct sp__mver *v;
	size_t n;
	int err;

	*out = sp__mver_take(proc->mver, proc->maps_dirty);
	if (*out)
		return 0;
	err = sp__process_mappings(procs, proc, &maps, &n);
	if (err)
		return err;
	v = build(procs->mem, maps, n);
	if (!v)
		return -ENOMEM;
	v->gen = proc->maps_gen;
	sp__mver_put(procs->mem, proc->mver);
	proc->mver = v;
	v->refs++;
	*out = v;
	return 0;
}

void sp__mver_free(const struct sp__mem *mem, struct sp__mver *v)
{
	sp__mem_free(mem, v, v->bytes);
}
