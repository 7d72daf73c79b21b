/* SPDX-License-Identifier: MIT */
/* bench_system: system-wide recording, ours vs `perf record -a`. */

/*
 * Two CPU-bound workloads built without frame pointers (tests/workloads
 * wl_threads, 4 threads, and wl_sharedlib) keep both CPUs busy for the
 * whole run. For each rate, the same machine is recorded system-wide for
 * --seconds by our Recorder (system mode, threaded pipeline,
 * DWARF unwinding at record time, this process excluded) and by
 * `perf record -a -e cpu-clock --call-graph dwarf,STACK (default 32768)` (which copies
 * stacks to disk and unwinds later). Measured per tool and rate:
 *
 *   samples/s     samples written per wall second
 *   lost          ours: kernel ring losses (summary.lost_events); our own
 *                 stages never drop, they stall (reader_stalls), and the
 *                 kernel then counts what it drops; perf: its lost %
 *   recorder CPU  ours: getrusage(RUSAGE_SELF) around open..finish (all
 *                 our threads; this process does nothing else); perf:
 *                 wait4() rusage of perf; as % of one core and per sample
 *   bytes         output file size, and per sample
 *
 * One JSON line per (tool, rate) and a "compare" line per rate with the
 * ratios and the targets (reported, never enforced): >= 50 k
 * samples/s at the maximum rate with 0 stalls in our stages, <= 2% of a
 * core at 99 Hz. perf is optional (--no-perf, or missing).
 *
 *   bench_system [--seconds S] [--rates 99,999,max] [--threads N]
 *                [--stack BYTES] [--no-perf] [--dir DIR]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "bench.h"
#include "perf_util.h"
#include "workload_paths.h"

#define TARGET_MAX_RATE_SAMPLES_PER_S 50000.0
#define TARGET_99HZ_CPU_PCT 2.0

struct cfg {
	double seconds;
	uint32_t rates[8];
	int nrates;
	uint32_t threads;
	uint32_t stack; /* bytes per sample, both tools */
	bool perf;
	const char *dir;
};

struct res {
	double wall;
	double cpu;
	uint64_t samples;
	uint64_t lost;
	uint64_t bytes;
	uint64_t stalls;
	double rec_s;	   /* the sampling window (no start-up, no wrap-up) */
	double open_s;	   /* ours: open (the /proc scan) */
	double steady_cpu; /* ours: CPU after open, before finish */
	double finish_s;   /* ours: sp_recorder_finish() */
};

static uint64_t file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

static double self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return bench_rusage_s(&ru);
}

static int run_ours(const struct cfg *c, uint32_t hz, struct res *r)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_system_opts so = { .size = sizeof(so) };
	struct sp_pipeline_stats st = { .size = sizeof(st) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec;
	double c0 = self_cpu(), c1;
	uint64_t t0 = bench_now_ns(), t1, end;
	char path[512];
	int err;

	o.sample_hz = hz;
	o.threads = c->threads;
	o.stack_size = c->stack;
	so.flags = SP_SYSTEM_EXCLUDE_SELF;
	snprintf(path, sizeof(path), "%s/bench-system.spool", c->dir);
	o.system = &so;
	err = sp_recorder_open(path, &o, &rec);
	if (err)
		return err;
	r->open_s = (double)(bench_now_ns() - t0) / 1e9;
	c1 = self_cpu();
	end = t0 + (uint64_t)(c->seconds * 1e9);
	while (!err && bench_now_ns() < end)
		err = sp_recorder_poll(rec, 100, NULL);
	r->steady_cpu = self_cpu() - c1;
	t1 = bench_now_ns();
	if (!err)
		err = sp_recorder_finish(rec);
	r->finish_s = (double)(bench_now_ns() - t1) / 1e9;
	r->rec_s = (double)(t1 - t0) / 1e9 - r->open_s;
	r->wall = (double)(bench_now_ns() - t0) / 1e9;
	r->cpu = self_cpu() - c0;
	sp_recorder_summary(rec, &sum);
	sp_recorder_pipeline_stats(rec, &st);
	sp_recorder_close(rec);
	r->samples = sum.samples;
	r->lost = sum.lost_events;
	r->stalls = st.reader_stalls;
	r->bytes = file_bytes(path);
	unlink(path);
	return err;
}

