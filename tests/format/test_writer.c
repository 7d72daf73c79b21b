/* SPDX-License-Identifier: MIT */
/* Writer tests: SPULSE3 §11 golden vectors, interning rules, errors, chunking. */

/*
 * Everything goes through the public writer API into a memory sink and is
 * compared byte for byte, either with the hand-checked vectors of spec
 * §11 or with bytes built by a deliberately naive reference encoder below
 * (linear-search caches, no memo), which a randomized script drives side
 * by side with the real writer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <stackpulse/sink.h>
#include <stackpulse/writer.h>

#include "check.h"

/* ---- helpers ---- */

static struct sp_writer *writer_new(uint64_t start, uint64_t interval,
				    size_t chunk, uint32_t id_limit)
{
	struct sp_writer_opts o = { .size = sizeof(o) };
	struct sp_writer *w = NULL;
	struct sp_sink *sink = NULL;

	o.start_timestamp_us = start;
	o.sample_interval_us = interval;
	o.chunk_size = chunk;
	o.id_limit = id_limit;
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &o, &w));
	return w;
}

/* Flushes and returns the memory sink's bytes. */
static const uint8_t *contents(struct sp_writer *w, size_t *len)
{
	const void *data;

	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(w), &data, len));
	CHECK_EQ(*len, sp_writer_bytes(w));
	return data;
}

static void check_contents(struct sp_writer *w, const uint8_t *want,
			   size_t want_len)
{
	size_t len;
	const uint8_t *got = contents(w, &len);

	CHECK_MEM(got, len, want, want_len);
}

static struct sp_frame pinned(uint32_t module, uint64_t rel, uint64_t abs)
{
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip = rel,
			      .module_id = module,
			      .mode = SP_FRAME_USER };
	return f;
}

static struct sp_frame unpinned(uint64_t abs, uint32_t mode)
{
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip = abs,
			      .module_id = SP_NO_MODULE,
			      .mode = mode };
	return f;
}

static struct sp_frame marker(void)
{
	struct sp_frame f = { .module_id = SP_NO_MODULE,
			      .mode = SP_FRAME_TRUNCATED };
	return f;
}

static struct sp_module user_module(int32_t pid, uint64_t start, uint64_t end,
				    uint64_t off, const char *path)
{
	struct sp_module m = { .start = start,
			       .end = end,
			       .file_offset = off,
			       .pid = pid,
			       .path = path,
			       .path_len = strlen(path) };
	return m;
}

/* Growable byte string for expected output. */
struct bytes {
	uint8_t b[1 << 20];
	size_t n;
};

static void put_b(struct bytes *o, uint8_t v)
{
	CHECK(o->n < sizeof(o->b));
	o->b[o->n++] = v;
}

