/* SPDX-License-Identifier: MIT */
/* bench_record: our Recorder vs `perf record --call-graph dwarf`. */

/*
 * Method (research/anchors.md §9): the same CPU-bound workload
 * (tests/workloads/wl_ladder, -O2 without frame pointers, a fixed number
 * of calls calibrated to ~2 s of CPU so that CPU inflation means
 * something) runs three times per sample rate: unprofiled, under our
 * Recorder (in this process, ON_EXEC attach, DWARF unwinding at record
 * time) and under `perf record -e cpu-clock --call-graph dwarf,32768`.
 * Measured:
 *
 *   target CPU    user+sys the workload reports for itself at exit
 *                 (WL_RUSAGE_FILE), so the recorder's CPU never mixes in;
 *                 inflation is against the unprofiled run
 *   recorder CPU  ours: getrusage(RUSAGE_SELF) around open..finish (this
 *                 process does nothing else); perf: wait4() rusage of
 *                 perf and its reaped children minus the target's CPU.
 *                 "_net" per-sample figures subtract the fixed start/stop
 *                 cost, measured by the same run of a workload doing no
 *                 work (anchors.md §9 subtracted perf's 0.25 s the same
 *                 way).
 *   lost          ours: summary.lost_events; perf: its own count, from
 *                 "lost N%" of `perf report --stats`
 *   bytes/sample  output file size / samples (the ladder repeats a few
 *                 stacks, so ours is the repeated-stack cost)
 *
 * --syscalls records tests/workloads/wl_syscalls instead (time-bound:
 * it runs the given seconds, mostly in the kernel, so inflation means
 * little there; it exists for the lost % with -k at high rates), -k adds
 * kernel callchains, --rate max uses the kernel's maximum rate and
 * --ring-samples N sizes our rings explicitly (the old default was 256;
 * 0, the default, is the recorder's rate-based sizing). Every line names
 * the workload, kernel, ring_samples and the largest ring in bytes.
 *
 * One JSON object per line on stdout: one per (tool, rate) and one
 * "compare" line per rate with the ratios and the targets (reported,
 * never enforced): recorder CPU <= 5 us/sample, 0% lost at 10 kHz,
 * <= 16 bytes/sample. Needs root (or a permissive perf_event_paranoid);
 * perf is optional (--no-perf, or missing: its lines are skipped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "perf_util.h"
#include "workload_paths.h"

#define TARGET_US_PER_SAMPLE 5.0
#define TARGET_BYTES_PER_SAMPLE 16.0

extern char **environ;

struct bench_cfg {
	double cpu_s;	/* target CPU seconds per run */
	char calls[24]; /* wl_ladder calls (or wl_syscalls seconds) */
	const char *dir;
	bool perf;
	bool syscalls;	       /* wl_syscalls instead of wl_ladder */
	bool kernel;	       /* kernel callchains (-k) */
	uint64_t ring_samples; /* 0: the recorder's default sizing */
	uint32_t rates[4];     /* SP_RATE_MAX: the kernel maximum */
	int nrates;
};

/* What one recorded run measured. */
struct run_result {
	double target_cpu_s;
	double recorder_cpu_s;
	uint64_t samples;
	uint64_t lost;
	uint64_t bytes;
	uint64_t ring_bytes; /* ours: largest per-CPU ring */
	double wall_s;
};

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* environ plus the given "K=V" strings (a static array: one at a time). */
static char **env_with(const char *a, const char *b)
{
	static char *env[1024];
	size_t n = 0, i;

	for (i = 0; environ[i] && n < 1020; i++)
		if (strncmp(environ[i], "WL_RUSAGE_FILE=", 15) != 0)
			env[n++] = environ[i];
	env[n++] = (char *)(uintptr_t)a;
	if (b)
		env[n++] = (char *)(uintptr_t)b;
	env[n] = NULL;
	return env;
}

static const char *workload_name(const struct bench_cfg *c)
{
	return c->syscalls ? "wl_syscalls" : "wl_ladder";
}

/*
 * argv of the workload doing @work: wl_ladder takes a call count,
 * wl_syscalls a duration in seconds ("0" means its default there, so
 * the no-work run passes a millisecond).
 */
static void workload_argv(const struct bench_cfg *c, const char *work,
			  const char *argv[4])
{
	argv[0] = c->syscalls ? WL_SYSCALLS_PATH : WL_LADDER_PATH;
	argv[1] = c->syscalls ? (strcmp(work, "0") ? work : "0.001") : "0";
	argv[2] = c->syscalls ? NULL : work;
	argv[3] = NULL;
}

