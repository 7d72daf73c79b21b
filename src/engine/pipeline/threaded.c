/* SPDX-License-Identifier: MIT */
/* Threaded mode: reader threads, the sequencer's side, the unwinder pool. */

/*
 * Memory stays bounded everywhere: readers own fixed blocks and queues,
 * the pool a fixed window. The one place records can pile up is the merge
 * queue, between a reader's drain and the watermark that releases it; if
 * a reader starves because its blocks are all held there, the sequencer
 * copies those records into the merge queue's own storage and gives the
 * blocks back, so a reader can always finish the drain that moves the
 * watermark (otherwise both would wait for each other).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "logging.h"
#include "threaded.h"

#define READERS_MAX 8
#define CPUS_PER_READER 16
/*
 * Rings a reader can take at least (a few KiB each): what one machine's
 * CPUs need, and what the replay harness spreads fixtures over to
 * measure many CPUs on few.
 */
#define READER_RINGS_MIN 256u

static unsigned reader_count(const struct sp__pipeline *p)
{
	unsigned n = ((unsigned)p->rings->ncpus + CPUS_PER_READER - 1) /
		     CPUS_PER_READER;

	return n < 1 ? 1 : n > READERS_MAX ? READERS_MAX : n;
}

static int readers_new(struct sp__pipeline *p, struct sp__threaded *t)
{
	size_t cap = (size_t)p->rings->ncpus * 4 + 8;

	if (cap < READER_RINGS_MIN)
		cap = READER_RINGS_MIN;
	unsigned i;
	int err;

	t->nreaders = reader_count(p);
	t->readers = sp__mem_calloc(p->mem, t->nreaders, sizeof(*t->readers));
	t->cover_req = sp__mem_calloc(p->mem, t->nreaders, sizeof(uint64_t));
	t->unusable_seen =
		sp__mem_calloc(p->mem, t->nreaders, sizeof(uint64_t));
	if (!t->readers || !t->cover_req || !t->unusable_seen)
		return -ENOMEM;
	atomic_init(&t->stepped, 0);
	for (i = 0; i < t->nreaders; i++) /* fini of an uninitialised one */
		t->readers[i].epfd = t->readers[i].wakefd = -1;
	for (i = 0; i < t->nreaders; i++) {
		err = sp__reader_init(&t->readers[i], p->mem, cap, t->wakefd,
				      p->clock);
		t->readers[i].stepped = &t->stepped;
		if (!err)
			err = sp__reader_start(&t->readers[i]);
		if (err)
			return err;
	}
	return 0;
}

int sp__threaded_new(struct sp__pipeline *p, unsigned workers)
{
	struct sp__threaded *t;
	int err;

	t = sp__mem_calloc(p->mem, 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	p->threads = t;
	t->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->wakefd < 0)
		return -errno;
	sp__behind_init(p);
	err = readers_new(p, t);
	if (!err)
		err = sp__pool_init(&t->pool, p->mem, p->unwinder, workers,
				    p->job_frames, t->wakefd);
	t->pool.seq_memo = p->memo;
	if (!err)
		sp__behind_enable(p);
	return err;
}

void sp__threaded_free(struct sp__pipeline *p)
{
	struct sp__threaded *t = p->threads;
	unsigned i;

	if (!t)
		return;
	for (i = 0; t->readers && i < t->nreaders; i++)
		sp__reader_stop(&t->readers[i]);
	sp__pool_stop(&t->pool);
	/*
	 * Jobs never written (closed without finish) still hold versions,
	 * and so do those that workers wrote.
	 */
	for (i = 0; t->pool.jobs && i < SP__JOBS; i++)
		if (t->pool.jobs[i].ver || t->pool.jobs[i].jit)
			p->ops->discard(p->ctx, &t->pool.jobs[i]);
	sp__pool_fini(&t->pool);
	for (i = 0; t->readers && i < t->nreaders; i++)
		sp__reader_fini(&t->readers[i]);
	sp__mem_free(p->mem, t->readers, t->nreaders * sizeof(*t->readers));
	sp__mem_free(p->mem, t->cover_req, t->nreaders * sizeof(uint64_t));
	sp__mem_free(p->mem, t->unusable_seen, t->nreaders * sizeof(uint64_t));
	if (t->wakefd >= 0)
		close(t->wakefd);
	sp__mem_free(p->mem, t, sizeof(*t));
	p->threads = NULL;
}