static void put_u(struct bytes *o, uint64_t v)
{
	while (v >= 0x80) {
		put_b(o, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put_b(o, (uint8_t)v);
}

static void put_s(struct bytes *o, int64_t v)
{
	put_u(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_header(struct bytes *o, uint64_t start, uint64_t interval)
{
	static const uint8_t magic[8] = { 'S', 'P', 'U', 'L', 'S', 'E', '3', 0 };

	memcpy(o->b, magic, 8);
	o->n = 8;
	put_u(o, start);
	put_u(o, interval);
}

/* ---- §11 golden vectors ---- */

static const uint8_t v1[] = { 0x53, 0x50, 0x55, 0x4c, 0x53,
			      0x45, 0x33, 0x00, 0x00, 0x00 };
static const uint8_t v1b[] = { 0x53, 0x50, 0x55, 0x4c, 0x53, 0x45,
			       0x33, 0x00, 0x80, 0x80, 0xf9, 0xc0,
			       0xc1, 0xc4, 0x82, 0x03, 0xe8, 0x07 };
static const uint8_t v3[] = {
	0x53, 0x50, 0x55, 0x4c, 0x53, 0x45, 0x33, 0x00, 0x7b, 0x0a, /* hdr */
	0x01, 0x00, 0x0e, 0x80, 0x20, 0x80, 0x40, 0x80, 0x02, 0x01, 0x08,
	0x01, 0x00, 0x00, 0x06, 0x2f, 0x66, 0x69, 0x72, 0x73, 0x74, /* mod */
	0x02, 0x00, 0x00, 0x90, 0x02,			/* frame 0 */
	0x03, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, /* stack 0 */
	0x04, 0x00, 0x0e, 0x0b,				/* thread 0 */
	0x05, 0xd0, 0x0f, 0x00, 0x00, /* sample: end of V2 (53 bytes) */
	0x02, 0x01, 0x01, 0x90, 0x60, /* frame 1 */
	0x03, 0x01, 0x00, 0x01,	      /* stack 1 */
	0x05, 0xa0, 0x1f, 0x00, 0x01, /* sample */
};
static const uint8_t v5[] = {
	0x53, 0x50, 0x55, 0x4c, 0x53, 0x45, 0x33, 0x00, 0x00, 0x00, 0x01, 0x00,
	0x0e, 0x80, 0x80, 0x80, 0x02, 0x80, 0xa0, 0x80, 0x02, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x08, 0x2f, 0x62, 0x69, 0x6e, 0x2f, 0x61, 0x70, 0x70,
	0x01, 0x01, 0x01, 0x80, 0x80, 0x80, 0x88, 0xf8, 0xff, 0xff, 0xff, 0xff,
	0x01, 0x80, 0x80, 0x84, 0x88, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x5b, 0x6b, 0x65, 0x72, 0x6e, 0x65,
	0x6c, 0x5d, 0x06, 0xf4, 0x03, 0x0e, 0x01, 0x02, 0x00, 0x05, 0x00, 0x03,
	0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x02, 0x01, 0x01, 0xa3, 0x82,
	0x80, 0x02, 0x03, 0x01, 0x00, 0x01, 0x02, 0x02, 0x03, 0x90, 0x80, 0x80,
	0x88, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01, 0x03, 0x02, 0x01, 0x02, 0x04,
	0x00, 0x0e, 0x07, 0x05, 0xd0, 0x0f, 0x00, 0x02, 0x08, 0x00, 0x07, 0x0e,
	0x02, 0x03, 0x01, 0xa3, 0x82, 0x80, 0x02, 0x03, 0x03, 0xff, 0xff, 0xff,
	0xff, 0x0f, 0x03, 0x04, 0x01, 0x0e, 0x08, 0x05, 0xc7, 0x01, 0x01, 0x03,
};
static const uint8_t v6_original[] = {
	0x53, 0x50, 0x55, 0x4c, 0x53, 0x45, 0x33, 0x00, 0x7b, 0x0a,
	0x02, 0x00, 0x01, 0x80, 0x20, 0x03, 0x00, 0xff, 0xff, 0xff,
	0xff, 0x0f, 0x00, 0x04, 0x00, 0x0e, 0x0b, 0x05, 0xd0, 0x0f,
	0x00, 0x00, 0x02, 0x01, 0x01, 0x80, 0x40, 0x03, 0x01, 0xff,
	0xff, 0xff, 0xff, 0x0f, 0x01, 0x05, 0xd0, 0x0f, 0x00, 0x01,
};

static void test_v1(void)
{
	struct sp_writer *w = writer_new(0, 0, 0, 0);

	check_contents(w, v1, sizeof(v1));
	sp_writer_free(w);
	w = writer_new(1700000000000000ull, 1000, 0, 0);
	check_contents(w, v1b, sizeof(v1b));
	sp_writer_free(w);
}

static void test_v2_v3(void)
{
	struct sp_writer *w = writer_new(123, 10, 0, 0);
	struct sp_module m = user_module(7, 0x1000, 0x2000, 0x100, "/first");
	struct sp_frame s1[1] = { pinned(0, 0x110, 0x1010) };
	struct sp_frame s2[2] = { unpinned(0x3010, SP_FRAME_USER),
				  pinned(0, 0x110, 0x1010) };
	uint32_t id = 99;

	m.inode = 1;
	m.dev_major = 8;
	m.dev_minor = 1;
	CHECK_OK(sp_writer_module(w, &m, &id));
	CHECK_EQ(id, 0);
	CHECK_OK(sp_writer_sample(w, 1000, 7, 11, s1, 1));
	check_contents(w, v3, 53);
	CHECK_OK(sp_writer_sample(w, 3000, 7, 11, s2, 2));
	check_contents(w, v3, sizeof(v3));
	CHECK_EQ(sizeof(v3), 67);
	CHECK_OK(sp_writer_finish(w));
	CHECK_EQ_INT(sp_writer_sample(w, 4000, 7, 11, s1, 1), -EPIPE);
	CHECK_EQ_INT(sp_writer_finish(w), 0);
	sp_writer_free(w);
}

static void test_v5(void)
{
	struct sp_writer *w = writer_new(0, 0, 0, 0);
	struct sp_module app =
		user_module(7, 0x400000, 0x401000, 0, "/bin/app");
	struct sp_module kernel = user_module(
		0, 0xffffffff81000000ull, 0xffffffff81010000ull, 0, "[kernel]");
	struct sp_frame s1[3] = { unpinned(0xffffffff81000010ull,
					   SP_FRAME_KERNEL),
				  unpinned(0x400123, SP_FRAME_USER), marker() };
	struct sp_frame s2[1] = { unpinned(0x400123, SP_FRAME_USER) };
	uint32_t id;

	kernel.is_kernel = 1;
	CHECK_OK(sp_writer_module(w, &app, NULL));
	CHECK_OK(sp_writer_module(w, &kernel, &id));
	CHECK_EQ(id, 1);
	CHECK_OK(sp_writer_python_runtime(w, 500, 7, true));
	CHECK_OK(sp_writer_sample(w, 1000, 7, 7, s1, 3));
	CHECK_OK(sp_writer_deactivate_module(w, 0));
	CHECK_OK(sp_writer_deactivate_process(w, 7));
	CHECK_OK(sp_writer_sample(w, 900, 7, 8, s2, 1));
	check_contents(w, v5, sizeof(v5));
	CHECK_EQ(sizeof(v5), 156);
	sp_writer_free(w);
}

static void test_v6_original(void)
{
	struct sp_writer *w = writer_new(123, 10, 0, 0);
	struct sp_frame a = unpinned(0x1000, SP_FRAME_USER);
	struct sp_frame b = unpinned(0x2000, SP_FRAME_USER);

	CHECK_OK(sp_writer_sample(w, 1000, 7, 11, &a, 1));
	CHECK_OK(sp_writer_sample(w, 2000, 7, 11, &b, 1));
	check_contents(w, v6_original, sizeof(v6_original));
	sp_writer_free(w);
}

/* ---- interning rules ---- */

static void put_module(struct bytes *o, uint32_t id, const struct sp_module *m)
{
	put_b(o, 1);
	put_u(o, id);
	put_s(o, m->is_kernel ? -1 : m->pid);
	put_u(o, m->start);
	put_u(o, m->end);
	put_u(o, m->file_offset);
	put_u(o, m->inode);
	put_u(o, m->dev_major);
	put_u(o, m->dev_minor);
	put_u(o, m->inode_generation);
	put_b(o, m->is_kernel ? 1 : 0);
	put_u(o, m->path_len);
	memcpy(o->b + o->n, m->path, m->path_len);
	o->n += m->path_len;
}

static void put3(struct bytes *o, uint8_t tag, uint64_t a, uint64_t b,
		 uint64_t c)
{
	put_b(o, tag);
	put_u(o, a);
	put_u(o, b);
	put_u(o, c);
}

static void put_sample(struct bytes *o, int64_t delta, uint32_t thread,
		       uint32_t leaf)
{
	put_b(o, 5);
	put_s(o, delta);
	put_u(o, thread);
	put_u(o, leaf);
}

/* Writes @what (0 module, 1 tag 7, 2 tag 8) and appends its bytes to @o. */
static void unrelated_record(struct sp_writer *w, struct bytes *o, int what,
			     uint32_t *modules)
{
	struct sp_module m = user_module(99, 0x90000, 0x91000, 0, "/other");

	if (what == 0) {
		CHECK_OK(sp_writer_module(w, &m, NULL));
		put_module(o, (*modules)++, &m);
	} else if (what == 1) {
		CHECK_OK(sp_writer_deactivate_process(w, 99));
		put_b(o, 7);
		put_s(o, 99);
	} else {
		CHECK_OK(sp_writer_deactivate_module(w, 0));
		put_b(o, 8);
		put_u(o, 0);
	}
}

/*
 * Pinned frames and markers survive module/tag-7/tag-8 records; unpinned
 * frames get new frame ids (and thus new stack nodes) after each of them.
 */
static void test_reintern(void)
{
	struct sp_module m = user_module(7, 0x1000, 0x2000, 0, "/a");
	struct sp_frame pin[2] = { pinned(0, 0x10, 0x1010), marker() };
	struct sp_frame unp[1] = { unpinned(0x5000, SP_FRAME_KERNEL) };
	uint32_t modules = 1, frames = 4, nodes = 4;
	struct bytes *o = calloc(1, sizeof(*o));
	struct sp_writer *w = writer_new(0, 0, 0, 0);
	uint64_t ts = 10;
	int what;

	put_header(o, 0, 0);
	CHECK_OK(sp_writer_module(w, &m, NULL));
	put_module(o, 0, &m);
	CHECK_OK(sp_writer_sample(w, ts, 1, 1, pin, 2));
	put3(o, 2, 0, 5, 0);
	put3(o, 3, 0, SP_NO_PARENT, 0);
	put3(o, 2, 1, 0, 0x10);
	put3(o, 3, 1, 0, 1);
	put3(o, 4, 0, 2, 1);
	put_sample(o, 10, 0, 1);
	CHECK_OK(sp_writer_sample(w, ts, 1, 1, unp, 1));
	put3(o, 2, 2, 3, 0x5000);
	put3(o, 3, 2, SP_NO_PARENT, 2);
	put_sample(o, 0, 0, 2);
	/* Repeated stacks only write samples (the thread is known too). */
	CHECK_OK(sp_writer_sample(w, ts, 1, 1, unp, 1));
	put_sample(o, 0, 0, 2);
	for (what = 0; what < 3; what++) {
		unrelated_record(w, o, what, &modules);
		CHECK_OK(sp_writer_sample(w, ts, 1, 1, pin, 2));
		put_sample(o, 0, 0, 1);
		CHECK_OK(sp_writer_sample(w, ts, 1, 1, unp, 1));
		put3(o, 2, frames - 1, 3, 0x5000);
		put3(o, 3, nodes - 1, SP_NO_PARENT, frames - 1);
		put_sample(o, 0, 0, nodes - 1);
		CHECK_OK(sp_writer_sample(w, ts, 1, 1, unp, 1));
		put_sample(o, 0, 0, nodes - 1);
		frames++;
		nodes++;
	}
	check_contents(w, o->b, o->n);
	sp_writer_free(w);
	free(o);
}

/* ---- errors that must write nothing ---- */

static void check_unchanged(struct sp_writer *w, uint64_t bytes, int err,
			    int want)
{
	CHECK_EQ_INT(err, want);
	CHECK_EQ(sp_writer_bytes(w), bytes);
}

static void test_delta(void)
{
	struct sp_writer *w = writer_new(0, 0, 0, 0);
	struct sp_frame f = unpinned(0x1000, SP_FRAME_USER);
	uint64_t bytes = sp_writer_bytes(w);

	check_unchanged(w, bytes, sp_writer_sample(w, 1ull << 63, 1, 1, &f, 1),
			SP_EDELTA);
	check_unchanged(w, bytes, sp_writer_sample(w, UINT64_MAX, 1, 1, &f, 1),
			SP_EDELTA);
	CHECK_OK(sp_writer_sample(w, INT64_MAX, 1, 1, &f, 1));
	CHECK_OK(sp_writer_sample(w, UINT64_MAX - 1, 1, 1, &f, 1));
	CHECK_OK(sp_writer_sample(w, UINT64_MAX, 1, 1, &f, 1));
	bytes = sp_writer_bytes(w);
	check_unchanged(w, bytes, sp_writer_sample(w, 0, 1, 1, &f, 1),
			SP_EDELTA);
	check_unchanged(w, bytes,
			sp_writer_sample(w, INT64_MAX - 1, 1, 1, &f, 1),
			SP_EDELTA);
	/* Exactly INT64_MIN is representable. */
	CHECK_OK(sp_writer_sample(w, INT64_MAX, 1, 1, &f, 1));
	CHECK_EQ(sp_writer_bytes(w), bytes + 1 + 10 + 1 + 1);
	sp_writer_free(w);
}

static void test_empty_sample(void)
{
	struct sp_writer *w = writer_new(0, 0, 0, 0);
	struct sp_frame f = unpinned(0x1000, SP_FRAME_USER);
	struct bytes *o = calloc(1, sizeof(*o));

	put_header(o, 0, 0);
	CHECK_OK(sp_writer_sample(w, 100, 1, 1, &f, 0));
	CHECK_OK(sp_writer_sample(w, 5000, 1, 1, NULL, 0));
	CHECK_EQ(sp_writer_bytes(w), 10);
	/* The baseline did not move: the first delta is still absolute. */
	CHECK_OK(sp_writer_sample(w, 300, 1, 1, &f, 1));
	put3(o, 2, 0, 1, 0x1000);
	put3(o, 3, 0, SP_NO_PARENT, 0);
	put3(o, 4, 0, 2, 1);
	put_sample(o, 300, 0, 0);
	check_contents(w, o->b, o->n);
	sp_writer_free(w);
	free(o);
}

static void test_invalid(void)
{
	struct sp_writer *w = writer_new(0, 0, 0, 0);
	struct sp_module m = user_module(7, 0x1000, 0x2000, 0x100, "/m");
	struct sp_module bad;
	struct sp_frame f;
	uint64_t bytes;
	static const char *const bad_paths[] = {
		"\xff",		"\xc0\x80",
		"\xed\xa0\x80", "\xf4\x90\x80\x80",
		"ab\xe2\x82",	"\xe0\x80\x80",
		"\x80",		"\xf0\x80\x80\x80",
	};
	size_t i;

	CHECK_OK(sp_writer_module(w, &m, NULL));
	bytes = sp_writer_bytes(w);
	bad = m;
	bad.pid = 0;
	check_unchanged(w, bytes, sp_writer_module(w, &bad, NULL), -EINVAL);
	bad.pid = -1;
	check_unchanged(w, bytes, sp_writer_module(w, &bad, NULL), -EINVAL);
	check_unchanged(w, bytes, sp_writer_module(w, NULL, NULL), -EINVAL);
	bad = m;
	bad.path = NULL;
	check_unchanged(w, bytes, sp_writer_module(w, &bad, NULL), -EINVAL);
	for (i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
		bad.path = bad_paths[i];
		bad.path_len = strlen(bad_paths[i]);
		check_unchanged(w, bytes, sp_writer_module(w, &bad, NULL),
				-EINVAL);
	}

	f = unpinned(0x1000, SP_FRAME_USER);
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 0, 1, &f, 1), -EINVAL);
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 0, &f, 1), -EINVAL);
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, -5, &f, 1),
			-EINVAL);
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, NULL, 1),
			-EINVAL);
	f.mode = 3;
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, &f, 1), -EINVAL);
	f = pinned(1, 0x110, 0x1010); /* module 1 does not exist */
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, &f, 1), -EINVAL);
	f = pinned(0, 0x80, 0x1010); /* below the file offset */
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, &f, 1), -EINVAL);
	f = pinned(0, 0x1100, 0x2000); /* outside the span */
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, &f, 1), -EINVAL);
	f = marker();
	f.abs_ip = 1;
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, &f, 1), -EINVAL);
	f = marker();
	f.module_id = 0;
	check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, &f, 1), -EINVAL);
	{
		/* One bad frame deep in a stack: nothing of it is written. */
		struct sp_frame s[3] = { unpinned(0x1, SP_FRAME_USER),
					 pinned(0, 0x2000, 0),
					 unpinned(0x3, SP_FRAME_USER) };

		check_unchanged(w, bytes, sp_writer_sample(w, 1, 1, 1, s, 3),
				-EINVAL);
	}
	check_unchanged(w, bytes, sp_writer_python_runtime(w, 1, 0, true),
			-EINVAL);
	check_unchanged(w, bytes, sp_writer_deactivate_process(w, 0), -EINVAL);
	check_unchanged(w, bytes, sp_writer_deactivate_process(w, -7), -EINVAL);
	check_unchanged(w, bytes, sp_writer_deactivate_module(w, 1), -EINVAL);

	/* The edge of the span and valid UTF-8 with NUL are accepted. */
	f = pinned(0, 0x10ff, 0x1fff);
	CHECK_OK(sp_writer_sample(w, 1, 1, 1, &f, 1));
	bad = m;
	bad.path = "a\0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf";
	bad.path_len = 16;
	CHECK_OK(sp_writer_module(w, &bad, NULL));
	bad.pid = -1;
	bad.is_kernel = 1;
	CHECK_OK(sp_writer_module(w, &bad, NULL));
	sp_writer_free(w);
}

