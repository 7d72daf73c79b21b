/* SPDX-License-Identifier: MIT */
/* Helpers of the gzip export tests (Firefox, pprof): spools, expectations, gunzip. */
#ifndef SP_TESTS_EXPORT_GZ_TEST_H
#define SP_TESTS_EXPORT_GZ_TEST_H

/*
 * The spool holds what a real recording would: pinned frames at real
 * functions of this test binary (module from /proc/self/maps), an
 * unpinned user frame named through a perf map with awkward names, kernel
 * frames, and the truncated marker, over three threads of two processes
 * (the second "process" reuses this binary's mapping under another pid).
 *
 * Expectations come from the public readers: a Snapshot of the same bytes
 * and a Symbolizer with the same options, so the tests compare an export
 * with an independent resolution, not with the exporter's own model.
 * Stacks are keyed as "tid \x1f root-name \x1f ... \x1f leaf-name".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include <stackpulse.h>

#include "check.h"
#include "self_spool.h"

#define GZT_JIT_BASE 0x7e0000000000ull

struct gzt {
	char dir[64]; /* temp dir with the perf map and the spool */
	char spool[128];
	int32_t pid;
	struct sp_symbolizer_opts symopts;
	struct sp_export_opts opts;
};

/* Frames of this binary's code the spool points at. */
__attribute__((noinline)) void gzt_leaf(void);
__attribute__((noinline)) void gzt_middle(void);
__attribute__((noinline)) void gzt_root(void);
__attribute__((noinline)) void gzt_leaf(void)
{
	__asm__ volatile("");
}
__attribute__((noinline)) void gzt_middle(void)
{
	gzt_leaf();
}
__attribute__((noinline)) void gzt_root(void)
{
	gzt_middle();
}

/* Names with bytes every format must escape; one is not valid UTF-8. */
static const char *const gzt_jit_names[] = {
	"jit \"quoted\" \\back\\slash",
	/* Split so \x01 ends before "ctl"; parenthesized for clang. */
	("jit;semi<tag>&amp 'x' \x01"
	 "ctl caf\xc3\xa9 \xf0\x9f\x94\xa5"),
	"jit bad \xff\xfe utf8",
};

static uint32_t gzt_module(struct sp_writer *w, const struct sp_module *m,
			   int32_t pid)
{
	struct sp_module mod = *m;
	uint32_t id;

	mod.pid = pid;
	CHECK_OK(sp_writer_module(w, &mod, &id));
	return id;
}

static struct sp_frame gzt_pinned(const struct sp_module *m, uint32_t module,
				  void (*fn)(void), uint64_t delta)
{
	return self_spool_frame(m, module, (uint64_t)(uintptr_t)fn + delta);
}

static struct sp_frame gzt_raw(uint64_t abs, uint32_t mode)
{
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip = abs,
			      .module_id = SP_NO_MODULE,
			      .mode = mode };
	if (mode == SP_FRAME_TRUNCATED)
		f.abs_ip = f.file_relative_ip = 0;
	return f;
}

static void gzt_perf_map(const struct gzt *t, int32_t pid)
{
	char path[256];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s/perf-%d.map", t->dir, pid);
	f = fopen(path, "w");
	CHECK_PTR(f);
	for (i = 0; i < sizeof(gzt_jit_names) / sizeof(gzt_jit_names[0]); i++)
		fprintf(f, "%" PRIx64 " 100 %s\n",
			(uint64_t)(GZT_JIT_BASE + i * 0x100), gzt_jit_names[i]);
	fclose(f);
}

/* One sample of @n frames (leaf first) @times times. */
static void gzt_samples(struct sp_writer *w, uint64_t *ts, int32_t pid,
			int32_t tid, const struct sp_frame *fr, size_t n,
			int times)
{
	while (times-- > 0) {
		*ts += 1000000 + (*ts % 7) * 1000; /* ~1 ms apart */
		CHECK_OK(sp_writer_sample(w, *ts, pid, tid, fr, n));
	}
}

