/* SPDX-License-Identifier: MIT */
/* Every allocation failure of the three readers is -ENOMEM, without leaks. */
#include <stdint.h>

#include "base/test_alloc.h"
#include "format/reader_common.h"

/*
 * The allocator of tests/base/test_alloc.h fails every allocation after
 * the first N. For N = 0, 1, 2, ... each reader is opened and used
 * (Replay: two full passes; Tail: polls until the file is drained) until
 * a run completes without hitting a failure. A failed open must return
 * -ENOMEM and leave nothing allocated. Replay iteration must not allocate
 * at all, so it runs with every allocation failing. A Tail poll that
 * fails with -ENOMEM must leave the Tail usable: the test then lets
 * allocations succeed and checks that every sample still arrives once,
 * in order, and that polls finding nothing new allocate nothing. After
 * each close no byte may remain allocated.
 */

static struct sp_reader_opts opts_for(struct test_alloc *ta,
				      struct sp_allocator *hook)
{
	struct sp_reader_opts o = { .size = sizeof(o) };

	hook->alloc = test_alloc_fn;
	hook->free = test_free_fn;
	hook->ctx = ta;
	o.allocator = hook;
	return o;
}

static void start(struct test_alloc *ta, long n)
{
	memset(ta, 0, sizeof(*ta));
	ta->fail_after = n;
}

static int try_snapshot(const char *path, const struct recording *rec, long n)
{
	struct test_alloc ta;
	struct sp_allocator hook;
	struct sp_reader_opts o = opts_for(&ta, &hook);
	struct sp_snapshot *s;
	int err;

	start(&ta, n);
	err = sp_snapshot_open(path, &o, &s);
	if (err) {
		CHECK_EQ_INT(err, -ENOMEM);
		CHECK_EQ(ta.live_bytes, 0);
		return 0;
	}
	CHECK_EQ(sp_snapshot_sample_count(s), rec->nsamples);
	sp_snapshot_close(s);
	CHECK_EQ(ta.live_bytes, 0);
	return ta.failures == 0;
}

static int try_replay(const char *path, const struct recording *rec, long n)
{
	struct test_alloc ta;
	struct sp_allocator hook;
	struct sp_reader_opts o = opts_for(&ta, &hook);
	struct sp_replay *r;
	struct sp_sample smp;
	size_t i, pass;
	int err, clean;

	start(&ta, n);
	err = sp_replay_open(path, &o, &r);
	if (err) {
		CHECK_EQ_INT(err, -ENOMEM);
		CHECK_EQ(ta.live_bytes, 0);
		return 0;
	}
	clean = ta.failures == 0;
	/* Iteration allocates nothing: make every allocation fail. */
	ta.fail_after = 0;
	ta.failures = 0;
	for (pass = 0; pass < 2; pass++) {
		CHECK_OK(sp_replay_rewind(r));
		for (i = 0; i < rec->nsamples; i++) {
			CHECK_EQ_INT(sp_replay_next(r, &smp), 1);
			check_sample(sp_replay_spool(r), &smp, rec, i);
		}
		CHECK_EQ_INT(sp_replay_next(r, &smp), 0);
	}
	CHECK_EQ(ta.failures, 0);
	sp_replay_close(r);
	CHECK_EQ(ta.live_bytes, 0);
	return clean;
}

static int try_tail(const char *path, const struct recording *rec, long n)
{
	struct test_alloc ta;
	struct sp_allocator hook;
	struct sp_reader_opts o = opts_for(&ta, &hook);
	struct sp_tail *t;
	size_t next = 0, next_py = 0;
	int err, clean, polls = 0;

	start(&ta, n);
	err = sp_tail_open(path, &o, &t);
	if (err) {
		CHECK_EQ_INT(err, -ENOMEM);
		CHECK_EQ(ta.live_bytes, 0);
		return 0;
	}
	for (;;) {
		err = sp_tail_poll(t);
		CHECK(++polls < 100000);
		if (err == -ENOMEM) {
			/* Nothing was lost: retry with memory available. */
			ta.fail_after = -1;
			continue;
		}
		CHECK_OK(err);
		check_tail_batch(t, rec, &next, &next_py);
		if (err == 0 && !sp_tail_has_more(t))
			break;
	}
	CHECK_EQ(next, rec->nsamples);
	CHECK_EQ(next_py, rec->npython);
	clean = ta.failures == 0;
	/* Once warm, polls that find nothing new do not allocate. */
	ta.fail_after = 0;
	ta.failures = 0;
	CHECK_EQ_INT(sp_tail_poll(t), 0);
	CHECK_EQ_INT(sp_tail_poll(t), 0);
	CHECK_EQ(ta.failures, 0);
	sp_tail_close(t);
	CHECK_EQ(ta.live_bytes, 0);
	return clean;
}

static void walk(const char *path, const struct recording *rec,
		 int (*fn)(const char *, const struct recording *, long))
{
	long n;

	for (n = 0; n < 100000; n++)
		if (fn(path, rec, n))
			return;
	CHECK(!"never completed without an allocation failure");
}

int main(void)
{
	int zstd;

	for (zstd = 0; zstd < 2; zstd++) {
		const char *path = tmp_path("alloc.spool");
		struct sp_sink *mem;
		struct sp_writer *w = mem_writer(zstd, 2048, &mem);
		struct recording *rec = gen_recording(w, 31 + zstd, 3000);

		finish_to_file(w, mem, path);
		walk(path, rec, try_snapshot);
		walk(path, rec, try_replay);
		walk(path, rec, try_tail);
		rec_free(rec);
	}
	return T_EXIT_PASS;
}
