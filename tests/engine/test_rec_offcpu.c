/* SPDX-License-Identifier: MIT */
/* Off-CPU and wall mode on workloads with a known split (issue 16). */

/*
 * tests/workloads/wl_offcpu reports, per working thread, when it started
 * and ended (CLOCK_MONOTONIC, the clock of sample timestamps) and the
 * time it spent in the waiting call. In wall mode each such thread's
 * samples in that interval times the sample interval must be its length
 * within 5 %, its off-CPU share (blocked or preempted) 1 - CPU / wall
 * within 5 points, and for the sleep workload the [off-cpu] share the
 * sleeping share
 * and its off-CPU share (samples ending in [off-cpu]) its waiting share
 * within 5 points; the waiting stacks name the blocking call and reach
 * main or start_thread. In off-CPU mode every sample ends in an off-CPU
 * pseudo-frame. The recorder runs inline and (the _threaded twin)
 * through the threaded pipeline.
 *
 * A virtual machine's host may take the CPU away (steal time): the
 * guest still sees the thread running, but its task clock, which
 * excludes steal, stops, so cpu-clock takes no sample and the time shows
 * as the ledger's unsampled time, and preempted or blocked spans move.
 * The time comparisons need a CPU the host did not take: when the
 * machine's steal time (/proc/stat) grew by more than 15 ms during a
 * recording, they are printed but not checked (seen here: 17 ticks of
 * steal in a run whose sleep thread lacked 90 ms of samples).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rec_util.h"
#include "workload_paths.h"

struct thread_truth {
	long tid;
	double start_s;
	double wall_s;
	double waited_s;
	double cpu_s;
	uint64_t samples;
	uint64_t off;	  /* ending in [off-cpu] (blocked) */
	uint64_t preempt; /* ending in [off-cpu:preempted] */
	uint64_t named;	  /* blocked stacks naming the call and the root */
};

static size_t read_truth(const char *path, struct thread_truth *t, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	CHECK(f != NULL);
	double end;

	while (n < cap &&
	       fscanf(f, "%ld %lf %lf %lf %lf", &t[n].tid, &t[n].start_s, &end,
		      &t[n].waited_s, &t[n].cpu_s) == 5) {
		t[n].wall_s = end - t[n].start_s;
		n++;
	}
	fclose(f);
	return n;
}

static bool names_any(const struct rec_frame *fr, size_t n,
		      const char *const *calls)
{
	for (; *calls; calls++)
		if (rec_find(fr, n, *calls) >= 0)
			return true;
	return false;
}

static bool reaches_root(const struct rec_frame *fr, size_t n)
{
	/* libc's start_thread has no symbol here: a thread's root is its
	 * function below it. */
	return rec_reaches_main(fr, n, WL_OFFCPU_PATH) ||
	       rec_find(fr, n, "start_thread") >= 0 ||
	       rec_find(fr, n, "wl_pipe_reader") >= 0 ||
	       rec_find(fr, n, "wl_mutex_worker") >= 0;
}

/* Counts samples per reported thread; returns the samples of none. */
static uint64_t count(struct rec_run *run, struct thread_truth *t, size_t nt,
		      const char *const *calls)
{
	struct rec_frame frames[REC_MAX_FRAMES];
	size_t i, k, total = sp_snapshot_sample_count(run->snap), n;
	struct sp_stack_node node;
	struct sp_sample s;
	uint64_t others = 0;
	int how;

	for (i = 0; i < total; i++) {
		n = rec_stack(run, i, &s, frames);
		CHECK_OK(sp_spool_stack_node(run->defs, s.stack, &node));
		how = sp_spool_off_cpu_frame(run->defs, node.frame);
		for (k = 0; k < nt && t[k].tid != s.tid; k++)
			;
		if (k < nt && ((double)s.timestamp_ns * 1e-9 < t[k].start_s ||
			       (double)s.timestamp_ns * 1e-9 >=
				       t[k].start_s + t[k].wall_s))
			continue; /* before or after the measured part */
		if (k == nt) {
			others++;
			continue;
		}
		t[k].samples++;
		t[k].off += how == 1;
		t[k].preempt += how == 2;
		if (how == 1 && names_any(frames, n, calls) &&
		    reaches_root(frames, n))
			t[k].named++;
		else if (how == 1 && t[k].off - t[k].named <= 3)
			rec_print_stack("blocked stack without the call", &s,
					frames, n);
	}
	return others;
}

