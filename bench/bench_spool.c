/* SPDX-License-Identifier: MIT */
/* bench_spool: writer and reader throughput, spool size and RSS, as JSON lines. */

/*
 * Usage: bench_spool [--quick] [--scenario NAME] [--samples N] [--dir DIR]
 *
 * For each fixture scenario, then for the bulk run (SCENARIO_BULK with
 * --samples samples, default 10 M; 0 skips it):
 *
 *   1. write the spool to DIR once raw and once zstd (file sinks);
 *   2. "baseline": memcpy and read() MB/s of the raw bytes;
 *   3. "writer": samples/s into a memory sink, raw and zstd bytes/sample,
 *      the cost of the generator loop alone ("vs_loop") and the output
 *      rate against memcpy ("vs_memcpy");
 *   4. "snapshot_open" (raw and zstd), "replay_iterate", "tail_iterate";
 *   5. bulk only: "replay_rss", Replay's peak RSS in a fresh process.
 *
 * Targets are reported as "target"/"meets_target" and never fail the run;
 * the exit status is non-zero only when something did not work (an error
 * code, or a reader that saw a different number of samples).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse.h>

#include "bench.h"
#include "scenario.h"

#define BULK_DEFAULT_SAMPLES 10000000ull
#define HOT_SCENARIO "hot_stack_reuse"

struct writer_ctx {
	struct scenario_gen *gen;
	enum scenario_compression compression;
	bool want_digest;
	uint64_t bytes;	 /* output of the last pass */
	uint64_t digest; /* FNV-1a of it, when want_digest */
	uint64_t loop_sum;
};

