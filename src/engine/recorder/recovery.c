/* SPDX-License-Identifier: MIT */
/* Recovering from lost records: maps reconcile, recovery sweep, threads. */

/*
 * Lost samples may have taken MMAP2/COMM/FORK/EXIT records with them, so
 * after a loss batch every tracked process is looked at again through
 * /proc: dead or reused pids are retired, modules reconciled with the
 * maps file, threads refreshed. The same reconcile runs, rate-limited per
 * process, when a sample's PC is outside every module of its process.
 *
 * Threads: every event inherits, so a thread created after its creator's
 * event was opened is sampled through that event. Such inherited events
 * die when the creator's fd is closed, which is why a vanished thread's
 * events are closed only when every live thread has events of its own.
 * A thread without events that started before the attach began was
 * missed by the attach (it raced the task listing) and gets its own.
 *
 * Children mode: a lost FORK record leaves a child untracked; the sweep
 * ends by adopting such descendants (descendants.c).
 */
#include <errno.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "proc_maps.h"
#include "python.h"
#include "recorder_internal.h"

#define TIDS_MAX 65536

static bool has_events(const struct sp__process *p, int32_t tid)
{
	size_t i;

	for (i = 0; i < p->events.len; i++)
		if (((struct sp__event *)sp__vec_at(&p->events, i))->tid == tid)
			return true;
	return false;
}

struct tid_list {
	int32_t *tids;
	int n;
};

static int add_tid(void *ctx, int32_t tid)
{
	struct tid_list *l = ctx;

	l->tids[l->n++] = tid;
	return l->n == TIDS_MAX; /* full: stop (the list is cut short) */
}

/* The live TIDs of @p into @tids (a TIDS_MAX array). Count or -errno. */
static int list_tids(const struct sp__process *p, int32_t *tids)
{
	struct tid_list l = { tids, 0 };
	int err = sp__proc_each_task(p->pid, add_tid, &l);

	return err < 0 ? err : l.n;
}

