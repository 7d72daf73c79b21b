/* SPDX-License-Identifier: MIT */
/* bench_symbolize: cold and warm Symbolizer throughput on real addresses, eu-addr2line baseline. */

/*
 * The spool is synthetic but its addresses are real: 57,000 samples over
 * 2,048 distinct stacks (depth 8..40) whose frames are drawn from 4,096
 * addresses inside this process's libc text mapping and from functions of
 * this binary, pinned to module records copied from /proc/self/maps. So
 * the symbolizer opens real ELF files and looks up real symbol tables.
 *
 * Printed, one JSON line each:
 *   cold   time-to-result: Snapshot open + sp_symbolizer_new + resolve of
 *          every sample's stack, from nothing (target <= 0.3 s)
 *   warm   resolve of every sample again, one thread (target >= 20 M
 *          frames/s), then two threads at once (scaling vs one)
 *   rss    peak RSS of the process after the cold pass
 *   stack cache  one repeated stack (the deepest) resolved over and over
 *          with the internal stack cache (one lookup) and the external
 *          one (a lookup per frame), and the 57 k-sample warm pass in
 *          both modes, same run
 *   raw    the same samples as raw frames through a module-table
 *          symbolizer (sp_symbolizer_new_modules + resolve_raw), warm
 *   eu-addr2line -f -i -p PID on the distinct addresses, same run
 * perf report is not run: it needs a perf.data of real samples, which this
 * synthetic spool does not have.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse.h>

#include "bench.h"

#define SAMPLES 57000
#define STACKS 2048
#define POOL 4096
#define CAP 256

struct mapping {
	uint64_t start, end, offset, inode;
	unsigned major, minor;
	char path[512];
};

struct bench {
	struct mapping libc, self;
	uint32_t libc_id, self_id;
	uint64_t pool[POOL];
	char spool_path[256];
	struct sp_snapshot *snap;
	const struct sp_spool *spool;
	struct sp_symbolizer *sym;
	double cold_s; /* new + first resolve of every sample, internal */
	int32_t pid;
};

__attribute__((noinline)) static int bs_work(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static int find_mapping(uint64_t addr, struct mapping *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024], perms[8];
	int pos, found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		pos = 0;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
			   " %x:%x %" SCNu64 " %n",
			   &m->start, &m->end, perms, &m->offset, &m->major,
			   &m->minor, &m->inode, &pos) < 7 ||
		    !pos)
			continue;
		found = addr >= m->start && addr < m->end;
		snprintf(m->path, sizeof(m->path), "%s", line + pos);
		m->path[strcspn(m->path, "\n")] = 0;
	}
	if (f)
		fclose(f);
	return found ? 0 : -ENOENT;
}

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static int add_module(struct sp_writer *w, const struct mapping *m, int32_t pid,
		      uint32_t *id)
{
	struct sp_module mod = {
		.start = m->start,
		.end = m->end,
		.file_offset = m->offset,
		.inode = m->inode,
		.dev_major = m->major,
		.dev_minor = m->minor,
		.pid = pid,
		.path = m->path,
		.path_len = strlen(m->path),
	};

	return sp_writer_module(w, &mod, id);
}

static struct sp_frame frame_at(const struct bench *b, uint64_t abs)
{
	bool in_self = abs >= b->self.start && abs < b->self.end;
	const struct mapping *m = in_self ? &b->self : &b->libc;
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip = abs - m->start + m->offset,
			      .module_id = in_self ? b->self_id : b->libc_id,
			      .mode = SP_FRAME_USER };
	return f;
}

static void make_pool(struct bench *b)
{
	uint64_t s = 42, span = b->libc.end - b->libc.start;
	size_t i;

	for (i = 0; i < POOL; i++)
		b->pool[i] = b->libc.start + lcg(&s) % span;
	/* A few frames of this binary, so two modules are involved. */
	for (i = 0; i < POOL; i += 64)
		b->pool[i] = (uint64_t)(uintptr_t)&bs_work + 1;
}

static int write_samples(struct bench *b, struct sp_writer *w)
{
	struct sp_frame f[40];
	uint64_t s = 7;
	size_t i, k;
	int err = 0;

	for (i = 0; i < SAMPLES && !err; i++) {
		/* Skewed stack choice: a few hot stacks, a long tail. */
		uint64_t r = lcg(&s) % STACKS, stack = r * r / STACKS;
		uint64_t fs = stack * 2654435761u;
		size_t depth = 8 + stack % 33;

		for (k = 0; k < depth; k++)
			f[k] = frame_at(b, b->pool[lcg(&fs) % POOL]);
		err = sp_writer_sample(w, i + 1, b->pid, b->pid, f, depth);
	}
	return err;
}

