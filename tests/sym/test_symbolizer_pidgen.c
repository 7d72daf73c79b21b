/* SPDX-License-Identifier: MIT */
/* Symbolizer: perf maps follow process generations and Python-runtime markers. */

/*
 * One pid, two processes: the spool retires the first (tag 7) and the
 * same pid comes back. A perf map is named by pid only, so it belongs to
 * the newest process that wrote it; checked on spools written with the
 * writer API and read by a Snapshot and by a Tail:
 *   A  Python process with a map, then a non-Python one: the new
 *      process's anonymous frames stay address-only;
 *   B  a process without markers, then a Python one: the new process
 *      resolves through the map, the old one's frames do not;
 *   C  no markers at all, one generation: the map is used (unchanged
 *      default for JIT maps of runtimes that write no marker);
 *   D  the caller's pid list still restricts on top of the markers;
 *   E  issue 12: a process that exits during the recording (marker off
 *      and retirement at its end, no new process) keeps its map, Python
 *      or not;
 *   F  with a JIT side directory, each generation uses its own copy
 *      (perf-<pid>@<end>.map, perf-<pid>.map for the one still running),
 *      so the first process's frames are named after the pid was reused.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "symbolizer_test.h"

#define JIT 0x9010

static char dir[64];

/* The @nth (0-based) frame with @abs in the spool. */
static uint32_t nth_frame(const struct sp_spool *spool, uint64_t abs, int nth)
{
	uint32_t i, n = sp_spool_frame_count(spool);
	struct sp_frame f;

	for (i = 0; i < n; i++)
		if (sp_spool_frame(spool, i, &f) == 0 && f.abs_ip == abs &&
		    nth-- == 0)
			return i;
	fprintf(stderr, "frame 0x%llx #%d missing\n", (unsigned long long)abs,
		nth);
	exit(T_EXIT_FAIL);
}

static const char *name_of(struct sp_symbolizer *sym, uint32_t id, int32_t pid)
{
	const struct sp_resolved_frame *r;

	CHECK_EQ_INT(sp_symbolizer_resolve_frame(sym, id, pid, &r), 1);
	return r->name;
}

/* Marker values per generation: -1 none, 0 off, 1 on (then off at exit). */
static void write_two_gens(struct sp_writer *w, int32_t pid, int gen1, int gen2,
			   uint64_t *ts)
{
	struct sp_module m = { .start = 0x1000,
			       .end = 0x2000,
			       .pid = pid,
			       .path = "/opt/a/liba.so",
			       .path_len = 14 };
	struct sp_frame f = tframe_user(JIT);

	CHECK_OK(sp_writer_module(w, &m, NULL));
	if (gen1 >= 0)
		CHECK_OK(sp_writer_python_runtime(w, (*ts)++, pid, gen1));
	CHECK_OK(sp_writer_sample(w, (*ts)++, pid, pid, &f, 1));
	if (gen1 == 1)
		CHECK_OK(sp_writer_python_runtime(w, (*ts)++, pid, false));
	CHECK_OK(sp_writer_deactivate_process(w, pid));
	m.path = "/opt/b/libb.so";
	CHECK_OK(sp_writer_module(w, &m, NULL));
	if (gen2 >= 0)
		CHECK_OK(sp_writer_python_runtime(w, (*ts)++, pid, gen2));
	CHECK_OK(sp_writer_sample(w, (*ts)++, pid, pid, &f, 1));
}

/* One generation that exits: marker on (if @python), sample, off, tag 7. */
static void write_exit(struct sp_writer *w, int32_t pid, bool python,
		       uint64_t *ts)
{
	struct sp_module m = { .start = 0x1000,
			       .end = 0x2000,
			       .pid = pid,
			       .path = "/opt/a/liba.so",
			       .path_len = 14 };
	struct sp_frame f = tframe_user(JIT);

	CHECK_OK(sp_writer_module(w, &m, NULL));
	if (python)
		CHECK_OK(sp_writer_python_runtime(w, (*ts)++, pid, true));
	CHECK_OK(sp_writer_sample(w, (*ts)++, pid, pid, &f, 1));
	if (python)
		CHECK_OK(sp_writer_python_runtime(w, (*ts)++, pid, false));
	CHECK_OK(sp_writer_deactivate_process(w, pid));
}

static const char *jit_dir; /* the side directory of new_sym, NULL: none */

static struct sp_symbolizer *new_sym(const struct sp_spool *spool,
				     const int32_t *pids, size_t npids)
{
	struct sp_symbolizer_opts o = { .size = sizeof(o),
					.flags = SP_SYMBOLIZER_NO_KERNEL,
					.perf_map_dir = dir,
					.perf_map_pids = pids,
					.perf_map_pid_count = npids,
					.jit_dir = jit_dir };
	struct sp_symbolizer *sym;

	CHECK_OK(sp_symbolizer_new(spool, &o, &sym));
	return sym;
}

