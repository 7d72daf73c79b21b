/* SPDX-License-Identifier: MIT */
/* Issue 20 item 13: every pid a spool may hold is one the symbolizer resolves. */

/*
 * SPULSE3 allows thread pids 1 .. 2^31 - 1; the symbolizer's cache keys
 * once held pid + 1 in 30 bits, so a spool with one thread at 0x3fffffff
 * or above was readable but every resolution of it failed with -EINVAL,
 * and `spulse report` / `export` failed as a whole. Here threads at the
 * edges of the range (1, 0x3ffffffe, 0x3fffffff, 0x40000000, 2^31 - 1)
 * share one spool: frames and stacks of each resolve, to the module of
 * their own pid, and a frame and a stack with equal ids under one pid
 * (one key) stay apart in the cache. Then the exporter runs over the
 * whole spool, and a module-table symbolizer takes the same pids.
 */
#include <errno.h>
#include <unistd.h>

#include "symbolizer_test.h"

static const int32_t pids[] = { 1, 0x3ffffffe, 0x3fffffff, 0x40000000,
				INT32_MAX };
#define NPIDS (sizeof(pids) / sizeof(pids[0]))

/* Module i of pid i: "/pidN" over [0x10000 * (i + 1), +0x1000). */
static uint64_t base_of(size_t i)
{
	return 0x10000ull * (i + 1);
}

static void check_resolved(struct sp_symbolizer *sym,
			   const struct sp_spool *spool, size_t i)
{
	const struct sp_resolved_frame *out[8];
	const struct sp_resolved_frame *r;
	uint64_t abs = base_of(i) + 0x10;
	char want[32];
	uint32_t frame = tframe_id(spool, abs, SP_FRAME_USER);
	uint32_t stack = (uint32_t)i;
	int n;

	/* The unpinned frame resolves to this pid's own (missing) module. */
	snprintf(want, sizeof(want), "pid%zu+0x10", i);
	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, frame, pids[i], &r), 1);
	CHECK_STR(r->name, want);
	/* Stack ids equal frame ids here: one key, two kinds of entry. */
	n = sp_symbolizer_resolve_stack(sym, stack, pids[i], out, 8);
	CHECK(n >= 1);
	n = sp_symbolizer_resolve_stack(sym, stack, pids[i], out, 8);
	CHECK(n >= 1);
	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, frame, pids[i], &r), 1);
	CHECK_STR(r->name, want);
}

static void test_spool_pids(void)
{
	struct sp_symbolizer_opts o = {
		.size = sizeof(o),
		.flags = SP_SYMBOLIZER_NO_PERF_MAPS | SP_SYMBOLIZER_NO_KERNEL,
	};
	struct sp_symbolizer *sym;
	const struct sp_spool *spool;
	struct tspool t;
	struct sp_frame f;
	char path[32];
	size_t i;

	tspool_begin(&t);
	for (i = 0; i < NPIDS; i++) {
		snprintf(path, sizeof(path), "/nonexistent/pid%zu", i);
		tspool_module(&t, path, base_of(i), base_of(i) + 0x1000, 0,
			      pids[i]);
		f = tframe_user(base_of(i) + 0x10);
		tspool_sample(&t, pids[i], &f, 1);
	}
	spool = tspool_end(&t);
	CHECK_EQ(sp_spool_thread_count(spool), NPIDS);

	/* Both stack caches: internal (stack entries) and external. */
	CHECK_OK(sp_symbolizer_new(spool, &o, &sym));
	for (i = 0; i < NPIDS; i++)
		check_resolved(sym, spool, i);
	CHECK_EQ_INT(sp_symbolizer_resolve_frame(
			     sym, 0, -2,
			     &(const struct sp_resolved_frame *){ 0 }),
		     -EINVAL);
	sp_symbolizer_free(sym);
	o.stack_cache = SP_STACK_CACHE_EXTERNAL;
	CHECK_OK(sp_symbolizer_new(spool, &o, &sym));
	for (i = NPIDS; i-- > 0;)
		check_resolved(sym, spool, i);
	sp_symbolizer_free(sym);
	tspool_free(&t);
}

/* sp_export over a spool that holds every edge pid: all of them appear. */
static void test_export_pids(void)
{
	struct sp_export_opts eo = { .size = sizeof(eo) };
	struct tspool t;
	struct sp_sink *sink;
	const void *data;
	char path[] = "/tmp/sp_issue20_pids_XXXXXX";
	char *text;
	size_t len, i;
	int fd;
	struct sp_frame f;

	tspool_begin(&t);
	for (i = 0; i < NPIDS; i++) {
		f = tframe_user(base_of(i) + 0x10);
		tspool_sample(&t, pids[i], &f, 1);
	}
	CHECK_OK(sp_writer_finish(t.w));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(t.w), &data, &len));
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ((size_t)write(fd, data, len), len);
	close(fd);
	sp_writer_free(t.w);

	eo.flags = SP_EXPORT_ANNOTATE_PID;
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_export(path, SP_EXPORT_FOLDED, sink, &eo));
	CHECK_OK(sp_sink_memory_data(sink, &data, &len));
	text = calloc(1, len + 1);
	CHECK_PTR(text);
	memcpy(text, data, len);
	for (i = 0; i < NPIDS; i++) {
		char want[32];

		snprintf(want, sizeof(want), "%d;", (int)pids[i]);
		if (!strstr(text, want)) {
			fprintf(stderr, "pid %d missing from:\n%s\n",
				(int)pids[i], text);
			exit(T_EXIT_FAIL);
		}
	}
	free(text);
	sp_sink_free(sink);
	unlink(path);
}

/* A module-table symbolizer takes the same pids as a spool one. */
static void test_table_pids(void)
{
	struct sp_symbolizer_opts o = {
		.size = sizeof(o),
		.flags = SP_SYMBOLIZER_NO_PERF_MAPS | SP_SYMBOLIZER_NO_KERNEL,
	};
	struct sp_module m[NPIDS];
	const struct sp_resolved_frame *out[4];
	struct sp_symbolizer *sym;
	struct sp_frame f;
	size_t i;

	memset(m, 0, sizeof(m));
	for (i = 0; i < NPIDS; i++) {
		m[i].start = base_of(i);
		m[i].end = base_of(i) + 0x1000;
		m[i].pid = pids[i];
		m[i].path = "/nonexistent/table";
	}
	CHECK_OK(sp_symbolizer_new_modules(m, NPIDS, &o, &sym));
	for (i = 0; i < NPIDS; i++) {
		f = tframe_user(base_of(i) + 0x20);
		CHECK_EQ_INT(sp_symbolizer_resolve_raw(sym, pids[i], &f, 1, out,
						       4),
			     1);
		CHECK_STR(out[0]->name, "table+0x20");
	}
	sp_symbolizer_free(sym);
}

int main(void)
{
	test_spool_pids();
	test_export_pids();
	test_table_pids();
	return T_EXIT_PASS;
}
