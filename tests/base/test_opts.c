/* SPDX-License-Identifier: MIT */
/* Unit test of the sized-struct rule (R4): sp__opts_load and its readers. */

/*
 * Every public options struct starts with `size_t size`. Each one is tried
 * through its public entry point with four claimed sizes: one that ends in
 * the middle of a pointer (must be -EINVAL: copying half a pointer gives a
 * silent wrong value), an older version's size (a field boundary that is a
 * multiple of 8: accepted, and a field past it that would be refused if it
 * were read is ignored), a newer caller's larger size with a zero tail
 * (accepted) and with a non-zero tail (-EINVAL). Calls are chosen so that
 * none needs perf: a system recorder fails on its cgroup path (-ENOENT)
 * only after its options were accepted; a process recorder opens on a
 * memory sink without attaching anything.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "opts.h"

/* Room for any options struct plus a newer caller's tail. */
#define TAIL 16
union opts_buf {
	unsigned char b[256]; /* first: `= { 0 }` zeroes all of it */
	max_align_t align;
};

struct probe {
	const char *name;
	size_t full; /* our sizeof */
	size_t prev; /* an older version's size */
	size_t cut;  /* ends inside a pointer */
	int ok;	     /* what a call with acceptable options returns */
	int (*call)(void *opts);
};

static char tmpdir[] = "/tmp/sp_opts_XXXXXX";
static char spool_path[64];
static void *spool_data;
static size_t spool_len;
static struct sp_snapshot *spool_snap;
static const struct sp_spool *spool;

static void set_size(void *opts, size_t size)
{
	memcpy(opts, &size, sizeof(size));
}

static void expect(const struct probe *p, void *opts, size_t size, int want)
{
	int got;

	set_size(opts, size);
	got = p->call(opts);
	if (got != want)
		fprintf(stderr, "%s with size %zu:\n", p->name, size);
	CHECK_EQ_INT(got, want);
}

/* The four sizes of the rule; leaves @opts claiming its full size. */
static void probe_sizes(const struct probe *p, void *opts)
{
	unsigned char *b = opts;

	CHECK(p->cut % sizeof(size_t) != 0 && p->prev % sizeof(size_t) == 0);
	CHECK(p->full + TAIL <= sizeof(union opts_buf));
	expect(p, opts, p->cut, -EINVAL);
	expect(p, opts, 4, -EINVAL);
	expect(p, opts, p->prev, p->ok);
	expect(p, opts, p->full + TAIL, p->ok);
	b[p->full + TAIL - 1] = 1;
	expect(p, opts, p->full + TAIL, -EINVAL);
	b[p->full + TAIL - 1] = 0;
	expect(p, opts, p->full, p->ok);
}

/* ---- sp__opts_load itself ---- */

static void test_loader(void)
{
	uint64_t user[3] = { 24, 0x1111111122222222u, 0x3333333344444444u };
	uint64_t out[4];
	size_t bad[] = { 0, 4, 12, 20, 23 };
	size_t i;

	memset(out, 0xAA, sizeof(out));
	CHECK_EQ_INT(sp__opts_load(NULL, 12, out, sizeof(out)), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(out[i], 0); /* NULL: all defaults */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(sp__opts_load(user, bad[i], out, sizeof(out)),
			     -EINVAL);
	CHECK_EQ_INT(sp__opts_load(user, 16, out, sizeof(out)), 0);
	CHECK_EQ(out[1], user[1]);
	CHECK_EQ(out[2], 0); /* past the caller's size: default */
	/* A newer caller: its unknown tail must be zero. */
	CHECK_EQ_INT(sp__opts_load(user, 24, out, 16), -EINVAL);
	user[2] = 0;
	CHECK_EQ_INT(sp__opts_load(user, 24, out, 16), 0);
	CHECK_EQ(out[1], user[1]);
	CHECK(!sp__opts_size_ok(12) && sp__opts_size_ok(16));
}

/* ---- fixtures: an empty finished spool, in memory and on disk ---- */

static void spool_make(void)
{
	struct sp_writer *w;
	struct sp_sink *sink;
	const void *data;
	FILE *f;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	CHECK_OK(sp_writer_finish(w));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(w), &data, &spool_len));
	spool_data = malloc(spool_len);
	CHECK_PTR(spool_data);
	memcpy(spool_data, data, spool_len);
	sp_writer_free(w);
	CHECK_PTR(mkdtemp(tmpdir));
	snprintf(spool_path, sizeof(spool_path), "%s/empty.spool", tmpdir);
	f = fopen(spool_path, "wb");
	CHECK_PTR(f);
	CHECK_EQ(fwrite(spool_data, 1, spool_len, f), spool_len);
	CHECK_EQ_INT(fclose(f), 0);
	CHECK_OK(sp_snapshot_open_buffer(spool_data, spool_len, NULL,
					 &spool_snap));
	spool = sp_snapshot_spool(spool_snap); /* for the symbolizer probes */
}

