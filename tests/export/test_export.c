/* SPDX-License-Identifier: MIT */
/* Folded, SVG and speedscope exports of a spool of this program's own functions. */

/*
 * The spool (written with the writer into a temp dir) holds:
 *   pid 4242 tid 4242  30 x ex_root <- ex_middle <- ex_leaf (real code of
 *                      this binary: pinned to its /proc/self/maps module)
 *   pid 4242 tid 4243   7 x ex_root <- ex_middle <- kernel frame
 *   pid 4242 tid 4242   5 x ex_root <- python frame <- JIT frame with a
 *                      weird name (perf map: quotes, <, &, ;, byte 0xff)
 *   pid 4242 tid 4243   4 x <truncated> <- ex_middle <- ex_leaf
 *   pid 5151 tid 5151   3 x ex_root <- ex_leaf
 * interleaved, so per-thread timelines differ from file order.
 *
 * The expected folded lines are computed independently: a Snapshot and a
 * Symbolizer of our own, one line per sample. Exports are compared to
 * them exactly (folded directly, speedscope and SVG through
 * check_export.py, which also validates their structure).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "self_spool.h"

#define WEIRD "jit \"q\" <a> & b;c \xff end"

static char dir[64], spool_path[300], script[512];
static struct sp_symbolizer_opts sym_opts;

__attribute__((noinline)) int ex_leaf(int x);
__attribute__((noinline)) int ex_middle(int x);
__attribute__((noinline)) int ex_root(int x);

__attribute__((noinline)) int ex_leaf(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) int ex_middle(int x)
{
	__asm__ volatile("" ::: "memory");
	return ex_leaf(x) * 2;
}

__attribute__((noinline)) int ex_root(int x)
{
	__asm__ volatile("" ::: "memory");
	return ex_middle(x) - 1;
}

/* A frame inside function @fn (one byte in, as a return address - 1 is). */
static struct sp_frame pinned(const struct sp_module *m, uint32_t id,
			      int (*fn)(int))
{
	return self_spool_frame(m, id, (uint64_t)(uintptr_t)fn + 1);
}

static struct sp_frame unpinned(uint64_t ip, uint32_t mode)
{
	return (struct sp_frame){ .abs_ip = ip,
				  .file_relative_ip = ip,
				  .module_id = SP_NO_MODULE,
				  .mode = mode };
}

static void write_file(const char *name, const char *text)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK_PTR(f);
	fputs(text, f);
	fclose(f);
}

/* Writes the spool described at the top; @empty: modules, no samples. */
static void write_spool(const char *path, bool empty)
{
	struct sp_frame st[5][3], trunc = { .module_id = SP_NO_MODULE,
					    .mode = SP_FRAME_TRUNCATED };
	static const int reps[5] = { 30, 7, 5, 4, 3 };
	static const int tids[5] = { 4242, 4243, 4242, 4243, 5151 };
	struct sp_module m, m2;
	struct sp_writer *w;
	struct sp_sink *sink;
	char mpath[512];
	uint32_t id, id2;
	int left[5], i, k;
	uint64_t ts = 1000;

	CHECK_OK(self_spool_module((uint64_t)(uintptr_t)&ex_leaf, 4242, &m,
				   mpath, sizeof(mpath)));
	m2 = m;
	m2.pid = 5151;
	CHECK_OK(sp_sink_open_file(path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	CHECK_OK(sp_writer_module(w, &m, &id));
	CHECK_OK(sp_writer_module(w, &m2, &id2));
	st[0][0] = pinned(&m, id, ex_leaf);
	st[0][1] = pinned(&m, id, ex_middle);
	st[0][2] = pinned(&m, id, ex_root);
	st[1][0] = unpinned(0xffffffff81000010ull, SP_FRAME_KERNEL);
	st[1][1] = st[0][1];
	st[1][2] = st[0][2];
	st[2][0] = unpinned(0x7f0000001010ull, SP_FRAME_USER);
	st[2][1] = unpinned(0x7f0000002010ull, SP_FRAME_USER);
	st[2][2] = st[0][2];
	st[3][0] = st[0][0];
	st[3][1] = st[0][1];
	st[3][2] = trunc;
	st[4][0] = pinned(&m2, id2, ex_leaf);
	st[4][1] = pinned(&m2, id2, ex_root);
	memcpy(left, reps, sizeof(left));
	for (k = 0; !empty && k < 30; k++) {
		for (i = 0; i < 5; i++) {
			if (left[i]-- <= 0)
				continue;
			CHECK_OK(sp_writer_sample(
				w, ts += 1000, tids[i] == 5151 ? 5151 : 4242,
				tids[i], st[i], i == 4 ? 2 : 3));
		}
	}
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
}

/* ---- expected lines, independently from a Snapshot ---- */

struct line {
	char *text;
	uint64_t count;
};

struct lines {
	struct line *v;
	size_t n;
};

static void lines_add(struct lines *l, const char *text, uint64_t count)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		if (!strcmp(l->v[i].text, text)) {
			l->v[i].count += count;
			return;
		}
	}
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	CHECK_PTR(l->v);
	l->v[l->n].text = strdup(text);
	l->v[l->n++].count = count;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text,
		      ((const struct line *)b)->text);
}

