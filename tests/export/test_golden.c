/* SPDX-License-Identifier: MIT */
/* Golden files: every exporter's output for three tiny spools, byte for byte. */

/*
 * usage: test_golden TESTS_EXPORT_DIR [--update]
 *
 * tests/export/golden/ holds three spools and, for each, what every format
 * must produce from it:
 *
 *   basic.spool.bin   one process, two threads, a timeline (start and
 *                     interval in the header): native frames of a module
 *                     that exists nowhere (named by the native plug-in
 *                     below, with files and lines), kernel frames (named
 *                     by golden/kallsyms), a Python and a JIT frame (named
 *                     by golden/perf-100.map) and a truncated stack;
 *   escape.spool.bin  no timeline, two processes, names and a module path
 *                     holding every byte that some format must escape:
 *                     quotes, backslash, <>&, ';', a control byte, invalid
 *                     UTF-8, a 4-byte character (golden/perf-200.map);
 *   empty.spool.bin   a module and no samples.
 *
 * NAME.FORMAT next to each spool is the expected output. The gzip formats
 * (Firefox, pprof) are stored gunzipped, since compressed bytes depend on
 * the zlib version; pprof is stored both as the raw message (.pprof.pb)
 * and as `protoc --decode perftools.profiles.Profile` text (.pprof.txt,
 * checked only when protoc is installed).
 *
 * Nothing depends on this machine: the module is not a real file, every
 * name comes from files in golden/ or from the plug-in, and the spools are
 * the committed bytes. The test also writes each spool again through the
 * writer and requires the committed bytes, so the generator below stays
 * the documented source of the spools.
 *
 * To regenerate after an intended change of a format (review the diff!):
 *   meson compile -C BUILD export-golden
 * which runs this program with --update: it rewrites the spools and every
 * expected output in the source tree instead of comparing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include <stackpulse.h>

#include "check.h"

#define LIB_START 0x400000ull
#define LIB_OFFSET 0x1000ull
#define KERNEL_BASE 0xffffffff81000000ull
#define JIT_BASE 0x7f0000001000ull

static char tests_dir[512], tmpdir[64];
static bool update;
static int mismatches;

/* ---- the spools ---- */

static struct sp_module lib_module(int32_t pid, const char *path)
{
	return (struct sp_module){ .start = LIB_START,
				   .end = LIB_START + 0x10000,
				   .file_offset = LIB_OFFSET,
				   .inode = 4711,
				   .dev_major = 8,
				   .dev_minor = 1,
				   .pid = pid,
				   .path = path,
				   .path_len = strlen(path) };
}

/* Pinned frame at @off bytes into module @id (file offset space). */
static struct sp_frame lib(uint32_t id, uint64_t off)
{
	return (struct sp_frame){ .abs_ip = LIB_START + off,
				  .file_relative_ip = LIB_OFFSET + off,
				  .module_id = id,
				  .mode = SP_FRAME_USER };
}

static struct sp_frame raw(uint64_t ip, uint32_t mode)
{
	return (struct sp_frame){ .abs_ip = ip,
				  .file_relative_ip = ip,
				  .module_id = SP_NO_MODULE,
				  .mode = mode };
}

static void samples(struct sp_writer *w, uint64_t *ts, int32_t pid, int32_t tid,
		    const struct sp_frame *fr, size_t n, int times)
{
	while (times-- > 0) {
		*ts += 1000000; /* 1 ms */
		CHECK_OK(sp_writer_sample(w, *ts, pid, tid, fr, n));
	}
}

static void write_basic(struct sp_writer *w)
{
	struct sp_module m = lib_module(100, "/opt/golden/libgolden.so");
	struct sp_frame trunc = raw(0, SP_FRAME_TRUNCATED);
	struct sp_frame a[3], b[4], c[4], d[3];
	uint64_t ts = 2000000000ull;
	uint32_t id;

	CHECK_OK(sp_writer_module(w, &m, &id));
	a[0] = lib(id, 0x120), a[1] = lib(id, 0x210), a[2] = lib(id, 0x310);
	b[0] = raw(KERNEL_BASE + 0x40, SP_FRAME_KERNEL);
	b[1] = raw(KERNEL_BASE + 0x1010, SP_FRAME_KERNEL);
	b[2] = lib(id, 0x220), b[3] = lib(id, 0x310);
	c[0] = raw(JIT_BASE + 0x10, SP_FRAME_USER);
	c[1] = raw(JIT_BASE + 0x110, SP_FRAME_USER);
	c[2] = lib(id, 0x230), c[3] = lib(id, 0x310);
	d[0] = lib(id, 0x130), d[1] = lib(id, 0x240), d[2] = trunc;
	samples(w, &ts, 100, 100, a, 3, 6);
	samples(w, &ts, 100, 101, b, 4, 3);
	samples(w, &ts, 100, 100, c, 4, 2);
	samples(w, &ts, 100, 101, a, 3, 4);
	samples(w, &ts, 100, 100, d, 3, 2);
	samples(w, &ts, 100, 101, c, 2, 1); /* a JIT root */
}

