/* SPDX-License-Identifier: MIT */
/* bench_python: recorder CPU per sample and frame, Python -X perf or native. */

/*
 * Issue 12 made the Python stacks whole: the recorder reads each CPython
 * trampoline arena once and the unwinder steps the trampolines exactly,
 * so a sample that used to stop at its first Python frame now unwinds
 * the whole chain (tens of frames), and each exiting process's perf map
 * is copied into the JIT side directory. This measures what that costs
 * the recorder per sample, on the same workload in the same run:
 *
 *   before  SP_RECORDER_NO_JIT_CODE, no side directory: the old stacks
 *   after   the default, with a side directory
 *
 * The workload is tests/runtimes/py_nested.py (nested CPU-bound Python
 * functions, a fixed amount of CPU time) under python3.12 -X perf,
 * launched suspended and attached on exec; the recorder runs inline on
 * this thread, and its CPU is getrusage(RUSAGE_SELF) around open..close
 * (this process does nothing else), and "_net" figures subtract the
 * fixed start/stop cost that a run of the same program doing no work
 * measures (interpreter start, the unwind tables of libpython and libc).
 * Rounds alternate the two modes, so a change of the machine's load hits
 * both; the compare line gives the median of the per-round ratios of the
 * net cost per sample, against the goal (at most +10 % per
 * sample), reported and never enforced.
 *
 *   bench_python [--python PATH] [--seconds S] [--rounds N] [--hz HZ]
 *                [--only before|after] [--fixed no]   (one mode, no
 *                no-work run: what bench_python_callgrind.py runs)
 *                [--workload python|native]
 *
 * --workload native records tests/workloads/wl_recursion (C, -O2 without
 * frame pointers, main -> 40 x wl_recurse -> leaf: DWARF CFI only, no
 * JIT code; --seconds of its CPU time) instead, for the bound where the stacks do not change: there
 * "before" is the same mode run with main's library (LD_LIBRARY_PATH, see
 * bench_recorder_cost.py), and both modes unwind the same stacks.
 * Every run line has the net cost per frame as well
 * (recorder_us_per_frame_net: the frames of the no-work run subtracted).
 *
 * One JSON object per line on stdout. Needs root (or a permissive
 * perf_event_paranoid) and a CPython 3.12+; prints a "skip" line and
 * exits 0 without one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse.h>

#include "workload_paths.h"

#define ROUNDS_MAX 16
#define GOAL_RATIO 1.10

struct cfg {
	char python[512];
	const char *script;
	char seconds[32];
	unsigned rounds;
	uint32_t hz;
	int only;      /* -1: both modes; 0: before only; 1: after only */
	bool native;   /* wl_recursion instead of py_nested.py */
	bool no_fixed; /* skip the no-work runs (bench_python_callgrind.py) */
	char dir[64];
};

struct result {
	double cpu_s;
	uint64_t samples;
	uint64_t truncated;
	uint64_t maps_kept;
	uint64_t bytes;
	uint64_t frames; /* user frames in the spool's samples */
};

/* Frames of every sample of @path (the depth the unwinder reached). */
static uint64_t spool_frames(const char *path)
{
	struct sp_snapshot *snap;
	struct sp_sample s;
	uint64_t total = 0;
	uint32_t ids[1];
	size_t i;
	int n;

	if (sp_snapshot_open(path, NULL, &snap))
		return 0;
	for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
		sp_snapshot_sample(snap, i, &s);
		n = sp_spool_stack_frames(sp_snapshot_spool(snap), s.stack, ids,
					  1);
		total += n > 0 ? (uint64_t)n : 0;
	}
	sp_snapshot_close(snap);
	return total;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int find_python(struct cfg *c)
{
	glob_t g;

	if (c->python[0])
		return 0;
	if (glob("/root/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]", 0, NULL,
		 &g) != 0 ||
	    g.gl_pathc == 0)
		return -ENOENT;
	snprintf(c->python, sizeof(c->python), "%s", g.gl_pathv[0]);
	globfree(&g);
	return 0;
}