static void test_bad_opts(void)
{
	struct {
		struct sp_writer_opts o;
		uint64_t extra;
	} big = { .o = { .size = sizeof(big) } };
	struct sp_sink *sink;
	struct sp_writer *w = NULL;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	big.extra = 1;
	CHECK_EQ_INT(sp_writer_new(sink, &big.o, &w), -EINVAL);
	CHECK(w == NULL);
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	big.extra = 0;
	CHECK_OK(sp_writer_new(sink, &big.o, &w));
	sp_writer_free(w);
	CHECK_EQ_INT(sp_writer_new(NULL, NULL, &w), -EINVAL);
	/* NULL options are all defaults. */
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	check_contents(w, v1, sizeof(v1));
	sp_writer_free(w);
}

/* ---- id exhaustion ---- */

static void test_id_limit(void)
{
	struct sp_writer *w = writer_new(0, 0, 0, 3);
	struct sp_frame abc[3] = { unpinned(0xa, 0), unpinned(0xb, 0),
				   unpinned(0xc, 0) };
	struct sp_frame d = unpinned(0xd, 0);
	struct sp_module m = user_module(1, 0x1000, 0x2000, 0, "/m");
	uint64_t bytes;

	CHECK_OK(sp_writer_sample(w, 1, 1, 1, abc, 3));
	bytes = sp_writer_bytes(w);
	/* A fourth frame id would reach the limit. */
	check_unchanged(w, bytes, sp_writer_sample(w, 2, 1, 1, &d, 1),
			SP_EIDSPACE);
	/* A new node over known frames too: [b] as a root is node (-1, b). */
	check_unchanged(w, bytes, sp_writer_sample(w, 2, 1, 1, abc + 1, 1),
			SP_EIDSPACE);
	/* Known stacks and suffixes still work: [c] is node 0. */
	CHECK_OK(sp_writer_sample(w, 3, 1, 1, abc + 2, 1));
	CHECK_OK(sp_writer_sample(w, 4, 1, 2, abc, 3));
	CHECK_OK(sp_writer_sample(w, 5, 1, 3, abc, 3));
	bytes = sp_writer_bytes(w);
	check_unchanged(w, bytes, sp_writer_sample(w, 6, 1, 4, abc, 3),
			SP_EIDSPACE);
	CHECK_OK(sp_writer_module(w, &m, NULL));
	CHECK_OK(sp_writer_module(w, &m, NULL));
	CHECK_OK(sp_writer_module(w, &m, NULL));
	bytes = sp_writer_bytes(w);
	check_unchanged(w, bytes, sp_writer_module(w, &m, NULL), SP_EIDSPACE);
	/* Unpinned cache was cleared, so [c] needs a new frame: refused. */
	check_unchanged(w, bytes, sp_writer_sample(w, 7, 1, 1, abc + 2, 1),
			SP_EIDSPACE);
	/* The baseline did not move: the next sample's delta is from 5. */
	{
		struct sp_frame mk = marker();
		struct sp_writer *w2 = writer_new(0, 0, 0, 2);
		struct sp_frame rec[3] = { mk, mk, mk };
		struct sp_frame rec2[3] = { unpinned(1, 0), mk,
					    unpinned(1, 0) };

		/* Recursion: [mk, mk] needs 1 frame and 2 nodes: fits. */
		CHECK_OK(sp_writer_sample(w2, 1, 1, 1, rec, 2));
		bytes = sp_writer_bytes(w2);
		check_unchanged(w2, bytes,
				sp_writer_sample(w2, 2, 1, 1, rec, 3),
				SP_EIDSPACE);
		check_unchanged(w2, bytes,
				sp_writer_sample(w2, 2, 1, 1, rec2, 3),
				SP_EIDSPACE);
		sp_writer_free(w2);
	}
	sp_writer_free(w);
}

