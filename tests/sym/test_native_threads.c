/* SPDX-License-Identifier: MIT */
/* Four threads hammering one cold native symbolizer agree with one thread. */
#include "native_test.h"

#include <pthread.h>

/*
 * The reference answers come from a separate symbolizer used by one
 * thread. Then, per round, a fresh (cold: no DWARF opened, no CU built)
 * symbolizer is shared by THREADS threads that look up all addresses in
 * different orders, so several threads race to open the DWARF and to
 * build the same CUs. Every answer must equal the reference, frame by
 * frame. Run it under ASan/UBSan (build-s1-asan) and TSan to catch the
 * races the comparison cannot see. Argument 1: native_inline_prog.
 */

#define THREADS 4
#define ROUNDS 3
#define ADDRS 4000
#define RANGES_MAX 200000
#define OUT_MAX 16

struct answer {
	int n;
	struct sp_resolved_frame f[OUT_MAX];
};

struct job {
	struct sp__native *native;
	const uint64_t *addrs;
	const struct answer *ref;
	size_t n;
	size_t start;
	size_t bad;
};

static bool same(const struct sp_resolved_frame *a,
		 const struct sp_resolved_frame *b)
{
	return strcmp(a->name, b->name) == 0 &&
	       strcmp(a->file ? a->file : "", b->file ? b->file : "") == 0 &&
	       a->line == b->line && a->column == b->column &&
	       a->offset == b->offset && a->inline_depth == b->inline_depth;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	struct sp_resolved_frame f[OUT_MAX];
	size_t i, k;
	int n, m;

	for (k = 0; k < j->n; k++) {
		/* Odd threads walk backwards: builds collide from both ends. */
		i = (j->start & 1) ? (j->n - 1 - (j->start + k) % j->n) :
				     (j->start + k) % j->n;
		n = sp__native_lookup(j->native, j->addrs[i], 0, f, OUT_MAX);
		if (n != j->ref[i].n) {
			j->bad++;
			continue;
		}
		for (m = 0; m < n; m++)
			j->bad += !same(&f[m], &j->ref[i].f[m]);
	}
	return NULL;
}

static void hammer(const char *what, const char *path, const char *symfile)
{
	struct nt_range *r = calloc(RANGES_MAX, sizeof(*r));
	struct answer *ref = calloc(ADDRS, sizeof(*ref));
	uint64_t *addrs = calloc(ADDRS, sizeof(*addrs));
	struct job jobs[THREADS];
	pthread_t tid[THREADS];
	struct sp__native *one;
	struct sp__mem mem;
	size_t n, i, inl = 0;
	int round, t;

	sp__mem_init(&mem, NULL);
	CHECK(r && ref && addrs);
	n = nt_func_ranges(symfile, r, RANGES_MAX, 0);
	CHECK(n > 0);
	nt_pick(r, n, 99, addrs, ADDRS);
	one = nt_open(&mem, path, NULL);
	for (i = 0; i < ADDRS; i++) {
		ref[i].n =
			sp__native_lookup(one, addrs[i], 0, ref[i].f, OUT_MAX);
		CHECK(ref[i].n >= 1);
		inl += ref[i].n > 1;
	}
	CHECK(inl > 0);
	for (round = 0; round < ROUNDS; round++) {
		struct sp__native *shared = nt_open(&mem, path, NULL);

		for (t = 0; t < THREADS; t++) {
			jobs[t] = (struct job){ shared,
						addrs,
						ref,
						ADDRS,
						(size_t)t * ADDRS / THREADS,
						0 };
			CHECK(pthread_create(&tid[t], NULL, worker, &jobs[t]) ==
			      0);
		}
		for (t = 0; t < THREADS; t++) {
			pthread_join(tid[t], NULL);
			CHECK_EQ(jobs[t].bad, 0);
		}
		sp__native_free(shared);
	}
	printf("%s: %d rounds x %d threads x %d addresses agree "
	       "(%zu with inline frames)\n",
	       what, ROUNDS, THREADS, ADDRS, inl);
	sp__native_free(one);
	free(r);
	free(ref);
	free(addrs);
}

int main(int argc, char **argv)
{
	char libc[512];

	unsetenv("DEBUGINFOD_URLS");
	if (argc < 2)
		return T_EXIT_FAIL;
	hammer("inline_prog", argv[1], argv[1]);
	nt_libc_path(libc);
	hammer("libc", libc, libc);
	return T_EXIT_PASS;
}