static void write_escape(struct sp_writer *w)
{
	struct sp_module m = lib_module(300, "/opt/golden/we\"ird <lib>&.so");
	struct sp_frame a[3], b[2];
	uint64_t ts = 1000;
	uint32_t id;

	CHECK_OK(sp_writer_module(w, &m, &id));
	a[0] = raw(JIT_BASE + 0x10, SP_FRAME_USER);
	a[1] = raw(JIT_BASE + 0x110, SP_FRAME_USER);
	a[2] = raw(JIT_BASE + 0x210, SP_FRAME_USER);
	b[0] = lib(id, 0x120);
	b[1] = lib(id, 0x310);
	samples(w, &ts, 200, 200, a, 3, 3);
	samples(w, &ts, 300, 301, b, 2, 2);
	samples(w, &ts, 200, 202, &a[1], 2, 1);
}

static void write_empty(struct sp_writer *w)
{
	struct sp_module m = lib_module(100, "/opt/golden/libgolden.so");

	CHECK_OK(sp_writer_module(w, &m, NULL));
}

static const struct spool_def {
	const char *name;
	void (*write)(struct sp_writer *w);
	uint64_t start_us, interval_us;
} spools[] = {
	{ "basic", write_basic, 1700000000000000ull, 1000 },
	{ "escape", write_escape, 0, 0 },
	{ "empty", write_empty, 1700000000000000ull, 1000 },
};

static void write_spool(const struct spool_def *def, const char *path)
{
	struct sp_writer_opts wo = { .size = sizeof(wo),
				     .start_timestamp_us = def->start_us,
				     .sample_interval_us = def->interval_us };
	struct sp_writer *w;
	struct sp_sink *sink;

	CHECK_OK(sp_sink_open_file(path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &wo, &w));
	def->write(w);
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
}

/* ---- the native plug-in: names for the module that exists nowhere ---- */

static const struct {
	uint64_t lo, hi; /* file-relative, [lo, hi) */
	const char *name, *file;
	uint32_t line;
} plugin_syms[] = {
	{ 0x1100, 0x1200, "g_leaf", "src/leaf.c", 12 },
	{ 0x1200, 0x1300, "g_middle(int, char const*)", "src/mid.cc", 40 },
	{ 0x1300, 0x1400, "main", "src/main.c", 7 },
};

static int plugin_lookup(void *ctx, const struct sp_native_lookup *l, size_t n,
			 struct sp_resolved_frame *out)
{
	size_t i, k;

	(void)ctx;
	for (i = 0; i < n; i++) {
		for (k = 0; k < sizeof(plugin_syms) / sizeof(plugin_syms[0]);
		     k++) {
			if (l[i].file_relative_ip < plugin_syms[k].lo ||
			    l[i].file_relative_ip >= plugin_syms[k].hi)
				continue;
			out[i].name = plugin_syms[k].name;
			out[i].file = plugin_syms[k].file;
			out[i].offset =
				l[i].file_relative_ip - plugin_syms[k].lo;
			out[i].line = plugin_syms[k].line +
				      (uint32_t)(out[i].offset >> 4);
		}
	}
	return 0;
}

/* ---- exporting ---- */

enum post {
	RAW,
	GUNZIP,
	PROTOC
};