/* ---- reference encoder and randomized differential test ---- */

struct ref_frame {
	uint64_t key[3];
	bool unpinned;
	uint32_t id;
};

struct ref {
	struct bytes out;
	struct ref_frame frames[1 << 14];
	size_t nframes_cached;
	uint32_t frame_count;
	uint32_t nodes[1 << 16][3]; /* parent, frame, id */
	uint32_t node_count;
	uint32_t node_index[1 << 17]; /* open addressing: node id + 1 */
	int32_t threads[256][2];
	uint32_t thread_count;
	uint32_t module_count;
	uint64_t last_ns;
};

static void ref_frame_key(const struct sp_frame *f, uint64_t key[3], bool *unp)
{
	*unp = f->mode != SP_FRAME_TRUNCATED && f->module_id == SP_NO_MODULE;
	key[0] = *unp ? f->mode : (f->module_id | (uint64_t)f->mode << 32);
	key[1] = *unp ? f->abs_ip : f->file_relative_ip;
	key[2] = *unp ? 0 : f->abs_ip;
}

static void ref_clear_unpinned(struct ref *r)
{
	size_t i, j = 0;

	for (i = 0; i < r->nframes_cached; i++)
		if (!r->frames[i].unpinned)
			r->frames[j++] = r->frames[i];
	r->nframes_cached = j;
}

