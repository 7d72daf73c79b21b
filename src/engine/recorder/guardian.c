/* SPDX-License-Identifier: MIT */
/* The guardian process: resumes a target stopped by a recorder that died. */

/*
 * See guardian.h for the protocol and its guarantees. Why a process and
 * not something the kernel undoes by itself:
 *   - ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT per thread) is undone when
 *     the tracer dies, but it needs ptrace rights beyond those of
 *     kill(2) (Yama ptrace_scope, CAP_SYS_PTRACE), fails on a target
 *     that a debugger or strace already traces, and is visible to the
 *     target (TracerPid);
 *   - the cgroup v2 freezer freezes a whole cgroup (often the recorder's
 *     own), and a frozen cgroup stays frozen when its freezer dies;
 *   - PR_SET_PDEATHSIG fires when the parent *thread* exits, not the
 *     process, and only to the helper, which must then act anyway.
 * So a tiny helper holds the target's pidfd for the duration of a stop
 * and watches us through two channels that the kernel closes for it.
 *
 * The helper is made with a raw clone(CLONE_PIDFD) whose exit signal is 0
 * (no SIGCHLD for the application, no zombie visible to its wait(-1));
 * it runs on a copy of the caller's stack and calls only system calls
 * (the parent may be multi-threaded: no malloc, no stdio, no locks).
 * Every signal is blocked in it from the first instruction (the parent
 * blocks them around the clone), it leaves the session (terminal
 * signals and hangups do not reach it) and closes every descriptor but
 * its two, so it holds no perf event, spool or pipe of the recorder's.
 */
#define _GNU_SOURCE /* CLONE_PIDFD, SOCK_CLOEXEC, MSG_CMSG_CLOEXEC */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guardian.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

enum {
	MSG_ARM = 'A',
	MSG_DISARM = 'D',
	MSG_QUIT = 'Q',
	MSG_ACK = 'K'
};

/* How long an ARM waits for the acknowledgement, and close for an exit. */
#define ACK_TIMEOUT_MS 5000
#define QUIT_TIMEOUT_MS 1000

static long pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* Room for one descriptor in a message (SCM_RIGHTS). */
union fd_ctl {
	char buf[CMSG_SPACE(sizeof(int))];
	struct cmsghdr align;
};

/* A one-byte message @c with room for a descriptor. */
static void msg_init(struct msghdr *mh, struct iovec *iov, char *c,
		     union fd_ctl *ctl)
{
	memset(mh, 0, sizeof(*mh));
	memset(ctl, 0, sizeof(*ctl));
	iov->iov_base = c;
	iov->iov_len = 1;
	mh->msg_iov = iov;
	mh->msg_iovlen = 1;
	mh->msg_control = ctl->buf;
	mh->msg_controllen = sizeof(ctl->buf);
}

/* ---- the guardian process (raw system calls only) ---- */

/* Closes every fd except @a and @b (either may be -1). */
static void close_others(int a, int b)
{
	unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);
	unsigned fd;

	if (a < 0 || b < 0)
		lo = hi = (unsigned)(a < 0 ? b : a);
	if (lo > 0)
		syscall(SYS_close_range, 0u, lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, lo + 1, hi - 1, 0u);
	if (syscall(SYS_close_range, hi + 1, ~0u, 0u) == 0)
		return;
	for (fd = 0; fd < 4096; fd++) /* no close_range (before 5.9) */
		if (fd != lo && fd != hi)
			close((int)fd);
}

/* Resumes the held target, if any. */
static void resume(int *target)
{
	if (*target < 0)
		return;
	pidfd_signal(*target, SIGCONT);
	close(*target);
	*target = -1;
}

/*
 * Handles one queued message. Returns 0 when one was handled, -1 when
 * none is queued, 1 when the guardian must end (end of file, an error,
 * QUIT).
 */
static int take_message(int sock, int *target)
{
	char c = 0, ack = MSG_ACK;
	union fd_ctl ctl;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1;

	msg_init(&mh, &iov, &c, &ctl);
	n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -1 : 1;
	if (n == 0)
		return 1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	if (c == MSG_ARM && fd >= 0) {
		if (*target >= 0)
			close(*target);
		*target = fd;
		fd = -1;
		if (send(sock, &ack, 1, MSG_NOSIGNAL) != 1)
			return 1;
	} else if (c == MSG_DISARM && *target >= 0) {
		close(*target);
		*target = -1;
	}
	if (fd >= 0)
		close(fd);
	return c == MSG_QUIT ? 1 : 0;
}

