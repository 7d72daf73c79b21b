/* SPDX-License-Identifier: MIT */
/* The recording pipeline: rings -> ordered records -> unwound jobs. */

/*
 * The entry points of both modes, and inline mode itself: its drain reads
 * every ring in place (drain.c), its release hands records to the owner,
 * and each ring goes back to the kernel up to its oldest record still
 * queued (a sample's stack is read from the ring when it is released, so
 * it must not be overwritten before). Threaded mode is threaded.c.
 */
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>

#include "logging.h"
#include "pipeline.h"
#include "threaded.h"
#include "unwind_jit.h"

int sp__pipeline_new(const struct sp__pipeline_cfg *cfg,
		     struct sp__pipeline **out)
{
	struct sp__pipeline *p = sp__mem_calloc(cfg->mem, 1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->mem = cfg->mem;
	p->logger = cfg->logger;
	p->unwinder = cfg->unwinder;
	p->rings = cfg->rings;
	p->ops = cfg->ops;
	p->ctx = cfg->ctx;
	p->job_frames = cfg->job_frames;
	p->clock = &sp__clock_monotonic;
	sp__merge_init(&p->merge, p->mem);
	p->scratch = sp__mem_alloc(p->mem, SP__RING_RECORD_MAX);
	p->job = sp__mem_calloc_aligned(p->mem, 1, sizeof(*p->job),
					_Alignof(struct sp__job));
	if (p->job) {
		p->job->cap = p->job_frames;
		p->job->frames = sp__mem_calloc(p->mem, p->job_frames,
						sizeof(*p->job->frames));
	}
	err = p->scratch && p->job && p->job->frames ? 0 : -ENOMEM;
	if (!err)
		err = sp__walk_memo_new(p->mem, &p->memo);
	if (!err && cfg->workers)
		err = sp__threaded_new(p, cfg->workers);
	if (err) {
		sp__pipeline_free(p);
		return err;
	}
	/* Counted when written, as in threaded mode: a write may unwind again. */
	p->job->stats = &p->job->own;
	*out = p;
	return 0;
}

void sp__pipeline_free(struct sp__pipeline *p)
{
	if (!p)
		return;
	sp__threaded_free(p); /* threads first: they read rings and maps */
	sp__merge_fini(&p->merge);
	sp__walk_memo_free(p->memo);
	if (p->scratch)
		sp__mem_free(p->mem, p->scratch, SP__RING_RECORD_MAX);
	if (p->job) {
		sp__mem_free(p->mem, p->job->frames,
			     p->job->cap * sizeof(*p->job->frames));
		sp__mem_free(p->mem, p->job, sizeof(*p->job));
	}
	sp__mem_free(p->mem, p, sizeof(*p));
}

static int push_copy(void *ctx, const struct sp__merge_item *it,
		     const struct sp__span *spans, size_t n)
{
	struct sp__pipeline *p = ctx;

	return sp__merge_push(&p->merge, it, spans, n);
}

/* Inline mode: every ring into the merge queue, samples left in place. */
static int drain(struct sp__pipeline *p)
{
	struct sp__drain d = { .sample_type = p->rings->sample_type,
			       .push = push_copy,
			       .ctx = p,
			       .in_place = true,
			       .hold_until =
				       sp__clock_read(p->clock) + SP__HOLD_NS,
			       .tap = p->tap,
			       .tap_ctx = p->tap_ctx };
	size_t i;
	long n;

	for (i = 0; i < sp__rings_count(p->rings); i++) {
		struct sp__ring *ring = sp__rings_at(p->rings, i);

		d.ring_index = i;
		d.ring_seq = &ring->seq;
		n = sp__drain_ring(&d, ring, p->scratch);
		if (n == SP_ECORRUPT)
			sp__log(p->logger, SP_LOG_WARN,
				"corrupt perf ring record; ring skipped ahead");
		if (d.err)
			return d.err;
	}
	p->unusable += d.unusable; /* seen, but unusable */
	return 0;
}

static int release_one(void *ctx, const struct sp__merge_item *it,
		       const void *data)
{
	struct sp__pipeline *p = ctx;
	int err;

	p->cur_owner = it->owner;
	p->owner_taken = false;
	err = p->ops->apply(p->ctx, it->type, data, it->len);
	if (!err && it->owner && !p->owner_taken)
		sp__rblock_consume(it->owner, data);
	p->cur_owner = NULL;
	return err;
}

/* Inline mode: each ring back to the kernel up to its oldest queued. */
static void consume_rings(struct sp__pipeline *p)
{
	size_t nrings = sp__rings_count(p->rings), i;

	for (i = 0; i < nrings; i++) {
		struct sp__ring *ring = sp__rings_at(p->rings, i);
		uint64_t hold = sp__merge_min_pos(&p->merge, i);

		ring->hold = hold; /* SP__NO_HOLD (UINT64_MAX): nothing held */
		sp__ring_consume(ring, hold);
	}
}

int sp__pipeline_release(struct sp__pipeline *p, uint64_t watermark)
{
	int err = sp__merge_release(&p->merge, watermark, release_one, p);

	if (!p->threads)
		consume_rings(p);
	return err;
}

int sp__pipeline_step(struct sp__pipeline *p, uint64_t upto)
{
	int err;

	if (p->threads)
		return sp__threaded_step(p, upto == UINT64_MAX);
	err = drain(p);
	if (!err)
		err = sp__pipeline_release(p, upto);
	if (!err && upto > p->released)
		p->released = upto;
	return err;
}

bool sp__pipeline_ready(const struct sp__pipeline *p)
{
	if (p->threads)
		return sp__threaded_ready(p);
	return sp__rings_have_unread(p->rings) ||
	       sp__merge_count(&p->merge) != 0;
}

bool sp__pipeline_pending(const struct sp__pipeline *p)
{
	if (sp__merge_count(&p->merge))
		return true;
	if (p->threads)
		return sp__threaded_pending(p);
	return sp__rings_have_unread(p->rings);
}

int sp__pipeline_timeout(struct sp__pipeline *p, int timeout_ms)
{
	if (!p->threads || !sp__pool_inflight(&p->threads->pool))
		return timeout_ms;
	if (p->ops->write_off) {
		/* Workers write: the one that writes the last job wakes us. */
		if (sp__behind_arm(p->threads))
			return 0;
	} else if (sp__pool_arm(&p->threads->pool)) {
		/* The worker finishing the next batch writes the wake fd. */
		return 0;
	}
	/* A safety net only: that wake is never lost. */
	if (timeout_ms < 0 || timeout_ms > SP__READER_TICK_MS)
		return SP__READER_TICK_MS;
	return timeout_ms;
}

int sp__pipeline_wake_fd(const struct sp__pipeline *p)
{
	return p->threads ? p->threads->wakefd : -1;
}

bool sp__pipeline_has_records(const struct sp__pipeline *p, int32_t pid,
			      uint64_t seen_ns)
{
	uint64_t released = p->threads ? p->threads->released : p->released;

	/*
	 * The last records before @seen_ns may still sit in a ring (or a
	 * reader): a recorder behind by seconds has that much in its rings.
	 * They are all applied once the released watermark passed it.
	 */
	if (seen_ns >= released)
		return true;
	return sp__merge_has_pid(&p->merge, pid);
}

int sp__pipeline_sync(void *p)
{
	struct sp__pipeline *pipe = p;

	/* Inside a write (a JIT retry): the writer is this thread's. */
	if (!pipe->threads || pipe->threads->holds)
		return 0;
	return sp__threaded_collect(pipe, true);
}

int sp__pipeline_set_clock(struct sp__pipeline *p,
			   const struct sp__clock *clock)
{
	p->clock = clock;
	p->released = 0; /* a watermark of the old clock means nothing now */
	return p->threads ? sp__threaded_set_clock(p) : 0;
}

int sp__pipeline_set_tap(struct sp__pipeline *p,
			 void (*tap)(void *ctx, size_t ring, const void *rec,
				     size_t len),
			 void *ctx)
{
	if (p->threads && tap)
		return -EINVAL; /* readers do not tap */
	p->tap = tap;
	p->tap_ctx = ctx;
	return 0;
}

void sp__pipeline_kick(struct sp__pipeline *p)
{
	unsigned i;

	for (i = 0; p->threads && i < p->threads->nreaders; i++)
		sp__reader_request(&p->threads->readers[i]);
}

bool sp__pipeline_caught_up(const struct sp__pipeline *p, uint64_t t)
{
	if (!p->threads)
		return !sp__pipeline_pending(p);
	return p->threads->released >= t && !sp__threaded_ready(p) &&
	       !sp__threaded_head_done(p) && sp__merge_count(&p->merge) == 0;
}

void sp__pipeline_syscalls(const struct sp__pipeline *p,
			   struct sp__pipeline_syscalls *out)
{
	const struct sp__threaded *t = p->threads;
	unsigned i;

	memset(out, 0, sizeof(*out));
	if (!t)
		return;
	out->futex = atomic_load(&t->pool.futex_calls);
	out->eventfd = t->wait_calls;
	for (i = 0; i < t->nreaders; i++)
		out->eventfd += atomic_load(&t->readers[i].wake_calls);
}

void sp__pipeline_stats(const struct sp__pipeline *p,
			struct sp_pipeline_stats *st)
{
	const struct sp__threaded *t = p->threads;
	unsigned i;

	if (!t)
		return;
	st->readers = t->nreaders;
	st->workers = t->pool.nthreads;
	for (i = 0; i < t->nreaders; i++)
		st->reader_stalls += atomic_load(&t->readers[i].stalls);
	st->records_copied = t->copied;
	st->jobs = t->jobs;
	st->jobs_inline = t->jobs_inline;
	st->jobs_written_by_workers = atomic_load(&t->written_behind);
}
