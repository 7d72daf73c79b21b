/* SPDX-License-Identifier: MIT */
/* The process-mode tracking policy: attached targets and their children. */

/*
 * Process mode tracks what the caller attached (attach.c) and, with
 * SP_RECORDER_INHERIT_CHILDREN, what those fork; everything about a
 * process arrives through its own events, so no hook has to admit,
 * filter or find processes. The live hooks (pidfds, /proc) are shared
 * with system mode.
 */
#include "recorder_internal.h"

static int keep_sample(struct sp_recorder *rec, int32_t pid)
{
	(void)rec;
	(void)pid;
	return 1;
}

/* Only attached processes and followed children have modules. */
static int no_mmap_tracking(struct sp_recorder *rec, int32_t pid,
			    struct sp__process **out)
{
	(void)rec;
	(void)pid;
	*out = NULL;
	return 0;
}

static int exec_keeps(struct sp_recorder *rec, int32_t pid, const char *comm,
		      struct sp__process **proc)
{
	(void)rec;
	(void)pid;
	(void)comm;
	(void)proc;
	return 0;
}

static bool follow_children(struct sp_recorder *rec, int32_t pid)
{
	(void)pid;
	return rec->cfg.children;
}

static void nothing(struct sp_recorder *rec)
{
	(void)rec;
}

/* Every event belongs to a process: loss.c reads them all already. */
static int no_other_events(struct sp_recorder *rec)
{
	(void)rec;
	return 0;
}

/* A disabled task event loses nothing but samples: no catching up. */
static int nothing_missed(struct sp_recorder *rec)
{
	(void)rec;
	return 0;
}

const struct sp__policy sp__policy_process = {
	.per_process_events = true,
	.sweep_sampled_only = false,
	.prune = false,
	.sample = keep_sample,
	.mmap = no_mmap_tracking,
	.exec = exec_keeps,
	.follow_fork = follow_children,
	.watch = sp__live_watch,
	.group_gone = sp__live_group_gone,
	.sample_pc = sp__live_sample_pc,
	.jit_code = sp__live_jit_code,
	.jit_refresh = sp__live_jit_refresh,
	.sweep = sp__recorder_sweep,
	.sweep_begin = nothing,
	.collect_lost = no_other_events,
	.resume = nothing_missed,
	.free = nothing,
};
