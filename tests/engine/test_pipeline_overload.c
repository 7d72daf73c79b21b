/* SPDX-License-Identifier: MIT */
/* Kernel test: the threaded pipeline under overload stays bounded and exact. */

/*
 * A threaded recorder samples a 4-thread workload at 10 kHz into rings
 * of 64 samples while its owner polls only once a second: held samples
 * fill the ring, the reader copies instead of holding, the sequencer
 * copies out what it held (records_copied), the reader's blocks fill up
 * when the reader outpaces the sequencer (stalls: not when it is slower
 * than the kernel, as under ASan and load), the kernel ring overflows
 * and the kernel counts what it drops. Recording must go on: losses are
 * counted, the spool is valid and its samples are in time order (copied
 * records were not dropped or reordered).
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "eng_util.h"
#include "workload_paths.h"

static void check_spool(const char *path, uint64_t samples)
{
	struct sp_snapshot *snap;
	struct sp_sample s;
	uint64_t prev = 0;
	size_t i, n;

	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	n = sp_snapshot_sample_count(snap);
	CHECK_EQ(n, samples);
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		CHECK(s.timestamp_ns >= prev);
		prev = s.timestamp_ns;
	}
	sp_snapshot_close(snap);
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_pipeline_stats st = { .size = sizeof(st) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec;
	pid_t pid = eng_spawn_workload(WL_THREADS_PATH, "30");
	char path[64];
	int i;

	usleep(50000);
	o.sample_hz = 10000;
	o.threads = 1;
	o.ring_samples = 64;
	rec = eng_open_attached("overload", &o, pid, path, sizeof(path));
	for (i = 0; i < 3; i++) {
		sleep(1); /* a slow consumer */
		CHECK_OK(sp_recorder_poll(rec, 0, NULL));
		CHECK_OK(sp_recorder_poll(rec, 0, NULL));
	}
	CHECK_OK(sp_recorder_finish(rec));
	eng_kill_reap(pid);
	sp_recorder_summary(rec, &sum);
	CHECK_OK(sp_recorder_pipeline_stats(rec, &st));
	fprintf(stderr,
		"samples %llu lost %llu gaps %llu stalls %llu copied %llu "
		"jobs %llu inline %llu\n",
		(unsigned long long)sum.samples,
		(unsigned long long)sum.lost_events,
		(unsigned long long)sum.lifecycle_gaps,
		(unsigned long long)st.reader_stalls,
		(unsigned long long)st.records_copied,
		(unsigned long long)st.jobs,
		(unsigned long long)st.jobs_inline);
	CHECK_EQ(st.readers, 1);
	CHECK_EQ(st.workers, 1);
	CHECK(st.records_copied > 0);
	CHECK(sum.lost_events > 0);
	CHECK(sum.lifecycle_gaps > 0);
	CHECK(sum.samples > 1000);
	CHECK_EQ(st.jobs + st.jobs_inline, sum.samples);
	sp_recorder_close(rec);
	check_spool(path, sum.samples);
	unlink(path);
	return T_EXIT_PASS;
}
