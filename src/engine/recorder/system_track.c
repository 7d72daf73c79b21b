/* SPDX-License-Identifier: MIT */
/* System mode: which processes are tracked, and when they are read. */

/*
 * Sources of process state, cheapest first: a fork record clones the
 * parent's modules (apply.c), an exec record starts a new image that the
 * MMAP2 records after it rebuild, and only a process seen for the first
 * time by an MMAP2 or a sample (it existed before the recorder, or its
 * fork record was lost) costs a /proc/PID/maps read. Later misses of a
 * known process go through the rate-limited uncovered-PC reconcile of
 * sample.c, so a busy unknown process never means a /proc read per
 * sample.
 *
 * Filters: a pid the filters reject goes into a sorted "ignored" set, so
 * its samples are dropped with a binary search and no /proc read. A fork
 * or exec of that pid (a new process, or a new name) takes it out again.
 * In cgroup mode the kernel only samples members, but side-band records
 * are not proof of membership: processes are tracked from the cgroup's
 * cgroup.procs, from samples and from forks of tracked members only.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "logging.h"
#include "proc_maps.h"
#include "system.h"

/* Index of the first entry >= @pid in a sorted int32_t array. */
static size_t lower_bound(const int32_t *v, size_t n, int32_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool sorted_has(const int32_t *v, size_t n, int32_t pid)
{
	size_t i = lower_bound(v, n, pid);

	return i < n && v[i] == pid;
}

static bool is_ignored(const struct sp__system *sys, int32_t pid)
{
	return sorted_has(sys->ignored.data, sys->ignored.len, pid);
}

/* Rejects @pid from now on; returns 0 (the sample is dropped) or -ENOMEM. */
static int ignore(struct sp_recorder *rec, int32_t pid)
{
	struct sp__vec *v = &rec->sys->ignored;
	size_t i = lower_bound(v->data, v->len, pid);
	int32_t *a;

	if (i < v->len && ((int32_t *)v->data)[i] == pid)
		return 0;
	if (sp__vec_reserve(v, &rec->mem, 1))
		return -ENOMEM;
	a = v->data;
	memmove(a + i + 1, a + i, (v->len - i) * sizeof(*a));
	a[i] = pid;
	v->len++;
	return 0;
}

static void unignore(struct sp__system *sys, int32_t pid)
{
	struct sp__vec *v = &sys->ignored;
	size_t i = lower_bound(v->data, v->len, pid);
	int32_t *a = v->data;

	if (i == v->len || a[i] != pid)
		return;
	memmove(a + i, a + i + 1, (v->len - i - 1) * sizeof(*a));
	v->len--;
}

static bool comm_listed(const struct sp__system *sys, const char *comm)
{
	size_t i;

	for (i = 0; i < sys->ncomms; i++)
		if (strncmp(sys->comms[i], comm, SP__COMM_LEN - 1) == 0)
			return true;
	return false;
}

/* Whether the filters keep @pid (@comm NULL: read it from /proc). */
static bool admit(const struct sp__system *sys, int32_t pid, const char *comm)
{
	char path[64], buf[64];
	ssize_t n;

	if ((sys->flags & SP_SYSTEM_EXCLUDE_SELF) && pid == sys->self)
		return false;
	if (sys->npids && !sorted_has(sys->pids, sys->npids, pid))
		return false;
	if (!sys->ncomms)
		return true;
	if (!comm) {
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		n = sp__proc_read(path, buf, sizeof(buf));
		if (n <= 0)
			return false; /* gone: a fork of its pid unignores it */
		if (buf[n - 1] == '\n')
			buf[n - 1] = '\0';
		comm = buf;
	}
	return comm_listed(sys, comm);
}

/* Starts tracking @pid; @load reads its modules from /proc now. */
static int track(struct sp_recorder *rec, int32_t pid, bool load,
		 struct sp__process **out)
{
	struct sp__process *p;
	char st = 0;
	int err = sp__procs_add(&rec->procs, pid, &p);

	if (err)
		return err;
	*out = p;
	/*
	 * No pidfd: a machine has more processes than a process may have
	 * fds. Deaths come from EXIT records (and sweeps) instead.
	 */
	p->last_reconcile_ns = sp__now_ns();
	err = sp__proc_stat(pid, 0, &p->starttime, &st);
	if (err == -ENOENT || err == -ESRCH ||
	    (!err && (st == 'X' || st == 'Z'))) {
		/*
		 * Already gone (a zombie has no maps left): retired once its
		 * queued records are out.
		 */
		sp__process_dying(p, sp__clock_read(sp__recorder_clock(rec)));
		return 0;
	}
	if (!load)
		return 0;
	err = sp__process_load_maps(&rec->procs, p);
	if (err == -EACCES || err == -EPERM) {
		/* Another namespace's init, say: its samples stay unpinned. */
		sp__log(rec->logger, SP_LOG_DEBUG,
			"maps of pid %d unreadable: %s", pid, strerror(-err));
		return 0;
	}
	return err == -ENOENT || err == -ESRCH ? 0 : err;
}

/*
 * Whether a retired process's pid now belongs to a new process whose fork
 * record was missed (checked at most every SP__UNCOVERED_NS per pid).
 */
static bool reused(struct sp__process *p)
{
	uint64_t now = sp__now_ns(), start = 0;

	if (now - p->last_reconcile_ns < SP__UNCOVERED_NS)
		return false;
	p->last_reconcile_ns = now;
	return sp__proc_stat(p->pid, 0, &start, NULL) == 0 &&
	       start != p->starttime;
}

int sp__system_sample(struct sp_recorder *rec, int32_t pid)
{
	struct sp__system *sys = rec->sys;
	struct sp__process *p;
	int err;

	if (pid <= 0)
		return 1; /* idle or broken: sample.c counts it */
	if (is_ignored(sys, pid))
		return 0;
	p = sp__procs_find(&rec->procs, pid);
	if (p && (p->state != SP__PROC_EXITED || !reused(p)))
		return 1;
	if (!admit(sys, pid, NULL))
		return ignore(rec, pid);
	err = track(rec, pid, true, &p);
	return err ? err : 1;
}

int sp__system_mmap(struct sp_recorder *rec, int32_t pid,
		    struct sp__process **out)
{
	struct sp__system *sys = rec->sys;
	struct sp__process *p;

	*out = NULL;
	if (sys->cgroup_fd >= 0 || pid <= 0 || is_ignored(sys, pid))
		return 0;
	p = sp__procs_find(&rec->procs, pid);
	if (p) /* exited: only a sample or a fork brings the pid back */
		return 0;
	if (!admit(sys, pid, NULL))
		return ignore(rec, pid);
	return track(rec, pid, true, out);
}

int sp__system_exec(struct sp_recorder *rec, int32_t pid, const char *comm,
		    struct sp__process **proc)
{
	struct sp__system *sys = rec->sys;
	struct sp__process *p = *proc;
	int err;

	unignore(sys, pid);
	if (p) {
		if (!sys->ncomms || comm_listed(sys, comm))
			return 0;
		*proc = NULL; /* renamed out of the filter */
		err = sp__recorder_retire(rec, p);
		return err ? err : ignore(rec, pid);
	}
	if (sys->cgroup_fd >= 0)
		return 0;
	if (!admit(sys, pid, comm))
		return ignore(rec, pid);
	return track(rec, pid, false, &p);
}

bool sp__system_follow_fork(struct sp_recorder *rec, int32_t pid)
{
	struct sp__system *sys = rec->sys;

	unignore(sys, pid); /* a new process owns the pid now */
	return !sys->npids || sorted_has(sys->pids, sys->npids, pid);
}

/* The numeric entries of /proc. */
static int proc_pids(const struct sp__mem *mem, struct sp__vec *pids)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d)) != NULL) {
		int32_t pid = (int32_t)atoi(de->d_name);

		if (pid > 0)
			err = sp__vec_push(pids, mem, &pid);
	}
	closedir(d);
	return err;
}

