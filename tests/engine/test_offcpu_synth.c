/* SPDX-License-Identifier: MIT */
/* Off-CPU synthesis on crafted perf records: weights, cuts, anomalies. */

/*
 * Builds a fixture of context-switch samples and switch, loss and exit
 * records by hand and replays it (tests/harness: no perf, a virtual
 * clock) into an off-CPU recorder at 1 kHz, inline and threaded, then
 * counts the samples each thread got and how they end:
 *
 *   tid 101  blocked 30 ms                      30 x [off-cpu]
 *   tid 102  preempted 5 ms                     5 x [off-cpu:preempted]
 *   tid 103  blocked 50 us (< 100 us threshold) dropped, counted
 *   tid 104  4 x 0.6 ms blocked                 2 (the remainder carries)
 *   tid 105  blocked, records lost after the    3, cut where the loss
 *            ring's record 3 ms later (LOST at   began (it may have run
 *            5 ms), its switch-in 10 h later     from there to the LOST)
 *            never seen
 *   tid 106  blocked, exits 7 ms later          7, cut at the exit
 *   tid 107  switched out twice, no switch-in   first dropped (lost)
 *   tid 108  exit stamped before its switch-out clock anomaly, dropped
 *   tid 109  switch-in of another process       pid reuse, dropped
 *
 * A synthesised sample lies inside its span. A switch-out's SWITCH_OUT
 * record comes 2 us after its sample (the kernel copies the stack in
 * between).
 *
 * Wall mode, on a second fixture of 100 ms per thread: cpu-clock samples
 * (period 1 ms) and 100 cycles of 1 ms, each a run and a block, as the
 * kernel writes them:
 *
 *   tid 301  runs 500 us, its sample 100 us   50 on-CPU and 49-50 off-CPU
 *            before the SWITCH_OUT record     (spans measured from the
 *            (a slow stack copy)              record; from the sample
 *                                             they made 60: 110 in all)
 *   tid 302  the switch records show 400 us   49-50 off-CPU: its wall
 *            of running, its cpu-clock        time, not the 60 ms the
 *            samples stand for 500 us (cpu-   spans measure beside its
 *            clock runs beyond the records'   50 on-CPU samples
 *            window, some us per switch)
 *   tid 303  blocked 1 ms (from 201 ms), its  8 on-CPU, none off-CPU:
 *            switch-in lost in CPU 1's ring   its span is cut where the
 *            (whose last record is at 200     loss began, before it (the
 *            ms), then 8 cpu-clock samples    LOST at 211 ms made it 10)
 *            on CPU 0
 *
 * Late records, on a third fixture with a ring per CPU: a switch-out
 * sample and its SWITCH_OUT record committed to their ring after a drain
 * had passed their time (fed 1.7 ms late), so the thread's switch-in on
 * the other CPU, and its next cpu-clock sample, are applied first:
 *
 *   tid 401  20 cycles of 2 ms: 1 ms on CPU    20 on-CPU and 20 off-CPU
 *            a (one cpu-clock sample), then   (20 ms off the CPU: each
 *            1 ms off, its switch-out late;   span ends at its own
 *            back on CPU 1 - a                switch-in, not the next)
 *   tid 402  blocked 5 ms, its switch-out      5 off-CPU, from the sample
 *            sample late and no SWITCH_OUT     to its switch-in (cut at
 *            record; back on the other CPU     the end it would be 15)
 *            and runs on to the end
 *   tid 403  10 cycles of 4 ms: 3 ms on (3     30 on-CPU and 10 off-CPU:
 *            cpu-clock samples), 1 ms off,    the samples of the next
 *            its switch-out 3.9 ms late       run, written before the
 *                                             span, count for that run
 */
#include <string.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <stackpulse.h>

#include "check.h"
#include "harness.h"
#include "perf_event.h"
#include "threads_env.h"

#define PID 100
#define PID2 200
#define T0 1000000000ull
#define MS 1000000ull
#define KIP 0xffffffff81000000ull

static struct sp__mem mem;
static struct sp__vec fix;
static uint64_t st;
static uint32_t cpu;	    /* of the records put next (their ring's) */
static uint32_t nrings = 1; /* 1: all in ring 0, else ring @cpu */
static uint32_t late;	    /* ns after their time the next records show */

