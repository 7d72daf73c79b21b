/* SPDX-License-Identifier: MIT */
/* Sink tests: memory, fd, file, callback (retry) and zstd (decodable per write). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include <stackpulse/sink.h>
#include <stackpulse/writer.h>

#include "check.h"

/* A struct sp_sink_opts of the fields given (a compound literal). */
#define SINK_OPTS(...)                                                         \
	(&(struct sp_sink_opts){ .size = sizeof(struct sp_sink_opts),          \
				 __VA_ARGS__ })

/* An accounting allocator: outstanding bytes must return to 0. */
struct counting {
	size_t live;
	unsigned calls;
};

static void *count_alloc(void *ctx, size_t size, size_t align)
{
	struct counting *c = ctx;
	void *p = NULL;

	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
			   size))
		return NULL;
	c->live += size;
	c->calls++;
	return p;
}

static void count_free(void *ctx, void *ptr, size_t size)
{
	struct counting *c = ctx;

	CHECK(c->live >= size);
	c->live -= size;
	free(ptr);
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	size_t i;

	/* Compressible but not trivial. */
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)((i / 7) ^ seed ^ (i % 13 == 0 ? i >> 3 : 0));
}

static void test_memory(void)
{
	struct counting cnt = { 0 };
	struct sp_allocator a = { count_alloc, count_free, &cnt };
	struct sp_sink *s;
	const void *data;
	size_t len, total = 0;
	uint8_t *ref = malloc(1 << 20), chunk[3000];
	int i;

	CHECK_OK(sp_sink_new_memory(SINK_OPTS(.allocator = &a), &s));
	CHECK_OK(sp_sink_memory_data(s, &data, &len));
	CHECK_EQ(len, 0);
	for (i = 0; i < 300; i++) {
		fill(chunk, sizeof(chunk), (uint32_t)i);
		CHECK_OK(
			sp_sink_write(s, chunk, (size_t)i * 7 % sizeof(chunk)));
		memcpy(ref + total, chunk, (size_t)i * 7 % sizeof(chunk));
		total += (size_t)i * 7 % sizeof(chunk);
	}
	CHECK_OK(sp_sink_memory_data(s, &data, &len));
	CHECK_MEM(data, len, ref, total);
	CHECK_OK(sp_sink_flush(s));
	CHECK_OK(sp_sink_finish(s));
	CHECK_EQ_INT(sp_sink_write(s, chunk, 1), -EPIPE);
	CHECK_EQ_INT(sp_sink_finish(s), 0);
	CHECK_OK(sp_sink_memory_data(s, &data, &len));
	CHECK_EQ(len, total);
	sp_sink_free(s);
	CHECK_EQ(cnt.live, 0);
	CHECK(cnt.calls > 2);
	sp_sink_free(NULL);
	free(ref);
}

