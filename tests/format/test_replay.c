/* SPDX-License-Identifier: MIT */
/* Replay: SPULSE3 §11 vectors, recovery, the index overflow rescan, long records. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "format/reader_common.h"

/*
 * The §11 vectors are written byte for byte to files and opened with
 * sp_replay_open(); then files made by the writer exercise what the
 * vectors cannot: more than 524,288 sample runs (a Python record after
 * every sample), so iteration has to re-scan past the index, a module
 * path longer than the reading window, and cuts at every byte of a
 * small file compared against the complete prefix.
 */

#define HDR0 0x53, 0x50, 0x55, 0x4c, 0x53, 0x45, 0x33, 0x00

/* clang-format off */
static const uint8_t v2[] = {
	HDR0, 0x7b, 0x0a,
	/* module 0 */
	0x01, 0x00, 0x0e, 0x80, 0x20, 0x80, 0x40, 0x80, 0x02, 0x01, 0x08,
	0x01, 0x00, 0x00, 0x06, 0x2f, 0x66, 0x69, 0x72, 0x73, 0x74,
	0x02, 0x00, 0x00, 0x90, 0x02, /* frame 0 */
	0x03, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, /* stack 0 */
	0x04, 0x00, 0x0e, 0x0b, /* thread 0 */
	0x05, 0xd0, 0x0f, 0x00, 0x00, /* sample, ends at 53 */
	/* V3 */
	0x02, 0x01, 0x01, 0x90, 0x60, /* frame 1 */
	0x03, 0x01, 0x00, 0x01, /* stack 1 */
	0x05, 0xa0, 0x1f, 0x00, 0x01, /* sample, ends at 67 */
};
/* clang-format on */

/* clang-format off */
static const uint8_t v5[] = {
	HDR0, 0x00, 0x00,
	0x01, 0x00, 0x0e, 0x80, 0x80, 0x80, 0x02, 0x80, 0xa0, 0x80, 0x02,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x2f, 0x62, 0x69, 0x6e,
	0x2f, 0x61, 0x70, 0x70,
	0x01, 0x01, 0x01, 0x80, 0x80, 0x80, 0x88, 0xf8, 0xff, 0xff, 0xff,
	0xff, 0x01, 0x80, 0x80, 0x84, 0x88, 0xf8, 0xff, 0xff, 0xff, 0xff,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x5b, 0x6b, 0x65,
	0x72, 0x6e, 0x65, 0x6c, 0x5d,
	0x06, 0xf4, 0x03, 0x0e, 0x01,
	0x02, 0x00, 0x05, 0x00,
	0x03, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00,
	0x02, 0x01, 0x01, 0xa3, 0x82, 0x80, 0x02,
	0x03, 0x01, 0x00, 0x01,
	0x02, 0x02, 0x03, 0x90, 0x80, 0x80, 0x88, 0xf8, 0xff, 0xff, 0xff,
	0xff, 0x01,
	0x03, 0x02, 0x01, 0x02,
	0x04, 0x00, 0x0e, 0x07,
	0x05, 0xd0, 0x0f, 0x00, 0x02,
	0x08, 0x00,
	0x07, 0x0e,
	0x02, 0x03, 0x01, 0xa3, 0x82, 0x80, 0x02,
	0x03, 0x03, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x03,
	0x04, 0x01, 0x0e, 0x08,
	0x05, 0xc7, 0x01, 0x01, 0x03,
};
/* clang-format on */

/* V6 before the corruption: two samples, unpinned 0x1000 and 0x2000. */
static const uint8_t v6_orig[] = {
	HDR0, 0x7b, 0x0a, 0x02, 0x00, 0x01, 0x80, 0x20, 0x03, 0x00, 0xff,
	0xff, 0xff, 0xff, 0x0f, 0x00, 0x04, 0x00, 0x0e, 0x0b, 0x05, 0xd0,
	0x0f, 0x00, 0x00, 0x02, 0x01, 0x01, 0x80, 0x40, 0x03, 0x01, 0xff,
	0xff, 0xff, 0xff, 0x0f, 0x01, 0x05, 0xd0, 0x0f, 0x00, 0x01,
};

