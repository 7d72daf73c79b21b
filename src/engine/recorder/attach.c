/* SPDX-License-Identifier: MIT */
/* Attaching a process: validation, stopping, events, maps, rollback. */

/*
 * Order: validate the pid (a live thread-group leader), optionally stop
 * the group and wait until every thread is stopped, open one event per
 * (thread, CPU), snapshot /proc/PID/maps into module records, enable,
 * resume. Only a stop we caused is undone, and it is undone on every path,
 * errors included; if this process dies before that, the guardian
 * (guardian.h) resumes the target, which is armed before the SIGSTOP.
 * Stop and resume go through a pidfd, so a reused pid is never signalled.
 * A failure closes the events opened so far and retires any module
 * already written, so the recording stays as it was.
 */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "guardian.h"
#include "proc_maps.h"
#include "recorder_internal.h"

#define STOP_WAIT_MS 5000

/* 1 (ends the walk) for a thread that is neither stopped nor dead. */
static int thread_running(void *ctx, int32_t tid)
{
	const int32_t *pid = ctx;
	char st = 0;

	return sp__proc_stat(*pid, tid, NULL, &st) == 0 && st != 'T' &&
	       st != 't' && st != 'Z' && st != 'X';
}

/* Whether every thread of @pid is stopped (or already gone). 1/0/-errno. */
static int group_stopped(int32_t pid)
{
	int r = sp__proc_each_task(pid, thread_running, &pid);

	return r < 0 ? r : !r;
}

/*
 * A pidfd of @pid for stopping and resuming it: signals through it reach
 * this very process even if the pid is reused. @start (from validate())
 * proves the pid still names the process that was validated.
 */
static int stop_pidfd(int32_t pid, uint64_t start, int *out)
{
	long fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
	uint64_t now = 0;

	if (fd < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	if (sp__proc_stat(pid, 0, &now, NULL) || now != start) {
		close((int)fd);
		return -ESRCH;
	}
	*out = (int)fd;
	return 0;
}

static long pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/*
 * Stops the group unless already stopped; sets *@stopped if we did. The
 * guardian holds @pidfd before the SIGSTOP is sent, so the target is
 * resumed even if this process dies before attach() does it.
 */
static int stop_group(struct sp_recorder *rec, int32_t pid, int pidfd,
		      bool *stopped)
{
	struct timespec ms = { 0, 1000000 };
	int i, r;

	*stopped = false;
	r = group_stopped(pid);
	if (r != 0)
		return r < 0 ? r : 0;
	r = sp__guardian_arm(&rec->guardian, pidfd);
	if (r)
		return r;
	if (pidfd_signal(pidfd, SIGSTOP)) {
		r = -errno;
		sp__guardian_disarm(&rec->guardian);
		return r;
	}
	*stopped = true;
	for (i = 0; i < STOP_WAIT_MS; i++) {
		r = group_stopped(pid);
		if (r != 0)
			return r < 0 ? r : 0;
		nanosleep(&ms, NULL);
	}
	return -ETIMEDOUT;
}

/* Undoes stop_group(); the first error stays in *@err. */
static void resume_group(struct sp_recorder *rec, int pidfd, bool stopped,
			 int *err)
{
	if (stopped) {
		if (pidfd_signal(pidfd, SIGCONT) && !*err && errno != ESRCH)
			*err = -errno;
		sp__guardian_disarm(&rec->guardian);
	}
	if (pidfd >= 0)
		close(pidfd);
}

struct thread_walk {
	struct sp_recorder *rec;
	struct sp__process *p;
};

static int open_thread(void *ctx, int32_t tid)
{
	const struct thread_walk *w = ctx;
	int err = sp__recorder_open_events(w->rec, w->p, tid, false);

	if (err == -ESRCH && tid != w->p->pid)
		return 0; /* a thread that just exited */
	return err;
}

/* Opens events for every thread in /proc/PID/task (or just @pid). */
static int open_threads(struct sp_recorder *rec, struct sp__process *p,
			bool on_exec)
{
	struct thread_walk w = { rec, p };

	if (on_exec)
		return sp__recorder_open_events(rec, p, p->pid, true);
	return sp__proc_each_task(p->pid, open_thread, &w);
}

static int validate(struct sp_recorder *rec, int32_t pid,
		    enum sp_attach_mode mode, uint64_t *start)
{
	int32_t tgid;
	int err;

	/* System mode's CPU events already see every process. */
	if (!rec || !rec->policy->per_process_events || pid <= 0 ||
	    mode > SP_ATTACH_ON_EXEC)
		return -EINVAL;
	if (rec->finished)
		return -EPIPE;
	if (mode == SP_ATTACH_STOP_WHILE_ATTACHING && pid == getpid())
		return -EINVAL;
	tgid = sp__proc_tgid(pid);
	if (tgid == -ENOENT || tgid == -ESRCH)
		return SP_ETARGETGONE;
	if (tgid < 0)
		return tgid;
	if (tgid != pid)
		return -EINVAL; /* a thread, not a leader */
	err = sp__proc_stat(pid, 0, start, NULL);
	return err == -ENOENT ? SP_ETARGETGONE : err;
}

/* Boot-time clock ticks now: the unit of thread start times in /proc. */
static uint64_t boot_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts))
		return 0; /* no thread then counts as missed by the attach */
	return (uint64_t)ts.tv_sec * (uint64_t)hz +
	       (uint64_t)ts.tv_nsec / (1000000000ull / (uint64_t)hz);
}

