/* SPDX-License-Identifier: MIT */
/* Kernel test: fork storm, a full disk, kernel sampling refused. */

/*
 * Fork storm: a child forks 200 short-lived children while recorded with
 * SP_RECORDER_INHERIT_CHILDREN; once all are gone the recorder holds no
 * fd beyond its epoll, its spool and one per ring. ENOSPC: a sink that
 * starts failing mid-recording; flush and finish must report -ENOSPC and
 * the bytes accepted before must open as a valid spool. Refusal: as
 * nobody (perf_event_paranoid 2), SP_RECORDER_KERNEL falls back to
 * user-only sampling with kernel_enabled = 0.
 */
#include <grp.h>
#include <string.h>
#include <sys/prctl.h>

#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "recorder_internal.h"
#include "threads_env.h"

#define STORM 200

static void storm_run(int gate)
{
	volatile unsigned long n;
	int i;
	char c;

	if (read(gate, &c, 1) != 1)
		_exit(2);
	for (i = 0; i < STORM; i++) {
		pid_t p = fork();

		if (p == 0) {
			for (n = 0; n < 100000; n++)
				;
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	_exit(0);
}

static void test_fork_storm(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	int gate[2], before, base, status, r, i;
	char path[64];
	pid_t pid;

	o.threads = test_threads();
	CHECK(pipe(gate) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		storm_run(gate[0]);
	close(gate[0]);
	o.sample_hz = 999;
	o.flags = SP_RECORDER_INHERIT_CHILDREN;
	snprintf(path, sizeof(path), "/tmp/sp_storm_%d.spool", (int)getpid());
	before = eng_fd_count();
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	base = eng_fd_count();
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK(write(gate[1], "g", 1) == 1);
	close(gate[1]);
	base--; /* the gate was counted */
	while (waitpid(pid, &status, WNOHANG) == 0)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < 500 && sp_recorder_active_process_count(rec) > 0; i++)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK_EQ_INT(sp_recorder_active_process_count(rec), 0);
	CHECK_OK(sp_recorder_finish(rec));
	fprintf(stderr,
		"storm: tracked %zu processes, fds %d -> %d, rings %zu\n",
		rec->procs.list.len, base, eng_fd_count(),
		sp__rings_count(&rec->rings));
	CHECK(rec->procs.list.len > 1); /* children were followed */
	CHECK_EQ_INT(eng_fd_count(), base + (int)sp__rings_count(&rec->rings));
	sp_recorder_close(rec);
	/* Everything the recorder opened (epoll, spool, threads' fds). */
	CHECK_EQ_INT(eng_fd_count(), before - 1); /* gate[1] was counted */
	unlink(path);
}

struct full_sink {
	unsigned char *buf;
	size_t len;
	size_t cap;
	bool full;
};

static int full_write(void *ctx, const void *buf, size_t len)
{
	struct full_sink *s = ctx;

	if (s->full || s->len + len > s->cap)
		return -ENOSPC;
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

static const struct sp_sink_ops full_ops = { .write = full_write };

/* Polls like eng_record_for, but a poll may fail with -ENOSPC. */
static void record_until_full(struct sp_recorder *rec, int ms, int step_ms)
{
	struct timespec t0;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		err = sp_recorder_poll(rec, step_ms, NULL);
		CHECK(err == 0 || err == -ENOSPC);
	} while (eng_ms_since(&t0) < ms);
}

static void test_enospc(void)
{
	static unsigned char store[64 << 20];
	struct full_sink fs = { store, 0, sizeof(store), false };
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_snapshot *snap;
	struct sp_recorder *rec;
	struct sp_sink *sink;
	pid_t pid = eng_spawn_busy();
	size_t accepted, n;
	int r;

	o.threads = test_threads();
	CHECK_OK(sp_sink_new_callback(&full_ops, &fs, NULL, &sink));
	o.sample_hz = 999;
	CHECK_OK(sp_recorder_open_sink(sink, &o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	eng_record_for(rec, 300, 20);
	CHECK_OK(sp_recorder_flush(rec));
	accepted = fs.len;
	fs.full = true;
	/* Polls flush periodically, so they may report the full disk too. */
	record_until_full(rec, 300, 20);
	CHECK_EQ_INT(sp_recorder_flush(rec), -ENOSPC);
	eng_kill_reap(pid);
	CHECK_EQ_INT(sp_recorder_finish(rec), -ENOSPC);
	sp_recorder_close(rec);
	CHECK_EQ(fs.len, accepted);
	CHECK_OK(sp_snapshot_open_buffer(fs.buf, fs.len, NULL, &snap));
	n = sp_snapshot_sample_count(snap);
	fprintf(stderr, "enospc: %zu bytes, %zu samples kept\n", fs.len, n);
	CHECK(n > 0);
	sp_snapshot_close(snap);
}

/* In a forked child: become nobody, record a busy grandchild. */
static int refused_run(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec;
	struct sp_sink *sink;
	pid_t pid;
	int r;

	o.threads = test_threads();
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 3;
	prctl(PR_SET_DUMPABLE, 1);
	pid = eng_spawn_busy();
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	o.sample_hz = 999;
	o.ring_samples = 1;
	o.flags = SP_RECORDER_KERNEL;
	CHECK_OK(sp_recorder_open_sink(sink, &o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0) {
		eng_kill_reap(pid);
		fprintf(stderr, "nobody may not sample at all: %s\n",
			sp_strerror(r));
		return T_EXIT_SKIP;
	}
	eng_record_for(rec, 300, 20);
	eng_kill_reap(pid);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_summary(rec, &sum);
	fprintf(stderr, "nobody: samples %llu kernel_enabled %u\n",
		(unsigned long long)sum.samples, sum.kernel_enabled);
	CHECK_EQ_INT(sum.kernel_enabled, 0);
	CHECK(sum.samples > 0);
	sp_recorder_close(rec);
	return 0;
}

static void test_kernel_refused(void)
{
	int status = 0;
	pid_t pid;

	if (getuid() != 0) {
		fprintf(stderr, "refusal test needs root to become nobody\n");
		return;
	}
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(refused_run());
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == T_EXIT_SKIP);
}

int main(void)
{
	test_fork_storm();
	test_enospc();
	test_kernel_refused();
	return T_EXIT_PASS;
}