static int run_baseline(const struct bench_cfg *c, const char *calls,
			double *cpu)
{
	char rus[512], envv[600];
	const char *argv[4];
	struct rusage ru;
	int status, err;

	workload_argv(c, calls, argv);
	snprintf(rus, sizeof(rus), "%s/bench-record-base.rusage", c->dir);
	snprintf(envv, sizeof(envv), "WL_RUSAGE_FILE=%s", rus);
	err = bench_run_child(argv, env_with(envv, NULL), &status, &ru);
	if (err < 0)
		return err;
	*cpu = bench_read_target_cpu(rus);
	return *cpu < 0 ? -EIO : 0;
}

/* Poll until the launched workload exits, then finish. */
static int record_loop(struct sp_recorder *rec, struct sp_launch *launch)
{
	int status = 0, r, err;

	do {
		err = sp_recorder_poll(rec, 100, NULL);
		if (err < 0 && err != -EINTR)
			return err;
		r = sp_launch_try_wait(launch, &status);
		if (r < 0)
			return r;
	} while (r == 0);
	return sp_recorder_finish(rec);
}

static int open_ours(const struct bench_cfg *c, uint32_t hz, const char *spool,
		     struct sp_recorder **rec)
{
	struct sp_recorder_opts opts = { .size = sizeof(opts) };

	opts.sample_hz = hz;
	opts.ring_samples = c->ring_samples;
	opts.flags = c->kernel ? SP_RECORDER_KERNEL : 0;
	return sp_recorder_open(spool, &opts, rec);
}

static int run_ours(const struct bench_cfg *c, uint32_t hz, const char *calls,
		    struct run_result *res)
{
	char spool[512], rus[512], envv[600];
	const char *argv[4];
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec = NULL;
	struct sp_launch *launch = NULL;
	double cpu0 = bench_self_cpu_s(), t0 = wall_s();
	int err;

	snprintf(spool, sizeof(spool), "%s/bench-record.spool", c->dir);
	snprintf(rus, sizeof(rus), "%s/bench-record-ours.rusage", c->dir);
	snprintf(envv, sizeof(envv), "WL_RUSAGE_FILE=%s", rus);
	workload_argv(c, calls, argv);
	err = open_ours(c, hz, spool, &rec);
	if (!err)
		/* exec's argv is char *const[] for historical reasons. */
		err = sp_launch_suspended(argv[0],
					  (char *const *)(uintptr_t)argv,
					  env_with(envv, NULL), &launch);
	if (!err)
		err = sp_recorder_attach(rec, sp_launch_pid(launch),
					 SP_ATTACH_ON_EXEC);
	if (err >= 0)
		err = sp_launch_resume(launch);
	if (err >= 0)
		err = record_loop(rec, launch);
	res->recorder_cpu_s = bench_self_cpu_s() - cpu0;
	res->wall_s = wall_s() - t0;
	if (rec)
		sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	sp_launch_free(launch);
	if (err < 0)
		return err;
	res->samples = sum.samples;
	res->lost = sum.lost_events;
	res->ring_bytes = sum.maximum_ring_buffer_bytes;
	res->bytes = bench_file_bytes(spool);
	res->target_cpu_s = bench_read_target_cpu(rus);
	unlink(spool);
	return 0;
}

static int run_perf(const struct bench_cfg *c, uint32_t hz, const char *calls,
		    struct run_result *res)
{
	char data[512], rus[512], envv[600], home[600], freq[16];
	const char *argv[] = { "perf",	      "record", "-q", "-e",
			       "cpu-clock",   "-F",	freq, "--call-graph",
			       "dwarf,32768", "-o",	data, "--",
			       NULL,	      NULL,	NULL, NULL };
	struct rusage ru;
	double t0 = wall_s();
	int status, err;

	workload_argv(c, calls, argv + 12);
	if (hz == SP_RATE_MAX)
		snprintf(freq, sizeof(freq), "max");
	else
		snprintf(freq, sizeof(freq), "%u", (unsigned)hz);
	snprintf(data, sizeof(data), "%s/bench-record.perf.data", c->dir);
	snprintf(rus, sizeof(rus), "%s/bench-record-perf.rusage", c->dir);
	snprintf(envv, sizeof(envv), "WL_RUSAGE_FILE=%s", rus);
	/* No ~/.debug writes or ~/.perfconfig: a scratch HOME. */
	snprintf(home, sizeof(home), "HOME=%s", c->dir);
	err = bench_run_child(argv, env_with(envv, home), &status, &ru);
	res->wall_s = wall_s() - t0;
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(data);
		return err < 0 ? err : -ECHILD;
	}
	res->target_cpu_s = bench_read_target_cpu(rus);
	res->recorder_cpu_s = bench_rusage_s(&ru) - res->target_cpu_s;
	res->bytes = bench_file_bytes(data);
	err = bench_perf_stats(data, c->dir, &res->samples, &res->lost);
	unlink(data);
	return err;
}

