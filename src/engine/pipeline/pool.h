/* SPDX-License-Identifier: MIT */
/* The unwinder pool: a window of sample jobs unwound by worker threads. */
#ifndef SP_ENGINE_POOL_H
#define SP_ENGINE_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

#include "cacheline.h"
#include "mem.h"

/* Kernel callchain frames kept per sample (perf caps the chain at 127). */
#define SP__KERNEL_FRAMES 1024u
#define SP__JOBS 128u /* jobs in flight, a power of two */
/*
 * Hand-offs are batched: jobs are published to the workers (and the
 * sequencer waits for completions) this many at a time at most.
 */
#define SP__POOL_BATCH 64u
/* Jobs each woken worker is woken for (more jobs wake more workers). */
#define SP__POOL_PER_WORKER 32u
/* Jobs a worker claims at once at most (pool.c: claim_size). */
#define SP__POOL_CLAIM 8u

struct sp__jit_index;
struct sp__jit_snap;
struct sp__mver;
struct sp__qsample;
struct sp__walk_memo;

/*
 * struct sp__job is one sample between dispatch and write. The sequencer
 * fills it (kernel frames, the module map version, the sample bytes kept
 * alive by @block), a worker appends the user frames and sets @done, and
 * whoever holds the writer lock (threaded.h: a worker, or the sequencer)
 * writes jobs strictly in dispatch order, so the spool is the same as in
 * inline mode. Inline mode uses one job synchronously.
 */
struct sp__job {
	/*
	 * Two lines the sequencer writes and the worker and the writer
	 * only read (@frames and @cap are set once, by sp__pool_init).
	 */
	/* The sample, valid until the job is unwound. */
	_Alignas(SP__CACHE_LINE) const struct sp__qsample *s;
	uint64_t time; /* what the write needs from @s */
	uint64_t ip;
	const struct sp_mapping *maps;
	size_t nmaps;
	uint64_t maps_gen; /* @maps' generation (process.h), 0: unknown */
	/* JIT code (track/jit_track.h): the owner's reference, its index. */
	const struct sp__jit_index *jit_index; /* NULL: none */
	struct sp_frame *frames; /* @cap entries (sp__job_frames) */
	size_t cap;
	struct sp_unwind_stats *stats; /* where the unwinder counts */
	void *block; /* reader block holding @s (threaded mode) */
	struct sp__mver *ver;
	struct sp__jit_snap *jit;
	int32_t pid;
	int32_t tid;
	uint32_t nk;  /* kernel frames at the front of @frames */
	uint32_t tag; /* the owner's kind of job; the pipeline never reads it */
	bool unwind;  /* user frames wanted */
	bool kernel_mode;
	bool detached; /* @s is not the record being applied (no ring data) */
	/*
	 * The line the unwinding worker writes (@done, the results, the
	 * counters every unwind sets), apart from the sequencer's, so that
	 * a hand-off moves each line one way only; the error and fallback
	 * counters after it are written by rare unwinds only.
	 */
	_Alignas(SP__CACHE_LINE) _Atomic uint32_t done;
	uint32_t n; /* all frames once unwound */
	/*
	 * sp__stack_hash() of frames [0, @hashed), computed by whoever
	 * unwound the job (a worker), so that the writer need not walk the
	 * frames again; @hashed 0: none.
	 */
	uint32_t hashed;
	/* Set by the unwind: an error or fallback counter of @stats is set. */
	bool stats_rare;
	uint64_t hash[2];
	struct sp_unwind_stats own; /* @stats */
};
_Static_assert(offsetof(struct sp__job, done) == 2 * SP__CACHE_LINE &&
		       offsetof(struct sp__job, own.truncated) +
				       sizeof(uint64_t) <=
			       3 * SP__CACHE_LINE,
	       "a job's sequencer fields fill two lines, the worker's one");

/*
 * Entries of a job's frame array: the kernel callchain, then up to
 * @max_depth user frames and the truncated marker.
 */