static const struct output_def {
	const char *suffix;
	enum sp_export_format format;
	uint32_t flags;
	enum post post;
} outputs[] = {
	{ "folded", SP_EXPORT_FOLDED, 0, RAW },
	{ "annotated.folded", SP_EXPORT_FOLDED,
	  SP_EXPORT_ANNOTATE_PID | SP_EXPORT_ANNOTATE_TID |
		  SP_EXPORT_ANNOTATE_KIND,
	  RAW },
	{ "flamegraph.svg", SP_EXPORT_FLAMEGRAPH, 0, RAW },
	{ "icicle.svg", SP_EXPORT_ICICLE, 0, RAW },
	{ "speedscope.json", SP_EXPORT_SPEEDSCOPE, 0, RAW },
	{ "firefox.json", SP_EXPORT_FIREFOX, 0, GUNZIP },
	{ "pprof.pb", SP_EXPORT_PPROF, 0, GUNZIP },
	{ "pprof.txt", SP_EXPORT_PPROF, 0, PROTOC },
};

struct buf {
	unsigned char *data;
	size_t len;
};

static struct buf gunzip(const void *data, size_t len)
{
	struct buf out = { malloc(1 << 16), 0 };
	size_t cap = 1 << 16;
	z_stream zs;
	int zerr;

