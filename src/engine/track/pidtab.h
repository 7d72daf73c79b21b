/* SPDX-License-Identifier: MIT */
/* The process table's index: pid -> newest tracked process of that pid. */
#ifndef SP_ENGINE_PIDTAB_H
#define SP_ENGINE_PIDTAB_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct sp__process;

/*
 * Every record looks its process up, and system-wide mode tracks every
 * process of the machine, so lookups must not scan the list. Open
 * addressing with linear probing; a pid maps to its newest generation
 * (a reused pid replaces the entry). Removals are rare (a rolled-back
 * attach), so they rebuild the table instead of leaving tombstones.
 */
struct sp__pidtab {
	int32_t *pids; /* 0 = empty slot (pid 0 is never tracked) */
	struct sp__process **procs;
	size_t cap; /* power of two, or 0 */
	size_t count;
};

void sp__pidtab_init(struct sp__pidtab *t);
void sp__pidtab_fini(struct sp__pidtab *t, const struct sp__mem *mem);
void sp__pidtab_clear(struct sp__pidtab *t);
struct sp__process *sp__pidtab_get(const struct sp__pidtab *t, int32_t pid);
/* Inserts or replaces @pid's entry. Returns 0 or -ENOMEM (unchanged). */
int sp__pidtab_set(struct sp__pidtab *t, const struct sp__mem *mem, int32_t pid,
		   struct sp__process *proc);

#endif /* SP_ENGINE_PIDTAB_H */