static inline size_t sp__job_frames(uint32_t max_depth)
{
	return SP__KERNEL_FRAMES + (size_t)max_depth + 1;
}

/*
 * Appends the user frames of @job and hashes them all (any thread),
 * through @memo (the calling thread's walk memo, unwind_jit.h; NULL:
 * none).
 */
void sp__job_unwind(struct sp_unwinder *unwinder, struct sp__walk_memo *memo,
		    struct sp__job *job);

/*
 * The window is a ring of SP__JOBS jobs: [@head, @tail) are dispatched and
 * not yet written. Jobs for the workers are also listed, by window
 * position, in @work; workers claim entries [@claimed, @published) of it.
 * A job the sequencer unwound itself is never listed: a worker holding a
 * stale claim on it could otherwise meet its slot already reused.
 *
 * Hand-offs go by batch, never by job: dispatched jobs are published
 * together (sp__pool_publish(), at the end of a release or every
 * SP__POOL_BATCH jobs), with one futex call that wakes as many sleeping
 * workers as the batch needs; the sequencer waits for a whole batch of
 * completions (@seq_wait names the job whose worker wakes it). Nothing
 * spins: an idle worker sleeps on @pub_word. Words written by different
 * threads sit on cache lines of their own.
 */
struct sp__pool {
	const struct sp__mem *mem;
	struct sp_unwinder *unwinder;
	struct sp__job *jobs;
	struct sp_frame *frames; /* every job's frames, one block */
	size_t job_frames;	 /* entries per job */
	uint64_t *work;		 /* SP__JOBS window positions */
	pthread_t *threads;
	struct sp__walk_memo **memos;	/* one per worker */
	struct sp__walk_memo *seq_memo; /* the sequencer's (dispatch_done) */
	_Atomic unsigned next_worker;	/* a starting worker takes memos[it] */
	unsigned nthreads;
	unsigned started;
	int wake_fd; /* the sequencer's eventfd */
	/*
	 * Write-behind (NULL: none): called by a worker after it marked a
	 * job done, to write what is done from the head (threaded.h).
	 */
	void (*on_done)(void *ctx);
	void *on_done_ctx;
	/* The sequencer's own. */
	uint64_t tail;
	uint64_t listed; /* entries of @work filled, >= @published */
	char pad0[SP__CACHE_LINE];
	/* Whoever writes the head (holding the writer lock) moves it. */
	_Atomic uint64_t head;
	char pad7[SP__CACHE_LINE];
	/* Written by the sequencer, read by the workers. */
	_Atomic uint64_t published;
	_Atomic uint32_t pub_word;
	_Atomic bool stop;
	char pad1[SP__CACHE_LINE];
	_Atomic uint64_t claimed; /* the workers' */
	char pad2[SP__CACHE_LINE];
	_Atomic uint32_t sleepers; /* the workers' */
	char pad3[SP__CACHE_LINE];
	/* Written by the workers, read by the sequencer. */
	_Atomic uint32_t done_word;
	char pad4[SP__CACHE_LINE];
	/*
	 * The sequencer's: (job position << 1 | by_fd) of the job whose
	 * worker wakes it, through @done_word or, by_fd, through @wake_fd
	 * (it sleeps in the recorder's epoll); UINT64_MAX: none.
	 */
	_Atomic uint64_t seq_wait;
	char pad5[SP__CACHE_LINE];
	_Atomic uint64_t futex_calls; /* every thread's (benchmarks) */
	char pad6[SP__CACHE_LINE];
};

/*
 * A pool of @nthreads workers and SP__JOBS jobs of @job_frames frames;
 * @wake_fd is the eventfd the sequencer sleeps on (sp__pool_arm).
 */
int sp__pool_init(struct sp__pool *p, const struct sp__mem *mem,
		  struct sp_unwinder *unwinder, unsigned nthreads,
		  size_t job_frames, int wake_fd);
/* Stops and joins the workers once every published job is unwound. */
void sp__pool_stop(struct sp__pool *p);
/* Stops the workers and frees everything. */
void sp__pool_fini(struct sp__pool *p);

