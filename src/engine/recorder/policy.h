/* SPDX-License-Identifier: MIT */
/* Tracking policies: what a recorder follows, and how it learns of it. */
#ifndef SP_ENGINE_POLICY_H
#define SP_ENGINE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

struct sp_recorder;
struct sp__process;

/*
 * A recorder applies the same records the same way in every mode; what
 * differs is which processes it tracks and where it learns of them. The
 * apply, loss and recovery code asks the policy at those points instead
 * of testing the mode:
 *
 *   process mode   the caller attaches targets, each with events per
 *                  (thread, CPU); forked children are followed on
 *                  request (SP_RECORDER_INHERIT_CHILDREN)
 *   system mode    one event per CPU sees every process of the machine
 *                  (or of a cgroup); processes are tracked lazily from
 *                  /proc, records and samples, and filtered (system.c,
 *                  system_track.c)
 *
 * The live hooks that read /proc, open pidfds or read target memory
 * (@watch, @group_gone, @sample_pc, @jit_code, @jit_refresh, @sweep) are
 * the same in both; the replay harness (tests/harness) runs a copy of the
 * recorder's policy with those six replaced by ones that do nothing,
 * since captured processes may be gone.
 */
struct sp__policy {
	/* Processes have events of their own: attach and thread refresh. */
	bool per_process_events;
	/* A sweep looks only at processes sampled since the last sweep. */
	bool sweep_sampled_only;
	/* Exited processes are freed after each reap (bounded memory). */
	bool prune;
	/* A sample of @pid: 1 keep, 0 drop, -errno; may start tracking. */
	int (*sample)(struct sp_recorder *rec, int32_t pid);
	/* An MMAP2 of an untracked @pid: its process in *@out, or NULL. */
	int (*mmap)(struct sp_recorder *rec, int32_t pid,
		    struct sp__process **out);
	/*
	 * An exec of @pid, now named @comm; *@proc is the tracked process
	 * or NULL, and is set to NULL when the exec ends (or does not start)
	 * the tracking of the process by its records.
	 */
	int (*exec)(struct sp_recorder *rec, int32_t pid, const char *comm,
		    struct sp__process **proc);
	/* A fork created process @pid: follow it from its tracked parent? */
	bool (*follow_fork)(struct sp_recorder *rec, int32_t pid);
	/* A followed child is tracked: watch for its death (pidfd). */
	void (*watch)(struct sp_recorder *rec, struct sp__process *child);
	/* @p's leader exited: whether its whole group is gone now. */
	bool (*group_gone)(struct sp_recorder *rec, struct sp__process *p);
	/*
	 * A sample of live @p has user PC @pc (per sample: the live hook
	 * only reads when no module covers @pc).
	 */
	int (*sample_pc)(struct sp_recorder *rec, struct sp__process *p,
			 uint64_t pc);
	/*
	 * A sample of Python process @p at @now_ns while some of its JIT
	 * arenas are unread (track/jit_arena.h): read those that are due.
	 */
	void (*jit_code)(struct sp_recorder *rec, struct sp__process *p,
			 uint64_t now_ns);
	/*
	 * Learn at @now_ns what is new of live @p's jitdump file and GDB
	 * JIT list (sp__jit_refresh() with @flags, SP__JIT_*: a routine
	 * check, or a retry of an unwind that stopped in JIT code).
	 */
	int (*jit_refresh)(struct sp_recorder *rec, struct sp__process *p,
			   uint64_t now_ns, unsigned flags);
	/* The loss recovery sweep (paced unless @force). */
	int (*sweep)(struct sp_recorder *rec, bool force);
	/* A sweep that runs starts (before it looks at any process). */
	void (*sweep_begin)(struct sp_recorder *rec);
	/* Adds the lost counters of events no process owns. */
	int (*collect_lost)(struct sp_recorder *rec);
	/* sp_recorder_enable() after a disable: catch up on what was missed. */
	int (*resume)(struct sp_recorder *rec);
	/* Frees the policy's state (sp_recorder_close). */
	void (*free)(struct sp_recorder *rec);
};

/* Process mode (policy.c; targets come from attach.c). */
extern const struct sp__policy sp__policy_process;
/* System-wide and cgroup mode (system.c, system_track.c). */
extern const struct sp__policy sp__policy_system;

/* The live hooks both policies share (apply.c, recovery.c). */
void sp__live_watch(struct sp_recorder *rec, struct sp__process *child);
bool sp__live_group_gone(struct sp_recorder *rec, struct sp__process *p);
int sp__live_sample_pc(struct sp_recorder *rec, struct sp__process *p,
		       uint64_t pc); /* reconciles when no module covers @pc */
void sp__live_jit_code(struct sp_recorder *rec, struct sp__process *p,
		       uint64_t now_ns); /* reads the target (jit_arena.h) */
int sp__live_jit_refresh(struct sp_recorder *rec, struct sp__process *p,
			 uint64_t now_ns, unsigned flags); /* jit_code.c */

#endif /* SP_ENGINE_POLICY_H */
