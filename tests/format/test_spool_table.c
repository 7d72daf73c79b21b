/* SPDX-License-Identifier: MIT */
/* Spools built in memory, a spool's Python records, writer push, stats sum. */

/*
 * sp_spool_new/add_module/add_frame must give a table that the read
 * functions see exactly as a decoded one (dense ids, §6 resolution that
 * only sees modules added before a frame), and refuse what no spool could
 * hold. sp_spool_python_records hands out a Snapshot's tag-6 records and
 * refuses for a spool that keeps none. sp_writer_push reaches the sink
 * without flushing it; sp_unwind_stats_add sums every counter.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <stackpulse.h>

#include "check.h"

static struct sp_module user_module(uint64_t start, uint64_t end,
				    const char *path)
{
	struct sp_module m;

	memset(&m, 0, sizeof(m));
	m.start = start;
	m.end = end;
	m.pid = 42;
	m.path = path;
	m.id = 99;	      /* ignored */
	m.deactivated_at = 3; /* ignored */
	return m;
}

static void table_ids_and_resolution(void)
{
	struct sp_module a = user_module(0x1000, 0x2000, "/bin/a"), got;
	struct sp_module b = user_module(0x1000, 0x3000, "/bin/b");
	struct sp_frame f = { .abs_ip = 0x1800,
			      .file_relative_ip = 0x1800,
			      .module_id = SP_NO_MODULE,
			      .mode = SP_FRAME_USER };
	struct sp_frame_context ctx;
	struct sp_spool *s;
	uint32_t id, f0, f1;

	CHECK_OK(sp_spool_new(NULL, &s));
	CHECK_EQ(sp_spool_module_count(s), 0);
	CHECK_OK(sp_spool_add_module(s, &a, &id));
	CHECK_EQ(id, 0);
	CHECK_OK(sp_spool_add_frame(s, &f, &f0)); /* sees module 0 only */
	CHECK_OK(sp_spool_add_module(s, &b, &id));
	CHECK_EQ(id, 1);
	CHECK_OK(sp_spool_add_frame(s, &f, &f1)); /* sees both: 1 is newer */
	CHECK_EQ(f0, 0);
	CHECK_EQ(f1, 1);
	CHECK_EQ(sp_spool_module_count(s), 2);
	CHECK_EQ(sp_spool_frame_count(s), 2);
	CHECK_OK(sp_spool_module(s, 0, &got));
	CHECK_EQ(got.id, 0);
	CHECK_EQ(got.deactivated_at, SP_NEVER);
	CHECK_EQ(got.path_len, strlen("/bin/a"));
	CHECK(strcmp(got.path, "/bin/a") == 0);
	CHECK(got.path != a.path); /* a copy */
	CHECK_OK(sp_spool_resolve(s, f0, 42, &ctx));
	CHECK_EQ(ctx.module_id, 0);
	CHECK_OK(sp_spool_resolve(s, f1, 42, &ctx));
	CHECK_EQ(ctx.module_id, 1);
	sp_spool_free(s);
	sp_spool_free(NULL);
}

static void table_refusals(void)
{
	struct sp_module m = user_module(0x2000, 0x1000, "/bin/a");
	struct sp_frame f = { 0 };
	struct sp_spool *s;

	CHECK_OK(sp_spool_new(NULL, &s));
	CHECK_EQ_INT(sp_spool_add_module(s, &m, NULL), -EINVAL); /* end */
	m = user_module(0x1000, 0x2000, NULL);
	m.path_len = 3;
	CHECK_EQ_INT(sp_spool_add_module(s, &m, NULL), -EINVAL); /* no path */
	m = user_module(0x1000, 0x2000, "/bin/a");
	m.pid = 0;
	CHECK_EQ_INT(sp_spool_add_module(s, &m, NULL), -EINVAL); /* no pid */
	m.is_kernel = 1; /* a kernel module needs none: it gets -1 */
	CHECK_OK(sp_spool_add_module(s, &m, NULL));
	CHECK_OK(sp_spool_module(s, 0, &m));
	CHECK_EQ_INT(m.pid, -1);
	f.module_id = 1; /* not added */
	CHECK_EQ_INT(sp_spool_add_frame(s, &f, NULL), -EINVAL);
	f.module_id = 0;
	f.mode = 7;
	CHECK_EQ_INT(sp_spool_add_frame(s, &f, NULL), -EINVAL);
	CHECK_EQ(sp_spool_frame_count(s), 0);
	CHECK_EQ_INT(sp_spool_add_frame(NULL, &f, NULL), -EINVAL);
	CHECK_EQ_INT(sp_spool_new(NULL, NULL), -EINVAL);
	sp_spool_free(s);
}