static double per(double a, uint64_t b)
{
	return b ? a / (double)b : 0;
}

static double lost_pct(const struct run_result *r)
{
	return per(100.0 * (double)r->lost, r->samples + r->lost);
}

/* Recorder CPU per sample without the fixed start/stop cost. */
static double net_us(const struct run_result *r, double fixed_s)
{
	return 1e6 * per(r->recorder_cpu_s - fixed_s, r->samples);
}

/* The fields every line starts with; "hz" is "max" for the kernel max. */
static void print_head(const struct bench_cfg *c, const char *tool, uint32_t hz)
{
	printf("{\"bench\":\"record\",\"tool\":\"%s\",\"workload\":"
	       "\"%s\",\"kernel\":%s,\"ring_samples\":%" PRIu64,
	       tool, workload_name(c), c->kernel ? "true" : "false",
	       c->ring_samples);
	if (hz == SP_RATE_MAX)
		printf(",\"hz\":\"max\"");
	else
		printf(",\"hz\":%u", (unsigned)hz);
}

static void print_result(const struct bench_cfg *c, const char *tool,
			 uint32_t hz, double base_cpu, double fixed_s,
			 const struct run_result *r)
{
	print_head(c, tool, hz);
	printf(",\"samples\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"lost_pct\":%.3f"
	       ",\"target_cpu_s\":%.3f,\"baseline_cpu_s\":%.3f"
	       ",\"cpu_inflation_pct\":%.2f,\"target_added_us_per_sample\":%.2f"
	       ",\"recorder_cpu_s\":%.3f,\"fixed_cpu_s\":%.3f"
	       ",\"recorder_us_per_sample\":%.2f"
	       ",\"recorder_us_per_sample_net\":%.2f"
	       ",\"bytes\":%" PRIu64 ",\"bytes_per_sample\":%.2f"
	       ",\"ring_bytes\":%" PRIu64 ",\"wall_s\":%.2f}\n",
	       r->samples, r->lost, lost_pct(r), r->target_cpu_s, base_cpu,
	       100.0 * (r->target_cpu_s / base_cpu - 1),
	       1e6 * per(r->target_cpu_s - base_cpu, r->samples),
	       r->recorder_cpu_s, fixed_s,
	       1e6 * per(r->recorder_cpu_s, r->samples), net_us(r, fixed_s),
	       r->bytes, per((double)r->bytes, r->samples), r->ring_bytes,
	       r->wall_s);
}

static const char *yes(bool v)
{
	return v ? "true" : "false";
}

static void print_compare(const struct bench_cfg *c, uint32_t hz,
			  const struct run_result *ours, double ours_fixed,
			  const struct run_result *perf, double perf_fixed)
{
	double us = net_us(ours, ours_fixed);
	double bps = per((double)ours->bytes, ours->samples);

	print_head(c, "compare", hz);
	if (perf)
		printf(",\"recorder_cpu_ratio_vs_perf\":%.4f"
		       ",\"bytes_ratio_vs_perf\":%.6f,\"perf_lost_pct\":%.3f"
		       ",\"perf_us_per_sample_net\":%.2f",
		       us / net_us(perf, perf_fixed),
		       bps / per((double)perf->bytes, perf->samples),
		       lost_pct(perf), net_us(perf, perf_fixed));
	printf(",\"recorder_us_per_sample_net\":%.2f,\"goal_us_per_sample\":%.1f"
	       ",\"meets_us_goal\":%s,\"bytes_per_sample\":%.2f"
	       ",\"goal_bytes_per_sample\":%.0f,\"meets_bytes_goal\":%s"
	       ",\"lost_pct\":%.3f,\"meets_lost_goal\":%s}\n",
	       us, TARGET_US_PER_SAMPLE, yes(us <= TARGET_US_PER_SAMPLE), bps,
	       TARGET_BYTES_PER_SAMPLE, yes(bps <= TARGET_BYTES_PER_SAMPLE),
	       lost_pct(ours), yes(ours->lost == 0));
}

static void print_error(const struct bench_cfg *c, const char *tool,
			uint32_t hz, int err)
{
	print_head(c, tool, hz);
	printf(",\"error\":\"%s\"}\n", sp_strerror(err));
	fflush(stdout);
}

typedef int (*run_fn)(const struct bench_cfg *c, uint32_t hz, const char *calls,
		      struct run_result *res);

/*
 * One tool at one rate: a run that does no work (the fixed start/stop
 * cost) and the measured run; prints its line. @return 0 or an error.
 */
static int bench_tool(const struct bench_cfg *c, const char *tool, run_fn fn,
		      uint32_t hz, double base, struct run_result *res,
		      double *fixed)
{
	struct run_result none = { 0 };
	int err = fn(c, hz, "0", &none);

	if (err >= 0)
		err = fn(c, hz, c->calls, res);
	if (err < 0) {
		print_error(c, tool, hz, err);
		return err;
	}
	*fixed = none.recorder_cpu_s;
	print_result(c, tool, hz, base, *fixed, res);
	fflush(stdout);
	return 0;
}