static size_t read_all(int fd, uint8_t *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	/* Until @cap bytes, EOF or (non-blocking) nothing more to read. */
	while (got < cap && (n = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)n;
	return got;
}

static void test_fd_pipe(void)
{
	int p[2];
	struct sp_sink *s;
	uint8_t *big = malloc(100000), *back = malloc(100000);
	size_t got;

	CHECK_EQ_INT(sp_sink_new_fd(-1, NULL, &s), -EINVAL);
	CHECK_EQ_INT(sp_sink_new_fd(0, SINK_OPTS(.flags = 0x100), &s), -EINVAL);
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	CHECK_EQ(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	fill(big, 100000, 5);
	CHECK_OK(
		sp_sink_new_fd(p[1], SINK_OPTS(.flags = SP_SINK_CLOSE_FD), &s));
	/*
	 * The pipe holds 64 KiB: the write fails half-way with EAGAIN. The
	 * retry of the same chunk must continue where it stopped.
	 */
	CHECK_EQ_INT(sp_sink_write(s, big, 100000), -EAGAIN);
	got = read_all(p[0], back, 100000);
	CHECK(got > 0 && got < 100000);
	CHECK_OK(sp_sink_write(s, big, 100000));
	got += read_all(p[0], back + got, 100000 - got);
	CHECK_MEM(back, got, big, 100000);
	CHECK_OK(sp_sink_flush(s));
	sp_sink_free(s);
	/* SP_SINK_CLOSE_FD closed the write end: reading sees EOF. */
	CHECK_EQ(fcntl(p[0], F_SETFL, 0), 0);
	CHECK_EQ(read(p[0], back, 1), 0);
	close(p[0]);
	free(big);
	free(back);
}

static void test_file(void)
{
	char path[] = "/tmp/sp_test_sinks_XXXXXX";
	int fd = mkstemp(path), dup_fd;
	struct sp_sink *s;
	uint8_t buf[5000], back[6000];
	ssize_t n;

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "old contents that must go", 25), 25);
	close(fd);
	fill(buf, sizeof(buf), 9);
	CHECK_OK(sp_sink_open_file(path, NULL, &s));
	CHECK_OK(sp_sink_write(s, buf, 3000));
	CHECK_OK(sp_sink_write(s, buf + 3000, 2000));
	CHECK_OK(sp_sink_flush(s));
	CHECK_OK(sp_sink_finish(s));
	sp_sink_free(s);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	n = read(fd, back, sizeof(back));
	CHECK_MEM(back, (size_t)n, buf, sizeof(buf));
	close(fd);
	unlink(path);
	CHECK_EQ_INT(sp_sink_open_file("/nonexistent-dir/x", NULL, &s),
		     -ENOENT);

	/* Without SP_SINK_CLOSE_FD the descriptor stays open. */
	dup_fd = open("/dev/null", O_WRONLY);
	CHECK_OK(sp_sink_new_fd(dup_fd, NULL, &s));
	CHECK_OK(sp_sink_write(s, buf, 10));
	sp_sink_free(s);
	CHECK(fcntl(dup_fd, F_GETFD) >= 0);
	close(dup_fd);
}

/* ---- callback sink ---- */

struct cb {
	uint8_t buf[1 << 16];
	size_t len;
	unsigned writes, flushes, finishes, frees;
	bool fail_next;
};

static int cb_write(void *ctx, const void *buf, size_t len)
{
	struct cb *c = ctx;

	c->writes++;
	if (c->fail_next) {
		c->fail_next = false;
		return -EIO;
	}
	CHECK(c->len + len <= sizeof(c->buf));
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	return 0;
}

static int cb_flush(void *ctx)
{
	((struct cb *)ctx)->flushes++;
	return 0;
}

static int cb_finish(void *ctx)
{
	((struct cb *)ctx)->finishes++;
	return 0;
}

static void cb_free(void *ctx)
{
	((struct cb *)ctx)->frees++;
}

static const struct sp_sink_ops cb_ops = { cb_write, cb_flush, cb_finish,
					   cb_free };