/* Snapshot of two generations; expected names of gen 1 and gen 2. */
static void snapshot_case(int gen1, int gen2, const char *want1,
			  const char *want2)
{
	int32_t pid = (int32_t)getpid();
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	struct tspool t;

	tspool_begin(&t);
	write_two_gens(t.w, pid, gen1, gen2, &t.ts);
	spool = tspool_end(&t);
	sym = new_sym(spool, NULL, 0);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), want1);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 1), pid), want2);
	sp_symbolizer_free(sym);
	tspool_free(&t);
}

/* C and D: one generation. */
static void single_gen_cases(void)
{
	int32_t pid = (int32_t)getpid(), other = pid + 1;
	struct sp_frame f = tframe_user(JIT);
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	struct tspool t;

	tspool_begin(&t);
	CHECK_OK(sp_writer_sample(t.w, t.ts++, pid, pid, &f, 1));
	spool = tspool_end(&t);
	sym = new_sym(spool, NULL, 0);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), "jit_fn");
	sp_symbolizer_free(sym);
	sym = new_sym(spool, &other, 1);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), "<0x9010>");
	sp_symbolizer_free(sym);
	tspool_free(&t);

	tspool_begin(&t);
	CHECK_OK(sp_writer_python_runtime(t.w, t.ts++, pid, true));
	CHECK_OK(sp_writer_sample(t.w, t.ts++, pid, pid, &f, 1));
	spool = tspool_end(&t);
	sym = new_sym(spool, &pid, 1);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), "jit_fn");
	sp_symbolizer_free(sym);
	sym = new_sym(spool, &other, 1);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), "<0x9010>");
	sp_symbolizer_free(sym);
	tspool_free(&t);
}

/* E: one process that exits; its frames keep the map. */
static void exit_cases(void)
{
	int32_t pid = (int32_t)getpid();
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	struct tspool t;
	int python;

	for (python = 0; python < 2; python++) {
		tspool_begin(&t);
		write_exit(t.w, pid, python, &t.ts);
		spool = tspool_end(&t);
		sym = new_sym(spool, NULL, 0);
		CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid),
			  "jit_fn");
		sp_symbolizer_free(sym);
		tspool_free(&t);
	}
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK_PTR(f);
	fputs(text, f);
	CHECK_OK(fclose(f));
}

/*
 * F: Python process 1 (its copy names JIT "old_fn") exits, Python
 * process 2 gets the pid and writes perf_map_dir's map ("jit_fn").
 * Each generation gets its own names; without the copy of process 1
 * its frames stay unnamed; a copy of the running generation wins over
 * perf_map_dir's file.
 */
static void side_dir_cases(void)
{
	char side[128], copy[192], live[192];
	int32_t pid = (int32_t)getpid();
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	struct tspool t;

	snprintf(side, sizeof(side), "%s/s.spool.jit", dir);
	CHECK_OK(mkdir(side, 0700));
	tspool_begin(&t);
	write_two_gens(t.w, pid, 1, 1, &t.ts);
	spool = tspool_end(&t);
	/* Gen 1 ended when the spool held frame 0 only: end 1. */
	snprintf(copy, sizeof(copy), "%s/perf-%d@1.map", side, (int)pid);
	write_file(copy, "9000 100 old_fn\n");
	jit_dir = side;
	sym = new_sym(spool, NULL, 0);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), "old_fn");
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 1), pid), "jit_fn");
	sp_symbolizer_free(sym);
	snprintf(live, sizeof(live), "%s/perf-%d.map", side, (int)pid);
	write_file(live, "9000 100 live_fn\n");
	sym = new_sym(spool, NULL, 0);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 1), pid), "live_fn");
	sp_symbolizer_free(sym);
	unlink(copy);
	sym = new_sym(spool, NULL, 0);
	CHECK_STR(name_of(sym, nth_frame(spool, JIT, 0), pid), "<0x9010>");
	sp_symbolizer_free(sym);
	jit_dir = NULL;
	unlink(live);
	rmdir(side);
	tspool_free(&t);
}

/* Polls and applies one batch; returns the invalidated pid count. */
static size_t step(struct sp_writer *w, struct sp_tail *tail,
		   struct sp_symbolizer *sym)
{
	struct sp_invalidation inv;

	CHECK_OK(sp_writer_flush(w));
	CHECK(sp_tail_poll(tail) >= 0);
	CHECK_OK(sp_symbolizer_update(sym, tail, &inv));
	return inv.pid_count;
}

/*
 * The same through a Tail, batch by batch: each generation's frames are
 * resolved right after the update of the batch that brought them. A
 * marker "on" counts for its own batch; "off" markers change nothing
 * (recorders write them right before the retirement of an exit or exec).
 */
