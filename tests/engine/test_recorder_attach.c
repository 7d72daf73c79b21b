/* SPDX-License-Identifier: MIT */
/* Kernel test: attach modes, launch helper and attach errors on real processes. */

/*
 * A forked busy child is recorded at 999 Hz for about half a second in
 * each mode; the spool is read back and every sample must belong to the
 * child, carry a non-empty stack and the child's executable must be among
 * the modules. Exit 77 only when perf_event_open itself is refused.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/launch.h>
#include <stackpulse/recorder.h>
#include <stackpulse/snapshot.h>

#include "check.h"
#include "eng_util.h"
#include "proc_maps.h"
#include "threads_env.h"

static char spool_path[64];

static struct sp_recorder *rec_open(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;

	o.threads = test_threads();
	o.sample_hz = 999;
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp_attach_%d.spool",
		 (int)getpid());
	CHECK_OK(sp_recorder_open(spool_path, &o, &rec));
	return rec;
}

static void record_for(struct sp_recorder *rec, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK_OK(sp_recorder_poll(rec, 50, NULL));
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
			 (t.tv_nsec - t0.tv_nsec) / 1000000 <
		 ms);
}

static char proc_state(pid_t pid)
{
	char st = 0;

	CHECK_OK(sp__proc_stat(pid, 0, NULL, &st));
	return st;
}

/* Checks the spool: samples of @pid only, non-empty, exe @exe mapped. */
static void check_spool(pid_t pid, const char *exe)
{
	struct sp_snapshot *snap;
	const struct sp_spool *sp;
	struct sp_sample s;
	struct sp_module m;
	size_t i, n;
	int found = 0;

	CHECK_OK(sp_snapshot_open(spool_path, NULL, &snap));
	sp = sp_snapshot_spool(snap);
	n = sp_snapshot_sample_count(snap);
	fprintf(stderr, "samples %zu modules %u\n", n,
		sp_spool_module_count(sp));
	CHECK(n > 0);
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		CHECK_EQ_INT(s.pid, pid);
		CHECK(sp_spool_stack_frames(sp, s.stack, NULL, 0) > 0);
	}
	for (i = 0; i < sp_spool_module_count(sp); i++) {
		CHECK_OK(sp_spool_module(sp, (uint32_t)i, &m));
		CHECK_EQ_INT(m.pid, pid);
		if (m.path_len >= strlen(exe) && strstr(m.path, exe) != NULL)
			found = 1;
	}
	CHECK(found);
	sp_snapshot_close(snap);
	unlink(spool_path);
}

static void test_attach(enum sp_attach_mode mode)
{
	int fds = eng_fd_count();
	struct sp_recorder *rec = rec_open();
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	pid_t pid = eng_spawn_busy();
	int r = sp_recorder_attach(rec, pid, mode);

	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK(proc_state(pid) != 'T');
	CHECK_EQ_INT(sp_recorder_attach(rec, pid, mode), SP_ALREADY_ATTACHED);
	CHECK_EQ_INT(sp_recorder_process_is_active(rec, pid), 1);
	CHECK_EQ_INT(sp_recorder_active_process_count(rec), 1);
	record_for(rec, 500);
	eng_kill_reap(pid);
	record_for(rec, 100);
	CHECK_EQ_INT(sp_recorder_process_is_active(rec, pid), 0);
	CHECK_EQ_INT(sp_recorder_active_process_count(rec), 0);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_summary(rec, &sum);
	fprintf(stderr, "mode %d: events %llu samples %llu lost %llu\n", mode,
		(unsigned long long)sum.sample_events,
		(unsigned long long)sum.samples,
		(unsigned long long)sum.lost_events);
	CHECK(sum.samples > 0);
	CHECK(sum.maximum_ring_buffer_bytes > 0);
	sp_recorder_close(rec);
	/* Events, rings, pidfds all closed. */
	CHECK_EQ_INT(eng_fd_count(), fds);
	check_spool(pid, "/bin/");
}

static void test_launch(void)
{
	static char a0[] = "sh", a1[] = "-c",
		    a2[] = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); "
			   "done; exit 7";
	char *argv[] = { a0, a1, a2, NULL };
	struct sp_recorder *rec = rec_open();
	struct sp_launch *l;
	int status = 0, r;

	CHECK_OK(sp_launch_suspended("sh", argv, NULL, &l));
	r = sp_recorder_attach(rec, sp_launch_pid(l), SP_ATTACH_ON_EXEC);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_OK(sp_launch_resume(l));
	while (sp_launch_try_wait(l, &status) == 0)
		CHECK_OK(sp_recorder_poll(rec, 50, NULL));
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 7);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	check_spool(sp_launch_pid(l), "sh");
	sp_launch_free(l);
}

static void test_launch_enoent(void)
{
	static char a0[] = "sp-no-such-command-xyz";
	char *argv[] = { a0, NULL };
	struct sp_launch *l;
	int status = 0;

	CHECK_OK(sp_launch_suspended(argv[0], argv, NULL, &l));
	CHECK_EQ_INT(sp_launch_resume(l), -ENOENT);
	CHECK_EQ_INT(sp_launch_wait(l, &status), 1);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 127);
	sp_launch_free(l);
}

static void test_errors(void)
{
	struct sp_recorder *rec = rec_open();
	pid_t gone = eng_spawn_busy();
	int r;

	eng_kill_reap(gone);
	CHECK_EQ_INT(sp_recorder_attach(rec, 0, SP_ATTACH_RUNNING), -EINVAL);
	CHECK_EQ_INT(sp_recorder_attach(rec, -5, SP_ATTACH_RUNNING), -EINVAL);
	CHECK_EQ_INT(sp_recorder_attach(rec, getpid(),
					SP_ATTACH_STOP_WHILE_ATTACHING),
		     -EINVAL);
	r = sp_recorder_attach(rec, gone, SP_ATTACH_STOP_WHILE_ATTACHING);
	CHECK(r == SP_ETARGETGONE || r == SP_EXITED);
	CHECK_EQ_INT(sp_recorder_process_is_active(rec, gone), -EINVAL);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	unlink(spool_path);
}

static void test_freq_limit(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec = NULL;

	o.threads = test_threads();
	o.sample_hz = 100000000;
	CHECK_EQ_INT(sp_recorder_open("/tmp/sp_never.spool", &o, &rec),
		     SP_EFREQ);
	CHECK(rec == NULL);
	o.sample_hz = 999;
	o.stack_size = 65536;
	CHECK_EQ_INT(sp_recorder_open("/tmp/sp_never.spool", &o, &rec),
		     -EINVAL);
	unlink("/tmp/sp_never.spool");
}

int main(void)
{
	test_freq_limit();
	test_errors();
	test_launch_enoent();
	test_attach(SP_ATTACH_RUNNING);
	test_attach(SP_ATTACH_STOP_WHILE_ATTACHING);
	test_launch();
	return T_EXIT_PASS;
}
