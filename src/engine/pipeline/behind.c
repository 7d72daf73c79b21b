/* SPDX-License-Identifier: MIT */
/* Write-behind: workers write the done jobs at the head of the window. */

/*
 * Whoever holds the writer lock writes, always from the head of the
 * window and in its order, so the spool is inline mode's. A worker that
 * marked a job done takes the lock if it is free and the head is done;
 * one that finds it taken leaves the job to the holder, which looks at
 * the head again once it let go. Both sides fence between their write
 * and their look (done then lock, unlock then done), so one of the two
 * always sees the other: no done job waits for a later one to be
 * written. The sequencer writes too (a sync, a flush, a full window),
 * and every job a worker refuses (ops->write_off); until it has, the
 * workers leave the head alone (@wstop) and the sequencer is woken.
 */
#include "threaded.h"

void sp__behind_init(struct sp__pipeline *p)
{
	struct sp__threaded *t = p->threads;

	atomic_init(&t->wlock, 0);
	atomic_init(&t->wstop, false);
	atomic_init(&t->written_behind, 0);
	atomic_init(&t->wake_at, UINT64_MAX);
	atomic_init(&t->written_word, 0);
}

/*
 * The writer lock, a futex word: a worker only ever tries it, and only
 * the sequencer sleeps on it (a sync, a flush, a full window), for as
 * long as a worker takes to write what was done.
 */
static bool wl_trylock(struct sp__threaded *t)
{
	uint32_t c = 0;

	return atomic_compare_exchange_strong_explicit(
		&t->wlock, &c, 1, memory_order_acquire, memory_order_relaxed);
}

static void wl_lock(struct sp__threaded *t)
{
	uint32_t c = 0;

	if (atomic_compare_exchange_strong(&t->wlock, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&t->wlock, 2);
	while (c != 0) {
		sp__pool_futex_wait(&t->pool, &t->wlock, 2);
		c = atomic_exchange(&t->wlock, 2);
	}
}

static void wl_unlock(struct sp__threaded *t)
{
	if (atomic_exchange_explicit(&t->wlock, 0, memory_order_release) == 2)
		sp__pool_futex_wake(&t->pool, &t->wlock, 1);
}

/* Writes done jobs from the head while ops->write_off takes them. */
static bool write_off_run(struct sp__pipeline *p, struct sp__threaded *t,
			  uint64_t *written)
{
	struct sp__pool *pool = &t->pool;
	struct sp__job *job;

	while ((job = sp__pool_head_done(pool))) {
		if (p->ops->write_off(p->ctx, job))
			return false; /* the sequencer's */
		sp__pipeline_count(p, job);
		if (job->block)
			sp__rblock_consume(job->block, job->s);
		sp__pool_pop(pool);
		(*written)++;
	}
	return true;
}

/*
 * Wakes the sequencer if it sleeps until the head passes what it named
 * (sp__behind_arm), or, @stopped, whatever it waits for: the way it
 * asked, the eventfd of its epoll or the futex of a full window.
 */
static void wake_sequencer(struct sp__threaded *t, bool stopped)
{
	uint64_t at = atomic_load(&t->wake_at);

	if (at == UINT64_MAX) {
		if (stopped)
			sp__pool_wake_fd(&t->pool); /* it did not arm */
		return;
	}
	if (!stopped && atomic_load(&t->pool.head) < at >> 1)
		return;
	if (!atomic_compare_exchange_strong(&t->wake_at, &at, UINT64_MAX))
		return; /* someone else woke it */
	if (at & 1) {
		sp__pool_wake_fd(&t->pool);
	} else {
		atomic_fetch_add(&t->written_word, 1);
		sp__pool_futex_wake(&t->pool, &t->written_word, 1);
	}
}

/* Writes what is done at the head unless someone else does (any thread). */
static void behind_try(struct sp__pipeline *p)
{
	struct sp__threaded *t = p->threads;
	uint64_t n;
	unsigned i;
	bool ok;

	for (;;) {
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load(&t->wstop) || !sp__pool_head_done(&t->pool) ||
		    !wl_trylock(t))
			return;
		n = 0;
		ok = write_off_run(p, t, &n);
		if (!ok)
			atomic_store(&t->wstop, true);
		atomic_store_explicit(
			&t->written_behind,
			atomic_load_explicit(&t->written_behind,
					     memory_order_relaxed) +
				n,
			memory_order_relaxed);
		wl_unlock(t);
		for (i = 0; n && i < t->nreaders; i++)
			sp__reader_poke(
				&t->readers[i]); /* ring space is free */
		if (!ok || n)
			wake_sequencer(t, !ok);
		if (!ok)
			return;
	}
}

/* The pool's on_done: a worker finished a job. */
static void behind_on_done(void *ctx)
{
	behind_try(ctx);
}

void sp__behind_enable(struct sp__pipeline *p)
{
	if (p->ops->write_off) {
		p->threads->pool.on_done_ctx = p;
		p->threads->pool.on_done = behind_on_done;
	}
}

/* Names @at (@by_fd: the eventfd); whether not to sleep after all. */
static bool arm_at(struct sp__threaded *t, uint64_t at, bool by_fd)
{
	if (atomic_load(&t->wstop))
		return true;
	atomic_store(&t->wake_at, at << 1 | by_fd);
	/* Popped before the store was seen: that writer did not wake us. */
	return atomic_load(&t->pool.head) >= at || atomic_load(&t->wstop);
}

bool sp__behind_arm(struct sp__threaded *t)
{
	return arm_at(t, t->pool.tail, true);
}

void sp__behind_wait_batch(struct sp__threaded *t)
{
	uint64_t at = atomic_load(&t->pool.head) + SP__POOL_BATCH;
	uint32_t seen = atomic_load(&t->written_word);

	/*
	 * A futex of its own: the readers' notes on the eventfd would wake
	 * the sequencer for nothing (eight readers: most wake-ups).
	 */
	if (!arm_at(t, at < t->pool.tail ? at : t->pool.tail, false))
		sp__pool_futex_wait(&t->pool, &t->written_word, seen);
	sp__behind_disarm(t);
}

void sp__behind_disarm(struct sp__threaded *t)
{
	atomic_store(&t->wake_at, UINT64_MAX);
}

bool sp__behind_lock(struct sp__threaded *t, bool wait)
{
	if (t->holds)
		; /* held already, by a caller further up */
	else if (wait)
		wl_lock(t);
	else if (!wl_trylock(t))
		return false;
	t->holds++;
	return true;
}

void sp__behind_unlock(struct sp__pipeline *p)
{
	struct sp__threaded *t = p->threads;

	if (--t->holds)
		return;
	wl_unlock(t);
	if (p->ops->write_off)
		behind_try(p);
}

void sp__pipeline_writes_hold(struct sp__pipeline *p)
{
	if (p && p->threads)
		sp__behind_lock(p->threads, true);
}

void sp__pipeline_writes_let_go(struct sp__pipeline *p)
{
	if (p && p->threads)
		sp__behind_unlock(p);
}