/* The job the next sp__pool_reserve() returns (its slot, as it was). */
static inline struct sp__job *sp__pool_next(struct sp__pool *p)
{
	return &p->jobs[p->tail & (SP__JOBS - 1)];
}

/* The next free job (the window must not be full: see sp__pool_full). */
static inline struct sp__job *sp__pool_reserve(struct sp__pool *p)
{
	struct sp__job *job = sp__pool_next(p);

	/*
	 * @done is 0 and @own zero: calloc'd, and cleared when the slot's
	 * last job was written and popped (sp__pool_pop, before the head
	 * moved past it), so the worker's line is not written here.
	 */
	job->stats = &job->own;
	job->block = NULL;
	job->ver = NULL;
	job->maps_gen = 0;
	return job;
}

static inline bool sp__pool_full(const struct sp__pool *p)
{
	return p->tail - atomic_load(&p->head) == SP__JOBS;
}

/* Publishes every listed job, waking sleeping workers (one system call). */
void sp__pool_publish(struct sp__pool *p);

/*
 * Lists the reserved job for the workers; it is published with the next
 * sp__pool_publish() (or at once when SP__POOL_BATCH jobs wait). Per
 * sample: inline.
 */
static inline void sp__pool_dispatch(struct sp__pool *p)
{
	/* At most SP__JOBS jobs are in flight, so entry @listed is free. */
	p->work[p->listed & (SP__JOBS - 1)] = p->tail++;
	p->listed++;
	if (p->listed -
		    atomic_load_explicit(&p->published, memory_order_relaxed) >=
	    SP__POOL_BATCH)
		sp__pool_publish(p);
}
/*
 * Unwinds the reserved job on the calling thread and marks it done; no
 * worker ever sees it (its sample bytes may move once this returns).
 */
void sp__pool_dispatch_done(struct sp__pool *p);

/*
 * The oldest job when it is done (NULL otherwise, or when the window is
 * empty), on any thread; only the writer lock's holder may write and pop
 * it. A popped slot is never done: a done slot at the head is the head's
 * job.
 */
static inline bool sp__pool_head_ready(const struct sp__pool *p)
{
	return atomic_load(
		&p->jobs[atomic_load(&p->head) & (SP__JOBS - 1)].done);
}

static inline struct sp__job *sp__pool_head_done(struct sp__pool *p)
{
	return sp__pool_head_ready(p) ?
		       &p->jobs[atomic_load(&p->head) & (SP__JOBS - 1)] :
		       NULL;
}

/*
 * The sequencer's sp__pool_head_done(); with @wait, publishes what is
 * listed and sleeps until the head is done, woken once a batch of jobs
 * from the head is done (or the last one). Release it with
 * sp__pool_pop().
 */
struct sp__job *sp__pool_head(struct sp__pool *p, bool wait);
/* Pops the head (the writer lock's holder; written: the slot is free). */
void sp__pool_pop(struct sp__pool *p);
/*
 * Before the sequencer sleeps elsewhere (epoll on @wake_fd): publishes
 * what is listed and asks the worker that finishes the next batch from
 * the head to write @wake_fd. Returns whether the head is done already
 * (then do not sleep). sp__pool_disarm() after the sleep.
 */
bool sp__pool_arm(struct sp__pool *p);
void sp__pool_disarm(struct sp__pool *p);
/* Writes @wake_fd, the sequencer's eventfd (full: it is awake anyway). */
void sp__pool_wake_fd(struct sp__pool *p);
/* Sleeps while *@word is @seen / wakes @n sleepers (counted). */
void sp__pool_futex_wait(struct sp__pool *p, _Atomic uint32_t *word,
			 uint32_t seen);
void sp__pool_futex_wake(struct sp__pool *p, _Atomic uint32_t *word, int n);

static inline size_t sp__pool_inflight(const struct sp__pool *p)
{
	return (size_t)(p->tail - atomic_load(&p->head));
}

#endif /* SP_ENGINE_POOL_H */
