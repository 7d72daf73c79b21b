/* SPDX-License-Identifier: MIT */
/* Kernel test: a tiny ring overflows; losses are counted, recording goes on. */

/*
 * The minimum ring (ring_samples = 1: 64 KiB) at 10 kHz with 32 KiB stacks
 * holds about two samples, and the consumer sleeps between polls, so the
 * kernel must drop samples. The PERF_FORMAT_LOST counters must report
 * them, each loss batch counts as a lifecycle gap and runs a recovery
 * sweep, and the sweeps must keep the busy child's unchanged modules
 * (the spool holds exactly the modules its maps list, not copies).
 */
#include <string.h>

#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "proc_maps.h"
#include "threads_env.h"

static char spool_path[64];

/* Tracked (executable, file-backed) entries of /proc/PID/maps. */
static unsigned tracked_maps(pid_t pid)
{
	static char buf[1 << 16];
	struct sp__maps_entry e;
	char path[64];
	const char *p, *nl;
	unsigned n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	CHECK(sp__proc_read(path, buf, sizeof(buf)) > 0);
	for (p = buf; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		if (!sp__maps_parse_line(p, (size_t)(nl - p), &e) &&
		    sp__maps_is_tracked(&e))
			n++;
	}
	return n;
}

static void check_spool(pid_t pid, unsigned modules)
{
	struct sp_snapshot *snap;
	struct sp_sample s;
	size_t i, n;

	CHECK_OK(sp_snapshot_open(spool_path, NULL, &snap));
	CHECK(!sp_snapshot_is_recovered(snap));
	n = sp_snapshot_sample_count(snap);
	CHECK(n > 0);
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		CHECK_EQ_INT(s.pid, pid);
	}
	CHECK_EQ(sp_spool_module_count(sp_snapshot_spool(snap)), modules);
	sp_snapshot_close(snap);
	unlink(spool_path);
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_poll_summary ps;
	struct sp_recorder *rec;
	uint64_t polled_lost = 0;
	unsigned modules;
	pid_t pid;
	int i, r;

	o.threads = test_threads();
	o.sample_hz = 10000;
	o.ring_samples = 1;
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp_loss_%d.spool",
		 (int)getpid());
	r = sp_recorder_open(spool_path, &o, &rec);
	if (r == SP_EFREQ) {
		fprintf(stderr, "skip: 10 kHz above the kernel maximum\n");
		return T_EXIT_SKIP;
	}
	CHECK_OK(r);
	pid = eng_spawn_busy();
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	for (i = 0; i < 20; i++) {
		usleep(60000); /* a slow consumer: the ring overflows */
		if (i == 0)
			CHECK(sp_recorder_has_pending_events(rec));
		CHECK_OK(sp_recorder_poll(rec, 0, &ps));
		polled_lost += ps.lost_events;
	}
	modules = tracked_maps(pid);
	CHECK_OK(sp_recorder_flush(rec));
	sp_recorder_summary(rec, &sum);
	CHECK(sum.lost_events > 0);
	CHECK(sum.lifecycle_gaps > 0);
	/* Polls report what they counted; flush counts the rest. */
	CHECK(polled_lost > 0 && polled_lost <= sum.lost_events);
	eng_record_for(rec, 100, 20); /* recording goes on after losses */
	eng_kill_reap(pid);
	CHECK_OK(sp_recorder_finish(rec));
	CHECK(!sp_recorder_has_pending_events(rec));
	sp_recorder_summary(rec, &sum);
	fprintf(stderr,
		"events %llu samples %llu lost %llu gaps %llu ring %llu\n",
		(unsigned long long)sum.sample_events,
		(unsigned long long)sum.samples,
		(unsigned long long)sum.lost_events,
		(unsigned long long)sum.lifecycle_gaps,
		(unsigned long long)sum.maximum_ring_buffer_bytes);
	CHECK(sum.samples > 0);
	CHECK(sum.lifecycle_gaps <= sum.lost_events);
	sp_recorder_close(rec);
	check_spool(pid, modules);
	return T_EXIT_PASS;
}