/* A spool with two tag-6 records, written to memory. */
static struct sp_writer *python_spool(const void **data, size_t *len)
{
	struct sp_writer_opts o = { .size = sizeof(o) };
	struct sp_sink *sink;
	struct sp_writer *w;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &o, &w));
	CHECK_OK(sp_writer_python_runtime(w, 1000, 7, true));
	CHECK_OK(sp_writer_python_runtime(w, 2000, 7, false));
	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(w), data, len));
	return w;
}

static void python_records(void)
{
	const struct sp_python_record *r;
	struct sp_snapshot *snap;
	struct sp_spool *own;
	struct sp_writer *w;
	const void *data;
	size_t len, n;

	w = python_spool(&data, &len);
	CHECK_OK(sp_snapshot_open_buffer(data, len, NULL, &snap));
	CHECK_OK(sp_spool_python_records(sp_snapshot_spool(snap), &r, &n));
	CHECK_EQ(n, 2);
	CHECK_EQ(r[0].timestamp_ns, 1000);
	CHECK_EQ_INT(r[0].pid, 7);
	CHECK_EQ(r[0].is_python_runtime, 1);
	CHECK_EQ(r[1].is_python_runtime, 0);
	sp_snapshot_close(snap);
	sp_writer_free(w);
	CHECK_OK(sp_spool_new(NULL, &own));
	CHECK_EQ_INT(sp_spool_python_records(own, &r, &n), -EOPNOTSUPP);
	sp_spool_free(own);
}

struct counts {
	size_t bytes;
	int flushes;
};

static int count_write(void *ctx, const void *buf, size_t len)
{
	(void)buf;
	((struct counts *)ctx)->bytes += len;
	return 0;
}

static int count_flush(void *ctx)
{
	((struct counts *)ctx)->flushes++;
	return 0;
}

static void writer_push(void)
{
	static const struct sp_sink_ops ops = { .write = count_write,
						.flush = count_flush };
	struct sp_writer_opts o = { .size = sizeof(o) };
	struct counts c = { 0, 0 };
	struct sp_sink *sink;
	struct sp_writer *w;
	size_t header, after_push;
	int flushes;

	CHECK_OK(sp_sink_new_callback(&ops, &c, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &o, &w));
	header = c.bytes; /* the header goes out (and is flushed) at once */
	flushes = c.flushes;
	CHECK_OK(sp_writer_python_runtime(w, 1000, 7, true));
	CHECK_EQ(c.bytes, header); /* the record is buffered */
	CHECK_OK(sp_writer_push(w));
	after_push = c.bytes;
	CHECK(after_push > header);
	CHECK_EQ(after_push, sp_writer_bytes(w));
	CHECK_EQ_INT(c.flushes, flushes); /* pushed, not flushed */
	CHECK_OK(sp_writer_flush(w));
	CHECK_EQ_INT(c.flushes, flushes + 1);
	CHECK_EQ(c.bytes, after_push);
	CHECK_EQ_INT(sp_writer_push(NULL), -EINVAL);
	sp_writer_free(w);
}

static void stats_add(void)
{
	struct sp_unwind_stats a, b;
	size_t i;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.samples = 1;
	a.frames = 10;
	b.samples = 2;
	b.frames = 5;
	b.truncated = 1;
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		b.errors[i] = i + 1;
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		b.fallbacks[i] = 2 * i + 1;
	sp_unwind_stats_add(&a, &b);
	CHECK_EQ(a.samples, 3);
	CHECK_EQ(a.frames, 15);
	CHECK_EQ(a.truncated, 1);
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		CHECK_EQ(a.errors[i], i + 1);
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		CHECK_EQ(a.fallbacks[i], 2 * i + 1);
	sp_unwind_stats_add(&a, &a); /* the same struct twice */
	CHECK_EQ(a.samples, 6);
	CHECK_EQ(a.fallbacks[SP_FALLBACK_COUNT - 1],
		 2 * (2 * (SP_FALLBACK_COUNT - 1) + 1));
}

int main(void)
{
	table_ids_and_resolution();
	table_refusals();
	python_records();
	writer_push();
	stats_add();
	return T_EXIT_PASS;
}
