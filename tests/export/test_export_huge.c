/* SPDX-License-Identifier: MIT */
/* Exports of a 1M-sample spool stay within bounded memory. */

/*
 * The spool has 1,000,000 samples over 8 threads and 64 distinct stacks
 * (unpinned frames; names are address-only). Every export runs with a
 * counting allocator, and the peak of live bytes must stay far below
 * what holding the samples would cost (16 bytes x 1M = 16 MB): the
 * profile grows with distinct stacks, the Replay reads through a window,
 * and output is streamed into a sink that only counts bytes. The counts
 * are checked too: folded totals equal the sample count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

#include "check.h"
#include "peak_alloc.h"

#define SAMPLES 1000000u
#define PEAK_LIMIT (12u << 20)

struct tally {
	uint64_t bytes;
	uint64_t total; /* folded: sum of the counts */
	char tail[32];	/* folded: the last digits seen */
	size_t tail_len;
};

/* Sums the trailing count of each folded line as bytes stream by. */
static int tally_write(void *ctx, const void *buf, size_t len)
{
	struct tally *t = ctx;
	const char *p = buf;
	size_t i;

	t->bytes += len;
	for (i = 0; i < len; i++) {
		if (p[i] == '\n') {
			t->tail[t->tail_len] = 0;
			t->total += strtoull(t->tail, NULL, 10);
			t->tail_len = 0;
		} else if (p[i] == ' ') {
			t->tail_len = 0;
		} else if (t->tail_len + 1 < sizeof(t->tail)) {
			t->tail[t->tail_len++] = p[i];
		}
	}
	return 0;
}

static void write_spool(const char *path)
{
	struct sp_frame frames[12];
	struct sp_writer *w;
	struct sp_sink *sink;
	uint32_t i, d;

	CHECK_OK(sp_sink_open_file(path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	for (i = 0; i < SAMPLES; i++) {
		uint32_t s = (i * 2654435761u) >> 26; /* 64 stacks */

		for (d = 0; d < 12; d++)
			frames[d] = (struct sp_frame){
				.abs_ip = 0x400000 + 0x100 * (d + (s >> d)),
				.file_relative_ip =
					0x400000 + 0x100 * (d + (s >> d)),
				.module_id = SP_NO_MODULE,
			};
		CHECK_OK(sp_writer_sample(w, 1000 + i * 1000ull, 77,
					  77 + (int32_t)(i % 8), frames, 12));
	}
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
}

int main(void)
{
	static const struct sp_sink_ops ops = { .write = tally_write };
	static const enum sp_export_format fmts[] = {
		SP_EXPORT_FOLDED,
		SP_EXPORT_FLAMEGRAPH,
		SP_EXPORT_ICICLE,
		SP_EXPORT_SPEEDSCOPE,
	};
	char dir[] = "/tmp/sp-export-huge-XXXXXX", path[64], cmd[80];
	struct peak_count c = { 0 };
	struct sp_allocator a = peak_count_hook(&c);
	struct sp_symbolizer_opts so = { .size = sizeof(so),
					 .allocator = &a,
					 .flags = SP_SYMBOLIZER_NO_KERNEL |
						  SP_SYMBOLIZER_NO_PERF_MAPS };
	struct sp_export_opts o = { .size = sizeof(o),
				    .allocator = &a,
				    .symbolizer = &so };
	size_t i;

	CHECK_PTR(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/huge.spool", dir);
	write_spool(path);
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct tally t = { 0 };
		struct sp_sink *sink;

		c.peak = c.live = 0;
		CHECK_OK(sp_sink_new_callback(&ops, &t, NULL, &sink));
		CHECK_OK(sp_export(path, fmts[i], sink, &o));
		sp_sink_free(sink);
		fprintf(stderr, "format %d: %llu bytes out, peak %zu bytes\n",
			(int)fmts[i], (unsigned long long)t.bytes, c.peak);
		CHECK(t.bytes > 0);
		CHECK_EQ(c.live, 0);
		CHECK(c.peak < PEAK_LIMIT);
		if (fmts[i] == SP_EXPORT_FOLDED)
			CHECK_EQ(t.total, SAMPLES);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(cmd), 0);
	return T_EXIT_PASS;
}