/* ---- one call per struct ---- */

static int call_writer(void *opts)
{
	struct sp_writer *w;
	struct sp_sink *sink;
	int err;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	err = sp_writer_new(sink, opts, &w); /* owns @sink from here */
	if (!err)
		sp_writer_free(w);
	return err;
}

static int call_reader(void *opts)
{
	struct sp_snapshot *snap;
	int err = sp_snapshot_open_buffer(spool_data, spool_len, opts, &snap);

	if (!err)
		sp_snapshot_close(snap);
	return err;
}

static int call_uring(void *opts)
{
	char path[96];
	struct sp_sink *sink;
	int fd, err;

	snprintf(path, sizeof(path), "%s/uring.out", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	err = sp_sink_new_uring_fd(fd, opts, &sink); /* keeps no fd */
	if (!err)
		sp_sink_free(sink);
	close(fd);
	return err;
}

static int call_symbolizer(void *opts)
{
	struct sp_symbolizer *sym;
	int err = sp_symbolizer_new(spool, opts, &sym);

	if (!err)
		sp_symbolizer_free(sym);
	return err;
}

static int call_unwinder(void *opts)
{
	struct sp_unwinder *u;
	int err = sp_unwinder_new(opts, &u);

	if (!err)
		sp_unwinder_free(u);
	return err;
}

static int call_system(void *opts)
{
	struct sp_recorder_opts ro = { .size = sizeof(ro) };
	struct sp_recorder *rec;
	struct sp_sink *sink;
	int err;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	ro.system = opts;
	err = sp_recorder_open_sink(sink, &ro, &rec);
	if (!err)
		sp_recorder_close(rec);
	return err;
}

static int call_recorder(void *opts)
{
	struct sp_recorder *rec;
	struct sp_sink *sink;
	int err;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	err = sp_recorder_open_sink(sink, opts, &rec);
	if (!err)
		sp_recorder_close(rec);
	return err;
}

static int call_export(void *opts)
{
	struct sp_sink *out;
	int err;

	CHECK_OK(sp_sink_new_memory(NULL, &out));
	err = sp_export(spool_path, SP_EXPORT_FOLDED, out, opts);
	sp_sink_free(out);
	return err;
}

static int call_export_symbolizer(void *opts)
{
	struct sp_export_opts eo = { .size = sizeof(eo), .symbolizer = opts };

	return call_export(&eo);
}

/* ---- the probes ---- */

static void test_writer(void)
{
	union opts_buf u = { 0 };
	const struct probe p = {
		.name = "writer",
		.full = sizeof(struct sp_writer_opts),
		.prev = offsetof(struct sp_writer_opts, id_limit),
		.cut = offsetof(struct sp_writer_opts, allocator) + 4,
		.ok = 0,
		.call = call_writer,
	};

	probe_sizes(&p, u.b);
}

static void test_reader(void)
{
	union opts_buf u = { 0 };
	struct sp_reader_opts *o = (struct sp_reader_opts *)u.b;
	const struct probe p = {
		.name = "reader",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_reader_opts, flags),
		.cut = offsetof(struct sp_reader_opts, logger) + 4,
		.ok = 0,
		.call = call_reader,
	};

	probe_sizes(&p, u.b);
	o->flags = 0x80000000u; /* unknown flag: refused once it is read */
	expect(&p, o, p.prev, 0);
	expect(&p, o, p.full, -EINVAL);
}

