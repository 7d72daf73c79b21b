/* SPDX-License-Identifier: MIT */
/* Discovering untracked descendants of tracked processes (recovery). */
#ifndef SP_ENGINE_DESCENDANTS_H
#define SP_ENGINE_DESCENDANTS_H

#include <stdbool.h>
#include <stdint.h>

#include "mem.h"
#include "vec.h"

struct sp_recorder;

/* At most this many descendants are listed per root (a fork bomb guard). */
#define SP__DESCENDANTS_MAX 4096

/** struct sp__desc is one descendant and the process that forked it. */
struct sp__desc {
	int32_t pid;
	int32_t ppid;
};

/*
 * Lists the live descendants of @root (not @root itself) into @out
 * (struct sp__desc, appended), every parent before its children: a
 * best-effort snapshot from /proc/ROOT/task/TID/children, walked down,
 * or, when those files are missing (no CONFIG_PROC_CHILDREN) or
 * @scan_stat is set, from the parent pids of every /proc/PID/stat.
 * Returns 0, -ESRCH (@root is gone), -ENOMEM or -errno.
 */
int sp__descendants_list(const struct sp__mem *mem, int32_t root,
			 bool scan_stat, struct sp__vec *out);

/*
 * Children mode: attaches every live descendant of a tracked process
 * that the recorder has no record of (its FORK record was lost). One
 * forked after its parent's events existed inherited them and only gets
 * its process state (modules from /proc); an older one gets events of
 * its own (sp_recorder_attach). Returns 0 or -ENOMEM; other failures of
 * single processes are logged and skipped.
 */
int sp__recorder_discover(struct sp_recorder *rec);

#endif /* SP_ENGINE_DESCENDANTS_H */
