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

#include "jit_track.h"
#include "logging.h"
#include "mver.h"
#include "opts.h"
#include "pipeline.h"
#include "recorder_internal.h"

#define READERS_MAX 8
#define CPUS_PER_READER 16

static unsigned reader_count(const struct sp_recorder *rec)
{
	unsigned n =
		((unsigned)rec->ncpus + CPUS_PER_READER - 1) / CPUS_PER_READER;

	return n < 1 ? 1 : n > READERS_MAX ? READERS_MAX : n;
}

static int readers_new(struct sp_recorder *rec, struct sp__pipeline *pipe)
{
	size_t cap = (size_t)rec->ncpus * 4 + 8;
	unsigned i;
	int err;

	pipe->nreaders = reader_count(rec);
	pipe->readers = sp__mem_calloc(&rec->mem, pipe->nreaders,
				       sizeof(*pipe->readers));
	pipe->cover_req =
		sp__mem_calloc(&rec->mem, pipe->nreaders, sizeof(uint64_t));
	pipe->unusable_seen =
		sp__mem_calloc(&rec->mem, pipe->nreaders, sizeof(uint64_t));
	if (!pipe->readers || !pipe->cover_req || !pipe->unusable_seen)
		return -ENOMEM;
	for (i = 0; i < pipe->nreaders; i++) /* fini of an uninitialised one */
		pipe->readers[i].epfd = pipe->readers[i].wakefd = -1;
	for (i = 0; i < pipe->nreaders; i++) {
		err = sp__reader_init(&pipe->readers[i], &rec->mem, cap,
				      pipe->wakefd);
		if (!err)
			err = sp__reader_start(&pipe->readers[i]);
		if (err)
			return err;
	}
	return 0;
}

int sp__pipeline_new(struct sp_recorder *rec, unsigned workers)
{
	struct sp__pipeline *pipe;
	int err;

	pipe = sp__mem_calloc(&rec->mem, 1, sizeof(*pipe));
	if (!pipe)
		return -ENOMEM;
	rec->pipe = pipe;
	pipe->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (pipe->wakefd < 0)
		return -errno;
	err = sp__recorder_ep_add(rec, pipe->wakefd, SP__EP_WAKE);
	if (!err)
		err = readers_new(rec, pipe);
	if (!err)
		err = sp__pool_init(&pipe->pool, &rec->mem, rec->unwinder,
				    workers, rec->job->cap);
	rec->procs.sync = sp__pipeline_sync;
	rec->procs.sync_ctx = rec;
	/* Workers build unwind tables on first use, off the sequencer. */
	rec->procs.lazy_tables = true;
	return err;
}

void sp__pipeline_free(struct sp_recorder *rec)
{
	struct sp__pipeline *pipe = rec->pipe;
	unsigned i;

	if (!pipe)
		return;
	for (i = 0; pipe->readers && i < pipe->nreaders; i++)
		sp__reader_stop(&pipe->readers[i]);
	sp__pool_stop(&pipe->pool);
	/* Jobs never written (closed without finish) still hold versions. */
	for (; pipe->pool.jobs && pipe->pool.head != pipe->pool.tail;
	     sp__pool_pop(&pipe->pool))
		sp__mver_put(
			&rec->mem,
			pipe->pool.jobs[pipe->pool.head & (SP__JOBS - 1)].ver);
	sp__pool_fini(&pipe->pool);
	for (i = 0; pipe->readers && i < pipe->nreaders; i++)
		sp__reader_fini(&pipe->readers[i]);
	sp__mem_free(&rec->mem, pipe->readers,
		     pipe->nreaders * sizeof(*pipe->readers));
	sp__mem_free(&rec->mem, pipe->cover_req,
		     pipe->nreaders * sizeof(uint64_t));
	sp__mem_free(&rec->mem, pipe->unusable_seen,
		     pipe->nreaders * sizeof(uint64_t));
	if (pipe->wakefd >= 0)
		close(pipe->wakefd);
	sp__mem_free(&rec->mem, pipe, sizeof(*pipe));
	rec->pipe = NULL;
	rec->procs.sync = NULL;
}