static void test_uring(void)
{
	union opts_buf u = { 0 };
	struct sp_sink_opts *o = (struct sp_sink_opts *)u.b;
	const struct probe p = {
		.name = "sink (uring)",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_sink_opts, uring_buf_size),
		.cut = offsetof(struct sp_sink_opts, logger) + 4,
		.ok = 0,
		.call = call_uring,
	};

	probe_sizes(&p, u.b);
	/* A field boundary that no version ends at: still refused. */
	expect(&p, o, offsetof(struct sp_sink_opts, uring_buf_count), -EINVAL);
	o->uring_buf_size = SIZE_MAX;
	expect(&p, o, p.prev, 0);
	expect(&p, o, p.full, -EINVAL);
}

static void test_symbolizer(void)
{
	union opts_buf u = { 0 };
	struct sp_symbolizer_opts *o = (struct sp_symbolizer_opts *)u.b;
	const struct probe p = {
		.name = "symbolizer",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_symbolizer_opts, perf_map_dir),
		.cut = offsetof(struct sp_symbolizer_opts, perf_map_dir) + 4,
		.ok = 0,
		.call = call_symbolizer,
	};

	probe_sizes(&p, u.b);
	o->stack_cache = 7;
	expect(&p, o, offsetof(struct sp_symbolizer_opts, stack_cache), 0);
	expect(&p, o, p.full, -EINVAL);
}

static void test_unwinder(void)
{
	union opts_buf u = { 0 };
	struct sp_unwinder_opts *o = (struct sp_unwinder_opts *)u.b;
	const struct probe p = {
		.name = "unwinder",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_unwinder_opts, max_depth),
		.cut = offsetof(struct sp_unwinder_opts, logger) + 4,
		.ok = 0,
		.call = call_unwinder,
	};

	probe_sizes(&p, u.b);
	o->max_depth = SP_DEPTH_MAX + 1;
	expect(&p, o, p.prev, 0);
	expect(&p, o, p.full, -EINVAL);
}

static void test_system(void)
{
	union opts_buf u = { 0 };
	struct sp_system_opts *o = (struct sp_system_opts *)u.b;
	const struct probe p = {
		.name = "system",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_system_opts, flags),
		.cut = offsetof(struct sp_system_opts, cgroup_path) + 4,
		.ok = -ENOENT,
		.call = call_system,
	};
	char path[96];

	snprintf(path, sizeof(path), "%s/no-such-cgroup", tmpdir);
	o->cgroup_path = path;
	probe_sizes(&p, u.b);
	o->flags = 0x80000000u;
	expect(&p, o, p.prev, -ENOENT);
	expect(&p, o, p.full, -EINVAL);
}

static void test_recorder(void)
{
	union opts_buf u = { 0 };
	struct sp_recorder_opts *o = (struct sp_recorder_opts *)u.b;
	const struct probe p = {
		.name = "recorder",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_recorder_opts, sample_hz),
		.cut = offsetof(struct sp_recorder_opts, logger) + 4,
		.ok = 0,
		.call = call_recorder,
	};
	char path[96];

	probe_sizes(&p, u.b);
	o->stack_size = 70000; /* above the maximum */
	expect(&p, o, p.prev, 0);
	expect(&p, o, p.full, -EINVAL);
	/* A refused size never creates (truncates) the spool file. */
	snprintf(path, sizeof(path), "%s/never.spool", tmpdir);
	o->stack_size = 0;
	set_size(o, p.cut);
	CHECK_EQ_INT(sp_recorder_open(path, o, &(struct sp_recorder *){ 0 }),
		     -EINVAL);
	CHECK(access(path, F_OK) != 0 && errno == ENOENT);
	/* The depth limit and its reserved neighbour, read only when sent. */
	o->max_depth = SP_DEPTH_MAX + 1;
	expect(&p, o, offsetof(struct sp_recorder_opts, max_depth), 0);
	expect(&p, o, p.full, -EINVAL);
	o->max_depth = SP_DEPTH_MAX;
	o->reserved = 1;
	expect(&p, o, p.full, -EINVAL);
	o->reserved = 0;
	expect(&p, o, p.full, 0);
}