	CHECK_PTR(out.data);
	memset(&zs, 0, sizeof(zs));
	CHECK_EQ_INT(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	do {
		if (zs.total_out == cap) {
			out.data = realloc(out.data, cap *= 2);
			CHECK_PTR(out.data);
		}
		zs.next_out = out.data + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		zerr = inflate(&zs, Z_NO_FLUSH);
		CHECK(zerr == Z_OK || zerr == Z_STREAM_END);
	} while (zerr != Z_STREAM_END);
	CHECK_EQ(zs.avail_in, 0);
	out.len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

static struct buf read_file(const char *path)
{
	struct buf b = { NULL, 0 };
	FILE *f = fopen(path, "rb");
	size_t cap = 0;

	if (!f)
		return b;
	for (;;) {
		if (b.len == cap) {
			b.data = realloc(b.data, cap = cap ? 2 * cap : 4096);
			CHECK_PTR(b.data);
		}
		size_t n = fread(b.data + b.len, 1, cap - b.len, f);
		if (!n)
			break;
		b.len += n;
	}
	fclose(f);
	return b;
}

static void write_file(const char *path, const struct buf *b)
{
	FILE *f = fopen(path, "wb");

	CHECK_PTR(f);
	CHECK_EQ(fwrite(b->data, 1, b->len, f), b->len);
	CHECK_EQ_INT(fclose(f), 0);
}

/* `protoc --decode` of the message @pb; .len 0 when protoc is missing. */
static struct buf protoc_text(const struct buf *pb)
{
	char in[128], out[128], cmd[1024];
	struct buf text = { NULL, 0 };

	if (system("protoc --version >/dev/null 2>&1") != 0)
		return text;
	snprintf(in, sizeof(in), "%s/profile.pb", tmpdir);
	snprintf(out, sizeof(out), "%s/profile.txt", tmpdir);
	write_file(in, pb);
	snprintf(cmd, sizeof(cmd),
		 "protoc --decode perftools.profiles.Profile "
		 "-I '%s/../../src/export' profile.proto < '%s' > '%s'",
		 tests_dir, in, out);
	CHECK_EQ_INT(system(cmd), 0);
	text = read_file(out);
	CHECK_PTR(text.data);
	return text;
}

/*
 * The Firefox format names each library's architecture: the one the
 * library was built for. The goldens were made on x86-64; another build
 * compares with its name put back to that one.
 */
static void arch_as_golden(struct buf *b)
{
	char from[32];
	const char *to = "\"arch\":\"x86_64\"";
	size_t flen, tlen = strlen(to), i = 0, o = 0;

	snprintf(from, sizeof(from), "\"arch\":\"%s\"",
		 sp_arch_name(SP_ARCH_NATIVE));
	flen = strlen(from);
	if (flen < tlen || strcmp(from, to) == 0)
		return;
	while (i < b->len) {
		if (b->len - i >= flen &&
		    memcmp(b->data + i, from, flen) == 0) {
			memcpy(b->data + o, to, tlen);
			i += flen;
			o += tlen;
		} else {
			b->data[o++] = b->data[i++];
		}
	}
	b->len = o;
}

static struct buf export(const char *spool, const struct output_def *o)
{
	struct sp_native_symbolizer plugin = { .lookup = plugin_lookup };
	struct sp_symbolizer_opts so = { .size = sizeof(so),
					 .perf_map_dir = ".",
					 .kallsyms_path = "kallsyms",
					 .native = &plugin };
	struct sp_export_opts eo = { .size = sizeof(eo),
				     .flags = o->flags,
				     .symbolizer = &so };
	struct sp_sink *sink;
	struct buf b, pb;
	const void *data;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_export(spool, o->format, sink, &eo));
	CHECK_OK(sp_sink_memory_data(sink, &data, &b.len));
	if (o->post == RAW) {
		b.data = malloc(b.len + 1);
		CHECK_PTR(b.data);
		if (b.len) /* an empty export has no buffer at all */
			memcpy(b.data, data, b.len);
	} else {
		b = gunzip(data, b.len);
	}
	sp_sink_free(sink);
	if (o->format == SP_EXPORT_FIREFOX)
		arch_as_golden(&b);
	if (o->post != PROTOC)
		return b;
	pb = b;
	b = protoc_text(&pb);
	free(pb.data);
	return b;
}

/* ---- comparing ---- */

/* Compares @got with golden/@name (or rewrites it with --update). */
static void expect(const char *name, const struct buf *got)
{
	struct buf want;
	char keep[200];
	size_t i = 0;

	if (update) {
		write_file(name, got);
		return;
	}
	want = read_file(name);
	while (i < want.len && i < got->len && want.data[i] == got->data[i])
		i++;
	if (want.data && i == want.len && i == got->len) {
		free(want.data);
		return;
	}
	snprintf(keep, sizeof(keep), "%s/%s", tmpdir, name);
	write_file(keep, got);
	fprintf(stderr,
		"golden %s: differs at byte %zu (%zu bytes expected, %zu "
		"got); output kept as %s\n",
		name, i, want.len, got->len, keep);
	mismatches++;
	free(want.data);
}

/* The committed spool must be what the generator writes today. */
static void check_spool(const struct spool_def *def, const char *committed)
{
	char path[128], name[64];
	struct buf b;

	snprintf(path, sizeof(path), "%s/%s.spool.bin", tmpdir, def->name);
	write_spool(def, update ? committed : path);
	if (update)
		return;
	b = read_file(path);
	CHECK_PTR(b.data);
	snprintf(name, sizeof(name), "%s.spool.bin", def->name);
	expect(name, &b);
	free(b.data);
}

static void check_outputs(const struct spool_def *def, const char *spool)
{
	char name[128];
	size_t k;

	for (k = 0; k < sizeof(outputs) / sizeof(outputs[0]); k++) {
		struct buf got = export(spool, &outputs[k]);

		snprintf(name, sizeof(name), "%s.%s", def->name,
			 outputs[k].suffix);
		if (outputs[k].post == PROTOC && !got.data)
			fprintf(stderr, "protoc missing: %s not checked\n",
				name);
		else
			expect(name, &got);
		free(got.data);
	}
}

int main(int argc, char **argv)
{
	char spool[128], cmd[128], abs[PATH_MAX], golden[600];
	size_t i;

	if (argc < 2 || argc > 3)
		return T_EXIT_FAIL;
	update = argc == 3 && strcmp(argv[2], "--update") == 0;
	CHECK_PTR(realpath(argv[1], abs));
	CHECK(strlen(abs) < sizeof(tests_dir));
	memcpy(tests_dir, abs, strlen(abs) + 1);
	snprintf(golden, sizeof(golden), "%s/golden", tests_dir);
	/*
	 * Exports name perf maps by the path the symbolizer opened, so run
	 * in golden/ and give relative paths: outputs then do not depend on
	 * where the source tree is.
	 */
	CHECK_EQ_INT(chdir(golden), 0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sp-golden-XXXXXX");
	CHECK_PTR(mkdtemp(tmpdir));
	for (i = 0; i < sizeof(spools) / sizeof(spools[0]); i++) {
		snprintf(spool, sizeof(spool), "%s.spool.bin", spools[i].name);
		check_spool(&spools[i], spool);
		check_outputs(&spools[i], spool);
	}
	if (mismatches) {
		fprintf(stderr,
			"%d golden file(s) differ; if the change is intended, "
			"run `meson compile -C BUILD export-golden` and review "
			"the diff\n",
			mismatches);
		return T_EXIT_FAIL;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	CHECK_EQ_INT(system(cmd), 0);
	return T_EXIT_PASS;
}