static int write_spool(struct bench *b)
{
	struct sp_writer *w;
	struct sp_sink *sink;
	int err;

	snprintf(b->spool_path, sizeof(b->spool_path),
		 "/tmp/bench_symbolize_%d.spool", (int)getpid());
	err = sp_sink_open_file(b->spool_path, NULL, &sink);
	if (err)
		return err;
	err = sp_writer_new(sink, NULL, &w);
	if (err)
		return err;
	err = add_module(w, &b->libc, b->pid, &b->libc_id);
	if (!err)
		err = add_module(w, &b->self, b->pid, &b->self_id);
	if (!err)
		err = write_samples(b, w);
	if (!err)
		err = sp_writer_finish(w);
	sp_writer_free(w);
	return err;
}

/* Resolves every sample's stack; returns the number of frames or < 0. */
static int64_t resolve_all(struct sp_symbolizer *sym, struct sp_snapshot *snap)
{
	const struct sp_resolved_frame *out[CAP];
	size_t i, n = sp_snapshot_sample_count(snap);
	struct sp_sample s;
	int64_t frames = 0;
	int r;

	for (i = 0; i < n; i++) {
		if (sp_snapshot_sample(snap, i, &s))
			return -EINVAL;
		r = sp_symbolizer_resolve_stack(sym, s.stack, s.pid, out, CAP);
		if (r < 0)
			return r;
		frames += r;
	}
	return frames;
}

static int cold(struct bench *b)
{
	uint64_t t0 = bench_now_ns(), t1, t2;
	struct json_line j;
	int64_t frames;
	int err;

	err = sp_snapshot_open(b->spool_path, NULL, &b->snap);
	if (err)
		return err;
	b->spool = sp_snapshot_spool(b->snap);
	t1 = bench_now_ns();
	err = sp_symbolizer_new(b->spool, NULL, &b->sym);
	if (err)
		return err;
	frames = resolve_all(b->sym, b->snap);
	if (frames < 0)
		return (int)frames;
	t2 = bench_now_ns();
	b->cold_s = (double)(t2 - t1) / 1e9;
	json_begin(&j, "symbolize_cold", "libc_57k");
	json_u64(&j, "samples", sp_snapshot_sample_count(b->snap));
	json_u64(&j, "frames", (uint64_t)frames);
	json_u64(&j, "distinct_frames", sp_spool_frame_count(b->spool));
	json_num(&j, "time_to_result_s", (double)(t2 - t0) / 1e9);
	json_num(&j, "symbolize_s", (double)(t2 - t1) / 1e9);
	json_num(&j, "frames_per_s", (double)frames * 1e9 / (double)(t2 - t1));
	json_num(&j, "target_time_to_result_s", 0.3);
	json_num(&j, "perf_report_time_to_result_s_reference", 2.7);
	json_u64(&j, "peak_rss_kib", (uint64_t)rss_process_peak_kib());
	json_end(&j);
	return 0;
}

struct warm {
	struct sp_symbolizer *sym;
	const struct sp_sample *samples;
	size_t n;
	int passes;
	int64_t frames;
	double seconds;
	pthread_barrier_t *start;
};

static void *warm_run(void *arg)
{
	struct warm *w = arg;
	const struct sp_resolved_frame *out[CAP];
	uint64_t t0;
	int p, r;
	size_t i;

	if (w->start)
		pthread_barrier_wait(w->start);
	t0 = bench_now_ns();
	w->frames = 0;
	for (p = 0; p < w->passes; p++)
		for (i = 0; i < w->n; i++) {
			r = sp_symbolizer_resolve_stack(w->sym,
							w->samples[i].stack,
							w->samples[i].pid, out,
							CAP);
			if (r < 0)
				return NULL;
			w->frames += r;
		}
	w->seconds = (double)(bench_now_ns() - t0) / 1e9;
	return NULL;
}

static void warm_print(const char *scenario, int threads, double rate,
		       double scaling)
{
	struct json_line j;

	json_begin(&j, "symbolize_warm", scenario);
	json_str(&j, "stack_cache", "internal");
	json_u64(&j, "threads", (uint64_t)threads);
	json_num(&j, "frames_per_s_per_thread", rate);
	if (scaling > 0)
		json_num(&j, "scaling_vs_1_thread", scaling);
	json_num(&j, "target_frames_per_s_per_thread", 20e6);
	json_end(&j);
}