static void side_clean(const char *jit)
{
	char cmd[256];

	/* The side directory holds our own copies only. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", jit);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_python: could not remove %s\n", jit);
}

static int run(const struct cfg *c, bool after, const char *seconds,
	       struct result *res)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	char spool[128], jit[160];
	const char *py[] = { c->python, "-X",	     "perf", c->script,
			     seconds,	"/dev/null", NULL };
	/* wl_duration() takes 0 for its default: the no-work run is 1 ms. */
	const char *wl[] = { WL_RECURSION_PATH,
			     strcmp(seconds, "0") ? seconds : "0.001", "40",
			     "cpu", NULL };
	const char *const *argv = c->native ? wl : py;
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec = NULL;
	double cpu0 = self_cpu_s();
	struct stat st;
	int err;

	snprintf(spool, sizeof(spool), "%s/bench.spool", c->dir);
	snprintf(jit, sizeof(jit), "%s.jit", spool);
	o.sample_hz = c->hz;
	o.threads = 0;
	o.flags = after ? 0 : SP_RECORDER_NO_JIT_CODE;
	o.jit_dir = after ? jit : NULL;
	err = sp_recorder_open(spool, &o, &rec);
	/* exec's argv is char *const[] for historical reasons. */
	if (!err)
		err = sp_recorder_run_command(
			rec, (char *const *)(uintptr_t)argv, NULL, NULL, NULL);
	if (!err)
		err = sp_recorder_finish(rec);
	if (rec)
		sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	res->cpu_s = self_cpu_s() - cpu0;
	if (err < 0)
		return err;
	res->samples = sum.samples;
	res->truncated = sum.truncated_frame_markers;
	res->maps_kept = sum.jit_maps_kept;
	res->bytes = stat(spool, &st) == 0 ? (uint64_t)st.st_size : 0;
	res->frames = spool_frames(spool);
	unlink(spool);
	side_clean(jit);
	return 0;
}

static double us_per_sample(const struct result *r)
{
	return r->samples ? 1e6 * r->cpu_s / (double)r->samples : 0;
}

/* Net CPU per unit: @n units of @r less the @n0 of the no-work run @fixed. */
static double net_per(const struct result *r, const struct result *fixed,
		      uint64_t n, uint64_t n0)
{
	return n > n0 ? 1e6 * (r->cpu_s - fixed->cpu_s) / (double)(n - n0) : 0;
}

/* Per sample without the fixed start/stop cost (@fixed: a run doing no work). */
static double net_us(const struct result *r, const struct result *fixed)
{
	return net_per(r, fixed, r->samples, fixed->samples);
}

static const char *bench_name(const struct cfg *c)
{
	return c->native ? "recorder_native" : "python_jit";
}

