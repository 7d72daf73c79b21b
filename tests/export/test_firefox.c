/* SPDX-License-Identifier: MIT */
/* Firefox Profiler export: gzip JSON that validates and matches a Snapshot. */

/*
 * The export is gunzipped here and handed to firefox_check.py (in the
 * test folder, argv[1]),
 * which validates the processed-format fields and prints every sample's
 * (tid, root-first names); those counts must equal what a Snapshot plus a
 * Symbolizer give for the same spool. python3 missing: skip.
 *
 * A profile of LARGE_SAMPLES samples (above firefox.c's threshold for
 * zlib's fastest level) checks that large exports are deflated at that
 * level (the gzip header's XFL byte says so: 4 = fastest, 0 = default)
 * while small ones keep the default, and that the fast path still
 * carries every sample of every thread.
 */
#define _GNU_SOURCE /* memmem */
#include <sys/wait.h>

#include "export_gz_test.h"

/* Runs the checker on @json; fills @got from its output. */
static void run_checker(const char *checker, const struct gzt *t,
			const unsigned char *json, size_t len,
			struct gzt_stacks *got)
{
	char path[192], cmd[512], line[8192];
	FILE *f, *p;

	snprintf(path, sizeof(path), "%s/profile.json", t->dir);
	f = fopen(path, "wb");
	CHECK_PTR(f);
	CHECK_EQ(fwrite(json, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s'", checker, path);
	p = popen(cmd, "r");
	CHECK_PTR(p);
	memset(got, 0, sizeof(*got));
	while (fgets(line, sizeof(line), p)) {
		unsigned long long count;
		char hex[8000];
		size_t i, n;
		char *key;

		CHECK_EQ_INT(sscanf(line, "%llu %7999s", &count, hex), 2);
		n = strlen(hex) / 2;
		key = malloc(n + 1);
		CHECK_PTR(key);
		for (i = 0; i < n; i++) {
			unsigned b;

			CHECK_EQ_INT(sscanf(hex + 2 * i, "%2x", &b), 1);
			key[i] = (char)b;
		}
		gzt_stacks_add(got, key, n, count);
	}
	CHECK_EQ_INT(WEXITSTATUS(pclose(p)), 0);
}

#define LARGE_SAMPLES 70000u
#define LARGE_THREADS 3
#define LARGE_STACKS 4

/* The XFL byte of the gzip header of @t's Firefox export. */
static int gzip_xfl(const struct gzt *t)
{
	struct sp_sink *sink;
	const void *data;
	size_t len;
	int xfl;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_export(t->spool, SP_EXPORT_FIREFOX, sink, &t->opts));
	CHECK_OK(sp_sink_memory_data(sink, &data, &len));
	CHECK(len > 10);
	xfl = ((const unsigned char *)data)[8];
	sp_sink_free(sink);
	return xfl;
}

/* Sample i: stack i % LARGE_STACKS on thread (i / 7) % LARGE_THREADS. */
static void write_large(struct gzt *t)
{
	struct sp_frame fr[3];
	struct sp_writer *w;
	struct sp_sink *sink;
	uint32_t i, d;

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/sp-export-ffl-XXXXXX");
	CHECK_PTR(mkdtemp(t->dir));
	snprintf(t->spool, sizeof(t->spool), "%s/large.spool", t->dir);
	t->pid = 4242;
	CHECK_OK(sp_sink_open_file(t->spool, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	for (i = 0; i < LARGE_SAMPLES; i++) {
		for (d = 0; d < 3; d++)
			fr[d] = gzt_raw(0x500000 + 0x100 * (i % LARGE_STACKS) +
						0x10 * d,
					SP_FRAME_USER);
		CHECK_OK(sp_writer_sample(
			w, 1000000ull * (i + 1), t->pid,
			t->pid + (int32_t)((i / 7) % LARGE_THREADS), fr, 3));
	}
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
	t->symopts.size = sizeof(t->symopts);
	t->symopts.flags = SP_SYMBOLIZER_NO_KERNEL | SP_SYMBOLIZER_NO_PERF_MAPS;
	t->opts.size = sizeof(t->opts);
	t->opts.symbolizer = &t->symopts;
}

static void test_large(const char *checker)
{
	struct gzt_stacks got;
	unsigned char *json;
	uint64_t total = 0;
	struct gzt t;
	size_t len, i;

	write_large(&t);
	CHECK_EQ_INT(gzip_xfl(&t), 4);
	gzt_export(&t, SP_EXPORT_FIREFOX, &json, &len);
	run_checker(checker, &t, json, len, &got);
	/* Every (thread, stack) pair occurs, and no sample is lost. */
	CHECK_EQ(got.n, LARGE_THREADS * LARGE_STACKS);
	for (i = 0; i < got.n; i++)
		total += got.v[i].count;
	CHECK_EQ(total, LARGE_SAMPLES);
	gzt_stacks_free(&got);
	free(json);
	gzt_teardown(&t);
}

static void test_profile(const char *checker)
{
	struct gzt_stacks got, want;
	unsigned char *json;
	struct gzt t;
	size_t len;

	gzt_setup(&t, 0);
	CHECK_EQ_INT(gzip_xfl(&t), 0); /* small: zlib's default level */
	gzt_export(&t, SP_EXPORT_FIREFOX, &json, &len);
	CHECK(memmem(json, len, "\"preprocessedProfileVersion\":58", 31));
	/* Header start 1.7e15 us = 1.7e12 ms; first sample is the anchor. */
	CHECK(memmem(json, len, "\"startTime\":1700000000000.000", 29));
	CHECK(memmem(json, len, "\"interval\":1.000", 16));
	/* The invalid UTF-8 name arrives as \xff\xfe text, never raw. */
	CHECK(!memmem(json, len, "\xff", 1));
	run_checker(checker, &t, json, len, &got);
	gzt_expected(&t, &want);
	CHECK_EQ(want.n, 6); /* distinct (tid, stack) of the six runs */
	CHECK(gzt_has_name(&want, "gzt_leaf"));
	CHECK(gzt_has_name(&want, "jit \"quoted\""));
	gzt_compare(&got, &want);
	gzt_stacks_free(&got);
	gzt_stacks_free(&want);
	free(json);
	gzt_teardown(&t);
}

static void test_empty(const char *checker)
{
	struct gzt_stacks got;
	unsigned char *json;
	struct gzt t;
	size_t len;

	gzt_setup(&t, 1);
	gzt_export(&t, SP_EXPORT_FIREFOX, &json, &len);
	CHECK(memmem(json, len, "\"threads\":[]", 12));
	run_checker(checker, &t, json, len, &got);
	CHECK_EQ(got.n, 0);
	gzt_stacks_free(&got);
	free(json);
	gzt_teardown(&t);
}

int main(int argc, char **argv)
{
	char checker[512];

	if (argc < 2 || system("python3 -c 'import json' 2>/dev/null") != 0)
		return T_EXIT_SKIP;
	snprintf(checker, sizeof(checker), "%s/firefox_check.py", argv[1]);
	test_profile(checker);
	test_empty(checker);
	test_large(checker);
	return T_EXIT_PASS;
}