static void put(const void *r)
{
	const struct perf_event_header *h = r;

	CHECK_OK(sp__fixture_put_record_late(&fix, &mem, nrings > 1 ? cpu : 0,
					     late, r, h->size));
}

/* The sample_id_all trailer: tid, time, cpu, identifier. */
static unsigned char *trailer(unsigned char *p, int32_t pid, int32_t tid,
			      uint64_t t)
{
	uint64_t z = 0, c = cpu;

	memcpy(p, &pid, 4);
	memcpy(p + 4, &tid, 4);
	memcpy(p + 8, &t, 8);
	memcpy(p + 16, &c, 8);
	memcpy(p + 24, &z, 8);
	return p + 32;
}

/* A sample of @period (1: a context switch's), with no registers. */
static void sample_of(int32_t pid, int32_t tid, uint64_t t, uint64_t period)
{
	unsigned char r[128], *p = r + 8;
	uint64_t v[8] = { 0, KIP, 0, t, cpu, period, 0, 0 };
	struct perf_event_header h = { PERF_RECORD_SAMPLE,
				       PERF_RECORD_MISC_KERNEL, 8 + 64 };

	memcpy(&v[2], &pid, 4);
	memcpy((char *)&v[2] + 4, &tid, 4);
	memcpy(r, &h, 8);
	memcpy(p, v, 64);
	put(r);
}

static void sample(int32_t pid, int32_t tid, uint64_t t)
{
	sample_of(pid, tid, t, 1);
}

static void sw(int32_t pid, int32_t tid, uint64_t t, uint16_t misc)
{
	unsigned char r[64];
	struct perf_event_header h = { PERF_RECORD_SWITCH, misc, 8 + 32 };

	memcpy(r, &h, 8);
	trailer(r + 8, pid, tid, t);
	put(r);
}

/* A switch out (sample, then its record) and, unless 0, the switch in. */
static void span(int32_t pid, int32_t tid, uint64_t out, uint64_t in,
		 bool preempt)
{
	sample(pid, tid, out - 2000);
	sw(pid, tid, out,
	   PERF_RECORD_MISC_SWITCH_OUT |
		   (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0));
	if (in)
		sw(pid, tid, in, 0);
}

static void lost(uint64_t t)
{
	unsigned char r[64];
	uint64_t v[2] = { 0, 3 };
	struct perf_event_header h = { PERF_RECORD_LOST, 0, 8 + 16 + 32 };

	memcpy(r, &h, 8);
	memcpy(r + 8, v, 16);
	trailer(r + 24, 0, 0, t);
	put(r);
}

static void task_exit(int32_t pid, int32_t tid, uint64_t body_t, uint64_t t)
{
	unsigned char r[80];
	int32_t v[4] = { pid, pid, tid, tid };
	struct perf_event_header h = { PERF_RECORD_EXIT, 0, 8 + 24 + 32 };

	memcpy(r, &h, 8);
	memcpy(r + 8, v, 16);
	memcpy(r + 24, &body_t, 8);
	trailer(r + 32, pid, tid, t);
	put(r);
}

static void header(void)
{
	struct sp__perf_cfg cfg;
	struct sp__fixture_hdr hdr;

	memset(&cfg, 0, sizeof(cfg));
	st = sp__perf_sample_type(&cfg);
	memset(&hdr, 0, sizeof(hdr));
	hdr.nrings = nrings;
	hdr.sample_type = st;
	hdr.stack_size = 8;
	CHECK_OK(sp__fixture_put_header(&fix, &mem, &hdr));
	CHECK_OK(sp__fixture_put_proc(&fix, &mem, PID, 1));
	CHECK_OK(sp__fixture_put_proc(&fix, &mem, PID2, 1));
}