static void tail_case(int gen1, int gen2, const char *want1, const char *want2)
{
	struct sp_module m = { .start = 0x1000,
			       .end = 0x2000,
			       .path = "/opt/a/liba.so",
			       .path_len = 14 };
	struct sp_frame f = tframe_user(JIT);
	int32_t pid = (int32_t)getpid();
	struct sp_symbolizer *sym;
	char path[128];
	struct sp_writer *w;
	struct sp_sink *sink;
	struct sp_tail *tail;
	uint64_t ts = 1;

	m.pid = pid;
	snprintf(path, sizeof(path), "%s/s.spool", dir);
	CHECK_OK(sp_sink_open_file(path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	CHECK_OK(sp_writer_module(w, &m, NULL));
	if (gen1 >= 0)
		CHECK_OK(sp_writer_python_runtime(w, ts++, pid, gen1));
	CHECK_OK(sp_writer_sample(w, ts++, pid, pid, &f, 1));
	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_tail_open(path, NULL, &tail));
	sym = new_sym(sp_tail_spool(tail), NULL, 0);
	step(w, tail, sym);
	CHECK_STR(name_of(sym, nth_frame(sp_tail_spool(tail), JIT, 0), pid),
		  want1);
	if (gen1 == 1)
		CHECK_OK(sp_writer_python_runtime(w, ts++, pid, false));
	CHECK_OK(sp_writer_deactivate_process(w, pid));
	step(w, tail, sym);
	/* Still the first process's names: nothing replaced it yet. */
	CHECK_STR(name_of(sym, nth_frame(sp_tail_spool(tail), JIT, 0), pid),
		  want1);
	m.path = "/opt/b/libb.so";
	CHECK_OK(sp_writer_module(w, &m, NULL));
	if (gen2 >= 0)
		CHECK_OK(sp_writer_python_runtime(w, ts++, pid, gen2));
	CHECK_OK(sp_writer_sample(w, ts++, pid, pid, &f, 1));
	CHECK_EQ(step(w, tail, sym), 1); /* the retired pid */
	CHECK_STR(name_of(sym, nth_frame(sp_tail_spool(tail), JIT, 1), pid),
		  want2);
	sp_symbolizer_free(sym);
	sp_tail_close(tail);
	sp_writer_free(w);
	unlink(path);
}

/* E through a Tail: the exit's batch and the one after keep the names. */
static void tail_exit_case(void)
{
	int32_t pid = (int32_t)getpid();
	struct sp_symbolizer *sym;
	struct sp_writer *w;
	struct sp_sink *sink;
	struct sp_tail *tail;
	struct sp_frame f = tframe_user(0x9020);
	char path[128];
	uint64_t ts = 1;

	snprintf(path, sizeof(path), "%s/e.spool", dir);
	CHECK_OK(sp_sink_open_file(path, NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &w));
	write_exit(w, pid, true, &ts);
	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_tail_open(path, NULL, &tail));
	sym = new_sym(sp_tail_spool(tail), NULL, 0);
	step(w, tail, sym);
	CHECK_STR(name_of(sym, nth_frame(sp_tail_spool(tail), JIT, 0), pid),
		  "jit_fn");
	/* Another process's sample: the next batch applies the exit. */
	CHECK_OK(sp_writer_sample(w, ts++, pid + 1, pid + 1, &f, 1));
	step(w, tail, sym);
	CHECK_STR(name_of(sym, nth_frame(sp_tail_spool(tail), JIT, 0), pid),
		  "jit_fn");
	sp_symbolizer_free(sym);
	sp_tail_close(tail);
	sp_writer_free(w);
	unlink(path);
}

int main(void)
{
	char map[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/sp_pidgen_XXXXXX");
	CHECK_PTR(mkdtemp(dir));
	snprintf(map, sizeof(map), "%s/perf-%d.map", dir, (int)getpid());
	f = fopen(map, "w");
	CHECK_PTR(f);
	fputs("9000 100 jit_fn\n", f);
	CHECK_OK(fclose(f));

	/* A: the old Python process's map is not lent to the new process. */
	snapshot_case(1, -1, "<0x9010>", "<0x9010>");
	snapshot_case(1, 0, "<0x9010>", "<0x9010>");
	/* B: the new Python process uses it, the old process's frames not. */
	snapshot_case(-1, 1, "<0x9010>", "jit_fn");
	snapshot_case(1, 1, "<0x9010>", "jit_fn");
	/* Without markers the newest generation still owns the map. */
	snapshot_case(-1, -1, "<0x9010>", "jit_fn");
	single_gen_cases();

	tail_case(1, -1, "jit_fn", "<0x9010>");
	tail_case(-1, 1, "jit_fn", "jit_fn");
	tail_case(1, 1, "jit_fn", "jit_fn");
	/* An "off" marker alone withholds nothing: no "on" came for the pid. */
	tail_case(0, -1, "jit_fn", "jit_fn");

	exit_cases();
	tail_exit_case();
	side_dir_cases();

	unlink(map);
	rmdir(dir);
	return T_EXIT_PASS;
}