static bool tid_listed(const int32_t *tids, int n, int32_t tid)
{
	int i;

	for (i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* Opens events for missed threads; *@covered: all live ones have some. */
static int open_missed(struct sp_recorder *rec, struct sp__process *p,
		       const int32_t *tids, int n, bool *covered)
{
	uint64_t start;
	int i, err;

	*covered = true;
	for (i = 0; i < n; i++) {
		if (has_events(p, tids[i]))
			continue;
		if (sp__proc_stat(p->pid, tids[i], &start, NULL) ||
		    start >= p->attach_ticks) {
			*covered = false; /* inherited (or gone) */
			continue;
		}
		err = sp__recorder_open_events(rec, p, tids[i], false);
		if (err && err != -ESRCH)
			return err;
	}
	return 0;
}

/* Closes the events of threads not in @tids (lost counters read first). */
static int close_vanished(struct sp_recorder *rec, struct sp__process *p,
			  const int32_t *tids, int n)
{
	size_t i, kept = 0;
	int err = sp__recorder_collect_lost(rec, p);

	for (i = 0; i < p->events.len; i++) {
		struct sp__event *ev = sp__vec_at(&p->events, i);

		if (ev->tid == p->pid || tid_listed(tids, n, ev->tid)) {
			*(struct sp__event *)sp__vec_at(&p->events, kept++) =
				*ev;
			continue;
		}
		epoll_ctl(rec->epfd, EPOLL_CTL_DEL, ev->fd, NULL);
		close(ev->fd);
	}
	p->events.len = kept;
	return err;
}

static int refresh(struct sp_recorder *rec, struct sp__process *p)
{
	int32_t *tids;
	bool covered;
	int n, err;

	if (!rec->policy->per_process_events)
		return 0; /* system mode: CPU events cover every thread */
	tids = sp__mem_alloc(&rec->mem, TIDS_MAX * sizeof(int32_t));
	if (!tids)
		return -ENOMEM;
	n = list_tids(p, tids);
	err = n < 0 ? n : open_missed(rec, p, tids, n, &covered);
	/* A full list may be cut short: then no thread counts as vanished. */
	if (!err && covered && !rec->cfg.children && n < TIDS_MAX)
		err = close_vanished(rec, p, tids, n);
	sp__mem_free(&rec->mem, tids, TIDS_MAX * sizeof(int32_t));
	return err;
}

/* Marks @p dying if its group is gone or its pid was reused. 1 = gone. */
static int check_gone(struct sp_recorder *rec, struct sp__process *p)
{
	uint64_t start = 0;
	int alive = sp__process_alive(p), err;

	if (alive < 0)
		return alive;
	if (alive) {
		err = sp__proc_stat(p->pid, 0, &start, NULL);
		if (err && err != -ENOENT && err != -ESRCH)
			return err;
		alive = !err && start == p->starttime;
	}
	/*
	 * A watched pidfd reports the death itself, before the drain that
	 * takes the group's last records; marking it here, after a drain,
	 * would retire it while its last samples still wait in a ring.
	 */
	if (!alive && p->state == SP__PROC_ALIVE && p->pidfd < 0)
		sp__process_dying(p, sp__clock_read(sp__recorder_clock(rec)));
	return !alive;
}

static int reconcile(struct sp_recorder *rec, struct sp__process *p)
{
	bool changed = false;
	int err = sp__process_reconcile(&rec->procs, p, &changed);

	if (err == -ENOENT || err == -ESRCH)
		return 0; /* died meanwhile: its pidfd will say so */
	if (!err && changed)
		err = sp__python_recheck(&rec->procs, p);
	return err;
}

/*
 * The user PC of a sample outside every module of its process means a
 * mapping record was missed: reconcile with /proc (rate-limited).
 */
int sp__live_sample_pc(struct sp_recorder *rec, struct sp__process *p,
		       uint64_t pc)
{
	return sp__process_covers(p, pc) ? 0 : sp__recorder_reconcile(rec, p);
}

int sp__recorder_reconcile(struct sp_recorder *rec, struct sp__process *p)
{
	uint64_t now = sp__now_ns();

	if (p->state != SP__PROC_ALIVE ||
	    now - p->last_reconcile_ns < SP__UNCOVERED_NS)
		return 0;
	p->last_reconcile_ns = now;
	return reconcile(rec, p);
}

static int sweep_one(struct sp_recorder *rec, struct sp__process *p)
{
	int err;

	if (p->state != SP__PROC_ALIVE)
		return 0;
	/* System mode tracks the whole machine: only what was sampled. */
	if (rec->policy->sweep_sampled_only && !p->sampled)
		return 0;
	p->sampled = false;
	err = check_gone(rec, p);
	if (err)
		return err < 0 ? err : 0;
	err = reconcile(rec, p);
	if (!err)
		err = refresh(rec, p);
	return err == -ESRCH ? 0 : err;
}

int sp__recorder_sweep(struct sp_recorder *rec, bool force)
{
	uint64_t now = sp__now_ns();
	size_t i;
	int err = 0;

	if (!rec->sweep_pending ||
	    (!force && now - rec->last_sweep_ns < SP__SWEEP_NS))
		return 0;
	rec->last_sweep_ns = now;
	rec->procs.time_ns = now;
	rec->policy->sweep_begin(rec);
	for (i = 0; !err && i < rec->procs.list.len; i++)
		err = sweep_one(rec, *(struct sp__process **)sp__vec_at(
					     &rec->procs.list, i));
	if (!err)
		err = sp__recorder_discover(rec);
	rec->sweep_pending = err != 0;
	return err;
}

int sp_recorder_refresh_threads(struct sp_recorder *rec, int32_t pid)
{
	struct sp__process *p;
	int err;

	if (!rec || pid <= 0)
		return -EINVAL;
	p = sp__procs_find(&rec->procs, pid);
	if (!p)
		return -EINVAL;
	if (p->state != SP__PROC_ALIVE)
		return SP_EXITED;
	err = check_gone(rec, p);
	if (err)
		return err < 0 ? err : SP_EXITED;
	err = refresh(rec, p);
	return err == -ESRCH ? SP_EXITED : err;
}