static int warm(struct bench *b, int passes)
{
	size_t i, n = sp_snapshot_sample_count(b->snap);
	struct sp_sample *s = calloc(n, sizeof(*s));
	struct warm w[2];
	pthread_barrier_t start;
	pthread_t th[2];
	double one, two;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		sp_snapshot_sample(b->snap, i, &s[i]);
	w[0] = (struct warm){ b->sym, s, n, passes, 0, 0, NULL };
	warm_run(&w[0]);
	one = (double)w[0].frames / w[0].seconds;
	warm_print("libc_57k", 1, one, 0);
	pthread_barrier_init(&start, NULL, 2);
	for (i = 0; i < 2; i++) {
		w[i] = (struct warm){ b->sym, s, n, passes, 0, 0, &start };
		pthread_create(&th[i], NULL, warm_run, &w[i]);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	two = ((double)w[0].frames / w[0].seconds +
	       (double)w[1].frames / w[1].seconds) /
	      2;
	warm_print("libc_57k", 2, two, 2 * two / one);
	free(s);
	return 0;
}

/* Seconds for @reps resolves of @stack (already warm). */
static double repeat_stack(struct sp_symbolizer *sym, uint32_t stack,
			   int32_t pid, long reps, int64_t *frames)
{
	const struct sp_resolved_frame *out[CAP];
	uint64_t t0 = bench_now_ns();
	long i;

	*frames = 0;
	for (i = 0; i < reps; i++)
		*frames +=
			sp_symbolizer_resolve_stack(sym, stack, pid, out, CAP);
	return (double)(bench_now_ns() - t0) / 1e9;
}

static uint32_t deepest_stack(const struct sp_spool *spool)
{
	uint32_t i, best = 0, n = sp_spool_stack_count(spool);
	struct sp_stack_node node, top = { 0 };

	for (i = 0; i < n; i++)
		if (sp_spool_stack_node(spool, i, &node) == 0 &&
		    node.depth > top.depth) {
			top = node;
			best = i;
		}
	return best;
}

static void stack_cache_print(const char *mode, double cold_s, uint32_t depth,
			      double rep_s, long reps, double pass_rate,
			      double speedup)
{
	struct json_line j;

	json_begin(&j, "symbolize_stack_cache", mode);
	json_num(&j, "cold_symbolize_s", cold_s);
	json_u64(&j, "repeated_stack_depth", depth);
	json_num(&j, "repeated_stack_ns", rep_s * 1e9 / (double)reps);
	json_num(&j, "repeated_frames_per_s", (double)reps * depth / rep_s);
	json_num(&j, "warm_57k_frames_per_s", pass_rate);
	if (speedup > 0)
		json_num(&j, "internal_speedup_repeated", speedup);
	json_end(&j);
}

/* Internal (b->sym) against a fresh external symbolizer, same spool. */
static int stack_cache(struct bench *b, long reps)
{
	struct sp_symbolizer_opts o = {
		.size = sizeof(o), .stack_cache = SP_STACK_CACHE_EXTERNAL
	};
	uint32_t stack = deepest_stack(b->spool);
	struct sp_symbolizer *ext;
	int64_t frames, pf[2];
	double rep[2], pass[2], cold_ext;
	uint64_t t0 = bench_now_ns();
	int err, i;

	/* External from nothing, timed like cold() times the internal one. */
	err = sp_symbolizer_new(b->spool, &o, &ext);
	if (err)
		return err;
	pf[1] = resolve_all(ext, b->snap);
	cold_ext = (double)(bench_now_ns() - t0) / 1e9;
	for (i = 0; i < 2 && !err; i++) {
		struct sp_symbolizer *sym = i == 0 ? b->sym : ext;

		pf[i] = resolve_all(sym, b->snap); /* warm */
		t0 = bench_now_ns();
		pf[i] = resolve_all(sym, b->snap);
		pass[i] = (double)pf[i] * 1e9 / (double)(bench_now_ns() - t0);
		rep[i] = repeat_stack(sym, stack, b->pid, reps, &frames);
		if (pf[i] < 0 || frames < 0)
			err = -EINVAL;
	}
	sp_symbolizer_free(ext);
	if (err)
		return err;
	stack_cache_print("internal", b->cold_s, (uint32_t)(frames / reps),
			  rep[0], reps, pass[0], rep[1] / rep[0]);
	stack_cache_print("external", cold_ext, (uint32_t)(frames / reps),
			  rep[1], reps, pass[1], 0);
	return 0;
}

/* The samples' raw frames, as an embedder without a spool would have them. */
static int64_t raw_pass(struct sp_symbolizer *sym, const struct bench *b,
			struct sp_frame *raw, uint32_t *ids)
{
	const struct sp_resolved_frame *out[CAP];
	size_t i, n = sp_snapshot_sample_count(b->snap);
	struct sp_sample s;
	int64_t frames = 0;
	int d, k, r;

	for (i = 0; i < n; i++) {
		sp_snapshot_sample(b->snap, i, &s);
		d = sp_spool_stack_frames(b->spool, s.stack, ids, CAP);
		for (k = 0; k < d && k < CAP; k++)
			sp_spool_frame(b->spool, ids[k], &raw[k]);
		r = sp_symbolizer_resolve_raw(sym, s.pid, raw, (size_t)k, out,
					      CAP);
		if (r < 0)
			return r;
		frames += r;
	}
	return frames;
}

static int raw_bench(struct bench *b)
{
	struct sp_module mods[2];
	struct sp_frame raw[CAP];
	uint32_t ids[CAP];
	struct sp_symbolizer *sym;
	struct json_line j;
	int64_t frames;
	uint64_t t0;
	double cold_s;
	int err;

	sp_spool_module(b->spool, b->libc_id, &mods[0]);
	sp_spool_module(b->spool, b->self_id, &mods[1]);
	/* Raw frames pin to table indexes: keep the spool's ids valid. */
	if (b->libc_id != 0 || b->self_id != 1)
		return -EINVAL;
	t0 = bench_now_ns();
	err = sp_symbolizer_new_modules(mods, 2, NULL, &sym);
	if (err)
		return err;
	frames = raw_pass(sym, b, raw, ids);
	cold_s = (double)(bench_now_ns() - t0) / 1e9;
	t0 = bench_now_ns();
	if (frames >= 0)
		frames = raw_pass(sym, b, raw, ids);
	json_begin(&j, "symbolize_raw", "libc_57k_module_table");
	json_num(&j, "cold_s", cold_s);
	json_num(&j, "warm_frames_per_s",
		 (double)frames * 1e9 / (double)(bench_now_ns() - t0));
	json_end(&j);
	sp_symbolizer_free(sym);
	return frames < 0 ? (int)frames : 0;
}

/* eu-addr2line on the distinct addresses, against this live process. */
static void addr2line_baseline(const struct bench *b)
{
	char cmd[512], path[300];
	struct json_line j;
	uint64_t t0;
	FILE *f;
	size_t i;
	int rc;

	snprintf(path, sizeof(path), "%s.addrs", b->spool_path);
	f = fopen(path, "w");
	if (!f)
		return;
	for (i = 0; i < POOL; i++)
		fprintf(f, "0x%" PRIx64 "\n", b->pool[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "eu-addr2line -f -i -p %d < %s > /dev/null 2>&1", (int)b->pid,
		 path);
	t0 = bench_now_ns();
	rc = system(cmd);
	json_begin(&j, "symbolize_baseline", "eu-addr2line");
	json_u64(&j, "addresses", POOL);
	json_bool(&j, "ok", rc == 0);
	json_num(&j, "seconds", (double)(bench_now_ns() - t0) / 1e9);
	json_str(&j, "perf_report", "skipped: needs a perf.data recording");
	json_end(&j);
	unlink(path);
}

int main(int argc, char **argv)
{
	struct bench b = { .pid = (int32_t)getpid() };
	int passes = argc > 1 && strcmp(argv[1], "--quick") == 0 ? 2 : 40;
	int err;

	if (find_mapping((uint64_t)(uintptr_t)&printf, &b.libc) ||
	    find_mapping((uint64_t)(uintptr_t)&bs_work, &b.self)) {
		fprintf(stderr, "bench_symbolize: mappings not found\n");
		return 1;
	}
	make_pool(&b);
	err = write_spool(&b);
	if (!err)
		err = cold(&b);
	if (!err)
		err = warm(&b, passes);
	if (!err)
		err = stack_cache(&b, passes * 50000L);
	if (!err)
		err = raw_bench(&b);
	if (!err)
		addr2line_baseline(&b);
	sp_symbolizer_free(b.sym);
	sp_snapshot_close(b.snap);
	unlink(b.spool_path);
	if (err) {
		fprintf(stderr, "bench_symbolize: %s\n", sp_strerror(err));
		return 1;
	}
	return 0;
}