static void test_callback(void)
{
	static struct cb c;
	struct sp_sink_ops no_write = { 0 };
	struct sp_writer_opts o = { .size = sizeof(o), .chunk_size = 64 };
	struct sp_frame f = { .abs_ip = 0x1000,
			      .file_relative_ip = 0x1000,
			      .module_id = SP_NO_MODULE };
	struct sp_sink *s, *mem;
	struct sp_writer *w, *ref;
	const void *data;
	size_t len;
	int i, err;

	CHECK_EQ_INT(sp_sink_new_callback(&no_write, NULL, NULL, &s), -EINVAL);
	CHECK_EQ_INT(sp_sink_new_callback(NULL, NULL, NULL, &s), -EINVAL);
	CHECK_OK(sp_sink_new_callback(&cb_ops, &c, NULL, &s));
	CHECK_OK(sp_writer_new(s, &o, &w));
	CHECK_EQ(c.len, 10);
	CHECK_EQ(c.flushes, 1); /* the header is flushed at once */
	CHECK_OK(sp_sink_new_memory(NULL, &mem));
	CHECK_OK(sp_writer_new(mem, NULL, &ref));
	for (i = 0; i < 200; i++) {
		f.abs_ip = f.file_relative_ip = 0x1000 + (uint64_t)(i % 37);
		CHECK_OK(sp_writer_sample(ref, (uint64_t)i * 10, 1, 1, &f, 1));
		c.fail_next = i % 9 == 0;
		err = sp_writer_sample(w, (uint64_t)i * 10, 1, 1, &f, 1);
		if (err == -EIO) {
			/* Nothing was written; the chunk is kept for a retry. */
			CHECK_OK(sp_writer_sample(w, (uint64_t)i * 10, 1, 1, &f,
						  1));
		} else {
			CHECK_OK(err);
		}
	}
	c.fail_next = true;
	CHECK_EQ_INT(sp_writer_flush(w), -EIO);
	CHECK_OK(sp_writer_finish(w));
	CHECK_EQ(c.finishes, 1);
	CHECK_OK(sp_writer_finish(ref));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(ref), &data, &len));
	CHECK_MEM(c.buf, c.len, data, len);
	CHECK_EQ(sp_writer_bytes(w), len);
	sp_writer_free(w);
	sp_writer_free(ref);
	CHECK_EQ(c.frees, 1);
}

/* ---- zstd sink ---- */

/* Decompresses all of @src (any number of frames) into @dst. */
static size_t unzstd(const void *src, size_t len, uint8_t *dst, size_t cap)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	ZSTD_inBuffer in = { src, len, 0 };
	ZSTD_outBuffer out = { dst, cap, 0 };
	size_t ret = 0;

	CHECK_PTR(ds);
	while (in.pos < in.size) {
		ret = ZSTD_decompressStream(ds, &out, &in);
		CHECK(!ZSTD_isError(ret));
		CHECK(out.pos < cap);
	}
	/* Every write ended a frame: nothing is left half-decoded. */
	CHECK_EQ(ret, 0);
	ZSTD_freeDStream(ds);
	return out.pos;
}

static void zstd_roundtrip(int level, size_t *compressed)
{
	struct counting cnt = { 0 };
	struct sp_allocator a = { count_alloc, count_free, &cnt };
	struct sp_sink *inner, *z;
	uint8_t *ref = malloc(1 << 20), *back = malloc(1 << 20);
	size_t total = 0, len, got, n;
	const void *data;
	int i;

	CHECK_OK(sp_sink_new_memory(SINK_OPTS(.allocator = &a), &inner));
	CHECK_OK(sp_sink_new_zstd(
		inner, SINK_OPTS(.allocator = &a, .zstd_level = level), &z));
	for (i = 0; i < 40; i++) {
		n = (size_t)(i * 977) % 20000 + 1;
		fill(ref + total, n, (uint32_t)i);
		CHECK_OK(sp_sink_write(z, ref + total, n));
		total += n;
		CHECK_OK(sp_sink_memory_data(inner, &data, &len));
		got = unzstd(data, len, back, 1 << 20);
		CHECK_MEM(back, got, ref, total);
	}
	CHECK_OK(sp_sink_flush(z));
	CHECK_OK(sp_sink_finish(z));
	CHECK_EQ_INT(sp_sink_write(z, ref, 1), -EPIPE);
	CHECK_OK(sp_sink_memory_data(inner, &data, &len));
	CHECK(len < total / 2);
	*compressed = len;
	sp_sink_free(z);
	CHECK_EQ(cnt.live, 0);
	free(ref);
	free(back);
}

