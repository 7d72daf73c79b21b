/* SPDX-License-Identifier: MIT */
/*
 * Unit test: the timestamp merge queue (order, watermark, compaction,
 * copying referenced records out).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/test_alloc.h"
#include "check.h"
#include "merge.h"

static uint64_t seen[64];
static size_t nseen;
static uint64_t nkey;

static int collect(void *ctx, const struct sp__merge_item *it, const void *rec)
{
	uint64_t v;

	(void)ctx;
	CHECK_EQ(it->len, 8 + it->type);
	memcpy(&v, rec, 8);
	seen[nseen++] = v;
	return v == 999 ? -EIO : 0;
}

static void push(struct sp__merge *m, uint64_t t, int32_t pid)
{
	static const char pad[16];
	struct sp__span s[2] = { { &t, 8 }, { pad, (size_t)(t % 5) } };
	struct sp__merge_item it = { .time = t, .key = nkey++, .pid = pid };

	it.type = (uint32_t)(t % 5);
	CHECK_OK(sp__merge_push(m, &it, s, 2));
}

/*
 * Many rings: each ring's records mostly in time order (as perf writes
 * them), some a little older than the one before (a per-thread ring fed
 * from two CPUs) and one far older than its run (sorted at the release),
 * times colliding across rings (the key decides). Released in two steps,
 * the order must be exactly that of sorting everything by (time, key).
 */
#define NR 77
#define PER 40

struct ref {
	uint64_t time, key;
};

static struct ref want[NR * PER], got[NR * PER];
static size_t ngot;

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int collect_ref(void *ctx, const struct sp__merge_item *it,
		       const void *rec)
{
	uint64_t v;

	(void)ctx;
	memcpy(&v, rec, 8);
	CHECK_EQ(v, it->key);
	got[ngot].time = it->time;
	got[ngot++].key = it->key;
	return 0;
}

static void many_rings(const struct sp__mem *mem)
{
	struct sp__merge m;
	uint64_t t[NR] = { 0 }, half = 0;
	size_t r, i, n = 0, nhalf = 0;
	unsigned seed = 7;

	sp__merge_init(&m, mem);
	for (i = 0; i < PER; i++)
		for (r = 0; r < NR; r++) {
			struct sp__merge_item it = { .type = 0, .pid = 1 };
			struct sp__span s = { &it.key, 8 };

			seed = seed * 1103515245u + 12345u;
			t[r] += (seed >> 16) % 7; /* repeats: equal times */
			it.time = t[r];
			if ((seed >> 8) % 11 == 0 && it.time > 3)
				it.time -= 3; /* a little out of order */
			if (r == 5 && i == PER - 1)
				it.time = 1; /* far back: the run is sorted */
			it.key = sp__merge_key(r, i);
			CHECK_OK(sp__merge_push(&m, &it, &s, 1));
			want[n].time = it.time;
			want[n++].key = it.key;
		}
	qsort(want, n, sizeof(want[0]), ref_cmp);
	half = want[n / 2].time;
	for (i = 0; i < n; i++)
		nhalf += want[i].time <= half;
	CHECK_OK(sp__merge_release(&m, half, collect_ref, NULL));
	CHECK_EQ(ngot, nhalf);
	CHECK_EQ(sp__merge_count(&m), n - nhalf);
	CHECK_OK(sp__merge_release(&m, UINT64_MAX, collect_ref, NULL));
	CHECK_EQ(ngot, n);
	CHECK_EQ(sp__merge_count(&m), 0);
	for (i = 0; i < n; i++) {
		CHECK_EQ(got[i].time, want[i].time);
		CHECK_EQ(got[i].key, want[i].key);
	}
	sp__merge_fini(&m);
}

/*
 * Copying referenced records out: the bytes come along (the sources may
 * be reused at once), each source is told, and the room for all of them
 * is allocated once, not grown record by record (each growth moved the
 * bytes onto new pages: half a second for 2,000 samples on this VM).
 */
#define NCOPY 300
#define COPY_LEN 200

static size_t ndone;

static void copied(void *owner, const void *ref)
{
	CHECK(owner == &ndone);
	CHECK(ref != NULL);
	ndone++;
}

static int check_copy(void *ctx, const struct sp__merge_item *it,
		      const void *rec)
{
	unsigned char bytes[COPY_LEN];
	size_t *n = ctx;

	CHECK(it->ref == NULL);
	CHECK_EQ(it->len, COPY_LEN);
	memset(bytes, (int)(it->time & 0xff), sizeof(bytes));
	CHECK(memcmp(rec, bytes, COPY_LEN) == 0);
	(*n)++;
	return 0;
}

static void copy_refs(void)
{
	static unsigned char src[NCOPY][COPY_LEN];
	struct test_alloc ta;
	struct sp__merge m;
	struct sp__mem mem;
	size_t i, n = 0, before;

	test_alloc_init(&ta, &mem);
	sp__merge_init(&m, &mem);
	for (i = 0; i < NCOPY; i++) {
		struct sp__merge_item it = { .time = i, .type = 0, .pid = 1 };

		memset(src[i], (int)(i & 0xff), COPY_LEN);
		it.key = sp__merge_key(i % 3, i);
		it.ref = src[i];
		it.owner = &ndone;
		it.len = COPY_LEN;
		CHECK_OK(sp__merge_push_ref(&m, &it, i % 3));
	}
	before = ta.allocs;
	CHECK_EQ(sp__merge_copy_refs(&m, copied), NCOPY);
	CHECK_EQ(ndone, NCOPY);
	CHECK_EQ(ta.allocs - before, 1);
	CHECK_EQ(sp__merge_copy_refs(&m, copied), 0); /* nothing left */
	memset(src, 0xee, sizeof(src));		      /* the sources reused */
	CHECK_OK(sp__merge_release(&m, UINT64_MAX, check_copy, &n));
	CHECK_EQ(n, NCOPY);
	sp__merge_fini(&m);
	CHECK_EQ(ta.live_blocks, 0);
}

int main(void)
{
	struct sp__merge m;
	struct sp__mem mem;

	sp__mem_init(&mem, NULL);
	sp__merge_init(&m, &mem);
	push(&m, 30, 1); /* ring A */
	push(&m, 50, 2);
	push(&m, 10, 1); /* ring B */
	push(&m, 40, 3);
	CHECK_OK(sp__merge_release(&m, 35, collect, NULL));
	CHECK_EQ(nseen, 2);
	CHECK_EQ(seen[0], 10);
	CHECK_EQ(seen[1], 30);
	CHECK_EQ(sp__merge_count(&m), 2);
	CHECK(sp__merge_has_pid(&m, 3));
	CHECK(!sp__merge_has_pid(&m, 1));
	push(&m, 36, 1);
	push(&m, 999, 4);
	push(&m, 1000, 4);
	CHECK_EQ_INT(sp__merge_release(&m, UINT64_MAX, collect, NULL), -EIO);
	CHECK_EQ(nseen, 6);
	CHECK_EQ(seen[2], 36);
	CHECK_EQ(seen[3], 40);
	CHECK_EQ(seen[4], 50);
	CHECK_EQ(seen[5], 999);
	CHECK_EQ(sp__merge_count(&m), 2); /* the failed one stays queued */
	sp__merge_fini(&m);
	many_rings(&mem);
	copy_refs();
	return T_EXIT_PASS;
}