static int run_perf(const struct cfg *c, uint32_t hz, struct res *r)
{
	char data[512], freq[16], secs[32], cg[32];
	const char *argv[] = { "perf",	       "record",    "-q", "-a",
			       "-e",	       "cpu-clock", "-F", freq,
			       "--call-graph", cg,	    "-o", data,
			       "--",	       "sleep",	    secs, NULL };
	struct rusage ru;
	uint64_t t0 = bench_now_ns();
	int status, err;

	if (hz == SP_RATE_MAX)
		snprintf(freq, sizeof(freq), "max");
	else
		snprintf(freq, sizeof(freq), "%u", (unsigned)hz);
	snprintf(secs, sizeof(secs), "%.3f", c->seconds);
	snprintf(cg, sizeof(cg), "dwarf,%u", (unsigned)c->stack);
	snprintf(data, sizeof(data), "%s/bench-system.perf.data", c->dir);
	err = bench_run_child(argv, NULL, &status, &ru);
	r->wall = (double)(bench_now_ns() - t0) / 1e9;
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(data);
		return err < 0 ? err : -ECHILD;
	}
	r->cpu = bench_rusage_s(&ru);
	r->rec_s = c->seconds; /* perf samples during `sleep S` */
	r->bytes = file_bytes(data);
	r->stalls = 0;
	err = bench_perf_stats(data, c->dir, &r->samples, &r->lost);
	unlink(data);
	return err;
}

static double lost_pct(const struct res *r)
{
	uint64_t all = r->samples + r->lost;

	return all ? 100.0 * (double)r->lost / (double)all : 0;
}

static void print_res(const char *tool, uint32_t hz, const struct res *r)
{
	struct json_line j;
	char rate[16];

	snprintf(rate, sizeof(rate), hz == SP_RATE_MAX ? "max" : "%u",
		 (unsigned)hz);
	json_begin(&j, "system_wide", tool);
	json_str(&j, "rate", rate);
	json_num(&j, "wall_s", r->wall);
	json_u64(&j, "samples", r->samples);
	json_num(&j, "record_s", r->rec_s);
	json_num(&j, "samples_per_s", r->samples / r->rec_s);
	json_u64(&j, "lost", r->lost);
	json_num(&j, "lost_pct", lost_pct(r));
	json_u64(&j, "stage_stalls", r->stalls);
	json_num(&j, "recorder_cpu_s", r->cpu);
	json_num(&j, "cpu_pct_of_core", 100.0 * r->cpu / r->wall);
	if (r->open_s > 0) {
		json_num(&j, "open_s", r->open_s);
		json_num(&j, "steady_cpu_pct_of_core",
			 100.0 * r->steady_cpu /
				 (r->wall - r->open_s - r->finish_s));
		json_num(&j, "finish_ms", r->finish_s * 1e3);
	}
	json_num(&j, "us_per_sample",
		 r->samples ? r->cpu * 1e6 / (double)r->samples : 0);
	json_u64(&j, "bytes", r->bytes);
	json_num(&j, "bytes_per_sample",
		 r->samples ? (double)r->bytes / (double)r->samples : 0);
	json_end(&j);
}