static void test_zstd_levels(void)
{
	struct counting cnt = { 0 };
	struct sp_allocator a = { count_alloc, count_free, &cnt };
	size_t l0, l3, l19;
	struct sp_sink *inner, *z = NULL;

	zstd_roundtrip(0, &l0);
	zstd_roundtrip(3, &l3);
	zstd_roundtrip(19, &l19);
	CHECK_EQ(l0, l3); /* level 0 means 3 */
	zstd_roundtrip(-5, &l0);
	/* Bad levels and NULL inner: -EINVAL, and the inner sink is freed. */
	CHECK_OK(sp_sink_new_memory(SINK_OPTS(.allocator = &a), &inner));
	CHECK_EQ_INT(
		sp_sink_new_zstd(inner,
				 SINK_OPTS(.allocator = &a, .zstd_level = 1000),
				 &z),
		-EINVAL);
	CHECK(z == NULL);
	CHECK_EQ(cnt.live, 0);
	CHECK_EQ_INT(sp_sink_new_zstd(
			     NULL, SINK_OPTS(.allocator = &a, .zstd_level = 3),
			     &z),
		     -EINVAL);
}

/* zstd over a failing inner sink: the refused frame is re-sent, not doubled. */
static void test_zstd_retry(void)
{
	static struct cb c;
	struct sp_sink *inner, *z;
	uint8_t ref[30000], back[40000];
	size_t got;

	fill(ref, sizeof(ref), 3);
	CHECK_OK(sp_sink_new_callback(&cb_ops, &c, NULL, &inner));
	CHECK_OK(sp_sink_new_zstd(inner, NULL, &z));
	CHECK_OK(sp_sink_write(z, ref, 10000));
	c.fail_next = true;
	CHECK_EQ_INT(sp_sink_write(z, ref + 10000, 20000), -EIO);
	CHECK_OK(sp_sink_write(z, ref + 10000, 20000));
	CHECK_OK(sp_sink_finish(z));
	CHECK_EQ(c.finishes, 1);
	got = unzstd(c.buf, c.len, back, sizeof(back));
	CHECK_MEM(back, got, ref, sizeof(ref));
	sp_sink_free(z);
	CHECK_EQ(c.frees, 1);
}

/* The writer through a zstd sink yields the same spool bytes. */
static void test_zstd_writer(void)
{
	struct sp_writer_opts o = { .size = sizeof(o), .chunk_size = 256 };
	struct sp_frame f = { .module_id = SP_NO_MODULE };
	struct sp_sink *inner, *z, *mem;
	struct sp_writer *w, *ref;
	const void *zdata, *data;
	size_t zlen, len, got;
	uint8_t *back = malloc(1 << 20);
	int i;

	CHECK_OK(sp_sink_new_memory(NULL, &inner));
	CHECK_OK(sp_sink_new_zstd(inner, NULL, &z));
	CHECK_OK(sp_writer_new(z, &o, &w));
	CHECK_OK(sp_sink_new_memory(NULL, &mem));
	CHECK_OK(sp_writer_new(mem, NULL, &ref));
	for (i = 0; i < 5000; i++) {
		f.abs_ip = f.file_relative_ip = (uint64_t)(i % 101) * 16;
		CHECK_OK(sp_writer_sample(w, (uint64_t)i, 1 + i % 3, 2, &f, 1));
		CHECK_OK(sp_writer_sample(ref, (uint64_t)i, 1 + i % 3, 2, &f,
					  1));
	}
	CHECK_OK(sp_writer_finish(w));
	CHECK_OK(sp_writer_finish(ref));
	CHECK_OK(sp_sink_memory_data(inner, &zdata, &zlen));
	CHECK_OK(sp_sink_memory_data(mem, &data, &len));
	got = unzstd(zdata, zlen, back, 1 << 20);
	CHECK_MEM(back, got, data, len);
	CHECK_EQ(sp_writer_bytes(w), len);
	sp_writer_free(w);
	sp_writer_free(ref);
	free(back);
}

int main(void)
{
	test_memory();
	test_fd_pipe();
	test_file();
	test_callback();
	test_zstd_levels();
	test_zstd_retry();
	test_zstd_writer();
	return T_EXIT_PASS;
}