static const uint8_t l1[] = {
	HDR0, 0x00, 0x00, 0x01, 0x00, 0x0e, 0x80, 0x20, 0x80, 0x40,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80,
	0x80, 0x20, 0x2f, 0x78, 0x02, 0x00, 0x01, 0x80, 0x20,
};

static struct sp_replay *open_bytes(const uint8_t *b, size_t len, int *err)
{
	const char *path = tmp_path("vector.spool");
	struct sp_reader_opts o = { .size = sizeof(o) };
	static struct sp_diag diag;
	struct sp_replay *r = NULL;

	o.diag = &diag;
	write_file(path, b, len);
	*err = sp_replay_open(path, &o, &r);
	return r;
}

static void expect_reject(const uint8_t *b, size_t len)
{
	struct sp_replay *r;
	int err;

	r = open_bytes(b, len, &err);
	CHECK_EQ_INT(err, SP_ECORRUPT);
	CHECK(r == NULL);
}

static void test_v2_v3(void)
{
	struct sp_replay *r;
	struct sp_sample s;
	struct sp_frame_context ctx[4];
	int err;

	CHECK_EQ(sizeof(v2), 67);
	/* V2: the first 53 bytes. */
	r = open_bytes(v2, 53, &err);
	CHECK_OK(err);
	CHECK(!sp_replay_is_recovered(r));
	CHECK_EQ(sp_replay_sample_count(r), 1);
	CHECK_EQ(sp_spool_start_timestamp_us(sp_replay_spool(r)), 123);
	CHECK_EQ(sp_spool_sample_interval_us(sp_replay_spool(r)), 10);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 1000);
	CHECK_EQ_INT(s.pid, 7);
	CHECK_EQ_INT(s.tid, 11);
	CHECK_EQ(sp_spool_timestamp_us(sp_replay_spool(r), s.timestamp_ns),
		 123);
	CHECK_EQ_INT(sp_spool_stack_contexts(sp_replay_spool(r), s.stack, s.pid,
					     ctx, 4),
		     1);
	CHECK_EQ(ctx[0].frame.abs_ip, 0x1010);
	CHECK_EQ(ctx[0].module_id, 0);
	CHECK_EQ(ctx[0].file_relative_ip, 0x110);
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);

	/* V3: 67 bytes, two samples. */
	r = open_bytes(v2, 67, &err);
	CHECK_OK(err);
	CHECK(!sp_replay_is_recovered(r));
	CHECK_EQ(sp_replay_sample_count(r), 2);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 1000);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 3000);
	CHECK_EQ(sp_spool_timestamp_us(sp_replay_spool(r), s.timestamp_ns),
		 125);
	CHECK_EQ_INT(sp_spool_stack_contexts(sp_replay_spool(r), s.stack, s.pid,
					     ctx, 4),
		     2);
	CHECK_EQ(ctx[0].frame.abs_ip, 0x3010);
	CHECK_EQ(ctx[0].module_id, SP_NO_MODULE);
	CHECK_EQ(ctx[1].module_id, 0);
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);

	/* V3 cut to 66 bytes: one sample, definitions before the cut kept. */
	r = open_bytes(v2, 66, &err);
	CHECK_OK(err);
	CHECK(sp_replay_is_recovered(r));
	CHECK_EQ(sp_replay_sample_count(r), 1);
	CHECK_EQ(sp_spool_frame_count(sp_replay_spool(r)), 2);
	CHECK_EQ(sp_spool_stack_count(sp_replay_spool(r)), 2);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 1000);
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);
}

