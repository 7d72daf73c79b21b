/* SPDX-License-Identifier: MIT */
/* Adopting untracked descendants of tracked processes (recovery). */

/*
 * In children mode a FORK record is how a new process becomes tracked. A
 * loss batch may have taken one with it: the child then runs, sampled
 * through the events it inherited, but without modules, so its samples
 * cannot be unwound. The recovery sweep therefore lists the process tree
 * below every tracked process (track/descendants.c) and adopts what it
 * does not know.
 *
 * Inherited or not: the kernel copies a process's events into a child at
 * fork, so a child forked after its parent's events existed already has
 * them, and opening more would sample it twice. Start times decide, as
 * for threads (recovery.c): a descendant that started at or after the
 * tick its tracked parent got its events (attach_ticks; 0 for a process
 * that had inherited events from birth) inherited them and only needs
 * process state; an older one (it predates the attach) gets its own
 * events through sp_recorder_attach(). Parents come before children, so
 * a grandchild's parent has been adopted, one way or the other, first.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "descendants.h"
#include "logging.h"
#include "proc_maps.h"
#include "recorder_internal.h"

static struct sp__process *tracked(struct sp_recorder *rec, int32_t pid)
{
	struct sp__process *p = sp__procs_find(&rec->procs, pid);

	return p && p->state != SP__PROC_EXITED ? p : NULL;
}

/* Process state for @pid, whose events were inherited from @src. */
static int adopt_inherited(struct sp_recorder *rec, int32_t pid, uint64_t start,
			   struct sp__process *src)
{
	struct sp__process *p;
	long fd;
	int err = sp__procs_add(&rec->procs, pid, &p);

	if (err)
		return err;
	p->starttime = start;
	p->parent = src; /* src's events must outlive p: recorder_retire */
	fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
	p->pidfd = fd < 0 ? -1 : (int)fd;
	if (p->pidfd >= 0 && sp__recorder_ep_add(rec, p->pidfd, SP__EP_PIDFD)) {
		close(p->pidfd); /* unwatched: liveness from /proc instead */
		p->pidfd = -1;
	} else if (p->pidfd < 0) { /* gone already */
		sp__process_dying(p, sp__clock_read(sp__recorder_clock(rec)));
	}
	err = sp__process_load_maps(&rec->procs, p);
	return err == -ENOENT || err == -ESRCH ? 0 : err;
}

static int adopt(struct sp_recorder *rec, const struct sp__desc *d)
{
	struct sp__process *src = tracked(rec, d->ppid);
	uint64_t start = 0;
	int err;

	/* Never the recorder itself (attached to its own parent shell). */
	if (tracked(rec, d->pid) || !src || d->pid == getpid() ||
	    sp__proc_stat(d->pid, 0, &start, NULL))
		return 0; /* known, parent not adopted, or gone */
	if (start >= src->attach_ticks) {
		err = adopt_inherited(rec, d->pid, start, src);
	} else {
		err = sp_recorder_attach(rec, d->pid, SP_ATTACH_RUNNING);
		err = err == SP_ETARGETGONE || err > 0 ? 0 : err;
	}
	if (err && err != -ENOMEM) {
		sp__log(rec->logger, SP_LOG_WARN,
			"descendant %d of %d not attached: %d", d->pid, d->ppid,
			err);
		err = 0;
	}
	return err;
}

int sp__recorder_discover(struct sp_recorder *rec)
{
	struct sp__vec found;
	size_t n = rec->procs.list.len, i, j;
	int err = 0;

	if (!rec->cfg.children)
		return 0;
	sp__vec_init(&found, sizeof(struct sp__desc));
	for (i = 0; !err && i < n; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		/* A live tracked parent's listing covers p's subtree. */
		if (p->state != SP__PROC_ALIVE ||
		    (p->parent && p->parent->state == SP__PROC_ALIVE))
			continue;
		found.len = 0;
		err = sp__descendants_list(&rec->mem, p->pid, false, &found);
		if (err == -ESRCH || err == -ENOENT)
			err = 0; /* died meanwhile: its pidfd will say so */
		for (j = 0; !err && j < found.len; j++)
			err = adopt(rec, sp__vec_at(&found, j));
	}
	sp__vec_fini(&found, &rec->mem);
	return err;
}
