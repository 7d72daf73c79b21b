/* SPDX-License-Identifier: MIT */
/* Kernel test: sp_recorder_refresh_threads and sp_recorder_tail. */

/*
 * The child has threads A and B when it is attached, so each has its own
 * counters. When B exits, a refresh closes B's counters (one per CPU):
 * every live thread still has its own. A thread C created after the attach
 * is sampled through inheritance: a refresh opens nothing for it, and once
 * C exists, A's counters stay open after A exits, since closing them
 * could tear down inherited ones. The Tail handed out by the recorder is
 * the only one.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>

#include <stackpulse/tail.h>

#include "eng_util.h"
#include "perf_event.h"
#include "threads_env.h"

static char spool_path[64];
static atomic_int stop_a, stop_b, stop_c;

static void *spin(void *arg)
{
	atomic_int *stop = arg;
	volatile unsigned long n = 0;

	while (!atomic_load(stop))
		n++;
	return NULL;
}

static void child_run(int cmd, int ack)
{
	pthread_t a, b, c;
	int32_t tid;
	char op;

	pthread_create(&a, NULL, spin, &stop_a);
	pthread_create(&b, NULL, spin, &stop_b);
	while (read(cmd, &op, 1) == 1) {
		tid = 0;
		if (op == 'b') {
			atomic_store(&stop_b, 1);
			pthread_join(b, NULL);
		} else if (op == 'a') {
			atomic_store(&stop_a, 1);
			pthread_join(a, NULL);
		} else if (op == 'c') {
			pthread_create(&c, NULL, spin, &stop_c);
			usleep(20000);
		}
		if (write(ack, &tid, sizeof(tid)) != sizeof(tid))
			break;
	}
	_exit(0);
}

static void command(int cmd, int ack, char op)
{
	int32_t tid;

	CHECK(write(cmd, &op, 1) == 1);
	CHECK(read(ack, &tid, sizeof(tid)) == sizeof(tid));
	usleep(20000); /* the thread is gone from /proc */
}

static int ncpus(void)
{
	int cpus[4096];
	int n = sp__perf_online_cpus(cpus, 4096);

	CHECK(n > 0);
	return n;
}

static void test_tail(struct sp_recorder *rec)
{
	struct sp_tail *t, *t2 = NULL;
	int n;

	CHECK_OK(sp_recorder_tail(rec, &t));
	CHECK_EQ_INT(sp_recorder_tail(rec, &t2), -EBUSY);
	CHECK(t2 == NULL);
	n = sp_tail_poll(t);
	CHECK_OK(n);
	CHECK(n > 0); /* the flush made every sample so far visible */
	eng_record_for(rec, 100, 20);
	CHECK_OK(sp_recorder_flush(rec));
	CHECK_OK(sp_tail_poll(t));
	n = sp_tail_discard_consumed(t);
	CHECK(n == 0 || n == -EOPNOTSUPP); /* the tail may discard */
	sp_tail_close(t);
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	int cmd[2], ack[2], fds, cpus = ncpus(), r;
	pid_t pid;

	o.threads = test_threads();
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp_thr_%d.spool",
		 (int)getpid());
	CHECK(pipe(cmd) == 0 && pipe(ack) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_run(cmd[0], ack[1]);
	usleep(50000); /* A and B exist */
	o.sample_hz = 999;
	CHECK_OK(sp_recorder_open(spool_path, &o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_STOP_WHILE_ATTACHING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_EQ_INT(sp_recorder_refresh_threads(rec, pid + 100000), -EINVAL);
	CHECK_EQ_INT(sp_recorder_refresh_threads(rec, 0), -EINVAL);
	fds = eng_fd_count();
	CHECK_OK(sp_recorder_refresh_threads(rec, pid));
	CHECK_EQ_INT(eng_fd_count(), fds); /* nothing missed, nothing gone */
	eng_record_for(rec, 100, 20);
	command(cmd[1], ack[0], 'b');
	CHECK_EQ_INT(sp_recorder_refresh_threads(rec, pid), 0);
	CHECK_EQ_INT(eng_fd_count(), fds - cpus); /* B's counters closed */
	command(cmd[1], ack[0], 'c');
	CHECK_EQ_INT(sp_recorder_refresh_threads(rec, pid), 0);
	CHECK_EQ_INT(eng_fd_count(), fds - cpus); /* C inherits */
	command(cmd[1], ack[0], 'a');
	CHECK_EQ_INT(sp_recorder_refresh_threads(rec, pid), 0);
	CHECK_EQ_INT(eng_fd_count(), fds - cpus); /* C may depend on A's */
	eng_record_for(rec, 100, 20);
	test_tail(rec);
	eng_kill_reap(pid);
	while (sp_recorder_process_is_active(rec, pid) == 1)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK_EQ_INT(sp_recorder_refresh_threads(rec, pid), SP_EXITED);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	unlink(spool_path);
	return T_EXIT_PASS;
}