/* Writes the test spool's samples (modules already written). */
static void gzt_write_samples(struct sp_writer *w, const struct sp_module *m,
			      uint32_t mod, uint32_t mod2, int32_t pid)
{
	struct sp_frame a[] = { gzt_pinned(m, mod, gzt_leaf, 0),
				gzt_pinned(m, mod, gzt_middle, 1),
				gzt_pinned(m, mod, gzt_root, 1) };
	struct sp_frame b[] = { gzt_raw(0xffffffff81000010ull, SP_FRAME_KERNEL),
				gzt_raw(0xffffffff81000200ull, SP_FRAME_KERNEL),
				gzt_pinned(m, mod, gzt_middle, 1),
				gzt_raw(0, SP_FRAME_TRUNCATED) };
	struct sp_frame c[] = { gzt_raw(GZT_JIT_BASE + 0x10, SP_FRAME_USER),
				gzt_raw(GZT_JIT_BASE + 0x110, SP_FRAME_USER),
				gzt_raw(GZT_JIT_BASE + 0x210, SP_FRAME_USER),
				gzt_pinned(m, mod, gzt_root, 1) };
	struct sp_frame d[] = { gzt_pinned(m, mod2, gzt_leaf, 0),
				gzt_pinned(m, mod2, gzt_root, 1) };
	uint64_t ts = 5000000000ull;

	gzt_samples(w, &ts, pid, pid, a, 3, 5);
	gzt_samples(w, &ts, pid, pid + 1, b, 4, 3);
	gzt_samples(w, &ts, pid, pid, c, 4, 2);
	gzt_samples(w, &ts, pid, pid + 1, a, 3, 4);
	gzt_samples(w, &ts, pid + 7, pid + 7, d, 2, 6);
	gzt_samples(w, &ts, pid, pid, b, 4, 1);
}

/* Creates the temp dir, the perf map and the spool; @empty: no samples. */
static void gzt_setup(struct gzt *t, int empty)
{
	struct sp_writer_opts wo = { .size = sizeof(wo),
				     .start_timestamp_us = 1700000000000000ull,
				     .sample_interval_us = 1000 };
	struct sp_sink *sink;
	struct sp_writer *w;
	struct sp_module m;
	char mpath[512];
	uint32_t mod, mod2;

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/sp-export-gz-XXXXXX");
	CHECK_PTR(mkdtemp(t->dir));
	snprintf(t->spool, sizeof(t->spool), "%s/test.spool", t->dir);
	t->pid = getpid();
	gzt_perf_map(t, t->pid);
	CHECK_OK(self_spool_module((uint64_t)(uintptr_t)gzt_leaf, t->pid, &m,
				   mpath, sizeof(mpath)));
	CHECK_OK(sp_sink_open_file(t->spool, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &wo, &w));
	if (!empty) {
		mod = gzt_module(w, &m, t->pid);
		mod2 = gzt_module(w, &m, t->pid + 7);
		gzt_write_samples(w, &m, mod, mod2, t->pid);
	}
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
	t->symopts.size = sizeof(t->symopts);
	t->symopts.flags = SP_SYMBOLIZER_NO_KERNEL;
	t->symopts.perf_map_dir = t->dir;
	t->opts.size = sizeof(t->opts);
	t->opts.symbolizer = &t->symopts;
	t->opts.title = "gz \"test\"";
}

static void gzt_teardown(struct gzt *t)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	CHECK(system(cmd) == 0);
}

/* Exports @format into memory and gunzips it; caller frees *out. */
static void gzt_export(struct gzt *t, enum sp_export_format format,
		       unsigned char **out, size_t *out_len)
{
	struct sp_sink *sink;
	const void *data;
	size_t len, cap = 1 << 16;
	z_stream zs;
	int zerr;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_export(t->spool, format, sink, &t->opts));
	CHECK_OK(sp_sink_memory_data(sink, &data, &len));
	CHECK(len >= 18 && ((const unsigned char *)data)[0] == 0x1f &&
	      ((const unsigned char *)data)[1] == 0x8b);
	memset(&zs, 0, sizeof(zs));
	CHECK_EQ_INT(inflateInit2(&zs, 15 + 16), Z_OK);
	*out = malloc(cap);
	CHECK_PTR(*out);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			*out = realloc(*out, cap);
			CHECK_PTR(*out);
		}
		zs.next_out = *out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		zerr = inflate(&zs, Z_NO_FLUSH);
		CHECK(zerr == Z_OK || zerr == Z_STREAM_END);
	} while (zerr != Z_STREAM_END);
	CHECK_EQ(zs.avail_in, 0); /* one gzip member, nothing after it */
	*out_len = zs.total_out;
	inflateEnd(&zs);
	sp_sink_free(sink);
}

/* ---- expectations: "tid\x1fname...\x1fname" -> count ---- */

struct gzt_stack {
	char *key;
	size_t len;
	uint64_t count;
};

struct gzt_stacks {
	struct gzt_stack *v;
	size_t n, cap;
};

/*
 * Appends @s to @buf as the exports write names: control bytes and
 * invalid UTF-8 bytes as the text \xNN (sp_text_escape(), issue 20 item
 * 15); @raw appends the model's own separators as they are.
 */
