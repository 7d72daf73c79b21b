/* SPDX-License-Identifier: MIT */
/* The guardian: a helper process that resumes a stopped target if we die. */
#ifndef SP_ENGINE_GUARDIAN_H
#define SP_ENGINE_GUARDIAN_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * SP_ATTACH_STOP_WHILE_ATTACHING stops a whole thread group for as long
 * as it takes to open its events (two per thread and CPU: a second for a
 * 500-thread target) and read its maps. If the recorder died in that
 * window (SIGKILL, a crash, the OOM killer), nothing would ever send the
 * SIGCONT: the target stayed in state T for good. The guardian makes that
 * impossible rather than rare:
 *
 *   recorder                          guardian (own session, signals
 *                                     blocked, every other fd closed)
 *   ARM + target pidfd  ----------->  holds the pidfd
 *                       <-----------  ACK
 *   SIGSTOP, attach, SIGCONT
 *   DISARM              ----------->  drops it
 *   ...
 *   QUIT                ----------->  exits; sp_recorder_close reaps it
 *
 * When the guardian sees the recorder go away while it holds a pidfd -
 * end of file on the socket (the recorder's process died or exec'd) or
 * the recorder's own pidfd turning readable (it exited although a fork
 * still holds the socket) - it sends SIGCONT through the held pidfd and
 * exits. The pidfds make pid reuse harmless: a signal can only reach the
 * very process that was stopped. A spurious SIGCONT (the recorder died
 * after resuming but before DISARM) only resumes what was resumed anyway.
 *
 * Process-wide effects, all documented in recorder.h: one child process
 * per recorder, created at its first STOP attach with clone() and no exit
 * signal (the application gets no SIGCHLD for it and its wait(-1) does
 * not see it, but a waitpid(-1, __WALL) would); it is reaped by
 * sp__guardian_stop(). No signal disposition changes; the calling
 * thread's signal mask is blocked around the clone only. Only what kills
 * both processes at once (SIGKILL to a whole cgroup) defeats it.
 *
 * The child after clone() runs raw system calls only: the recorder may be
 * multi-threaded, and locks other threads held are copied locked.
 */
struct sp__guardian {
	pid_t pid;  /* 0: not started */
	int pidfd;  /* of the guardian, to reap exactly it */
	int sock;   /* our end of the SOCK_SEQPACKET pair */
	bool armed; /* it holds a target's pidfd */
};

/* sp__guardian_init: no guardian yet. */
void sp__guardian_init(struct sp__guardian *g);

/*
 * sp__guardian_arm hands the guardian @target_pidfd (starting it first,
 * or again if it died) and waits for its acknowledgement: from then on
 * the target is resumed if this process goes away. Returns 0 or -errno
 * (the caller must then not stop the target).
 */
int sp__guardian_arm(struct sp__guardian *g, int target_pidfd);

/* sp__guardian_disarm: the target is resumed; the guardian forgets it. */
void sp__guardian_disarm(struct sp__guardian *g);

/* sp__guardian_stop ends and reaps the guardian (if any). */
void sp__guardian_stop(struct sp__guardian *g);

#endif /* SP_ENGINE_GUARDIAN_H */