static void lines_free(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/*
 * Folded sanitizing. The invalid byte 0xff of the test's JIT name reads
 * "\xff" in every format (sp_text_escape(), issue 20 item 15), also in
 * the JSON and SVG outputs (@utf8fix once mapped it to U+FFFD there).
 */
static void append_name(char *buf, size_t cap, const char *s, bool utf8fix)
{
	size_t n = strlen(buf);
	const unsigned char *p;

	(void)utf8fix;
	for (p = (const unsigned char *)s; *p && n + 5 < cap; p++) {
		if (*p == ';')
			buf[n++] = ':';
		else if (*p == 0xff)
			n += (size_t)sprintf(buf + n, "\\xff");
		else
			buf[n++] = (char)*p;
	}
	buf[n] = 0;
}

/* One "[pid;tid;]root;..;leaf" line per sample, summed. */
static struct lines expected(const char *path, bool ids, bool utf8fix,
			     int32_t only_pid)
{
	struct lines l = { 0 };
	struct sp_snapshot *snap;
	struct sp_symbolizer *sym;
	const struct sp_resolved_frame *rf[64];
	struct sp_sample s;
	char buf[4096];
	size_t i;
	int n, j;

	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	CHECK_OK(sp_symbolizer_new(sp_snapshot_spool(snap), &sym_opts, &sym));
	for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		if (only_pid && s.pid != only_pid)
			continue;
		n = sp_symbolizer_resolve_stack(sym, s.stack, s.pid, rf, 64);
		CHECK(n > 0 && n <= 64);
		buf[0] = 0;
		if (ids)
			snprintf(buf, sizeof(buf), "%d;%d;", s.pid, s.tid);
		for (j = n - 1; j >= 0; j--) {
			append_name(buf, sizeof(buf), rf[j]->name, utf8fix);
			if (j)
				strcat(buf, ";");
		}
		lines_add(&l, buf, 1);
	}
	sp_symbolizer_free(sym);
	sp_snapshot_close(snap);
	qsort(l.v, l.n, sizeof(*l.v), cmp_line);
	return l;
}

/* Parses "text count" lines. */
static struct lines parse(const char *data, size_t len)
{
	struct lines l = { 0 };
	char *copy = strndup(data, len), *line, *save, *sp;

	CHECK_PTR(copy);
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		sp = strrchr(line, ' ');
		CHECK_PTR(sp);
		*sp = 0;
		lines_add(&l, line, strtoull(sp + 1, NULL, 10));
	}
	free(copy);
	qsort(l.v, l.n, sizeof(*l.v), cmp_line);
	return l;
}

static void check_same(const struct lines *a, const struct lines *b)
{
	size_t i;

	CHECK_EQ(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->v[i].text, b->v[i].text))
			fprintf(stderr, "got '%s' want '%s'\n", a->v[i].text,
				b->v[i].text);
		CHECK(!strcmp(a->v[i].text, b->v[i].text));
		CHECK_EQ(a->v[i].count, b->v[i].count);
	}
}

/* ---- running exports ---- */