static uint32_t ref_frame(struct ref *r, const struct sp_frame *f)
{
	struct ref_frame rf;
	size_t i;

	ref_frame_key(f, rf.key, &rf.unpinned);
	for (i = 0; i < r->nframes_cached; i++)
		if (r->frames[i].unpinned == rf.unpinned &&
		    !memcmp(r->frames[i].key, rf.key, sizeof(rf.key)))
			return r->frames[i].id;
	rf.id = r->frame_count++;
	CHECK(r->nframes_cached < (1 << 14));
	r->frames[r->nframes_cached++] = rf;
	if (f->mode == SP_FRAME_TRUNCATED)
		put3(&r->out, 2, rf.id, 5, 0);
	else if (!rf.unpinned)
		put3(&r->out, 2, rf.id, (uint64_t)f->module_id * 2,
		     f->file_relative_ip);
	else
		put3(&r->out, 2, rf.id, f->mode == SP_FRAME_KERNEL ? 3 : 1,
		     f->abs_ip);
	return rf.id;
}

static uint32_t ref_node(struct ref *r, uint32_t parent, uint32_t frame)
{
	uint32_t h = (parent * 2654435761u ^ frame * 40503u) & ((1u << 17) - 1);
	uint32_t i;

	for (; r->node_index[h]; h = (h + 1) & ((1u << 17) - 1)) {
		i = r->node_index[h] - 1;
		if (r->nodes[i][0] == parent && r->nodes[i][1] == frame)
			return r->nodes[i][2];
	}
	CHECK(r->node_count < (1 << 16));
	i = r->node_count++;
	r->node_index[h] = i + 1;
	r->nodes[i][0] = parent;
	r->nodes[i][1] = frame;
	r->nodes[i][2] = i;
	put3(&r->out, 3, i, parent, frame);
	return i;
}