static uint64_t fnv1a(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

static int writer_pass(void *arg)
{
	struct writer_ctx *c = arg;
	struct sp_sink *mem, *sink;
	struct sp_writer *writer;
	const void *data;
	size_t len;
	int err;

	err = sp_sink_new_memory(NULL, &mem);
	if (err)
		return err;
	sink = mem;
	if (c->compression == SCN_ZSTD) {
		err = sp_sink_new_zstd(mem, NULL, &sink);
		if (err)
			return err;
	}
	err = scenario_write(c->gen, sink, &writer);
	if (err)
		return err;
	/* Borrowed: the writer owns mem, directly or through the zstd sink. */
	err = sp_sink_memory_data(mem, &data, &len);
	c->bytes = len;
	if (!err && c->want_digest)
		c->digest = fnv1a(data, len);
	sp_writer_free(writer);
	return err;
}

static int loop_pass(void *arg)
{
	struct writer_ctx *c = arg;

	c->loop_sum += scenario_gen_walk(c->gen);
	return 0;
}

/* Two untimed runs: the generator and writer must be deterministic. */
static int writer_digest(struct writer_ctx *c, bool *deterministic)
{
	uint64_t first;
	int err;

	c->want_digest = true;
	err = writer_pass(c);
	first = c->digest;
	if (!err)
		err = writer_pass(c);
	c->want_digest = false;
	*deterministic = first == c->digest;
	return err;
}

struct writer_result {
	double raw_s, zstd_s, loop_s;
	uint64_t raw_bytes, zstd_bytes, digest;
	bool deterministic;
};

static int writer_measure(const struct bench_opts *o, struct writer_ctx *c,
			  struct writer_result *r)
{
	int err;

	err = writer_digest(c, &r->deterministic);
	r->digest = c->digest;
	r->raw_bytes = c->bytes;
	if (!err)
		err = bench_best(writer_pass, c, o->reps, o->min_s, &r->raw_s);
	if (!err)
		err = bench_best(loop_pass, c, o->reps, o->min_s, &r->loop_s);
	c->compression = SCN_ZSTD;
	if (!err)
		err = bench_best(writer_pass, c, o->reps, o->min_s, &r->zstd_s);
	r->zstd_bytes = c->bytes;
	return err;
}

static void writer_targets(struct json_line *j, double per_s, double raw_bps,
			   double zstd_bps)
{
	json_num(j, "target", TARGET_WRITER_SAMPLES_PER_S);
	json_bool(j, "meets_target", per_s >= TARGET_WRITER_SAMPLES_PER_S);
	json_num(j, "bytes_target", TARGET_BYTES_PER_SAMPLE);
	json_bool(j, "bytes_meets_target_raw",
		  raw_bps <= TARGET_BYTES_PER_SAMPLE);
	json_bool(j, "bytes_meets_target_zstd",
		  zstd_bps <= TARGET_BYTES_PER_SAMPLE);
}

static void writer_print(const char *name, uint64_t samples, double memcpy_mb_s,
			 const struct writer_result *r)
{
	double n = (double)samples;
	double mb_s = (double)r->raw_bytes / 1e6 / r->raw_s;
	struct json_line j;
	char digest[24];

	json_begin(&j, "writer", name);
	json_u64(&j, "samples", samples);
	json_num(&j, "samples_per_s", n / r->raw_s);
	json_num(&j, "ns_per_sample", r->raw_s * 1e9 / n);
	json_num(&j, "bytes_per_sample", (double)r->raw_bytes / n);
	json_num(&j, "bytes_per_sample_zstd", (double)r->zstd_bytes / n);
	json_u64(&j, "bytes", r->raw_bytes);
	json_u64(&j, "bytes_zstd", r->zstd_bytes);
	json_num(&j, "zstd_samples_per_s", n / r->zstd_s);
	json_num(&j, "loop_ns_per_sample", r->loop_s * 1e9 / n);
	json_num(&j, "vs_loop", r->raw_s / r->loop_s);
	json_num(&j, "mb_s", mb_s);
	json_num(&j, "vs_memcpy", mb_s / memcpy_mb_s);
	snprintf(digest, sizeof(digest), "%016llx",
		 (unsigned long long)r->digest);
	json_str(&j, "fnv1a64", digest);
	json_bool(&j, "deterministic", r->deterministic);
	if (strcmp(name, HOT_SCENARIO) == 0)
		writer_targets(&j, n / r->raw_s, (double)r->raw_bytes / n,
			       (double)r->zstd_bytes / n);
	json_end(&j);
}

static int bench_writer(const struct bench_opts *o, struct scenario_gen *gen,
			const char *name, double memcpy_mb_s)
{
	struct writer_ctx c = { .gen = gen, .compression = SCN_RAW };
	struct writer_result r = { 0 };
	int err;

	err = writer_measure(o, &c, &r);
	if (err)
		return err;
	writer_print(name, scenario_gen_samples(gen), memcpy_mb_s, &r);
	return r.deterministic ? 0 : -EBADMSG;
}

static int write_spool(struct scenario_gen *gen, struct bench_file *f,
		       enum scenario_compression compression)
{
	struct stat st;
	int err;

	err = scenario_write_file(gen, f->path, compression, &f->raw_bytes);
	if (err)
		return err;
	if (stat(f->path, &st) != 0)
		return -errno;
	f->file_bytes = (uint64_t)st.st_size;
	f->samples = scenario_gen_samples(gen);
	f->compression = compression == SCN_ZSTD ? "zstd" : "none";
	return 0;
}

static int bench_readers(const struct bench_opts *o, struct bench_file *raw,
			 struct bench_file *zst, bool bulk)
{
	int err;

	err = bench_snapshot(o, raw);
	if (!err)
		err = bench_snapshot(o, zst);
	if (!err)
		err = bench_replay(o, raw);
	if (!err)
		err = bench_tail(o, raw);
	if (!err && bulk)
		err = bench_replay_rss(raw);
	return err;
}

static int bench_scenario(const struct bench_opts *o,
			  const struct scenario *scn, uint64_t samples)
{
	char raw_path[4096], zst_path[4096];
	struct bench_file raw = { .scenario = scn->name, .path = raw_path };
	struct bench_file zst = { .scenario = scn->name, .path = zst_path };
	struct scenario_gen *gen;
	int err;

	snprintf(raw_path, sizeof(raw_path), "%s/%s.spool", o->dir, scn->name);
	snprintf(zst_path, sizeof(zst_path), "%s/%s.spool.zst", o->dir,
		 scn->name);
	err = scenario_gen_new(scn, samples, &gen);
	if (err)
		return err;
	err = write_spool(gen, &raw, SCN_RAW);
	if (!err)
		err = write_spool(gen, &zst, SCN_ZSTD);
	if (!err)
		err = bench_baseline(o, &raw);
	zst.memcpy_mb_s = raw.memcpy_mb_s;
	if (!err)
		err = bench_writer(o, gen, scn->name, raw.memcpy_mb_s);
	if (!err)
		err = bench_readers(o, &raw, &zst,
				    strcmp(scn->name, SCENARIO_BULK) == 0);
	unlink(raw_path);
	unlink(zst_path);
	scenario_gen_free(gen);
	if (err)
		fprintf(stderr, "bench_spool: %s: %s\n", scn->name,
			sp_strerror(err));
	return err;
}

static void print_process(void)
{
	struct json_line j;

	json_begin(&j, "process", NULL);
	json_num(&j, "peak_rss_kib", (double)rss_process_peak_kib());
	json_end(&j);
}

static int run_all(const struct bench_opts *o)
{
	const struct scenario *scn;
	size_t i;
	int err = 0;

	for (i = 0; i < SCENARIO_FIXTURES && !err; i++) {
		scn = scenario_get(i);
		if (!o->only || strcmp(o->only, scn->name) == 0)
			err = bench_scenario(o, scn, 0);
	}
	if (!err && o->bulk_samples &&
	    (!o->only || strcmp(o->only, SCENARIO_BULK) == 0)) {
		struct bench_opts bulk = *o;

		/* A bulk pass takes seconds: fewer repetitions suffice. */
		if (bulk.reps > 3)
			bulk.reps = 3;
		err = bench_scenario(&bulk, scenario_find(SCENARIO_BULK),
				     o->bulk_samples);
	}
	print_process();
	return err;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
	char *end;
	int i;

	for (i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--quick") == 0) {
			o->quick = true;
			continue;
		}
		if (!val)
			return -EINVAL;
		if (strcmp(argv[i], "--scenario") == 0) {
			o->only = val;
			if (!scenario_find(val))
				return -EINVAL;
		} else if (strcmp(argv[i], "--dir") == 0) {
			o->dir = val;
		} else if (strcmp(argv[i], "--samples") == 0) {
			o->bulk_samples = strtoull(val, &end, 10);
			if (*end || val[0] == '-')
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		i++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .bulk_samples = BULK_DEFAULT_SAMPLES };
	char dir[4096];
	const char *tmp = getenv("TMPDIR");
	int err;

	if (argc == 4 && strcmp(argv[1], "--replay-rss-child") == 0) {
		err = bench_replay_rss_child(argv[2], argv[3]);
		if (err)
			fprintf(stderr, "bench_spool: replay: %s\n",
				sp_strerror(err));
		return err ? 1 : 0;
	}
	if (parse_args(argc, argv, &o)) {
		fprintf(stderr,
			"usage: bench_spool [--quick] [--scenario NAME] "
			"[--samples N] [--dir DIR]\n");
		return 2;
	}
	o.reps = o.quick ? 1 : 5;
	o.min_s = o.quick ? 0.01 : 0.3;
	if (!o.dir)
		o.dir = tmp ? tmp : "/tmp";
	snprintf(dir, sizeof(dir), "%s/sp-bench-XXXXXX", o.dir);
	if (!mkdtemp(dir)) {
		perror("bench_spool: mkdtemp");
		return 1;
	}
	o.dir = dir;
	err = run_all(&o);
	rmdir(dir);
	return err ? 1 : 0;
}