/* The machine's steal time so far, in seconds (0 when unknown). */
static double steal_s(void)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	return n == 8 && hz > 0 ? (double)v[7] / (double)hz : 0;
}

static void record(const char *kind, uint32_t mode, struct rec_run *run,
		   struct thread_truth *t, size_t *nt)
{
	const char *const argv[] = { WL_OFFCPU_PATH, "1", kind, NULL };
	char path[300];

	snprintf(path, sizeof(path), "/tmp/sp-offcpu-%d.txt", (int)getpid());
	unlink(path);
	setenv("WL_REPORT_FILE", path, 1);
	rec_mode = mode;
	rec_launch(argv, 0, run);
	*nt = read_truth(path, t, 4);
	unlink(path);
	CHECK(*nt >= 1);
	CHECK_EQ_INT(sp_spool_mode(run->defs), (int)mode);
}

static void check_wall(const char *kind, const char *const *calls)
{
	struct thread_truth t[4];
	struct rec_run run;
	double ival, stolen;
	size_t nt, k;

	memset(t, 0, sizeof(t));
	stolen = steal_s();
	record(kind, SP_PROFILE_WALL, &run, t, &nt);
	stolen = steal_s() - stolen;
	ival = (double)sp_spool_sample_interval_us(run.defs) * 1e-6;
	count(&run, t, nt, calls);
	/* What may explain a total short of (or over) its wall time. */
	fprintf(stderr,
		"%s: %" PRIu64 " switch records, %" PRIu64 " lost, %" PRIu64
		" spans cut; switch-ins unmatched %" PRIu64
		", late records %" PRIu64 ", throttled %" PRIu64
		"; ledger: clipped %.3f ms, unsampled "
		"%.3f ms, oversampled %.3f ms\n",
		kind, run.summary.switch_events, run.summary.lost_events,
		run.summary.switch_lost, run.summary.switch_in_unmatched,
		run.summary.late_records, run.summary.throttle_events,
		(double)run.summary.wall_clipped_ns * 1e-6,
		(double)run.summary.wall_unsampled_ns * 1e-6,
		(double)run.summary.wall_oversampled_ns * 1e-6);
	CHECK(run.summary.samples_synthesized > 0);
	CHECK(run.summary.switch_events > 0);
	for (k = 0; k < nt; k++) {
		double total = (double)t[k].samples * ival;
		double share = (double)t[k].off / (double)t[k].samples;
		double truth = t[k].waited_s / t[k].wall_s;

		fprintf(stderr,
			"%s tid %ld: wall %.4f s, samples %.3f s (short "
			"%.2f ms; on-CPU %.3f s), cpu %.4f s; "
			"waited %.1f %%, [off-cpu] %.1f %%, preempted %.1f %%; "
			"%" PRIu64 " of %" PRIu64
			" blocked samples name the call\n",
			kind, t[k].tid, t[k].wall_s, total,
			(t[k].wall_s - total) * 1e3,
			(double)(t[k].samples - t[k].off - t[k].preempt) * ival,
			t[k].cpu_s, truth * 100, share * 100,
			100.0 * (double)t[k].preempt / (double)t[k].samples,
			t[k].named, t[k].off);
		double all = (double)(t[k].off + t[k].preempt) /
			     (double)t[k].samples;
		double off_truth = 1 - t[k].cpu_s / t[k].wall_s;

		CHECK(t[k].named * 10 >= t[k].off * 9);
		/* Never more than the truth; less only when records were
		 * lost (spans cut at the loss, never invented). */
		CHECK(total <= 1.05 * t[k].wall_s);
		if (run.summary.lost_events || run.summary.switch_lost) {
			fprintf(stderr, "records lost: totals not compared\n");
			continue;
		}
		if (stolen > 0.015) {
			fprintf(stderr,
				"the host stole %.0f ms of CPU: totals not "
				"compared\n",
				stolen * 1e3);
			continue;
		}
		CHECK(total >= 0.95 * t[k].wall_s);
		/*
		 * Off the CPU, blocked or preempted: wall less CPU time. The
		 * kernel writes a switch-out sample inside the switch, after
		 * the scheduler stopped the thread's CPU clock and before
		 * perf's cpu-clock stops: that time shows as on-CPU samples
		 * (5-8 us per switch measured here with 32 KiB stacks: 4.8-7
		 * points of the fsync case's wall time), so the off-CPU
		 * share may fall short by 6 us per switch more.
		 */
		double copy_s = (double)run.summary.switch_events / 2 * 6e-6;

		CHECK(all - off_truth <= 0.05);
		CHECK(off_truth - all <= 0.05 + copy_s / t[k].wall_s);
		/*
		 * Blocked time lies inside the waiting call; nanosleep
		 * blocks at once, so there it is the call's off-CPU time
		 * (elsewhere the call may also be preempted).
		 */
		CHECK(share <= truth + 0.05);
		if (strcmp(kind, "sleep") == 0)
			CHECK(fabs(share - truth) <= 0.05);
	}
	rec_run_close(&run);
}