static void ref_sample(struct ref *r, uint64_t ts, int32_t pid, int32_t tid,
		       const struct sp_frame *f, size_t n)
{
	uint32_t parent = SP_NO_PARENT, t;

	while (n-- > 0)
		parent = ref_node(r, parent, ref_frame(r, &f[n]));
	for (t = 0; t < r->thread_count; t++)
		if (r->threads[t][0] == pid && r->threads[t][1] == tid)
			break;
	if (t == r->thread_count) {
		r->threads[t][0] = pid;
		r->threads[t][1] = tid;
		r->thread_count++;
		put_b(&r->out, 4);
		put_u(&r->out, t);
		put_s(&r->out, pid);
		put_u(&r->out, (uint64_t)tid);
	}
	put_sample(&r->out, (int64_t)(ts - r->last_ns), t, parent);
	r->last_ns = ts;
}

static uint64_t rng_state = 0x1234567;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

struct script {
	struct sp_module mods[64];
	uint32_t nmods;
	struct sp_frame pool[48];
	struct sp_frame stacks[40][24];
	size_t depth[40];
};

static struct sp_frame random_frame(const struct script *s)
{
	uint32_t k = rnd(10);
	const struct sp_module *m;
	uint64_t rel;

	if (k == 0)
		return marker();
	if (k < 5 || s->nmods == 0)
		return unpinned(0x1000 + rnd(64) * 16, rnd(2));
	k = rnd(s->nmods);
	m = &s->mods[k];
	rel = m->file_offset + rnd((uint32_t)(m->end - m->start));
	return pinned(k, rel, m->start + rel - m->file_offset);
}