static void test_export(void)
{
	union opts_buf u = { 0 }, su = { 0 };
	struct sp_export_opts *o = (struct sp_export_opts *)u.b;
	struct sp_symbolizer_opts *so = (struct sp_symbolizer_opts *)su.b;
	const struct probe p = {
		.name = "export",
		.full = sizeof(*o),
		.prev = offsetof(struct sp_export_opts, symbolizer),
		.cut = offsetof(struct sp_export_opts, title) + 4,
		.ok = 0,
		.call = call_export,
	};
	const struct probe ps = {
		.name = "export symbolizer",
		.full = sizeof(*so),
		.prev = offsetof(struct sp_symbolizer_opts, perf_map_dir),
		.cut = offsetof(struct sp_symbolizer_opts, allocator) + 4,
		.ok = 0,
		.call = call_export_symbolizer,
	};

	probe_sizes(&p, u.b);
	probe_sizes(&ps, su.b);
	set_size(so, ps.cut);
	o->symbolizer = so; /* refused once it is read */
	expect(&p, o, p.prev, 0);
	expect(&p, o, p.full, -EINVAL);
}

/* Fills a sized output struct of @rec (the function under test). */
typedef int (*fill_fn)(struct sp_recorder *rec, void *out);

/*
 * An output struct: the caller's size follows the same rule. @buf holds
 * at least @full + TAIL bytes; after the checks it holds a full fill.
 */
static void check_output_sizes(fill_fn fill, size_t full, unsigned char *buf,
			       struct sp_recorder *rec)
{
	size_t i;

	memset(buf, 0xAA, full + TAIL);
	set_size(buf, 12);
	CHECK_EQ_INT(fill(rec, buf), -EINVAL);
	set_size(buf, 4);
	CHECK_EQ_INT(fill(rec, buf), -EINVAL);
	CHECK_EQ(buf[8], 0xAA); /* nothing written */
	set_size(buf, 16);
	CHECK_OK(fill(rec, buf));
	CHECK(buf[16] == 0xAA);
	set_size(buf, full + TAIL);
	CHECK_OK(fill(rec, buf));
	CHECK_EQ(((struct sp_pipeline_stats *)(void *)buf)->size, full + TAIL);
	for (i = full; i < full + TAIL; i++)
		CHECK_EQ(buf[i], 0xAA); /* a newer caller's fields: untouched */
	CHECK_EQ_INT(fill(NULL, buf), -EINVAL);
	CHECK_EQ_INT(fill(rec, NULL), -EINVAL);
}

static int fill_pipeline_stats(struct sp_recorder *rec, void *out)
{
	return sp_recorder_pipeline_stats(rec, out);
}

static int fill_summary(struct sp_recorder *rec, void *out)
{
	return sp_recorder_summary(rec, out);
}

static int fill_jit_stats(struct sp_recorder *rec, void *out)
{
	return sp_recorder_jit_stats(rec, out);
}

static void test_output_structs(void)
{
	union {
		unsigned char b[512]; /* the summary is larger than opts_buf */
		max_align_t align;
	} u;
	const struct sp_pipeline_stats *st = (const void *)u.b;
	const struct sp_recording_summary *sum = (const void *)u.b;
	const struct sp_jit_stats *js = (const void *)u.b;
	struct sp_recorder *rec;
	struct sp_sink *sink;

	CHECK(sizeof(*sum) + TAIL <= sizeof(u.b));
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_recorder_open_sink(sink, NULL, &rec));
	check_output_sizes(fill_pipeline_stats, sizeof(*st), u.b, rec);
	CHECK(st->readers == 0 && st->workers == 0 && st->jobs == 0);
	/* The recording summary is sized the same way (it had no size once). */
	check_output_sizes(fill_summary, sizeof(*sum), u.b, rec);
	CHECK(sum->sample_events == 0 && sum->samples == 0);
	CHECK_EQ(sum->fallbacks[SP_FALLBACK_COUNT - 1], 0);
	/* And the JIT counters (their own struct, sized the same way). */
	check_output_sizes(fill_jit_stats, sizeof(*js), u.b, rec);
	CHECK(js->jitdump_files == 0 && js->names_lost == 0);
	sp_recorder_close(rec);
}

int main(void)
{
	char path[96];

	test_loader();
	spool_make();
	test_writer();
	test_reader();
	test_uring();
	test_symbolizer();
	test_unwinder();
	test_system();
	test_recorder();
	test_export();
	test_output_structs();
	sp_snapshot_close(spool_snap);
	free(spool_data);
	snprintf(path, sizeof(path), "%s/uring.out", tmpdir);
	unlink(path);
	unlink(spool_path);
	rmdir(tmpdir);
	return T_EXIT_PASS;
}