static void gzt_append(char **buf, size_t *len, const char *s, bool raw)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0;

	*buf = realloc(*buf, *len + 4 * n + 2);
	CHECK_PTR(*buf);
	while (i < n) {
		size_t k = 0;
		unsigned c = p[i];

		if (c < 0x80)
			k = 1;
		else if (c >= 0xc2 && c <= 0xdf && i + 1 < n &&
			 (p[i + 1] & 0xc0) == 0x80)
			k = 2;
		else if (c >= 0xe0 && c <= 0xef && i + 2 < n &&
			 (p[i + 1] & 0xc0) == 0x80 && (p[i + 2] & 0xc0) == 0x80)
			k = 3;
		else if (c >= 0xf0 && c <= 0xf4 && i + 3 < n &&
			 (p[i + 1] & 0xc0) == 0x80 &&
			 (p[i + 2] & 0xc0) == 0x80 && (p[i + 3] & 0xc0) == 0x80)
			k = 4;
		if (k == 1 && (c < 0x20 || c == 0x7f) && !raw)
			k = 0;
		if (k == 2 && c == 0xc2 && p[i + 1] <= 0x9f)
			k = 0;
		if (k) {
			memcpy(*buf + *len, p + i, k);
			*len += k;
			i += k;
		} else {
			*len += (size_t)sprintf(*buf + *len, "\\x%02x", c);
			i++;
		}
	}
}

static void gzt_stacks_add(struct gzt_stacks *st, char *key, size_t len,
			   uint64_t count)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->v[i].len == len &&
		    memcmp(st->v[i].key, key, len) == 0) {
			st->v[i].count += count;
			free(key);
			return;
		}
	if (st->n == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 16;
		st->v = realloc(st->v, st->cap * sizeof(*st->v));
		CHECK_PTR(st->v);
	}
	st->v[st->n++] = (struct gzt_stack){ key, len, count };
}

/* Builds the key of tid @tid and names @names[0..n) (root first). */
static char *gzt_key(int32_t tid, const char *const *names, size_t n,
		     size_t *len)
{
	char *buf = NULL, num[16];
	size_t i;

	*len = 0;
	snprintf(num, sizeof(num), "%d", tid);
	gzt_append(&buf, len, num, false);
	for (i = 0; i < n; i++) {
		gzt_append(&buf, len, "\x1f", true);
		gzt_append(&buf, len, names[i], false);
	}
	return buf;
}

/* Per-(tid, root-first names) counts of every sample, from a Snapshot. */
static void gzt_expected(const struct gzt *t, struct gzt_stacks *st)
{
	const struct sp_resolved_frame *rf[256];
	const char *names[256];
	struct sp_symbolizer *sym;
	struct sp_snapshot *snap;
	struct sp_sample s;
	size_t i, len;
	char *key;
	int n, k;

	memset(st, 0, sizeof(*st));
	CHECK_OK(sp_snapshot_open(t->spool, NULL, &snap));
	CHECK_OK(sp_symbolizer_new(sp_snapshot_spool(snap), &t->symopts, &sym));
	for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		n = sp_symbolizer_resolve_stack(sym, s.stack, s.pid, rf, 256);
		CHECK(n > 0 && n <= 256);
		for (k = 0; k < n; k++)
			names[k] = rf[n - 1 - k]->name; /* root first */
		key = gzt_key(s.tid, names, (size_t)n, &len);
		gzt_stacks_add(st, key, len, 1);
	}
	sp_symbolizer_free(sym);
	sp_snapshot_close(snap);
}

static int gzt_cmp(const void *a, const void *b)
{
	const struct gzt_stack *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Fails unless both sets hold the same keys with the same counts. */
static void gzt_compare(struct gzt_stacks *got, struct gzt_stacks *want)
{
	size_t i;

	qsort(got->v, got->n, sizeof(*got->v), gzt_cmp);
	qsort(want->v, want->n, sizeof(*want->v), gzt_cmp);
	for (i = 0; i < got->n && i < want->n; i++) {
		if (gzt_cmp(&got->v[i], &want->v[i]) == 0 &&
		    got->v[i].count == want->v[i].count)
			continue;
		fprintf(stderr,
			"stack %zu differs: got %.*s x%" PRIu64
			", want %.*s x%" PRIu64 "\n",
			i, (int)got->v[i].len, got->v[i].key, got->v[i].count,
			(int)want->v[i].len, want->v[i].key, want->v[i].count);
		exit(T_EXIT_FAIL);
	}
	CHECK_EQ(got->n, want->n);
}

static void gzt_stacks_free(struct gzt_stacks *st)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		free(st->v[i].key);
	free(st->v);
}

/* True if @names contain a frame whose name starts with @prefix. */
static int gzt_has_name(const struct gzt_stacks *st, const char *needle)
{
	size_t i, n = strlen(needle);

	for (i = 0; i < st->n; i++)
		if (memmem(st->v[i].key, st->v[i].len, needle, n))
			return 1;
	return 0;
}

#endif /* SP_TESTS_EXPORT_GZ_TEST_H */