/* Hands rings created since the last step to the readers. */
static void adopt_rings(struct sp__pipeline *p, struct sp__threaded *t)
{
	while (t->rings_given < sp__rings_count(p->rings)) {
		size_t i = t->rings_given++;
		unsigned ri = (unsigned)(i % t->nreaders);

		long long req = sp__reader_add_ring(&t->readers[ri],
						    sp__rings_at(p->rings, i),
						    i, p->rings->sample_type);

		if (req < 0)
			sp__log(p->logger, SP_LOG_WARN,
				"reader %u cannot take ring %zu", ri, i);
		else
			t->cover_req[ri] = (uint64_t)req;
	}
}

static uint64_t watermark(const struct sp__threaded *t)
{
	uint64_t w, min = UINT64_MAX;
	unsigned i;

	for (i = 0; i < t->nreaders; i++) {
		struct sp__reader *r = &t->readers[i];
		uint64_t covered = atomic_load(&r->covered);

		w = atomic_load(&r->watermark);
		if (covered < t->cover_req[i] && w > t->released)
			w = t->released;
		if (w < min)
			min = w;
	}
	return min;
}

static void copied_out(void *owner, const void *ref)
{
	sp__rblock_consume(owner, ref);
}

/*
 * Moves every queued item into the merge queue. @slow: the sequencer had
 * not stepped for a while, so a reader's half-held ring is copied out.
 * @stuck: nothing older than the watermark is left to write, so what a
 * starved reader queued is copied out too (else writing frees it).
 */
static int pull(struct sp__pipeline *p, struct sp__threaded *t, bool slow,
		bool stuck)
{
	struct sp__merge_item it;
	bool starved = false;
	unsigned i;
	int err = 0;

	for (i = 0; i < t->nreaders; i++) {
		struct sp__reader *r = &t->readers[i];
		uint64_t u = atomic_load(&r->unusable);

		p->unusable += u - t->unusable_seen[i];
		t->unusable_seen[i] = u;
		while (!err && sp__spsc_pop(&r->queue, &it)) {
			err = sp__merge_push_ref(&p->merge, &it, i);
			if (err) { /* the record is gone: count it as lost */
				sp__rblock_consume(it.owner, it.ref);
				p->dropped++;
			}
		}
		/*
		 * Pinned: the holds in the merge queue keep its ring full. A
		 * sequencer that polls, but is behind, lets it wait for them
		 * to be written (reader.h: copies would slow it down more).
		 */
		starved |= (stuck && atomic_load(&r->starved)) ||
			   (slow && atomic_load(&r->pinned));
	}
	if (!err && starved) {
		long n = sp__merge_copy_refs(&p->merge, copied_out);

		if (n < 0)
			return (int)n;
		t->copied += (uint64_t)n;
	}
	return err;
}

/*
 * Applies every queued record up to @w (UINT64_MAX: all), publishes the
 * release's last batch of jobs and writes those that are done (@wait:
 * all of them).
 */
static int write_upto(struct sp__pipeline *p, struct sp__threaded *t,
		      uint64_t w, bool wait)
{
	int err = sp__pipeline_release(p, w);

	if (!err && w != UINT64_MAX && w > t->released)
		t->released = w;
	sp__pool_publish(&t->pool);
	return err ? err : sp__threaded_collect(p, wait);
}

static void wait_wake(struct sp__threaded *t, int timeout_ms)
{
	struct pollfd pfd = { .fd = t->wakefd, .events = POLLIN };
	uint64_t v;

	t->wait_calls++;
	if (poll(&pfd, 1, timeout_ms) > 0 && read(t->wakefd, &v, 8) < 0)
		return;
}