/* A process tracked before a disable: still the same one? */
static int resync(struct sp_recorder *rec, struct sp__process *p)
{
	uint64_t start = 0;
	bool changed = false;
	int err;

	if (sp__proc_stat(p->pid, 0, &start, NULL) == 0 &&
	    start == p->starttime) {
		err = sp__process_reconcile(&rec->procs, p, &changed);
		return err == -ENOENT || err == -ESRCH ? 0 : err;
	}
	err = sp__recorder_retire(rec, p);
	return err ? err : 1;
}

/*
 * A kernel thread (or a zombie) has no executable to point at. Checked
 * before tracking at the scan: tracking one to find it has no maps and
 * then dropping it cost a pass over every tracked process each, and a
 * machine has thousands of them. Any other error (EACCES, say) leaves
 * the verdict to the maps, as before.
 */
static bool no_executable(int32_t pid)
{
	char path[64], target[8];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return readlink(path, target, sizeof(target)) < 0 && errno == ENOENT;
}

static int scan_one(struct sp_recorder *rec, int32_t pid)
{
	struct sp__process *p = sp__procs_find(&rec->procs, pid);
	int err;

	if (p && p->state == SP__PROC_DYING)
		return 0; /* retired once its queued records are out */
	if (p && p->state == SP__PROC_ALIVE) {
		err = resync(rec, p);
		if (err <= 0)
			return err;
	}
	if (!admit(rec->sys, pid, NULL))
		return ignore(rec, pid);
	/* Without kernel capture a kernel thread never has a sample. */
	if (!rec->cfg.kernel && no_executable(pid))
		return 0;
	err = track(rec, pid, true, &p);
	if (err || p->modules.len || rec->cfg.kernel ||
	    p->state != SP__PROC_ALIVE)
		return err;
	/* No maps after all (unreadable, say): not worth tracking either. */
	if (p->pidfd >= 0)
		close(p->pidfd); /* closing drops it from the epoll set */
	p->pidfd = -1;
	sp__procs_remove(&rec->procs, p);
	return 0;
}

int sp__system_scan(struct sp_recorder *rec)
{
	struct sp__vec pids;
	size_t i;
	int err;

	sp__vec_init(&pids, sizeof(int32_t));
	rec->sys->ignored.len = 0; /* names may have changed meanwhile */
	rec->procs.time_ns = sp__now_ns();
	if (rec->sys->cgroup_fd >= 0)
		err = sp__cgroup_pids(&rec->mem, rec->sys->cgroup_fd, &pids);
	else
		err = proc_pids(&rec->mem, &pids);
	for (i = 0; !err && i < pids.len; i++)
		err = scan_one(rec, *(int32_t *)sp__vec_at(&pids, i));
	sp__vec_fini(&pids, &rec->mem);
	return err;
}
