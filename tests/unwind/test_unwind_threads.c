/* SPDX-License-Identifier: MIT */
/* Concurrency: threads unwind one corpus through one shared sp_unwinder. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self.h"
#include "self_common.h"

/*
 * The corpus is real captures in known chains: the program's own
 * -fomit-frame-pointer chain, libc's twalk calling back into us, the
 * lazily bound shared library, a CFA held in RBX and recursion of many
 * depths; then each again with its stack copy cut short at several
 * lengths, so that error paths and truncated markers run concurrently
 * too. The reference is every sample unwound in one thread by an unwinder
 * of its own.
 *
 * Then, ROUNDS times, a fresh unwinder is shared by THREADS threads
 * released together from a barrier: every CFI table is built lazily by
 * whichever thread meets its image first while the others wait for it,
 * the resolution slots and the pc cache are filled by all of them at
 * once, and one thread also calls sp_unwinder_prepare() on every mapping.
 * Each thread walks the corpus from its own starting point, so they race
 * for different tables, and every result (frames and counters) must
 * equal the reference. `make tsan` runs this under ThreadSanitizer, which
 * reports any unsynchronized access the races above would make.
 */

#define THREADS 4
#define ROUNDS 6
#define PASSES 3
#define CAP 1100
#define MAX_SAMPLES 512
#define MAX_CAPTURES 64

struct item {
	const struct self_sample *s;
	size_t len; /* bytes of the copy used: all of it, or cut short */
	struct sp_frame *want;
	int nwant;
	struct sp_unwind_stats want_st;
};

struct worker {
	pthread_t thread;
	unsigned id;
	size_t unwinds, mismatches;
};

static struct self_sample captures[MAX_CAPTURES];
static size_t ncaptures;
static struct item corpus[MAX_SAMPLES];
static size_t ncorpus;
static struct self_maps maps;
static struct sp_unwinder *shared;
static pthread_barrier_t barrier;

static struct self_sample *next_capture(void)
{
	CHECK(ncaptures < MAX_CAPTURES);
	return &captures[ncaptures++];
}

static void capture_all(void)
{
	int depth;

	chain_a(next_capture(), 1);
	self_capture_twalk(next_capture());
	dso_entry2(chain_cb, next_capture());
	sp_test_cfa_rbx(chain_cb, next_capture());
	for (depth = 1; depth <= 60; depth += 3)
		chain_recurse(next_capture(), depth);
}

static void add_item(const struct self_sample *s, size_t len)
{
	CHECK(ncorpus < MAX_SAMPLES);
	corpus[ncorpus++] = (struct item){ .s = s, .len = len };
}

/* Every capture whole and cut short (cuts keep 8-byte alignment). */
static void build_corpus(void)
{
	static const size_t cuts[] = { 0, 8, 64, 200 };
	size_t i, k, len;

	for (i = 0; i < ncaptures; i++) {
		CHECK(captures[i].taken && captures[i].stack);
		len = captures[i].stack_len;
		add_item(&captures[i], len);
		add_item(&captures[i], (len / 2) & ~(size_t)7);
		for (k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++)
			if (cuts[k] < len)
				add_item(&captures[i], cuts[k]);
	}
}

static int unwind_entry(struct sp_unwinder *u, const struct item *e,
			struct sp_frame *frames, struct sp_unwind_stats *st)
{
	memset(st, 0, sizeof(*st));
	return sp_unwinder_unwind(u, &e->s->regs, e->s->stack, e->len,
				  e->s->stack_addr, maps.maps, maps.n, frames,
				  CAP, st);
}

/* The single-thread results; returns how many stacks are complete. */
static size_t build_reference(void)
{
	static struct sp_frame frames[CAP];
	struct sp_unwinder *u;
	size_t i, complete = 0;
	struct item *e;

	CHECK_OK(sp_unwinder_new(NULL, &u));
	for (i = 0; i < ncorpus; i++) {
		e = &corpus[i];
		e->nwant = unwind_entry(u, e, frames, &e->want_st);
		CHECK(e->nwant > 0);
		e->want = malloc((size_t)e->nwant * sizeof(*frames));
		CHECK_PTR(e->want);
		memcpy(e->want, frames, (size_t)e->nwant * sizeof(*frames));
		complete += e->want_st.truncated == 0;
	}
	sp_unwinder_free(u);
	return complete;
}

static bool same_result(const struct item *e, const struct sp_frame *frames,
			int n, const struct sp_unwind_stats *st)
{
	return n == e->nwant &&
	       memcmp(frames, e->want, (size_t)n * sizeof(*frames)) == 0 &&
	       memcmp(st, &e->want_st, sizeof(*st)) == 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sp_frame *frames = malloc(CAP * sizeof(*frames));
	struct sp_unwind_stats st;
	size_t i, k, first = w->id * ncorpus / THREADS;
	int n;

	pthread_barrier_wait(&barrier);
	if (w->id == THREADS - 1)
		for (i = 0; i < maps.n; i++)
			(void)sp_unwinder_prepare(shared, &maps.maps[i]);
	for (k = 0; frames && k < PASSES * ncorpus; k++) {
		const struct item *e = &corpus[(first + k) % ncorpus];

		n = unwind_entry(shared, e, frames, &st);
		w->mismatches += !same_result(e, frames, n, &st);
		w->unwinds++;
	}
	free(frames);
	return NULL;
}

static void run_round(void)
{
	struct worker workers[THREADS];
	unsigned i;

	CHECK_OK(sp_unwinder_new(NULL, &shared));
	CHECK_OK(pthread_barrier_init(&barrier, NULL, THREADS));
	for (i = 0; i < THREADS; i++) {
		workers[i] = (struct worker){ .id = i };
		CHECK_OK(-pthread_create(&workers[i].thread, NULL, worker_main,
					 &workers[i]));
	}
	for (i = 0; i < THREADS; i++) {
		CHECK_OK(-pthread_join(workers[i].thread, NULL));
		CHECK_EQ(workers[i].unwinds, PASSES * ncorpus);
		CHECK_EQ(workers[i].mismatches, 0);
	}
	pthread_barrier_destroy(&barrier);
	sp_unwinder_free(shared);
}

int main(void)
{
	size_t i, complete;
	int round;

	capture_all();
	build_corpus();
	CHECK(self_load_maps(&maps) > 3);
	complete = build_reference();
	/* Both kinds must be there: whole stacks and cut ones. */
	CHECK(complete >= ncaptures);
	CHECK(complete < ncorpus);
	for (round = 0; round < ROUNDS; round++)
		run_round();
	for (i = 0; i < ncorpus; i++)
		free(corpus[i].want);
	for (i = 0; i < ncaptures; i++)
		free(captures[i].stack);
	return T_EXIT_PASS;
}