static void build(void)
{
	int i;

	header();
	span(PID, 101, T0, T0 + 30 * MS, false);
	span(PID, 102, T0 + 1 * MS, T0 + 6 * MS, true);
	span(PID, 103, T0 + 2 * MS, T0 + 2 * MS + 50000, false);
	for (i = 0; i < 4; i++)
		span(PID, 104, T0 + (uint64_t)(i * 10) * MS,
		     T0 + (uint64_t)(i * 10) * MS + 600000, false);
	span(PID, 105, T0 + 40 * MS, 0, false);
	sw(PID, 110, T0 + 43 * MS, 0); /* the ring's last record: nothing */
	lost(T0 + 45 * MS);
	span(PID, 106, T0 + 50 * MS, 0, false);
	task_exit(PID, 106, T0 + 57 * MS, T0 + 57 * MS);
	span(PID, 107, T0 + 60 * MS, 0, false);
	span(PID, 107, T0 + 70 * MS, T0 + 71 * MS, false);
	span(PID, 108, T0 + 80 * MS, 0, false);
	task_exit(PID, 108, T0 + 79 * MS, T0 + 81 * MS);
	span(PID, 109, T0 + 90 * MS, 0, false);
	sw(PID2, 109, T0 + 95 * MS, 0);
	/* The 10-hour-late switch-in of tid 105 (its span was cut). */
	sw(PID, 105, T0 + 36000000 * MS, 0);
}

/* Wall mode's fixture: tids 301 and 302, 100 cycles of 1 ms each. */
static void build_wall(void)
{
	uint64_t k, b;

	header();
	for (k = 0; k < 100; k++) {
		b = T0 + k * MS;
		if (k % 2)
			sample_of(PID, 301, b + 200000, MS);
		sample(PID, 301, b + 400000);
		sw(PID, 301, b + 500000, PERF_RECORD_MISC_SWITCH_OUT);
		sw(PID, 301, b + MS, 0);
		if (k % 2)
			sample_of(PID, 302, b + 300000, MS);
		sample(PID, 302, b + 498000);
		sw(PID, 302, b + 500000, PERF_RECORD_MISC_SWITCH_OUT);
		sw(PID, 302, b + MS + 100000, 0);
	}
	b = T0 + 200 * MS;
	cpu = 1;
	sw(PID, 399, b, 0); /* where CPU 1's loss begins */
	cpu = 0;
	sample(PID, 303, b + MS - 2000);
	sw(PID, 303, b + MS, PERF_RECORD_MISC_SWITCH_OUT);
	for (k = 3; k <= 10; k++)
		sample_of(PID, 303, b + k * MS, MS);
	cpu = 1;
	lost(b + 11 * MS);
	cpu = 0;
}

/* The late fixture: tids 401 and 402 over two rings (see the top). */
static void build_late(void)
{
	uint64_t k, b;

	nrings = 2;
	header();
	for (k = 0; k < 20; k++) {
		b = T0 + k * 2 * MS;
		cpu = (uint32_t)(k % 2);
		sample_of(PID, 401, b + MS / 2, MS);
		late = 1700000;
		sample(PID, 401, b + MS - 2000);
		sw(PID, 401, b + MS, PERF_RECORD_MISC_SWITCH_OUT);
		late = 0;
		cpu = 1 - cpu;
		sw(PID, 401, b + 2 * MS, 0);
	}
	b = T0 + 50 * MS;
	cpu = 0;
	sample_of(PID, 402, b - MS / 2, MS);
	late = 6000000;
	sample(PID, 402, b);
	late = 0;
	cpu = 1;
	sw(PID, 402, b + 5 * MS, 0);
	for (k = 6; k < 10; k++)
		sample_of(PID, 402, b + k * MS, MS);
	for (k = 0; k < 10; k++) {
		uint64_t j;

		b = T0 + 60 * MS + k * 4 * MS;
		cpu = (uint32_t)(k % 2);
		for (j = 0; j < 3; j++)
			sample_of(PID, 403, b + j * MS + MS / 2, MS);
		late = 3900000;
		sample(PID, 403, b + 3 * MS - 2000);
		sw(PID, 403, b + 3 * MS, PERF_RECORD_MISC_SWITCH_OUT);
		late = 0;
		cpu = 1 - cpu;
		sw(PID, 403, b + 4 * MS, 0);
	}
	nrings = 1;
	cpu = 0;
}

/** struct tally is one thread's samples, by how they end. */
struct tally {
	uint64_t on; /* on the CPU: no pseudo-frame */
	uint64_t blocked;
	uint64_t preempted;
};