__attribute__((noreturn)) static void guardian_main(int sock, int parent)
{
	struct pollfd pfd[2];
	int target = -1, r;

	syscall(SYS_setsid);
	close_others(sock, parent);
	for (;;) {
		pfd[0].fd = sock;
		pfd[0].events = POLLIN;
		pfd[1].fd = parent; /* ignored when -1 */
		pfd[1].events = POLLIN;
		pfd[0].revents = pfd[1].revents = 0;
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		/* Messages first: an ARM sent just before dying still counts. */
		while ((r = take_message(sock, &target)) == 0)
			;
		if (r == 1 || pfd[1].revents)
			break;
	}
	/* Whatever ended the loop, never leave the target stopped. */
	resume(&target);
	syscall(SYS_exit_group, 0);
	for (;;)
		;
}

/* ---- the recorder's side ---- */

void sp__guardian_init(struct sp__guardian *g)
{
	memset(g, 0, sizeof(*g));
	g->pidfd = -1;
	g->sock = -1;
}

static int spawn(struct sp__guardian *g)
{
	sigset_t all, old;
	int sv[2], pidfd = -1, err = 0;
	long self, pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	/* Our own pidfd: readable once this process is gone. */
	self = syscall(SYS_pidfd_open, getpid(), 0);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Exit signal 0 (the low byte of the flags): no SIGCHLD. */
	pid = syscall(SYS_clone, (unsigned long)CLONE_PIDFD, NULL, &pidfd, NULL,
		      NULL);
	if (pid == 0)
		guardian_main(sv[1], (int)self);
	if (pid < 0)
		err = -errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);
	if (self >= 0)
		close((int)self);
	if (err) {
		close(sv[0]);
		return err;
	}
	g->pid = (pid_t)pid;
	g->pidfd = pidfd;
	g->sock = sv[0];
	return 0;
}

/* Reaps the guardian after its socket is closed; SIGKILL if it lingers. */
static void reap(struct sp__guardian *g, int timeout_ms)
{
	struct pollfd pfd = { .fd = g->pidfd, .events = POLLIN };
	siginfo_t info;

	if (g->sock >= 0)
		close(g->sock);
	if (g->pidfd >= 0) {
		if (poll(&pfd, 1, timeout_ms) != 1)
			pidfd_signal(g->pidfd, SIGKILL);
		/* ECHILD if the application reaped it already: fine. */
		while (waitid((idtype_t)P_PIDFD, (id_t)g->pidfd, &info,
			      WEXITED | __WCLONE) < 0 &&
		       errno == EINTR)
			;
		close(g->pidfd);
	}
	sp__guardian_init(g);
}

static int send_message(int sock, char c, int fd)
{
	union fd_ctl ctl;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;

	msg_init(&mh, &iov, &c, &ctl);
	if (fd < 0) {
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	} else {
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	}
	/* MSG_NOSIGNAL: a dead guardian is an error, not our SIGPIPE. */
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* Waits for the ACK, through signals that interrupt the wait. */
static int wait_ack(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	int left = ACK_TIMEOUT_MS, r;
	char c;

	for (;;) {
		r = poll(&pfd, 1, left > 100 ? 100 : left);
		if (r == 1)
			break;
		if (r < 0 && errno != EINTR)
			return -errno;
		left -= 100;
		if (left <= 0)
			return -ETIMEDOUT;
	}
	if (recv(sock, &c, 1, 0) != 1)
		return -EPIPE;
	return c == MSG_ACK ? 0 : -EPROTO;
}

int sp__guardian_arm(struct sp__guardian *g, int target_pidfd)
{
	int tries, err = 0;

	/* A guardian that died since the last stop is replaced, once. */
	for (tries = 0; tries < 2; tries++) {
		if (!g->pid && (err = spawn(g)) != 0)
			return err;
		err = send_message(g->sock, MSG_ARM, target_pidfd);
		if (!err)
			err = wait_ack(g->sock);
		if (!err) {
			g->armed = true;
			return 0;
		}
		reap(g, 0);
	}
	return err;
}

void sp__guardian_disarm(struct sp__guardian *g)
{
	/* A failure means it died: the next arm starts another. */
	if (g->armed && send_message(g->sock, MSG_DISARM, -1))
		reap(g, 0);
	g->armed = false;
}

void sp__guardian_stop(struct sp__guardian *g)
{
	if (!g->pid)
		return;
	send_message(g->sock, MSG_QUIT, -1);
	reap(g, QUIT_TIMEOUT_MS);
}