static void test_v5(void)
{
	struct sp_frame_context ctx[4];
	struct sp_python_record py;
	struct sp_module m;
	struct sp_replay *r;
	struct sp_sample s;
	int err;

	CHECK_EQ(sizeof(v5), 156);
	r = open_bytes(v5, sizeof(v5), &err);
	CHECK_OK(err);
	CHECK_EQ(sp_replay_sample_count(r), 2);
	CHECK_EQ(sp_spool_start_timestamp_us(sp_replay_spool(r)), 0);
	CHECK_EQ(sp_spool_module_count(sp_replay_spool(r)), 2);
	CHECK_OK(sp_spool_module(sp_replay_spool(r), 0, &m));
	CHECK_EQ(m.deactivated_at, 3);
	CHECK_EQ(m.path_len, 8);
	CHECK(memcmp(m.path, "/bin/app", 8) == 0);
	CHECK_OK(sp_spool_module(sp_replay_spool(r), 1, &m));
	CHECK_EQ(m.is_kernel, 1);
	CHECK_EQ_INT(m.pid, -1);
	CHECK_EQ(m.deactivated_at, SP_NEVER);
	CHECK_EQ(sp_replay_python_record_count(r), 1);
	CHECK_OK(sp_replay_python_record(r, 0, &py));
	CHECK_EQ(py.timestamp_ns, 500);
	CHECK_EQ_INT(py.pid, 7);
	CHECK_EQ(py.is_python_runtime, 1);
	CHECK_EQ_INT(sp_replay_python_record(r, 1, &py), -EINVAL);

	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 1000);
	CHECK_EQ_INT(s.tid, 7);
	CHECK_EQ_INT(sp_spool_stack_contexts(sp_replay_spool(r), s.stack, s.pid,
					     ctx, 4),
		     3);
	CHECK_EQ(ctx[0].frame.abs_ip, 0xffffffff81000010ull);
	CHECK_EQ(ctx[0].module_id, 1);
	CHECK_EQ(ctx[0].file_relative_ip, 0x10);
	CHECK_EQ(ctx[1].frame.abs_ip, 0x400123);
	CHECK_EQ(ctx[1].module_id, 0);
	CHECK_EQ(ctx[1].file_relative_ip, 0x123);
	CHECK_EQ(ctx[2].frame.mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(ctx[2].module_id, SP_NO_MODULE);

	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 900);
	CHECK_EQ_INT(s.tid, 8);
	CHECK_EQ_INT(sp_spool_stack_contexts(sp_replay_spool(r), s.stack, s.pid,
					     ctx, 4),
		     1);
	CHECK_EQ(ctx[0].module_id, SP_NO_MODULE);
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);

	/* A second pass gives the same timestamps (baseline restarts). */
	CHECK_OK(sp_replay_rewind(r));
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 1000);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 900);
	sp_replay_close(r);
}

static void test_rejects_and_tails(void)
{
	uint8_t buf[128];
	struct sp_replay *r;
	struct sp_sample s;
	int err;

	/* V6: nine 80 and a 02 where the second frame's id starts. */
	memcpy(buf, v6_orig, sizeof(v6_orig));
	memset(buf + 33, 0x80, 9);
	buf[42] = 0x02;
	expect_reject(buf, sizeof(v6_orig));

	/* V6-original itself is fine. */
	r = open_bytes(v6_orig, sizeof(v6_orig), &err);
	CHECK_OK(err);
	CHECK_EQ(sp_replay_sample_count(r), 2);
	CHECK(!sp_replay_is_recovered(r));
	sp_replay_close(r);

	/* V7: stray ff is an unknown tag; a stray 05 is a cut-off tail. */
	memcpy(buf, v6_orig, sizeof(v6_orig));
	buf[sizeof(v6_orig)] = 0xff;
	expect_reject(buf, sizeof(v6_orig) + 1);
	buf[sizeof(v6_orig)] = 0x05;
	r = open_bytes(buf, sizeof(v6_orig) + 1, &err);
	CHECK_OK(err);
	CHECK(sp_replay_is_recovered(r));
	CHECK_EQ(sp_replay_sample_count(r), 2);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ_INT(sp_replay_next(r, &s), 1);
	CHECK_EQ(s.timestamp_ns, 2000);
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);

	/* V8 and other bad headers. */
	expect_reject((const uint8_t[]){ 0x53, 0x50, 0x55, 0x4c, 0x53, 0x45,
					 0x32, 0x00, 0x00, 0x00 },
		      10);
	expect_reject(v2, 7);
	expect_reject(v2, 9); /* ends inside the header */
	expect_reject(v2, 0);

	/* L1: a path claiming 2^40 bytes mid-file is a cut-off tail. */
	r = open_bytes(l1, sizeof(l1), &err);
	CHECK_OK(err);
	CHECK(sp_replay_is_recovered(r));
	CHECK_EQ(sp_spool_module_count(sp_replay_spool(r)), 0);
	CHECK_EQ(sp_spool_frame_count(sp_replay_spool(r)), 0);
	CHECK_EQ(sp_replay_sample_count(r), 0);
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);

	/* T1-T3 after a 10-byte header. */
	memcpy(buf, v5, 10);
	buf[10] = 0x01;
	r = open_bytes(buf, 11, &err);
	CHECK_OK(err);
	CHECK(sp_replay_is_recovered(r));
	sp_replay_close(r);
	buf[10] = 0x02;
	memset(buf + 11, 0x80, 10);
	r = open_bytes(buf, 20, &err);
	CHECK_OK(err);
	CHECK(sp_replay_is_recovered(r));
	sp_replay_close(r);
	expect_reject(buf, 21);

	/* Header only: valid, not recovered, nothing to iterate. */
	r = open_bytes(v5, 10, &err);
	CHECK_OK(err);
	CHECK(!sp_replay_is_recovered(r));
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);
	CHECK_EQ_INT(sp_replay_open(tmp_path("missing"), NULL, &r), -ENOENT);
}

