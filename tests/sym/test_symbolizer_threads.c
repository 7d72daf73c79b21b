/* SPDX-License-Identifier: MIT */
/* Symbolizer: four threads resolving one spool at once agree with one thread. */

/*
 * The spool mixes native frames of this executable, address-only frames
 * of a missing library (thousands of distinct ones, so the shared table
 * grows several times while readers run), unknown and kernel frames and
 * markers, over three pids. Each round creates a fresh symbolizer and
 * starts four threads on it together, each walking the stacks in a
 * different order, so misses, inserts and table growth race with
 * lock-free hits. Every answer is compared with a single-threaded
 * reference symbolizer field by field.
 */
#include <pthread.h>
#include <unistd.h>

#include "symbolizer_test.h"

#define NTHREADS 4
#define ROUNDS 6
#define NPIDS 3
#define CAP 64

__attribute__((noinline)) int thr_target_one(int x);
__attribute__((noinline)) int thr_target_two(int x);

__attribute__((noinline)) int thr_target_one(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) int thr_target_two(int x)
{
	__asm__ volatile("" ::: "memory");
	return thr_target_one(x) * 2;
}

struct worker {
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct sp_symbolizer *ref;
	pthread_barrier_t *start;
	unsigned seed;
	int failures;
};

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool same_frame(const struct sp_resolved_frame *a,
		       const struct sp_resolved_frame *b)
{
	return same_str(a->name, b->name) && same_str(a->file, b->file) &&
	       same_str(a->module, b->module) && a->pc == b->pc &&
	       a->offset == b->offset && a->line == b->line &&
	       a->kind == b->kind && a->origin == b->origin &&
	       a->flags == b->flags && a->inline_depth == b->inline_depth &&
	       a->frame_id == b->frame_id && a->module_id == b->module_id;
}

/* Resolves (stack, pid) in both symbolizers; returns 1 on a mismatch. */
static int compare(struct worker *w, uint32_t stack, int32_t pid)
{
	const struct sp_resolved_frame *a[CAP], *b[CAP];
	int na, nb, i;

	na = sp_symbolizer_resolve_stack(w->sym, stack, pid, a, CAP);
	nb = sp_symbolizer_resolve_stack(w->ref, stack, pid, b, CAP);
	if (na != nb || na <= 0)
		return 1;
	for (i = 0; i < na && i < CAP; i++)
		if (!same_frame(a[i], b[i]))
			return 1;
	return 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint32_t n = sp_spool_stack_count(w->spool), i, s;
	int32_t pid;

	pthread_barrier_wait(w->start);
	for (i = 0; i < n * NPIDS; i++) {
		/* A different walk per thread: stride coprime with n. */
		s = (uint32_t)(((uint64_t)i * (2 * w->seed + 1) + w->seed) % n);
		pid = 100 + (int32_t)((i + w->seed) % NPIDS);
		w->failures += compare(w, s, pid);
	}
	return NULL;
}

static const struct sp_spool *build(struct tspool *t)
{
	uint64_t a = (uint64_t)(uintptr_t)&thr_target_one + 1;
	uint64_t b = (uint64_t)(uintptr_t)&thr_target_two + 1;
	struct sp_frame f[24];
	struct tmapping m;
	uint32_t id[NPIDS];
	int k, i, p;

	CHECK(tmapping_find(a, NULL, &m));
	tspool_begin(t);
	for (p = 0; p < NPIDS; p++) {
		id[p] = tspool_mapping(t, &m, 100 + p);
		tspool_module(t, "/nonexistent/libmany.so", 0x10000000,
			      0x20000000, 0x1000, 100 + p);
	}
	for (k = 0; k < 400; k++) {
		p = k % NPIDS;
		f[0] = tframe_pinned(&m, id[p], k & 1 ? a : b);
		for (i = 1; i < 20; i++)
			f[i] = tframe_user(0x10000000 +
					   (uint64_t)(k * 20 + i) * 8);
		f[20] = tframe_user(0x5000 + (uint64_t)k); /* unknown */
		f[21] = tframe_kernel(0xffffffff81000000ull + (uint64_t)k);
		f[22] = tframe_user(b);
		f[23] = tframe_marker();
		tspool_sample(t, 100 + p, f, 24);
	}
	return tspool_end(t);
}

static struct sp_symbolizer *new_sym(const struct sp_spool *spool)
{
	struct sp_symbolizer_opts o = { .size = sizeof(o),
					.flags = SP_SYMBOLIZER_NO_PERF_MAPS |
						 SP_SYMBOLIZER_NO_KERNEL };
	struct sp_symbolizer *sym;

	CHECK_OK(sp_symbolizer_new(spool, &o, &sym));
	return sym;
}

int main(void)
{
	struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	pthread_barrier_t start;
	struct sp_symbolizer *ref;
	const struct sp_spool *spool;
	struct tspool t;
	int r, i, failures = 0;

	spool = build(&t);
	ref = new_sym(spool);
	/* The reference is filled by this thread alone before any worker. */
	for (i = 0; i < (int)sp_spool_stack_count(spool) * NPIDS; i++) {
		const struct sp_resolved_frame *b[CAP];

		CHECK(sp_symbolizer_resolve_stack(ref, (uint32_t)i / NPIDS,
						  100 + i % NPIDS, b, CAP) > 0);
	}
	for (r = 0; r < ROUNDS; r++) {
		struct sp_symbolizer *sym = new_sym(spool);

		CHECK_OK(pthread_barrier_init(&start, NULL, NTHREADS));
		for (i = 0; i < NTHREADS; i++) {
			w[i] = (struct worker){ .sym = sym,
						.spool = spool,
						.ref = ref,
						.start = &start,
						.seed = (unsigned)(r * 7 + i) };
			CHECK_OK(pthread_create(&th[i], NULL, work, &w[i]));
		}
		for (i = 0; i < NTHREADS; i++) {
			CHECK_OK(pthread_join(th[i], NULL));
			failures += w[i].failures;
		}
		pthread_barrier_destroy(&start);
		sp_symbolizer_free(sym);
	}
	CHECK_EQ(failures, 0);
	sp_symbolizer_free(ref);
	tspool_free(&t);
	return T_EXIT_PASS;
}
