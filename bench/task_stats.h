/* SPDX-License-Identifier: MIT */
/* Per-thread CPU time and context switches of this process, by role. */
#ifndef SP_BENCH_TASK_STATS_H
#define SP_BENCH_TASK_STATS_H

#include <stdint.h>

/*
 * The threads of this process grouped by role, from their names: the
 * recorder names its reader threads "sp-reader" and its unwinder threads
 * "sp-unwind"; the calling thread is the sequencer (the serial stage);
 * every other thread is "other". CPU time is each thread's CPU-time
 * clock (ns), switches are the voluntary and involuntary context
 * switches of /proc/self/task/TID/status, faults the minor page faults
 * of /proc/self/task/TID/stat.
 */
enum task_role {
	TASK_MAIN,
	TASK_READER,
	TASK_WORKER,
	TASK_OTHER,
	TASK_ROLES
};

struct task_stats {
	uint64_t cpu_ns[TASK_ROLES];
	uint64_t vcsw[TASK_ROLES];
	uint64_t ivcsw[TASK_ROLES];
	uint64_t minflt[TASK_ROLES];
};

/* Sums every live thread of this process into @st (zeroed first). */
void task_stats_read(struct task_stats *st);
/* @after - @before, role by role, into @d (0 where a role lost a thread). */
void task_stats_diff(const struct task_stats *after,
		     const struct task_stats *before, struct task_stats *d);
/* The 1-minute load average (/proc/loadavg), -1 when unreadable. */
double task_load1(void);

#endif /* SP_BENCH_TASK_STATS_H */