static void print_run(const struct cfg *c, unsigned round, bool after,
		      const struct result *r, const struct result *fixed)
{
	printf("{\"bench\":\"%s\",\"mode\":\"%s\",\"round\":%u"
	       ",\"hz\":%u,\"samples\":%" PRIu64 ",\"truncated_pct\":%.2f"
	       ",\"recorder_cpu_s\":%.4f,\"fixed_cpu_s\":%.4f"
	       ",\"fixed_samples\":%" PRIu64 ",\"frames\":%" PRIu64
	       ",\"fixed_frames\":%" PRIu64 ",\"recorder_us_per_sample\":%.3f"
	       ",\"recorder_us_per_sample_net\":%.3f"
	       ",\"recorder_us_per_frame_net\":%.4f"
	       ",\"frames_per_sample\":%.2f"
	       ",\"bytes_per_sample\":%.2f,\"perf_maps_kept\":%" PRIu64 "}\n",
	       bench_name(c), after ? "after" : "before", round,
	       (unsigned)c->hz, r->samples,
	       r->samples ? 100.0 * (double)r->truncated / (double)r->samples :
			    0,
	       r->cpu_s, fixed->cpu_s, fixed->samples, r->frames, fixed->frames,
	       us_per_sample(r), net_us(r, fixed),
	       net_per(r, fixed, r->frames, fixed->frames),
	       r->samples ? (double)r->frames / (double)r->samples : 0,
	       r->samples ? (double)r->bytes / (double)r->samples : 0,
	       r->maps_kept);
	fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int parse(int argc, char **argv, struct cfg *c)
{
	int i;

	for (i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--python") == 0)
			snprintf(c->python, sizeof(c->python), "%s",
				 argv[i + 1]);
		else if (strcmp(argv[i], "--seconds") == 0)
			snprintf(c->seconds, sizeof(c->seconds), "%s",
				 argv[i + 1]);
		else if (strcmp(argv[i], "--rounds") == 0)
			c->rounds = (unsigned)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--hz") == 0)
			c->hz = (uint32_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--only") == 0)
			c->only = strcmp(argv[i + 1], "after") == 0;
		else if (strcmp(argv[i], "--fixed") == 0)
			c->no_fixed = strcmp(argv[i + 1], "no") == 0;
		else if (strcmp(argv[i], "--workload") == 0 &&
			 (strcmp(argv[i + 1], "python") == 0 ||
			  strcmp(argv[i + 1], "native") == 0))
			c->native = strcmp(argv[i + 1], "native") == 0;
		else
			return -1;
	}
	if (i != argc || c->rounds < 1 || c->rounds > ROUNDS_MAX || !c->hz)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct cfg c = {
		.script = PY_NESTED_PATH, .rounds = 5, .hz = 999, .only = -1
	};
	double ratios[ROUNDS_MAX], us[2][ROUNDS_MAX];
	struct result r[2], fixed[2];
	unsigned k, m;
	int err = 0;

	snprintf(c.seconds, sizeof(c.seconds), "2");
	if (parse(argc, argv, &c)) {
		fprintf(stderr, "usage: bench_python [--python PATH] "
				"[--seconds S] [--rounds N] [--hz HZ] "
				"[--only before|after] [--fixed no] "
				"[--workload python|native]\n");
		return 2;
	}
	if (!c.native && find_python(&c)) {
		printf("{\"bench\":\"python_jit\",\"skip\":\"no python3.12+\"}\n");
		return 0;
	}
	snprintf(c.dir, sizeof(c.dir), "/tmp/bench_python_XXXXXX");
	if (!mkdtemp(c.dir))
		return 1;
	for (k = 0; k < c.rounds && !err; k++) {
		for (m = 0; m < 2 && !err; m++) {
			/* Alternate which mode goes first. */
			bool after = (m ^ (k & 1)) != 0;

			if (c.only >= 0 && after != (c.only == 1)) {
				r[after] = fixed[after] = (struct result){ 0 };
				continue;
			}
			fixed[after] = (struct result){ 0 };
			if (!c.no_fixed)
				err = run(&c, after, "0", &fixed[after]);
			if (!err)
				err = run(&c, after, c.seconds, &r[after]);
			if (!err)
				print_run(&c, k, after, &r[after],
					  &fixed[after]);
		}
		if (err)
			break;
		us[0][k] = net_us(&r[0], &fixed[0]);
		us[1][k] = net_us(&r[1], &fixed[1]);
		ratios[k] = us[0][k] > 0 ? us[1][k] / us[0][k] : 0;
	}
	rmdir(c.dir);
	if (err) {
		printf("{\"bench\":\"%s\",\"error\":\"%s\"}\n", bench_name(&c),
		       sp_strerror(err));
		return 1;
	}
	qsort(ratios, c.rounds, sizeof(double), cmp_double);
	qsort(us[0], c.rounds, sizeof(double), cmp_double);
	qsort(us[1], c.rounds, sizeof(double), cmp_double);
	printf("{\"bench\":\"%s\",\"mode\":\"compare\",\"rounds\":%u"
	       ",\"before_us_per_sample_net_median\":%.3f"
	       ",\"after_us_per_sample_net_median\":%.3f"
	       ",\"ratio_median\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f"
	       ",\"goal_ratio\":%.2f,\"meets_goal\":%s}\n",
	       bench_name(&c), c.rounds, us[0][c.rounds / 2],
	       us[1][c.rounds / 2], ratios[c.rounds / 2], ratios[0],
	       ratios[c.rounds - 1], GOAL_RATIO,
	       ratios[c.rounds / 2] <= GOAL_RATIO ? "true" : "false");
	return 0;
}