/* Hands rings created since the last step to the readers. */
static void adopt_rings(struct sp_recorder *rec, struct sp__pipeline *pipe)
{
	while (pipe->rings_given < rec->rings.len) {
		size_t i = pipe->rings_given++;
		unsigned ri = (unsigned)(i % pipe->nreaders);

		long long req = sp__reader_add_ring(&pipe->readers[ri],
						    sp__vec_at(&rec->rings, i),
						    i, rec->sample_type);

		if (req < 0)
			sp__log(rec->logger, SP_LOG_WARN,
				"reader %u cannot take ring %zu", ri, i);
		else
			pipe->cover_req[ri] = (uint64_t)req;
	}
}

static uint64_t watermark(const struct sp__pipeline *pipe)
{
	uint64_t w, min = UINT64_MAX;
	unsigned i;

	for (i = 0; i < pipe->nreaders; i++) {
		struct sp__reader *r = &pipe->readers[i];
		uint64_t ack = atomic_load(&r->drain_ack);

		w = atomic_load(&r->watermark);
		if (ack < pipe->cover_req[i] && w > pipe->released)
			w = pipe->released;
		if (w < min)
			min = w;
	}
	return min;
}

static void copied_out(void *owner)
{
	sp__rblock_consume(owner);
}

/* Moves every queued item into the merge queue. */
static int pull(struct sp_recorder *rec, struct sp__pipeline *pipe)
{
	struct sp__merge_item it;
	bool starved = false;
	unsigned i;
	int err = 0;

	for (i = 0; i < pipe->nreaders; i++) {
		struct sp__reader *r = &pipe->readers[i];
		uint64_t u = atomic_load(&r->unusable);

		rec->sum.sample_events += u - pipe->unusable_seen[i];
		pipe->unusable_seen[i] = u;
		while (!err && sp__spsc_pop(&r->queue, &it)) {
			err = sp__merge_push_ref(&rec->merge, &it);
			if (err) { /* the record is gone: count it as lost */
				sp__rblock_consume(it.owner);
				rec->sum.lost_events++;
			}
		}
		starved |= atomic_load(&r->starved);
	}
	if (!err && starved) {
		long n = sp__merge_copy_refs(&rec->merge, copied_out);

		if (n < 0)
			return (int)n;
		pipe->copied += (uint64_t)n;
	}
	return err;
}

static void wait_wake(struct sp__pipeline *pipe, int timeout_ms)
{
	struct pollfd pfd = { .fd = pipe->wakefd, .events = POLLIN };
	uint64_t v;

	if (poll(&pfd, 1, timeout_ms) > 0 && read(pipe->wakefd, &v, 8) < 0)
		return;
}

/* Every reader drains all its rings once more; records are pulled. */
static int drain_everything(struct sp_recorder *rec, struct sp__pipeline *pipe)
{
	uint64_t req[READERS_MAX], t0 = sp__recorder_clock(rec);
	unsigned i, done;
	int err;

	for (i = 0; i < pipe->nreaders; i++)
		req[i] = sp__reader_request(&pipe->readers[i]);
	for (;;) {
		for (i = 0, done = 0; i < pipe->nreaders; i++)
			done += atomic_load(&pipe->readers[i].drain_ack) >=
				req[i];
		err = pull(rec, pipe);
		if (err)
			return err;
		if (done == pipe->nreaders) {
			/* Everything up to t0 is queued now. */
			if (t0 > pipe->released)
				pipe->released = t0;
			return 0;
		}
		wait_wake(pipe, SP__READER_TICK_MS);
	}
}