/*
 * Replays the fixture into a @mode recorder at 1 kHz, @threads unwinder
 * threads, and counts the samples of tids [@tid0, @tid0 + @nt), the only
 * ones, each stamped in [T0, @t_end).
 */
static void replay_batch(uint32_t threads, uint32_t mode, uint32_t min_us,
			 size_t batch, int32_t tid0, struct tally *t, size_t nt,
			 uint64_t t_end, struct sp_recording_summary *sum)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	const struct sp_spool *defs;
	struct sp_snapshot *snap;
	struct sp_recorder *rec;
	struct sp__replay *rp;
	char path[128];
	size_t i, n;

	o.threads = threads;
	o.sample_hz = 1000;
	o.mode = mode;
	o.off_cpu_min_us = min_us;
	snprintf(path, sizeof(path), "/tmp/sp-offsynth-%d-%u-%u.spool",
		 (int)getpid(), mode, threads);
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	CHECK_OK(sp__replay_open(rec, fix.data, fix.len, 0, &rp));
	CHECK_OK(sp__replay_run(rp, batch, NULL));
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_summary(rec, sum);
	sp_recorder_close(rec);
	sp__replay_free(rp);

	memset(t, 0, nt * sizeof(*t));
	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	defs = sp_snapshot_spool(snap);
	CHECK_EQ_INT(sp_spool_mode(defs), (int)mode);
	n = sp_snapshot_sample_count(snap);
	for (i = 0; i < n; i++) {
		struct sp_stack_node node;
		struct sp_sample s;
		struct tally *k;
		int how;

		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		CHECK_OK(sp_spool_stack_node(defs, s.stack, &node));
		how = sp_spool_off_cpu_frame(defs, node.frame);
		CHECK(s.tid >= tid0 && (size_t)(s.tid - tid0) < nt);
		CHECK(s.timestamp_ns >= T0 && s.timestamp_ns < t_end);
		k = &t[s.tid - tid0];
		if (how == 0)
			k->on++;
		else if (how == 1)
			k->blocked++;
		else
			k->preempted++;
	}
	sp_snapshot_close(snap);
	unlink(path);
}

static void replay_count(uint32_t threads, uint32_t mode, uint32_t min_us,
			 int32_t tid0, struct tally *t, size_t nt,
			 uint64_t t_end, struct sp_recording_summary *sum)
{
	replay_batch(threads, mode, min_us, 4, tid0, t, nt, t_end, sum);
}

/* "@what, threads N: name v, ..." on stderr. */
static void print_counts(const char *what, uint32_t threads,
			 const char *const *names, const uint64_t *v, size_t n)
{
	size_t i;

	fprintf(stderr, "%s, threads %u:", what, threads);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s %s %llu", i ? "," : "", names[i],
			(unsigned long long)v[i]);
	fputc('\n', stderr);
}

static void replay(uint32_t threads)
{
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct tally t[16];
	size_t k;

	replay_count(threads, SP_PROFILE_OFF_CPU, 100, 100, t, 16,
		     T0 + 100 * MS, &sum);
	{
		static const char *const names[] = {
			"samples", "synthesised", "spans",	   "short",
			"lost",	   "anomalies",	  "switch records"
		};
		const uint64_t v[] = {
			sum.samples,	   sum.samples_synthesized,
			sum.off_cpu_spans, sum.blocks_below_threshold,
			sum.switch_lost,   sum.switch_anomalies,
			sum.switch_events
		};

		print_counts("offcpu", threads, names, v, 7);
	}
	CHECK_EQ(sum.samples, sum.samples_synthesized);
	CHECK_EQ(sum.samples, 30 + 5 + 2 + 3 + 7 + 1);
	CHECK_EQ(sum.blocks_below_threshold, 1);
	/* 105 at the loss, 106 at its exit, 107's first span */
	CHECK_EQ(sum.switch_lost, 3);
	/* 108: exit before its switch-out; 109: another process's tid */
	CHECK_EQ(sum.switch_anomalies, 2);
	for (k = 0; k < 16; k++)
		CHECK_EQ(t[k].on, 0);
	CHECK_EQ(t[1].blocked, 30);
	CHECK_EQ(t[1].preempted, 0);
	CHECK_EQ(t[2].preempted, 5);
	CHECK_EQ(t[2].blocked, 0);
	CHECK_EQ(t[3].blocked, 0);
	CHECK_EQ(t[4].blocked, 2);
	CHECK_EQ(t[5].blocked, 3);
	CHECK_EQ(t[6].blocked, 7);
	CHECK_EQ(t[7].blocked, 1);
	CHECK_EQ(t[8].blocked, 0);
	CHECK_EQ(t[9].blocked, 0);
}