/* One rate: baseline, ours, perf; returns 0 or 1 (a run failed). */
static int bench_rate(const struct bench_cfg *c, uint32_t hz)
{
	struct run_result ours = { 0 }, perf = { 0 };
	double base = 0, ours_fixed = 0, perf_fixed = 0;
	int err = run_baseline(c, c->calls, &base);
	bool have_perf;

	if (err < 0) {
		print_error(c, "baseline", hz, err);
		return 1;
	}
	err = bench_tool(c, "stackpulse", run_ours, hz, base, &ours,
			 &ours_fixed);
	if (err < 0) /* not root: a skip, not a failure of `make bench` */
		return err == -EPERM || err == -EACCES ? 0 : 1;
	have_perf = c->perf && bench_tool(c, "perf", run_perf, hz, base, &perf,
					  &perf_fixed) == 0;
	print_compare(c, hz, &ours, ours_fixed, have_perf ? &perf : NULL,
		      perf_fixed);
	fflush(stdout);
	return 0;
}

/* Sets c->calls so an unprofiled run takes about c->cpu_s of CPU. */
static int calibrate(struct bench_cfg *c)
{
	double cpu = 0;
	int err;

	if (c->syscalls) { /* time-bound: runs for the seconds it is given */
		snprintf(c->calls, sizeof(c->calls), "%.3f", c->cpu_s);
		return 0;
	}
	err = run_baseline(c, "50", &cpu);
	if (err < 0)
		return err;
	snprintf(c->calls, sizeof(c->calls), "%.0f",
		 cpu > 0 ? 50 * c->cpu_s / cpu + 1 : 50);
	fprintf(stderr, "bench_record: %s wl_ladder calls ~ %.1f s CPU\n",
		c->calls, c->cpu_s);
	return 0;
}

static int usage(void)
{
	fputs("usage: bench_record [--quick] [--cpu-seconds S] [--rate HZ|max]...\n"
	      "                    [--no-perf] [--dir DIR] [--syscalls] [-k]\n"
	      "                    [--ring-samples N]\n"
	      "Records tests/workloads/wl_ladder (a fixed amount of work,\n"
	      "about S CPU seconds, default 2) with libstackpulse and with\n"
	      "perf record --call-graph dwarf,32768 at each rate (default\n"
	      "999 and 10000); one JSON line per result on stdout.\n"
	      "--syscalls records wl_syscalls (S seconds, mostly in the\n"
	      "kernel) instead, -k captures kernel callchains, --ring-samples\n"
	      "sizes our rings explicitly (default: the recorder's sizing).\n",
	      stderr);
	return 2;
}

static int parse_args(int argc, char **argv, struct bench_cfg *c)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;

		if (strcmp(a, "--quick") == 0)
			c->cpu_s = 0.5;
		else if (strcmp(a, "--no-perf") == 0)
			c->perf = false;
		else if (strcmp(a, "--cpu-seconds") == 0 && more)
			c->cpu_s = atof(argv[++i]);
		else if (strcmp(a, "--dir") == 0 && more)
			c->dir = argv[++i];
		else if (strcmp(a, "--rate") == 0 && more && c->nrates < 4)
			c->rates[c->nrates++] =
				strcmp(argv[++i], "max") ?
					(uint32_t)atoi(argv[i]) :
					SP_RATE_MAX;
		else if (strcmp(a, "--syscalls") == 0)
			c->syscalls = true;
		else if (strcmp(a, "-k") == 0)
			c->kernel = true;
		else if (strcmp(a, "--ring-samples") == 0 && more)
			c->ring_samples = strtoull(argv[++i], NULL, 10);
		else
			return usage();
	}
	if (!c->nrates) {
		c->rates[c->nrates++] = 999;
		c->rates[c->nrates++] = 10000;
	}
	return c->cpu_s > 0 ? -1 : usage();
}

int main(int argc, char **argv)
{
	struct bench_cfg c = { .cpu_s = 2, .perf = true };
	int i, status = parse_args(argc, argv, &c);

	if (status >= 0)
		return status;
	if (!c.dir)
		c.dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (c.perf && system("perf --version >/dev/null 2>&1") != 0) {
		fputs("bench_record: perf not found; recording ours only\n",
		      stderr);
		c.perf = false;
	}
	if (calibrate(&c) < 0) {
		print_error(&c, "calibrate", 0, -EIO);
		return 1;
	}
	status = 0;
	for (i = 0; i < c.nrates; i++)
		status |= bench_rate(&c, c.rates[i]);
	return status;
}