int sp__pipeline_set_clock(struct sp_recorder *rec)
{
	struct sp__pipeline *pipe = rec->pipe;
	unsigned i;
	int err;

	for (i = 0; i < pipe->nreaders; i++)
		atomic_store(&pipe->readers[i].vclock, rec->vclock);
	/* Watermarks published from the old clock mean nothing now. */
	err = drain_everything(rec, pipe);
	pipe->released = 0;
	return err;
}

int sp__pipeline_step(struct sp_recorder *rec, bool all)
{
	struct sp__pipeline *pipe = rec->pipe;
	uint64_t w;
	int err;

	adopt_rings(rec, pipe);
	if (all) {
		err = drain_everything(rec, pipe);
		w = UINT64_MAX;
	} else {
		w = watermark(pipe); /* before pulling: all older is queued */
		err = pull(rec, pipe);
	}
	if (!err)
		err = sp__recorder_release(rec, w);
	if (!err && w != UINT64_MAX && w > pipe->released)
		pipe->released = w;
	if (!err)
		err = sp__pipeline_collect(rec, all);
	return err;
}

int sp__pipeline_collect(struct sp_recorder *rec, bool wait)
{
	struct sp__pool *pool = &rec->pipe->pool;
	struct sp__job *job;
	int err;

	while ((job = sp__pool_head(pool, wait))) {
		err = sp__recorder_sample_write(rec, job);
		if (err)
			return err; /* the job stays at the head: retried */
		if (job->block)
			sp__rblock_consume(job->block);
		sp__mver_put(&rec->mem, job->ver);
		sp__jit_snap_put(&rec->mem, job->jit);
		job->jit = NULL;
		sp__pool_pop(pool);
	}
	return 0;
}

int sp__pipeline_sync(void *ctx)
{
	return sp__pipeline_collect(ctx, true);
}

bool sp__pipeline_ready(const struct sp_recorder *rec)
{
	const struct sp__pipeline *pipe = rec->pipe;
	const struct sp__pool *pool = &pipe->pool;
	unsigned i;

	if (pool->head != pool->tail &&
	    atomic_load(&pool->jobs[pool->head & (SP__JOBS - 1)].done))
		return true;
	for (i = 0; i < pipe->nreaders; i++)
		if (!sp__spsc_empty(&pipe->readers[i].queue))
			return true;
	return false;
}

bool sp__pipeline_pending(const struct sp_recorder *rec)
{
	const struct sp__pipeline *pipe = rec->pipe;
	unsigned i;

	if (sp__pool_inflight(&pipe->pool) ||
	    pipe->rings_given < rec->rings.len)
		return true;
	for (i = 0; i < pipe->nreaders; i++) {
		struct sp__reader *r = &pipe->readers[i];
		size_t j, n = atomic_load(&r->nrings);

		if (!sp__spsc_empty(&r->queue))
			return true;
		for (j = 0; j < n; j++)
			if (sp__ring_has_data(&r->rings[j].ring))
				return true;
	}
	return false;
}

int sp_recorder_pipeline_stats(const struct sp_recorder *rec,
			       struct sp_pipeline_stats *out)
{
	const struct sp__pipeline *pipe;
	struct sp_pipeline_stats st;
	size_t size;
	unsigned i;

	/* An output struct's size follows the input rule (src/base/opts.h). */
	if (!rec || !out || !sp__opts_size_ok(out->size))
		return -EINVAL;
	size = out->size < sizeof(st) ? out->size : sizeof(st);
	memset(&st, 0, sizeof(st));
	pipe = rec->pipe;
	if (pipe) {
		st.readers = pipe->nreaders;
		st.workers = pipe->pool.nthreads;
		for (i = 0; i < pipe->nreaders; i++)
			st.reader_stalls +=
				atomic_load(&pipe->readers[i].stalls);
		st.records_copied = pipe->copied;
		st.jobs = pipe->jobs;
		st.jobs_inline = pipe->jobs_inline;
	}
	st.size = out->size; /* a caller's older, smaller struct: its part */
	memcpy(out, &st, size);
	return 0;
}