/* Every cut of V5 opens (or not) exactly like a Snapshot of the same cut. */
static void test_every_cut(void)
{
	size_t cut;

	for (cut = 0; cut <= sizeof(v5); cut++) {
		struct sp_snapshot *snap = NULL;
		struct sp_replay *r;
		struct sp_sample a, b;
		size_t i;
		int err, serr;

		r = open_bytes(v5, cut, &err);
		serr = sp_snapshot_open(tmp_path("vector.spool"), NULL, &snap);
		CHECK_EQ_INT(err, serr);
		if (err) {
			CHECK_EQ_INT(err, SP_ECORRUPT);
			CHECK(cut < 10);
			continue;
		}
		CHECK_EQ(sp_replay_is_recovered(r),
			 sp_snapshot_is_recovered(snap));
		CHECK_EQ(sp_replay_sample_count(r),
			 sp_snapshot_sample_count(snap));
		CHECK_EQ(sp_spool_frame_count(sp_replay_spool(r)),
			 sp_spool_frame_count(sp_snapshot_spool(snap)));
		for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
			CHECK_EQ_INT(sp_replay_next(r, &a), 1);
			CHECK_OK(sp_snapshot_sample(snap, i, &b));
			CHECK_EQ(a.timestamp_ns, b.timestamp_ns);
			CHECK_EQ(a.stack, b.stack);
			CHECK_EQ(a.thread, b.thread);
		}
		CHECK_EQ_INT(sp_replay_next(r, &a), 0);
		sp_replay_close(r);
		sp_snapshot_close(snap);
	}
}

/*
 * More sample runs than the index holds: every sample is followed by a
 * Python record. Timestamps wander (some deltas negative), threads and
 * stacks alternate, so a wrong baseline or a skipped record shows.
 */
#define OVERFLOW_SAMPLES 600000u

static uint64_t overflow_ts(uint32_t i)
{
	return 5000000ull + (uint64_t)i * 1000 - (i % 7 == 3 ? 2500 : 0);
}

static void test_index_overflow(void)
{
	const char *path = tmp_path("overflow.spool");
	struct sp_frame fr[2] = {
		{ 0x5000, 0x5000, SP_NO_MODULE, SP_FRAME_USER },
		{ 0x4000, 0x4000, SP_NO_MODULE, SP_FRAME_USER },
	};
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(0, 0, &mem);
	struct sp_replay *r;
	struct sp_sample s;
	uint32_t i, pass;

	for (i = 0; i < OVERFLOW_SAMPLES; i++) {
		/* Odd samples: [0x5000 leaf, 0x4000 root] = stack 1. */
		CHECK_OK(sp_writer_sample(w, overflow_ts(i), 10,
					  11 + (int32_t)(i % 2),
					  i % 2 ? fr : fr + 1, 1 + i % 2));
		CHECK_OK(sp_writer_python_runtime(w, i, 10, i % 2));
	}
	finish_to_file(w, mem, path);

	CHECK_OK(sp_replay_open(path, NULL, &r));
	CHECK_EQ(sp_replay_sample_count(r), OVERFLOW_SAMPLES);
	CHECK_EQ(sp_replay_python_record_count(r), OVERFLOW_SAMPLES);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < OVERFLOW_SAMPLES; i++) {
			CHECK_EQ_INT(sp_replay_next(r, &s), 1);
			if (s.timestamp_ns != overflow_ts(i))
				fprintf(stderr, "sample %u\n", i);
			CHECK_EQ(s.timestamp_ns, overflow_ts(i));
			CHECK_EQ(s.stack, i % 2);
			CHECK_EQ(s.thread, i % 2);
			CHECK_EQ_INT(s.tid, 11 + (int32_t)(i % 2));
		}
		CHECK_EQ_INT(sp_replay_next(r, &s), 0);
		CHECK_OK(sp_replay_rewind(r));
	}
	sp_replay_close(r);
}