/* Stacks share prefixes (roots) so the node cache sees real trees. */
static void random_stacks(struct script *s)
{
	size_t i, j;

	for (i = 0; i < 48; i++)
		s->pool[i] = random_frame(s);
	for (i = 0; i < 40; i++) {
		s->depth[i] = 1 + rnd(24);
		for (j = 0; j < s->depth[i]; j++)
			s->stacks[i][j] = s->pool[rnd(j < 4 ? 6 : 48)];
	}
	/*
	 * Every other later stack: an earlier one's outer frames under new
	 * inner ones (a deeper or shallower leaf under the same callers,
	 * whose caller path is new: the writer's last-stack shortcut).
	 */
	for (i = 8; i < 40; i += 2) {
		size_t b = rnd((uint32_t)i), m = 1 + rnd(3), keep;

		keep = s->depth[b] -
		       rnd((uint32_t)(s->depth[b] < 3 ? s->depth[b] : 3));
		if (keep > 24 - m)
			keep = 24 - m;
		for (j = 0; j < keep; j++)
			s->stacks[i][m + j] =
				s->stacks[b][s->depth[b] - keep + j];
		for (j = 0; j < m; j++)
			s->stacks[i][j] = s->pool[rnd(48)];
		s->depth[i] = m + keep;
	}
}

static void random_module(struct sp_writer *w, struct ref *r, struct script *s)
{
	struct sp_module m = user_module(1 + (int32_t)rnd(3), 0, 0, 0, "/lib");

	m.start = 0x1000 + rnd(16) * 0x100;
	m.end = m.start + 0x100 + rnd(0x400);
	m.file_offset = rnd(3) * 0x1000;
	m.is_kernel = rnd(4) == 0;
	CHECK_OK(sp_writer_module(w, &m, NULL));
	put_module(&r->out, r->module_count++, &m);
	ref_clear_unpinned(r);
	if (s->nmods < 64)
		s->mods[s->nmods++] = m;
}

static void random_step(struct sp_writer *w, struct ref *r, struct script *s,
			uint64_t *ts)
{
	uint32_t k = rnd(100), i;
	int32_t pid = 1 + (int32_t)rnd(3), tid = 1 + (int32_t)rnd(4);
	uint8_t flag = (uint8_t)rnd(2);

	if (k < 2) {
		random_module(w, r, s);
		if (rnd(3) == 0)
			random_stacks(s);
	} else if (k < 3) {
		CHECK_OK(sp_writer_deactivate_process(w, pid));
		put_b(&r->out, 7);
		put_s(&r->out, pid);
		ref_clear_unpinned(r);
	} else if (k < 4 && r->module_count) {
		i = rnd(r->module_count);
		CHECK_OK(sp_writer_deactivate_module(w, i));
		put_b(&r->out, 8);
		put_u(&r->out, i);
		ref_clear_unpinned(r);
	} else if (k < 6) {
		CHECK_OK(sp_writer_python_runtime(w, *ts, pid, flag));
		put_b(&r->out, 6);
		put_u(&r->out, *ts);
		put_s(&r->out, pid);
		put_b(&r->out, flag);
	} else {
		i = rnd(40);
		*ts += rnd(3000);
		*ts -= rnd(500);
		CHECK_OK(sp_writer_sample(w, *ts, pid, tid, s->stacks[i],
					  s->depth[i]));
		ref_sample(r, *ts, pid, tid, s->stacks[i], s->depth[i]);
	}
}