/* The body of an attach, between stop and resume. */
static int attach_body(struct sp_recorder *rec, struct sp__process *p,
		       enum sp_attach_mode mode)
{
	long pidfd = syscall(SYS_pidfd_open, (pid_t)p->pid, 0);
	int err;

	if (pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	p->attach_ticks = boot_ticks();
	p->pidfd = pidfd < 0 ? -1 : (int)pidfd;
	if (p->pidfd >= 0) {
		err = sp__recorder_ep_add(rec, p->pidfd, SP__EP_PIDFD);
		if (err)
			return err;
	}
	err = open_threads(rec, p, mode == SP_ATTACH_ON_EXEC);
	if (err || mode == SP_ATTACH_ON_EXEC)
		return err;
	rec->procs.time_ns = sp__now_ns();
	return sp__process_load_maps(&rec->procs, p);
}

/* Undoes a failed attach of @p. */
static void rollback(struct sp_recorder *rec, struct sp__process *p)
{
	if (p->modules.len)
		sp__process_retire_all(&rec->procs, p);
	sp__process_close_events(p, rec->epfd);
	if (p->pidfd >= 0)
		epoll_ctl(rec->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
	sp__procs_remove(&rec->procs, p);
}

/*
 * Retires @old, an earlier generation of @pid. If no poll has retired it
 * yet, its samples may still be queued: they must be unwound with its own
 * maps, not the new process's, so they are written out first.
 */
static int retire_generation(struct sp_recorder *rec, int32_t pid,
			     struct sp__process *old)
{
	int err;

	if (old && old->state != SP__PROC_EXITED) {
		err = sp__recorder_flush(rec);
		if (err)
			return err;
		old = sp__procs_find(&rec->procs, pid);
	}
	if (old)
		sp__recorder_retire(rec, old);
	return 0;
}

int sp_recorder_attach(struct sp_recorder *rec, int32_t pid,
		       enum sp_attach_mode mode)
{
	struct sp__process *old, *p;
	bool stopped = false;
	uint64_t start = 0;
	int err, pidfd = -1;

	err = validate(rec, pid, mode, &start);
	if (err)
		return err;
	old = sp__procs_find(&rec->procs, pid);
	if (old && old->state != SP__PROC_EXITED && old->starttime == start)
		return SP_ALREADY_ATTACHED;
	err = retire_generation(rec, pid, old);
	if (err)
		return err;
	if (mode == SP_ATTACH_STOP_WHILE_ATTACHING) {
		err = stop_pidfd(pid, start, &pidfd);
		if (!err)
			err = stop_group(rec, pid, pidfd, &stopped);
		if (err)
			goto resume;
	}
	err = sp__procs_add(&rec->procs, pid, &p);
	if (err)
		goto resume;
	p->starttime = start;
	err = attach_body(rec, p, mode);
	if (err)
		rollback(rec, p);
resume:
	resume_group(rec, pidfd, stopped, &err);
	if (err == -ESRCH || err == -ENOENT)
		return SP_EXITED;
	return err ? err : SP_ATTACHED;
}
