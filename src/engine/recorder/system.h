/* SPDX-License-Identifier: MIT */
/* System-wide and cgroup recording: per-CPU events and lazy tracking. */
#ifndef SP_ENGINE_SYSTEM_H
#define SP_ENGINE_SYSTEM_H

#include <stdbool.h>
#include <stdint.h>

#include "recorder_internal.h"

/*
 * In system mode every CPU has one event with pid = -1 (or a cgroup fd),
 * which owns that CPU's ring; processes have no events of their own. A
 * process is tracked (modules, pidfd) from the /proc scan at open, from
 * the fork/exec/mmap records of the CPU events, or from its first sample.
 * The apply step asks the hooks below before it touches a process, so the
 * filters decide what is tracked and what is dropped.
 */

/* Bytes of a kernel comm (TASK_COMM_LEN) including the NUL. */
#define SP__COMM_LEN 16

/** struct sp__system is the system-mode part of a recorder. */
struct sp__system {
	int32_t *pids; /* sorted filter, NULL = every pid */
	size_t npids;
	char (*comms)[SP__COMM_LEN]; /* filter, NULL = every name */
	size_t ncomms;
	int cgroup_fd;	       /* cgroup v2 directory, -1 = the whole machine */
	uint32_t flags;	       /* SP_SYSTEM_* */
	int32_t self;	       /* getpid() at open */
	struct sp__vec events; /* struct sp__event, one per CPU */
	struct sp__vec ignored; /* int32_t sorted: pids a filter rejected */
};

/* system.c */
/*
 * Checks system options @in and opens their cgroup (*@cgfd, -1 for none)
 * before anything else of an open is done, so they can refuse it.
 * Copies @in into @o. Returns 0, -EINVAL, -ENOENT, -errno.
 */
int sp__system_prepare(const struct sp_system_opts *in,
		       struct sp_system_opts *o, int *cgfd);
/*
 * Turns a fresh recorder (opened with sp__policy_system) into a running
 * system-mode one: filters, one event per CPU, the /proc scan. Owns
 * @cgfd. On failure the caller closes @rec.
 */
int sp__system_start(struct sp_recorder *rec, const struct sp_recorder_opts *ro,
		     const struct sp_system_opts *o, int cgfd);

/* system_track.c: the tracking hooks of sp__policy_system (policy.h). */
/*
 * Tracks every process /proc (or the cgroup) lists now; a tracked one is
 * checked for pid reuse and reconciled with its maps. Called at open and
 * when a disabled recorder is enabled again (records were not produced
 * meanwhile).
 */
int sp__system_scan(struct sp_recorder *rec);

/*
 * Before a sample of @pid is written: 1 keep it, 0 drop it (a filter
 * rejects the process), -errno. An unknown process is tracked from /proc.
 */
int sp__system_sample(struct sp_recorder *rec, int32_t pid);

/*
 * The live process an MMAP2 of @pid belongs to in *@out, tracked from
 * /proc if it is new and admitted (never in cgroup mode: side-band
 * records do not prove membership). *@out NULL: not tracked.
 */
int sp__system_mmap(struct sp_recorder *rec, int32_t pid,
		    struct sp__process **out);

/*
 * An exec of @pid, now named @comm. *@proc is the tracked process or
 * NULL; it is set to NULL when the new name fails the comm filter (the
 * process is retired) or when the exec starts tracking a new one (its
 * modules come from the MMAP2 records that follow).
 */
int sp__system_exec(struct sp_recorder *rec, int32_t pid, const char *comm,
		    struct sp__process **proc);

/* A fork created process @pid: whether to follow it from its parent. */
bool sp__system_follow_fork(struct sp_recorder *rec, int32_t pid);

/* cgroup.c */
/* Opens a cgroup v2 directory. Returns the fd or -errno (-EINVAL: no). */
int sp__cgroup_open(const char *path);
/* Appends the pids in @dirfd's cgroup.procs and its descendants'. */
int sp__cgroup_pids(const struct sp__mem *mem, int dirfd, struct sp__vec *pids);

#endif /* SP_ENGINE_SYSTEM_H */