/* A module path larger than the reading window, then samples. */
static void test_long_record(void)
{
	const char *path = tmp_path("long.spool");
	size_t plen = 700000, len, i;
	char *p = malloc(plen);
	struct sp_module m = { 0 };
	struct sp_frame fr = { 0x1010, 0x110, 0, SP_FRAME_USER };
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(0, 0, &mem);
	struct sp_module got;
	struct sp_replay *r;
	struct sp_sample s;

	CHECK_PTR(p);
	memset(p, 'a', plen);
	m.start = 0x1000;
	m.end = 0x2000;
	m.file_offset = 0x100;
	m.pid = 7;
	m.path = p;
	m.path_len = plen;
	CHECK_OK(sp_writer_module(w, &m, NULL));
	for (i = 0; i < 1000; i++)
		CHECK_OK(sp_writer_sample(w, 1000 + i, 7, 8, &fr, 1));
	len = finish_to_file(w, mem, path);

	CHECK_OK(sp_replay_open(path, NULL, &r));
	CHECK_EQ(sp_replay_sample_count(r), 1000);
	CHECK_OK(sp_spool_module(sp_replay_spool(r), 0, &got));
	CHECK_EQ(got.path_len, plen);
	CHECK(memcmp(got.path, p, plen) == 0);
	for (i = 0; i < 1000; i++) {
		CHECK_EQ_INT(sp_replay_next(r, &s), 1);
		CHECK_EQ(s.timestamp_ns, 1000 + i);
	}
	CHECK_EQ_INT(sp_replay_next(r, &s), 0);
	sp_replay_close(r);

	/* Cut inside the path: a cut-off tail with no module. */
	truncate_file(path, (off_t)(len / 2));
	CHECK_OK(sp_replay_open(path, NULL, &r));
	CHECK(sp_replay_is_recovered(r));
	CHECK_EQ(sp_spool_module_count(sp_replay_spool(r)), 0);
	CHECK_EQ(sp_replay_sample_count(r), 0);
	sp_replay_close(r);
	free(p);
}

/* A generated recording, plain, read back through Replay only. */
static void test_recording(void)
{
	const char *path = tmp_path("rec.spool");
	struct sp_sink *mem;
	struct sp_writer *w = mem_writer(0, 4096, &mem);
	struct recording *rec = gen_recording(w, 7, 30000);

	finish_to_file(w, mem, path);
	verify_replay(path, rec);
	rec_free(rec);
}

/* Options: a larger struct from a newer caller is fine if its tail is 0. */
static void test_opts(void)
{
	const char *path = tmp_path("opts.spool");
	struct {
		struct sp_reader_opts o;
		uint64_t newer;
	} big;
	struct sp_replay *r;

	write_file(path, v2, 53);
	memset(&big, 0, sizeof(big));
	big.o.size = sizeof(big);
	big.newer = 1;
	CHECK_EQ_INT(sp_replay_open(path, &big.o, &r), -EINVAL);
	big.newer = 0;
	CHECK_OK(sp_replay_open(path, &big.o, &r));
	CHECK_EQ(sp_replay_sample_count(r), 1);
	sp_replay_close(r);
}

int main(void)
{
	test_opts();
	test_v2_v3();
	test_v5();
	test_rejects_and_tails();
	test_every_cut();
	test_long_record();
	test_recording();
	test_index_overflow();
	return T_EXIT_PASS;
}
