/* SPDX-License-Identifier: MIT */
/* The unwinder pool: a window of sample jobs unwound by worker threads. */

/*
 * Wake-ups go by batch and cost a system call only when the other side
 * sleeps: a worker announces itself in @sleepers before it re-checks and
 * sleeps, the sequencer publishes a batch, bumps @pub_word and wakes as
 * many workers as the batch needs, in one call, only if someone
 * announced itself. Completion works the same way with @seq_wait: the
 * sequencer names the job at the end of the batch it waits for, and only
 * that job's worker wakes it. Nothing spins: an idle pool is asleep.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool.h"
#include "qsample.h"
#include "stack_hash.h"
#include "unwind_jit.h"

#define NO_WAIT UINT64_MAX

void sp__pool_wake_fd(struct sp__pool *p)
{
	uint64_t one = 1;

	if (write(p->wake_fd, &one, sizeof(one)) < 0)
		return; /* full: the sequencer is awake anyway */
}

void sp__pool_futex_wait(struct sp__pool *p, _Atomic uint32_t *word,
			 uint32_t seen)
{
	atomic_fetch_add_explicit(&p->futex_calls, 1, memory_order_relaxed);
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

void sp__pool_futex_wake(struct sp__pool *p, _Atomic uint32_t *word, int n)
{
	atomic_fetch_add_explicit(&p->futex_calls, 1, memory_order_relaxed);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static bool job_done(const struct sp__pool *p, uint64_t pos)
{
	return atomic_load(&p->jobs[pos & (SP__JOBS - 1)].done) != 0;
}

/* The job the sequencer waits for: the end of the next batch, or the last. */
static uint64_t wait_target(const struct sp__pool *p)
{
	uint64_t head = atomic_load(&p->head);
	uint64_t end = head + SP__POOL_BATCH - 1;

	if (end >= p->tail)
		end = p->tail - 1;
	/* Finished early, out of order: then the head itself. */
	return job_done(p, end) ? head : end;
}

/* Whether any error or fallback was counted (most unwinds count none). */
static bool stats_rare(const struct sp_unwind_stats *st)
{
	uint64_t any = 0;
	size_t i;

	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		any |= st->errors[i];
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		any |= st->fallbacks[i];
	return any != 0;
}

void sp__job_unwind(struct sp_unwinder *unwinder, struct sp__walk_memo *memo,
		    struct sp__job *job)
{
	const struct sp__qsample *s = job->s;
	const unsigned char *stack = sp__qsample_stack(s);
	uint64_t sp = 0, tail;
	int n = 0;

	sp_regs_get(&s->regs, SP_REG_SP, &sp); /* checked by user_prepare */
	if (job->unwind)
		n = sp__unwinder_unwind_jit(
			unwinder, &s->regs, stack, (size_t)s->stack_len, sp,
			job->maps, job->nmaps, job->jit_index, job->time, memo,
			job->tid, job->maps_gen, job->frames + job->nk,
			job->cap - job->nk, job->stats);
	job->n = job->nk + (n > 0 ? (uint32_t)n : 0);
	job->stats_rare = stats_rare(job->stats);
	/*
	 * The writer's memo key, while the frames are in this cache; a walk
	 * that reused the walk memo's outer frames has their hash state
	 * there (the kernel frames come first, in front of the user leaf).
	 */
	job->hashed = job->n;
	if (n > 0 && sp__walk_memo_tail(memo, (size_t)n, &tail))
		sp__stack_hash_resume(job->frames, job->nk + 1, tail,
				      job->hash);
	else if (job->n)
		sp__stack_hash(job->frames, job->n, job->hash);
}

/*
 * Unwinds the @n jobs claimed from @claim on, then looks once whether
 * the sequencer waits for one of them: done is stored with release
 * semantics, job by job, and a single fence per claim orders them all
 * before the look at @seq_wait (it pairs with the sequencer's store of
 * @seq_wait and its look at done), not one fence per job: the fence
 * waits for the job's lines to leave this CPU, which costs a
 * cross-core round trip on every job when it comes after each.
 */
static void run(struct sp__pool *p, struct sp__walk_memo *memo, uint64_t claim,
		uint64_t n)
{
	uint64_t pos[SP__POOL_CLAIM], i, w;

	/* Read before a job is done: then its entry can be listed again. */
	for (i = 0; i < n; i++)
		pos[i] = p->work[(claim + i) & (SP__JOBS - 1)];
	for (i = 0; i < n; i++) {
		struct sp__job *job = &p->jobs[pos[i] & (SP__JOBS - 1)];

		sp__job_unwind(p->unwinder, memo, job);
		atomic_store_explicit(&job->done, 1, memory_order_release);
	}
	atomic_thread_fence(memory_order_seq_cst);
	w = atomic_load(&p->seq_wait);
	for (i = 0; w != NO_WAIT && i < n; i++) {
		if (w >> 1 != pos[i])
			continue;
		if (w & 1) {
			sp__pool_wake_fd(p);
		} else {
			atomic_fetch_add(&p->done_word, 1);
			sp__pool_futex_wake(p, &p->done_word, 1);
		}
		break;
	}
	if (p->on_done)
		p->on_done(p->on_done_ctx);
}

/*
 * How many of the @avail published jobs a worker claims at once: its
 * share of them, at most SP__POOL_CLAIM, so that one claim (a write to
 * a line every worker writes) serves several jobs and the workers still
 * split a batch between them.
 */
static uint64_t claim_size(const struct sp__pool *p, uint64_t avail)
{
	uint64_t share = (avail + p->nthreads - 1) / p->nthreads;

	return share < SP__POOL_CLAIM ? share : SP__POOL_CLAIM;
}

static void *worker_main(void *arg)
{
	struct sp__pool *p = arg;
	struct sp__walk_memo *memo =
		p->memos[atomic_fetch_add(&p->next_worker, 1)];

	for (;;) {
		uint32_t seen = atomic_load(&p->pub_word);
		uint64_t c = atomic_load(&p->claimed);
		uint64_t pub = atomic_load(&p->published), n;

		if (c < pub) {
			n = claim_size(p, pub - c);
			if (atomic_compare_exchange_weak(&p->claimed, &c,
							 c + n))
				run(p, memo, c, n);
			continue;
		}
		if (atomic_load(&p->stop))
			break;
		atomic_fetch_add(&p->sleepers, 1);
		if (atomic_load(&p->pub_word) == seen && !atomic_load(&p->stop))
			sp__pool_futex_wait(p, &p->pub_word, seen);
		atomic_fetch_sub(&p->sleepers, 1);
	}
	return NULL;
}

int sp__pool_init(struct sp__pool *p, const struct sp__mem *mem,
		  struct sp_unwinder *unwinder, unsigned nthreads,
		  size_t job_frames, int wake_fd)
{
	unsigned i;
	int err;

	memset(p, 0, sizeof(*p));
	atomic_init(&p->seq_wait, NO_WAIT);
	p->wake_fd = wake_fd;
	p->mem = mem;
	p->unwinder = unwinder;
	p->nthreads = nthreads;
	p->job_frames = job_frames;
	p->jobs = sp__mem_calloc_aligned(mem, SP__JOBS, sizeof(*p->jobs),
					 _Alignof(struct sp__job));
	p->frames =
		sp__mem_calloc(mem, SP__JOBS * job_frames, sizeof(*p->frames));
	p->work = sp__mem_calloc(mem, SP__JOBS, sizeof(*p->work));
	p->threads = sp__mem_calloc(mem, nthreads, sizeof(*p->threads));
	p->memos = sp__mem_calloc(mem, nthreads, sizeof(*p->memos));
	if (!p->jobs || !p->frames || !p->work || !p->threads || !p->memos)
		return -ENOMEM;
	for (i = 0; i < nthreads; i++)
		if (sp__walk_memo_new(mem, &p->memos[i]))
			return -ENOMEM;
	for (i = 0; i < SP__JOBS; i++) {
		p->jobs[i].frames = p->frames + i * job_frames;
		p->jobs[i].cap = job_frames;
	}
	for (i = 0; i < nthreads; i++) {
		err = pthread_create(&p->threads[i], NULL, worker_main, p);
		if (err)
			return -err;
		pthread_setname_np(p->threads[i], "sp-unwind"); /* top, ps */
		p->started++;
	}
	return 0;
}

void sp__pool_stop(struct sp__pool *p)
{
	unsigned i;

	atomic_store(&p->stop, true);
	atomic_fetch_add(&p->pub_word, 1);
	sp__pool_futex_wake(p, &p->pub_word, (int)p->started);
	for (i = 0; i < p->started; i++)
		pthread_join(p->threads[i], NULL);
	p->started = 0;
}

void sp__pool_fini(struct sp__pool *p)
{
	unsigned i;

	sp__pool_stop(p);
	if (p->jobs)
		sp__mem_free(p->mem, p->jobs, SP__JOBS * sizeof(*p->jobs));
	if (p->frames)
		sp__mem_free(p->mem, p->frames,
			     SP__JOBS * p->job_frames * sizeof(*p->frames));
	if (p->work)
		sp__mem_free(p->mem, p->work, SP__JOBS * sizeof(*p->work));
	if (p->threads)
		sp__mem_free(p->mem, p->threads,
			     p->nthreads * sizeof(*p->threads));
	for (i = 0; p->memos && i < p->nthreads; i++)
		sp__walk_memo_free(p->memos[i]);
	if (p->memos)
		sp__mem_free(p->mem, p->memos, p->nthreads * sizeof(*p->memos));
	memset(p, 0, sizeof(*p));
}

void sp__pool_publish(struct sp__pool *p)
{
	uint64_t pub =
		atomic_load_explicit(&p->published, memory_order_relaxed);
	uint32_t sleeping;
	uint64_t n;

	if (p->listed == pub)
		return;
	atomic_store(&p->published, p->listed);
	atomic_fetch_add(&p->pub_word, 1);
	sleeping = atomic_load(&p->sleepers);
	if (!sleeping)
		return;
	n = (p->listed - pub + SP__POOL_PER_WORKER - 1) / SP__POOL_PER_WORKER;
	sp__pool_futex_wake(p, &p->pub_word,
			    n < sleeping ? (int)n : (int)sleeping);
}

void sp__pool_dispatch_done(struct sp__pool *p)
{
	struct sp__job *job = &p->jobs[p->tail & (SP__JOBS - 1)];

	sp__job_unwind(p->unwinder, p->seq_memo, job);
	p->tail++;		     /* never listed for the workers */
	atomic_store(&job->done, 1); /* in the window first: a writer pops it */
}

struct sp__job *sp__pool_head(struct sp__pool *p, bool wait)
{
	struct sp__job *job;
	uint64_t target;
	uint32_t seen;

	job = sp__pool_head_done(p);
	if (job || !wait || atomic_load(&p->head) == p->tail)
		return job;
	job = &p->jobs[atomic_load(&p->head) & (SP__JOBS - 1)];
	sp__pool_publish(p);
	while (!atomic_load(&job->done)) {
		target = wait_target(p);
		seen = atomic_load(&p->done_word);
		atomic_store(&p->seq_wait, target << 1);
		if (!job_done(p, target))
			sp__pool_futex_wait(p, &p->done_word, seen);
		atomic_store(&p->seq_wait, NO_WAIT);
	}
	return job;
}

void sp__pool_pop(struct sp__pool *p)
{
	uint64_t head = atomic_load_explicit(&p->head, memory_order_relaxed);

	/* Not done: a slot at the head is done only once its job is. */
	atomic_store_explicit(&p->jobs[head & (SP__JOBS - 1)].done, 0,
			      memory_order_relaxed);
	atomic_store(&p->head, head + 1);
}

bool sp__pool_arm(struct sp__pool *p)
{
	uint64_t target;

	if (atomic_load(&p->head) == p->tail)
		return false;
	sp__pool_publish(p);
	target = wait_target(p);
	atomic_store(&p->seq_wait, target << 1 | 1);
	return job_done(p, target) || job_done(p, atomic_load(&p->head));
}

void sp__pool_disarm(struct sp__pool *p)
{
	atomic_store(&p->seq_wait, NO_WAIT);
}
