/* SPDX-License-Identifier: MIT */
/* The process table's index: pid -> newest tracked process of that pid. */
#include <errno.h>
#include <string.h>

#include "pidtab.h"

static size_t slot_of(int32_t pid, size_t cap)
{
	uint64_t h = (uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (cap - 1);
}

void sp__pidtab_init(struct sp__pidtab *t)
{
	memset(t, 0, sizeof(*t));
}

void sp__pidtab_fini(struct sp__pidtab *t, const struct sp__mem *mem)
{
	if (t->cap) {
		sp__mem_free(mem, t->pids, t->cap * sizeof(*t->pids));
		sp__mem_free(mem, t->procs, t->cap * sizeof(*t->procs));
	}
	sp__pidtab_init(t);
}

void sp__pidtab_clear(struct sp__pidtab *t)
{
	if (t->cap)
		memset(t->pids, 0, t->cap * sizeof(*t->pids));
	t->count = 0;
}

struct sp__process *sp__pidtab_get(const struct sp__pidtab *t, int32_t pid)
{
	size_t i;

	if (!t->cap || pid == 0)
		return NULL;
	for (i = slot_of(pid, t->cap);; i = (i + 1) & (t->cap - 1)) {
		if (t->pids[i] == pid)
			return t->procs[i];
		if (t->pids[i] == 0)
			return NULL;
	}
}

/* Stores without growing; the caller made room. */
static void put(struct sp__pidtab *t, int32_t pid, struct sp__process *proc)
{
	size_t i;

	for (i = slot_of(pid, t->cap); t->pids[i] && t->pids[i] != pid;
	     i = (i + 1) & (t->cap - 1))
		;
	t->count += t->pids[i] == 0;
	t->pids[i] = pid;
	t->procs[i] = proc;
}

static int grow(struct sp__pidtab *t, const struct sp__mem *mem)
{
	size_t cap = t->cap ? t->cap * 2 : 64, i;
	struct sp__pidtab n = { .cap = cap };

	n.pids = sp__mem_calloc(mem, cap, sizeof(*n.pids));
	n.procs = sp__mem_calloc(mem, cap, sizeof(*n.procs));
	if (!n.pids || !n.procs) {
		sp__pidtab_fini(&n, mem);
		return -ENOMEM;
	}
	for (i = 0; i < t->cap; i++)
		if (t->pids[i])
			put(&n, t->pids[i], t->procs[i]);
	sp__pidtab_fini(t, mem);
	*t = n;
	return 0;
}

int sp__pidtab_set(struct sp__pidtab *t, const struct sp__mem *mem, int32_t pid,
		   struct sp__process *proc)
{
	/* Keep the load at most 1/2: probes stay short. */
	if (pid == 0)
		return -EINVAL;
	if ((t->count + 1) * 2 > t->cap && grow(t, mem))
		return -ENOMEM;
	put(t, pid, proc);
	return 0;
}