static void check_off_cpu_only(void)
{
	static const char *const calls[] = { "clock_nanosleep", "__nanosleep",
					     "nanosleep", NULL };
	struct thread_truth t[4];
	struct rec_run run;
	size_t nt, total, k;
	uint64_t off = 0;

	memset(t, 0, sizeof(t));
	record("sleep", SP_PROFILE_OFF_CPU, &run, t, &nt);
	total = sp_snapshot_sample_count(run.snap);
	count(&run, t, nt, calls);
	for (k = 0; k < nt; k++)
		off += t[k].off + t[k].preempt;
	CHECK(total >= REC_MIN_SAMPLES);
	CHECK(off > 0); /* the sleeping thread's, in its measured part */
	/* No on-CPU sample at all: every one ends in a pseudo-frame. */
	for (k = 0; k < total; k++) {
		struct sp_stack_node node;
		struct sp_sample s;

		CHECK_OK(sp_snapshot_sample(run.snap, k, &s));
		CHECK_OK(sp_spool_stack_node(run.defs, s.stack, &node));
		CHECK(sp_spool_off_cpu_frame(run.defs, node.frame) != 0);
	}
	CHECK(t[0].named * 10 >= t[0].off * 9);
	CHECK_EQ_INT(run.summary.samples, run.summary.samples_synthesized);
	rec_run_close(&run);
}

int main(void)
{
	static const char *const sleep_calls[] = { "clock_nanosleep",
						   "__nanosleep", NULL };
	static const char *const read_calls[] = { "read", "__read",
						  "__libc_read",
						  "__GI___libc_read", NULL };
	static const char *const lock_calls[] = {
		"__lll_lock_wait",	"pthread_mutex_lock",
		"__pthread_mutex_lock", "___pthread_mutex_lock",
		"futex_wait",		NULL
	};
	static const char *const fsync_calls[] = { "fsync", "__fsync",
						   "__libc_fsync", NULL };

	rec_require_perf(true);
	check_off_cpu_only();
	check_wall("sleep", sleep_calls);
	check_wall("pipe", read_calls);
	check_wall("mutex", lock_calls);
	check_wall("fsync", fsync_calls);
	return T_EXIT_PASS;
}
