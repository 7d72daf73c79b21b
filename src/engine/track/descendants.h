/* SPDX-License-Identifier: MIT */
/* Listing the descendants of a process from /proc (recovery). */
#ifndef SP_ENGINE_DESCENDANTS_H
#define SP_ENGINE_DESCENDANTS_H

#include <stdbool.h>
#include <stdint.h>

#include "mem.h"
#include "vec.h"

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

#endif /* SP_ENGINE_DESCENDANTS_H */