/* Each thread of the wall fixture weighs no more than its wall time. */
static void replay_wall(uint32_t threads)
{
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct tally t[3];
	size_t k;

	replay_count(threads, SP_PROFILE_WALL, 0, 301, t, 3, T0 + 300 * MS,
		     &sum);
	for (k = 0; k < 3; k++)
		fprintf(stderr,
			"threads %u: tid %zu: %llu on-CPU, %llu off-CPU "
			"samples\n",
			threads, 301 + k, (unsigned long long)t[k].on,
			(unsigned long long)(t[k].blocked + t[k].preempted));
	for (k = 0; k < 2; k++) {
		CHECK_EQ(t[k].on, 50);
		CHECK(t[k].blocked >= 49 && t[k].blocked <= 50);
		CHECK_EQ(t[k].preempted, 0);
	}
	CHECK_EQ(t[2].on, 8);
	CHECK_EQ(t[2].blocked, 0);
	CHECK_EQ(sum.switch_lost, 1); /* 303's */
}

/*
 * The late fixture, a record per batch (each released before the next is
 * fed): every thread's off-CPU time is its truth, 20 and 5 ms.
 */
static void replay_late(uint32_t threads, uint32_t mode)
{
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct tally t[3];
	size_t k;

	replay_batch(threads, mode, 0, 1, 401, t, 3, T0 + 100 * MS, &sum);
	for (k = 0; k < 3; k++)
		fprintf(stderr,
			"late, mode %u, threads %u: tid %zu: %llu on-CPU, "
			"%llu off-CPU samples\n",
			mode, threads, 401 + k, (unsigned long long)t[k].on,
			(unsigned long long)(t[k].blocked + t[k].preempted));
	{
		static const char *const names[] = {
			"late records",	 "switch-ins unmatched",
			"lost",		 "open at the end",
			"clipped ns",	 "unsampled ns",
			"oversampled ns"
		};
		const uint64_t v[] = {
			sum.late_records,	sum.switch_in_unmatched,
			sum.switch_lost,	sum.spans_open_at_end,
			sum.wall_clipped_ns,	sum.wall_unsampled_ns,
			sum.wall_oversampled_ns
		};

		print_counts("late", threads, names, v, 7);
	}
	CHECK_EQ(t[0].blocked, 20);
	CHECK_EQ(t[1].blocked, 5);
	CHECK_EQ(t[2].blocked, 10);
	CHECK_EQ(t[0].preempted + t[1].preempted + t[2].preempted, 0);
	if (mode == SP_PROFILE_WALL) {
		CHECK_EQ(t[0].on, 20);
		CHECK_EQ(t[1].on, 5);
		CHECK_EQ(t[2].on, 30);
		CHECK_EQ(sum.wall_clipped_ns, 0);
		CHECK_EQ(sum.wall_unsampled_ns, 0);
		CHECK_EQ(sum.wall_oversampled_ns, 0);
	}
	CHECK_EQ(sum.late_records, 20 * 2 + 1 + 10 * 2);
	CHECK_EQ(sum.switch_in_unmatched, 0);
	CHECK_EQ(sum.switch_lost, 0);
	CHECK_EQ(sum.spans_open_at_end, 0);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	sp__vec_init(&fix, 1);
	build();
	replay(0);
	replay(2);
	fix.len = 0;
	build_wall();
	replay_wall(0);
	replay_wall(2);
	fix.len = 0;
	build_late();
	replay_late(0, SP_PROFILE_WALL);
	replay_late(2, SP_PROFILE_WALL);
	replay_late(0, SP_PROFILE_OFF_CPU);
	replay_late(2, SP_PROFILE_OFF_CPU);
	sp__vec_fini(&fix, &mem);
	return T_EXIT_PASS;
}
