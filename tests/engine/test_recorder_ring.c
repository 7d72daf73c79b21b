/* SPDX-License-Identifier: MIT */
/* Ring sizing: the default scales with rate x stack size, explicit wins. */

/*
 * A sample record is as large as the requested stack (feasibility gotcha
 * 1), so the default per-CPU ring must hold SP__RING_DEFAULT_MS of
 * samples at the configured rate: at 20 kHz with 32 KiB stacks that is
 * >= 2000 records (>= 64 MiB), at 999 Hz still the 256-sample minimum.
 * Checked first on the sizing functions, then on real recorders through
 * summary.maximum_ring_buffer_bytes: the default grows with the rate and
 * the stack size, and an explicit ring_samples is honoured as given.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <stackpulse.h>

#include "eng_util.h"
#include "perf_event.h"
#include "recorder_internal.h"

/* The per-CPU cap of the budgets: min(256 MiB, 1 GiB / CPUs). */
static uint64_t cpu_cap(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t cap = SP__RING_TOTAL_MAX / (uint64_t)(n > 0 ? n : 1);

	return cap < SP__RING_CPU_MAX ? cap : SP__RING_CPU_MAX;
}

static void check_sizing(void)
{
	struct sp__perf_cfg c = { .hz = 999, .stack_size = 32768 };
	size_t rec = sp__perf_record_bytes(&c), bytes;

	CHECK_EQ(sp__perf_ring_default_samples(&c), SP__RING_MIN_SAMPLES);
	c.hz = 50000;
	CHECK_EQ(sp__perf_ring_default_samples(&c), 5000);
	c.hz = 100000;
	CHECK_EQ(sp__perf_ring_default_samples(&c), 10000);
	/* 20 kHz: 2000 records of ~33 KB, rounded up to a power of two. */
	c.hz = 20000;
	bytes = sp__perf_ring_bytes(&c, sp__perf_ring_default_samples(&c),
				    SP__RING_CPU_MAX);
	CHECK(bytes >= 2000 * rec);
	CHECK(bytes < 2 * 2000 * rec);
	/* 100 kHz would need ~330 MB: the per-CPU cap holds. */
	c.hz = 100000;
	bytes = sp__perf_ring_bytes(&c, sp__perf_ring_default_samples(&c),
				    SP__RING_CPU_MAX);
	CHECK_EQ(bytes, SP__RING_CPU_MAX);
}

/* Records a busy child for a moment; returns the largest ring's bytes. */
static uint64_t ring_bytes(uint32_t hz, uint32_t stack, uint64_t samples)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec;
	char path[64];
	pid_t pid;
	int r;

	o.sample_hz = hz;
	o.stack_size = stack;
	o.ring_samples = samples;
	snprintf(path, sizeof(path), "/tmp/sp_ring_%d.spool", (int)getpid());
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	pid = eng_spawn_busy();
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	eng_record_for(rec, 100, 20);
	eng_kill_reap(pid);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	unlink(path);
	fprintf(stderr, "%u Hz, %u B stacks, ring_samples %llu: %llu..%llu\n",
		hz, stack, (unsigned long long)samples,
		(unsigned long long)sum.minimum_ring_buffer_bytes,
		(unsigned long long)sum.maximum_ring_buffer_bytes);
	CHECK(sum.samples > 0);
	return sum.maximum_ring_buffer_bytes;
}

static uint64_t at_least(uint64_t want)
{
	return want < cpu_cap() ? want : cpu_cap();
}

int main(void)
{
	long max = sp__perf_max_rate();
	uint64_t low, high, small_stack, one, fixed;

	check_sizing();
	if (max < 20000) {
		fprintf(stderr, "skip: kernel max rate %ld < 20 kHz\n", max);
		return T_EXIT_SKIP;
	}
	low = ring_bytes(999, 32768, 0);
	high = ring_bytes(20000, 32768, 0);
	small_stack = ring_bytes(20000, 8192, 0);
	one = ring_bytes(20000, 32768, 1);
	fixed = ring_bytes(20000, 32768, 256);
	/* The default: 256 records at 999 Hz, 100 ms of 20 kHz above. */
	CHECK(low >= 256 * 32768ull && low < 256 * 32768ull * 4);
	CHECK(high >= at_least(2000 * 32768ull));
	CHECK(high > low);
	CHECK(small_stack >= at_least(2000 * 8192ull));
	CHECK(small_stack < high);
	/* Explicit counts are honoured whatever the rate. */
	CHECK_EQ(one, 65536);
	CHECK_EQ(fixed, low);
	return T_EXIT_PASS;
}