static void print_compare(uint32_t hz, const struct res *o, const struct res *p,
			  bool have_perf)
{
	struct json_line j;
	char rate[16];

	snprintf(rate, sizeof(rate), hz == SP_RATE_MAX ? "max" : "%u",
		 (unsigned)hz);
	json_begin(&j, "system_wide", "compare");
	json_str(&j, "rate", rate);
	if (have_perf) {
		json_num(&j, "cpu_ratio_perf_over_ours",
			 o->cpu > 0 ? p->cpu / o->cpu : 0);
		json_num(&j, "samples_ratio_ours_over_perf",
			 p->samples ? (double)o->samples / p->samples : 0);
		json_num(&j, "bytes_ratio_perf_over_ours",
			 o->bytes ? (double)p->bytes / o->bytes : 0);
		json_num(&j, "perf_lost_pct", lost_pct(p));
	}
	json_num(&j, "ours_lost_pct", lost_pct(o));
	if (hz == 99) {
		json_num(&j, "target_cpu_pct", TARGET_99HZ_CPU_PCT);
		json_bool(&j, "meets_target",
			  100.0 * o->steady_cpu /
					  (o->wall - o->open_s - o->finish_s) <=
				  TARGET_99HZ_CPU_PCT);
	} else if (hz == SP_RATE_MAX) {
		json_num(&j, "target_samples_per_s",
			 TARGET_MAX_RATE_SAMPLES_PER_S);
		json_bool(&j, "meets_target",
			  o->samples / o->rec_s >=
					  TARGET_MAX_RATE_SAMPLES_PER_S &&
				  o->stalls == 0);
	}
	json_end(&j);
}

static pid_t spawn(const char *path, double seconds)
{
	char secs[32];
	pid_t pid = fork();

	snprintf(secs, sizeof(secs), "%.1f", seconds);
	if (pid == 0) {
		execl(path, path, secs, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int parse_rates(struct cfg *c, char *s)
{
	char *tok, *save = NULL;

	c->nrates = 0;
	for (tok = strtok_r(s, ",", &save); tok && c->nrates < 8;
	     tok = strtok_r(NULL, ",", &save))
		c->rates[c->nrates++] =
			strcmp(tok, "max") ? (uint32_t)strtoul(tok, NULL, 10) :
					     SP_RATE_MAX;
	return c->nrates ? 0 : -EINVAL;
}

static int parse_args(int argc, char **argv, struct cfg *c)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			c->seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--rates") && i + 1 < argc) {
			if (parse_rates(c, argv[++i]))
				return -EINVAL;
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			c->threads = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--stack") && i + 1 < argc)
			c->stack = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			c->dir = argv[++i];
		else if (!strcmp(argv[i], "--no-perf"))
			c->perf = false;
		else
			return -EINVAL;
	}
	return c->seconds > 0 ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct cfg c = { .seconds = 5,
			 .rates = { 99, 999, SP_RATE_MAX },
			 .nrates = 3,
			 .threads = SP_THREADS_AUTO,
			 .stack = 32768,
			 .perf = true,
			 .dir = "/tmp" };
	struct res ours, perf;
	pid_t w[2];
	int i, err = 0;

	if (parse_args(argc, argv, &c)) {
		fprintf(stderr,
			"usage: %s [--seconds S] [--rates 99,999,max] "
			"[--threads N] [--stack BYTES] [--no-perf] [--dir DIR]\n",
			argv[0]);
		return 2;
	}
	c.perf = c.perf && bench_have_perf();
	w[0] = spawn(WL_THREADS_PATH, c.seconds * c.nrates * 2 + 5);
	w[1] = spawn(WL_SHAREDLIB_PATH, c.seconds * c.nrates * 2 + 5);
	usleep(200000);
	for (i = 0; !err && i < c.nrates; i++) {
		memset(&perf, 0, sizeof(perf));
		err = run_ours(&c, c.rates[i], &ours);
		if (err)
			break;
		print_res("stackpulse", c.rates[i], &ours);
		if (c.perf && !run_perf(&c, c.rates[i], &perf))
			print_res("perf", c.rates[i], &perf);
		print_compare(c.rates[i], &ours, &perf, c.perf);
	}
	kill(w[0], SIGKILL);
	kill(w[1], SIGKILL);
	waitpid(w[0], NULL, 0);
	waitpid(w[1], NULL, 0);
	if (err)
		fprintf(stderr, "bench_system: %s\n", sp_strerror(err));
	return err == -EACCES || err == -EPERM ? 77 : err ? 1 : 0;
}