/*
 * Every reader drains all its rings once more; records are pulled. A
 * ring can hold more than one drain takes (its reader's holds fill up):
 * meanwhile what is older than the watermark is written, which frees
 * the holds, as a step does. A starved reader's records are copied out
 * only when there is nothing to write: what is held is written soon,
 * and copying it made a finish under overload slower than the kernel's
 * drops it would spare (0.3-0.5 s for 1,600-2,000 samples, page faults
 * mostly). Not @meanwhile (a clock swap): the watermarks may be readings
 * of either clock, so nothing is written before every drain is done.
 */
static int drain_everything(struct sp__pipeline *p, struct sp__threaded *t,
			    bool meanwhile)
{
	uint64_t req[READERS_MAX], w, t0 = sp__clock_read(p->clock);
	unsigned i, done;
	bool busy, idle = false;
	int err;

	for (i = 0; i < t->nreaders; i++)
		req[i] = sp__reader_request(&t->readers[i]);
	for (;;) {
		for (i = 0, done = 0; i < t->nreaders; i++)
			done += atomic_load(&t->readers[i].drain_ack) >= req[i];
		w = watermark(t); /* before pulling: all older is queued */
		/* Jobs in flight hold ring space too: written, they free it. */
		busy = w > t->released || sp__pool_inflight(&t->pool);
		/*
		 * Idle twice in a row: a reader starved just as its last
		 * jobs were written (by workers) was poked, and wakes.
		 */
		err = pull(p, t, false, !meanwhile || (!busy && idle));
		idle = !busy;
		if (err)
			return err;
		if (done == t->nreaders) {
			/* Everything up to t0 is queued now. */
			if (t0 > t->released)
				t->released = t0;
			return 0;
		}
		if (meanwhile && busy) {
			err = write_upto(p, t, w, false);
			if (err)
				return err;
		}
		wait_wake(t, SP__READER_TICK_MS);
	}
}

int sp__threaded_set_clock(struct sp__pipeline *p)
{
	struct sp__threaded *t = p->threads;
	unsigned i;
	int err;

	for (i = 0; i < t->nreaders; i++)
		atomic_store(&t->readers[i].clock, p->clock);
	/*
	 * Readings of the old clock (watermarks, the last step's end) mean
	 * nothing now: as before the first step.
	 */
	err = drain_everything(p, t, false);
	t->released = 0;
	atomic_store(&t->stepped, 0);
	return err;
}

int sp__threaded_step(struct sp__pipeline *p, bool all)
{
	struct sp__threaded *t = p->threads;
	uint64_t w, now = sp__clock_read(p->clock);
	bool slow = sp__seq_slow(atomic_load(&t->stepped), now);
	int err;

	atomic_store(&t->stepped, UINT64_MAX); /* in a step: not slow */
	sp__pool_disarm(&t->pool); /* awake: the workers need not wake us */
	sp__behind_disarm(t);
	adopt_rings(p, t);
	if (all) {
		err = drain_everything(p, t, true);
		w = UINT64_MAX;
	} else {
		w = watermark(t); /* before pulling: all older is queued */
		err = pull(p, t, slow, true);
	}
	if (!err)
		err = write_upto(p, t, w, all);
	atomic_store(&t->stepped, sp__clock_read(p->clock));
	return err;
}

/* Writes done jobs from the head (@wait: all); the lock is held. */
static int write_done(struct sp__pipeline *p, bool wait)
{
	struct sp__threaded *t = p->threads;
	struct sp__pool *pool = &t->pool;
	struct sp__job *job;
	bool wrote = false;
	unsigned i;
	int err = 0;

	while ((job = sp__pool_head(pool, wait))) {
		err = p->ops->write(p->ctx, job);
		if (err)
			break; /* the job stays at the head: retried */
		/* Counted once written: the write may have unwound it again. */
		sp__pipeline_count(p, job);
		if (job->block)
			sp__rblock_consume(job->block, job->s);
		sp__pool_pop(pool);
		wrote = true;
	}
	for (i = 0; wrote && i < t->nreaders; i++)
		sp__reader_poke(&t->readers[i]); /* held ring space is free */
	if (!err) /* what a worker left to the sequencer is written */
		atomic_store(&t->wstop, false);
	return err;
}

