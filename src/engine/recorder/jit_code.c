/* SPDX-License-Identifier: MIT */
/* JIT code at record time, the recorder's part: checks, retries, polls. */
#include <errno.h>
#include <string.h>

#include "jit_track.h"
#include "policy.h"
#include "recorder_internal.h"

/*
 * The state lives in the track room (jit_track.h); what needs the jobs
 * or the policy is here. Reading the target or files goes through the
 * policy's jit_refresh hook, which a replay replaces with one that reads
 * nothing (captured processes may be gone).
 */

int sp__live_jit_refresh(struct sp_recorder *rec, struct sp__process *p,
			 uint64_t now_ns, unsigned flags)
{
	struct sp__jit_proc *jp = sp__jit_proc_of(rec->procs.jit, p);

	if (!jp)
		return -ENOMEM;
	return sp__jit_refresh(&rec->procs, p, jp, now_ns, flags);
}

/*
 * A long run of samples (a backlog after a stall) is applied in one poll:
 * the routine check of a process with a JIT source also happens between
 * its samples, so the JIT state it unwinds with lags the wall clock by no
 * more than SP__JIT_CHECK_NS.
 */
int sp__jit_sample_due(struct sp_recorder *rec, struct sp__process *p,
		       uint64_t time)
{
	struct sp__jit_proc *jp = p->jit;
	uint64_t now;
	int err = 0;

	if (p->state == SP__PROC_EXITED)
		return 0;
	if (sp__jit_check_due(p, jp, &now))
		err = rec->policy->jit_refresh(rec, p, now, 0);
	if (!err && sp__jit_due_pending(jp))
		err = sp__jit_apply_due(&rec->procs, p, time);
	return err;
}

static size_t user_depth(const struct sp__job *job)
{
	return job->n - job->nk;
}

/* The pc an unwind stopped at, when it may be in JIT code of @jp's. */
static bool stopped_in_jit(const struct sp__process *p,
			   const struct sp__jit_proc *jp,
			   const struct sp__job *job, uint64_t *pc)
{
	if (!sp__job_marker_ended(job))
		return false;
	*pc = job->frames[job->n - 2].abs_ip;
	return sp__jit_suspect(p, jp, *pc);
}

static void unwind_again(struct sp_recorder *rec, struct sp__process *p,
			 struct sp__job *job)
{
	/* Inline mode: modules may have changed (objects mapped). */
	if (!sp__pipeline_is_threaded(rec->pipe)) {
		if (sp__process_mappings(&rec->procs, p, &job->maps,
					 &job->nmaps)) {
			job->maps = NULL;
			job->nmaps = 0;
			job->maps_gen = 0;
		} else {
			job->maps_gen = p->maps_gen;
		}
	}
	sp__jit_snap_put(&rec->mem, job->jit);
	job->jit = sp__jit_snap_get(&rec->procs, p);
	job->jit_index = sp__jit_snap_index(job->jit);
	memset(job->stats, 0, sizeof(*job->stats));
	job->n = job->nk;
	sp__job_unwind(rec->unwinder, sp__pipeline_memo(rec->pipe), job);
}

/*
 * Retried at most once after a refresh (and only SP__JIT_RETRY_NS after
 * the last one); then, while the unwind stops at code whose bytes match
 * code with known unwinding info (jit_dump.c: a JIT's stdio buffer may
 * still hold the records of its newest trampolines), a few more times.
 */
#define INFER_ROUNDS 8

int sp__jit_retry_marked(struct sp_recorder *rec, struct sp__job *job,
			 bool writing)
{
	struct sp__process *p;
	struct sp__jit_proc *jp;
	size_t before = user_depth(job);
	uint64_t now, pc;
	bool again = false;
	unsigned round;
	int err;

	p = sp__procs_find(&rec->procs, job->pid);
	if (!p || p->state == SP__PROC_EXITED)
		return 0;
	jp = sp__jit_proc_of(rec->procs.jit, p);
	if (!jp)
		return -ENOMEM;
	if (!stopped_in_jit(p, jp, job, &pc))
		return 0;
	now = sp__now_ns();
	/*
	 * A backlog (a poll after a stall, a slow recorder) is unwound in
	 * far less wall time than it took to record: a JIT source mapped
	 * inside it is looked for at once, not SP__JIT_RETRY_NS later, or
	 * the rest of the backlog is unwound without it.
	 */
	if (now - jp->last_refresh_ns >= SP__JIT_RETRY_NS ||
	    sp__jit_modules_unseen(rec->procs.jit, p, jp)) {
		/* A JIT source mapped since the last routine check, first. */
		err = rec->policy->jit_refresh(
			rec, p, now,
			SP__JIT_SCAN | SP__JIT_URGENT |
				(writing ? SP__JIT_WRITING : 0));
		if (err)
			return err;
	}
	/* Learned since the job's snapshot was taken (here or before)? */
	again = jp->dirty || (jp->snap && sp__jit_snap_index(jp->snap)->n &&
			      jp->snap != job->jit);
	for (round = 0; round < INFER_ROUNDS; round++) {
		if (!again && !sp__jit_dump_infer(jp, pc, job->time))
			break;
		unwind_again(rec, p, job);
		again = false;
		jp->jit->st.retries += round == 0;
		if (!stopped_in_jit(p, jp, job, &pc))
			break;
	}
	jp->jit->st.retries_better += user_depth(job) > before;
	return 0;
}

#define POLL_EVERY_NS 10000000ull /* look at the process list at most */

int sp__jit_poll(struct sp_recorder *rec)
{
	struct sp__jit *jit = rec->procs.jit;
	uint64_t now;
	size_t i;
	int err = 0;

	if (!jit)
		return 0;
	now = sp__now_ns();
	if (now - jit->last_poll_ns < POLL_EVERY_NS)
		return 0;
	jit->last_poll_ns = now;
	jit->scan_budget = SP__JIT_SCAN_BUDGET;
	jit->urgent_budget = SP__JIT_URGENT_BUDGET;
	for (i = 0; i < rec->procs.list.len && !err; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);
		struct sp__jit_proc *jp;

		if (p->state != SP__PROC_ALIVE)
			continue;
		jp = sp__jit_proc_of(jit, p);
		if (!jp)
			return -ENOMEM;
		if (now < jp->next_check_ns)
			continue;
		jp->next_check_ns = now + SP__JIT_CHECK_NS;
		err = rec->policy->jit_refresh(rec, p, now, SP__JIT_SCAN);
	}
	return err;
}