/* ---- chunking: a callback sink that records every chunk ---- */

struct collect {
	uint8_t buf[1 << 20];
	size_t len;
	size_t ends[1 << 17];
	size_t nends;
	unsigned writes;
	unsigned fail_every; /* fail every N-th write (0 = never) */
};

static int collect_write(void *ctx, const void *buf, size_t len)
{
	struct collect *c = ctx;

	c->writes++;
	if (c->fail_every && c->writes % c->fail_every == 0)
		return -EAGAIN;
	CHECK(c->len + len <= sizeof(c->buf));
	CHECK(c->nends < sizeof(c->ends) / sizeof(c->ends[0]));
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	c->ends[c->nends++] = c->len;
	return 0;
}

static const struct sp_sink_ops collect_ops = { .write = collect_write };

/* Skips one varint at @p; returns its length (the input is well formed). */
static size_t skip_u(const uint8_t *p)
{
	size_t n = 1;

	while (p[n - 1] & 0x80)
		n++;
	return n;
}

/* Length of the record at @p, parsed per SPULSE3 §5. */
static size_t record_len(const uint8_t *p)
{
	static const uint8_t nvar[9] = { 0, 9, 3, 3, 3, 3, 2, 1, 1 };
	size_t pos = 1, i, len;

	CHECK(p[0] >= 1 && p[0] <= 8);
	for (i = 0; i < nvar[p[0]]; i++)
		pos += skip_u(p + pos);
	if (p[0] == 6)
		pos++;
	if (p[0] == 1) {
		pos++;	      /* is_kernel */
		len = p[pos]; /* paths in these tests are shorter than 128 */
		pos += 1 + len;
	}
	return pos;
}

/* Every chunk the sink received ends exactly where some record ends. */
static void check_boundaries(const struct collect *c)
{
	size_t pos = 10, e;

	CHECK(c->nends > 0);
	CHECK_EQ(c->ends[0], 10); /* the header goes out on its own */
	for (e = 1; e < c->nends; e++) {
		while (pos < c->ends[e])
			pos += record_len(c->buf + pos);
		CHECK_EQ(pos, c->ends[e]);
	}
	CHECK_EQ(pos, c->len);
}

static void run_random(uint64_t seed, size_t chunk, unsigned fail_every)
{
	struct sp_writer_opts o = { .size = sizeof(o), .chunk_size = chunk };
	struct collect *c = calloc(1, sizeof(*c));
	struct script *s = calloc(1, sizeof(*s));
	struct ref *r = calloc(1, sizeof(*r));
	struct sp_writer *w;
	struct sp_sink *sink;
	uint64_t ts = 1000; /* steps go back up to 500 ns: never below 0 */
	int i, err;

	rng_state = seed;
	c->fail_every = fail_every;
	CHECK_OK(sp_sink_new_callback(&collect_ops, c, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &o, &w));
	put_header(&r->out, 0, 0);
	random_stacks(s);
	for (i = 0; i < 3000; i++) {
		random_step(w, r, s, &ts);
		/* A failed sink write is re-offered: nothing lost or doubled. */
		while (fail_every && (err = sp_writer_flush(w)) == -EAGAIN)
			;
	}
	CHECK_OK(sp_writer_finish(w));
	CHECK_MEM(c->buf, c->len, r->out.b, r->out.n);
	CHECK_EQ(sp_writer_bytes(w), r->out.n);
	check_boundaries(c);
	if (chunk && chunk < 4096)
		CHECK(c->nends > 3);
	sp_writer_free(w);
	free(c);
	free(s);
	free(r);
}

static void test_random(void)
{
	run_random(0x1234567, 0, 0);
	run_random(0xabcdef12345ull, 1, 0);
	run_random(0x77777777ull, 7, 0);
	run_random(0x5eed5eedull, 100, 0);
	run_random(0x1111ull, 200, 3);
}

int main(void)
{
	test_v1();
	test_v2_v3();
	test_v5();
	test_v6_original();
	test_reintern();
	test_delta();
	test_empty_sample();
	test_invalid();
	test_bad_opts();
	test_id_limit();
	test_random();
	return T_EXIT_PASS;
}