static struct sp_export_opts export_opts(uint32_t flags, int32_t pid)
{
	return (struct sp_export_opts){ .size = sizeof(struct sp_export_opts),
					.flags = flags,
					.pid = pid,
					.symbolizer = &sym_opts };
}

/* Exports into memory; the caller frees the returned copy. */
static char *run(const char *path, enum sp_export_format fmt,
		 const struct sp_export_opts *opts, size_t *len)
{
	struct sp_sink *sink;
	const void *data;
	char *copy;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_export(path, fmt, sink, opts));
	CHECK_OK(sp_sink_memory_data(sink, &data, len));
	copy = malloc(*len + 1);
	CHECK_PTR(copy);
	if (*len)
		memcpy(copy, data, *len);
	copy[*len] = 0;
	sp_sink_free(sink);
	return copy;
}

/* Writes @data to DIR/@name and runs check_export.py @mode on it. */
static char *run_script(const char *mode, const char *name, const char *data,
			size_t len, size_t *out_len)
{
	char path[400], cmd[1200];
	char *out = NULL;
	size_t cap = 0;
	FILE *f, *p;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK_PTR(f);
	CHECK_EQ(fwrite(data, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 '%s' %s '%s'", script, mode, path);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	f = open_memstream(&out, &cap);
	CHECK_PTR(f);
	for (int c; (c = fgetc(p)) != EOF;)
		fputc(c, f);
	fclose(f);
	CHECK_EQ_INT(pclose(p), 0);
	*out_len = cap;
	return out;
}

static bool have(const char *tool)
{
	char cmd[200];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

static void test_folded(void)
{
	struct sp_export_opts o =
		export_opts(SP_EXPORT_ANNOTATE_PID | SP_EXPORT_ANNOTATE_TID, 0);
	struct lines want = expected(spool_path, true, false, 0), got;
	size_t len;
	char *text = run(spool_path, SP_EXPORT_FOLDED, &o, &len);

	got = parse(text, len);
	check_same(&got, &want);
	CHECK(strstr(text, "4242;4242;ex_root;ex_middle;ex_leaf 30\n"));
	CHECK(strstr(text,
		     "4242;4243;<stack truncated>;ex_middle;ex_leaf 4\n"));
	/* The invalid byte is escaped text, as on any other output. */
	CHECK(strstr(text, "jit \"q\" <a> & b:c \\xff end 5\n"));
	free(text);
	lines_free(&got);
	lines_free(&want);

	/* No annotation: one line per distinct text, sorted. */
	o = export_opts(0, 0);
	text = run(spool_path, SP_EXPORT_FOLDED, &o, &len);
	want = expected(spool_path, false, false, 0);
	got = parse(text, len);
	check_same(&got, &want);
	CHECK(strstr(text, "ex_root;ex_leaf 3\n"));
	free(text);

	/* Kind suffixes, and the pid filter. */
	o = export_opts(SP_EXPORT_ANNOTATE_KIND, 0);
	text = run(spool_path, SP_EXPORT_FOLDED, &o, &len);
	CHECK(strstr(text, "_[k] 7\n"));
	CHECK(strstr(text, "_[p];jit \"q\" <a> & b:c \\xff end_[j] 5\n"));
	free(text);
	o = export_opts(0, 5151);
	text = run(spool_path, SP_EXPORT_FOLDED, &o, &len);
	CHECK(!strcmp(text, "ex_root;ex_leaf 3\n"));
	free(text);
	lines_free(&got);
	lines_free(&want);
}

static void test_speedscope(void)
{
	struct sp_export_opts o = export_opts(0, 0);
	struct lines want = expected(spool_path, true, true, 0), got;
	size_t len, olen;
	char *json = run(spool_path, SP_EXPORT_SPEEDSCOPE, &o, &len);
	char *out = run_script("speedscope", "out.speedscope.json", json, len,
			       &olen);

	got = parse(out, olen);
	check_same(&got, &want);
	CHECK(strstr(json, "\"name\":\"jit \\\"q\\\" <a> & b;c \\\\xff end\""));
	free(out);
	free(json);
	lines_free(&got);
	lines_free(&want);
}

static void test_svg(enum sp_export_format fmt)
{
	struct sp_export_opts o = export_opts(0, 0);
	size_t len, olen;
	char *svg = run(spool_path, fmt, &o, &len), *out, cmd[600];

	out = run_script("svg", "out.svg", svg, len, &olen);
	CHECK(!strncmp(out, "TOTAL 49\n", 9));
	CHECK(strstr(out, "\nex_middle\n"));
	CHECK(strstr(out, "\n<stack truncated>\n"));
	CHECK(strstr(out, "\njit \"q\" <a> & b;c \\xff end\n"));
	CHECK(strstr(svg, "jit &quot;q&quot; &lt;a&gt; &amp; b;c \\xff end"));
	CHECK(strstr(svg, "class=\"f t\""));
	CHECK(!strstr(svg, "href")); /* no external resources */
	if (have("xmllint")) {
		snprintf(cmd, sizeof(cmd), "xmllint --noout '%s/out.svg'", dir);
		CHECK_EQ_INT(system(cmd), 0);
	}
	free(out);
	free(svg);
}

static void test_empty(void)
{
	struct sp_export_opts o = export_opts(0, 0);
	char path[400], *data, *out;
	size_t len, olen;

	snprintf(path, sizeof(path), "%s/empty.spool", dir);
	write_spool(path, true);
	data = run(path, SP_EXPORT_FOLDED, &o, &len);
	CHECK_EQ(len, 0);
	free(data);
	data = run(path, SP_EXPORT_SPEEDSCOPE, &o, &len);
	out = run_script("speedscope", "empty.json", data, len, &olen);
	CHECK_EQ(olen, 0);
	free(out);
	free(data);
	data = run(path, SP_EXPORT_FLAMEGRAPH, &o, &len);
	out = run_script("svg", "empty.svg", data, len, &olen);
	CHECK(!strcmp(out, "TOTAL 0\n"));
	free(out);
	free(data);
	/* The pid filter can empty a spool too. */
	o = export_opts(0, 999);
	data = run(spool_path, SP_EXPORT_FOLDED, &o, &len);
	CHECK_EQ(len, 0);
	free(data);
}

static void test_bad_opts(void)
{
	struct sp_export_opts o = export_opts(0x100, 0);
	struct sp_sink *sink;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_EQ_INT(sp_export(spool_path, SP_EXPORT_FOLDED, sink, &o),
		     -EINVAL);
	o = export_opts(0, -1);
	CHECK_EQ_INT(sp_export(spool_path, SP_EXPORT_FOLDED, sink, &o),
		     -EINVAL);
	CHECK_EQ_INT(sp_export(spool_path, (enum sp_export_format)99, sink,
			       NULL),
		     -EINVAL);
	CHECK(sp_export("/nonexistent/x.spool", SP_EXPORT_FOLDED, sink, NULL) <
	      0);
	sp_sink_free(sink);
}

int main(int argc, char **argv)
{
	char kallsyms[300], map[300];

	CHECK(argc == 2);
	snprintf(script, sizeof(script), "%s/check_export.py", argv[1]);
	if (!have("python3"))
		return T_EXIT_SKIP;
	snprintf(dir, sizeof(dir), "/tmp/sp-export-XXXXXX");
	CHECK_PTR(mkdtemp(dir));
	snprintf(spool_path, sizeof(spool_path), "%s/t.spool", dir);
	write_file("kallsyms", "ffffffff81000000 T k_sched\n"
			       "ffffffff81002000 T k_other\n");
	snprintf(map, sizeof(map),
		 "7f0000001000 100 " WEIRD "\n"
		 "7f0000002000 100 py::work:/app/x.py\n");
	write_file("perf-4242.map", map);
	snprintf(kallsyms, sizeof(kallsyms), "%s/kallsyms", dir);
	sym_opts = (struct sp_symbolizer_opts){ .size = sizeof(sym_opts),
						.perf_map_dir = dir,
						.kallsyms_path = kallsyms };
	write_spool(spool_path, false);
	test_folded();
	test_speedscope();
	test_svg(SP_EXPORT_FLAMEGRAPH);
	test_svg(SP_EXPORT_ICICLE);
	test_empty();
	test_bad_opts();
	snprintf(map, sizeof(map), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(map), 0);
	return T_EXIT_PASS;
}