/*
 * Write-behind: whether the sequencer writes the head itself: a worker
 * left it (@wstop), or it is a job a worker would refuse, done at the
 * head, where no worker that finishes a job comes by (a copied one).
 */
static bool seq_writes(struct sp__threaded *t)
{
	const struct sp__job *head = sp__pool_head_done(&t->pool);

	return atomic_load(&t->wstop) || (head && !head->block);
}

int sp__threaded_collect(struct sp__pipeline *p, bool wait)
{
	struct sp__threaded *t = p->threads;
	int err;

	/* Workers write what is done (and look at the head after). */
	if (!wait && p->ops->write_off && !seq_writes(t))
		return 0;
	/* Taken: a worker writes, and looks at the head again after. */
	if (!sp__behind_lock(t, wait))
		return 0;
	err = write_done(p, wait);
	sp__behind_unlock(p);
	return err;
}

int sp__threaded_job(struct sp__pipeline *p, struct sp__job **out)
{
	struct sp__threaded *t = p->threads;
	struct sp__pool *pool = &t->pool;
	struct sp__job *job;
	int err = 0;

	while (sp__pool_full(pool)) {
		if (p->ops->write_off && !seq_writes(t)) {
			/* The workers write: sleep until a batch is out. */
			sp__pool_publish(pool);
			sp__behind_wait_batch(t);
			continue;
		}
		sp__behind_lock(t, true); /* then nobody else pops */
		if (sp__pool_full(pool))
			sp__pool_head(pool, true);
		err = write_done(p, false);
		sp__behind_unlock(p);
		if (err)
			return err;
	}
	/* A worker's write left the slot's references (ops->write_off). */
	job = sp__pool_next(pool);
	if (job->ver || job->jit)
		p->ops->discard(p->ctx, job);
	*out = sp__pool_reserve(pool);
	return 0;
}

int sp__threaded_submit(struct sp__pipeline *p, struct sp__job *job)
{
	struct sp__threaded *t = p->threads;

	/*
	 * A detached job (off-CPU bookkeeping) holds nothing of the record
	 * being applied, so it never takes that record's reader block.
	 */
	if (p->cur_owner && !job->detached) { /* in a reader block */
		job->block = p->cur_owner;
		p->owner_taken = true;
		sp__pool_dispatch(&t->pool);
		t->jobs++;
	} else { /* copied into the merge queue, which moves: unwind now */
		sp__pool_dispatch_done(&t->pool);
		t->jobs_inline++;
	}
	return 0;
}

bool sp__threaded_head_done(const struct sp__pipeline *p)
{
	return sp__pool_head_ready(&p->threads->pool);
}

bool sp__threaded_ready(const struct sp__pipeline *p)
{
	const struct sp__threaded *t = p->threads;
	unsigned i;

	/*
	 * A ring no reader drains yet (an attach, a new CPU): the step
	 * hands it over. Waiting first left a new recording's rings
	 * undrained for the whole poll timeout (at 10 kHz and a 100 ms
	 * poll the kernel dropped about 1,000 samples of the first ones).
	 */
	if (t->rings_given < sp__rings_count(p->rings))
		return true;
	/* Workers write what is done, unless one left it to the sequencer. */
	if (sp__threaded_head_done(p) &&
	    (!p->ops->write_off || atomic_load(&t->wstop)))
		return true;
	for (i = 0; i < t->nreaders; i++)
		if (!sp__spsc_empty(&t->readers[i].queue))
			return true;
	return false;
}

bool sp__threaded_pending(const struct sp__pipeline *p)
{
	const struct sp__threaded *t = p->threads;
	unsigned i;

	if (sp__pool_inflight(&t->pool) ||
	    t->rings_given < sp__rings_count(p->rings))
		return true;
	for (i = 0; i < t->nreaders; i++) {
		struct sp__reader *r = &t->readers[i];

		if (!sp__spsc_empty(&r->queue) || sp__reader_has_unread(r))
			return true;
	}
	return false;
}
