/* SPDX-License-Identifier: MIT */
/* Kernel test: exec storm, targets that vanish around attach, re-attach. */

/*
 * Exec storm: a launched shell execs /bin/true 50 times then execs a busy
 * shell, recorded with SP_RECORDER_INHERIT_CHILDREN from its first
 * instruction; the spool must hold samples and, after finish, the
 * recorder must hold no fd beyond one per ring. Vanishing targets: a
 * killed and reaped pid gives SP_ETARGETGONE or SP_EXITED in both stop
 * modes; children that exit at once race the attach and must never hang
 * it, and one that exits right after attach must be seen as inactive.
 * Re-attach: the same live process attached twice is SP_ALREADY_ATTACHED
 * and opens nothing new.
 */
#include <stackpulse/launch.h>
#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "recorder_internal.h"
#include "threads_env.h"

#define RACERS 20

/*
 * Polls until no attached process lives. The last death may not have been
 * seen by a poll yet: finish must retire it itself (close its pidfd and
 * events), which the fd checks after finish verify.
 */
static void settle(struct sp_recorder *rec)
{
	int i;

	for (i = 0; i < 500 && sp_recorder_active_process_count(rec) > 0; i++)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK_EQ_INT(sp_recorder_active_process_count(rec), 0);
}

static void check_spool(const char *path)
{
	struct sp_snapshot *snap;
	size_t n;

	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	n = sp_snapshot_sample_count(snap);
	fprintf(stderr, "exec storm: %zu samples\n", n);
	CHECK(n > 0);
	sp_snapshot_close(snap);
	unlink(path);
}

static void test_exec_storm(void)
{
	static char a0[] = "sh", a1[] = "-c",
		    a2[] = "for i in $(seq 50); do /bin/true; done; "
			   "exec sh -c 'i=0; while [ $i -lt 200000 ]; do "
			   "i=$((i+1)); done'";
	char *argv[] = { a0, a1, a2, NULL };
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	struct sp_launch *l;
	int before, base, status = 0, r;
	char path[64];

	o.threads = test_threads();
	o.sample_hz = 999;
	o.flags = SP_RECORDER_INHERIT_CHILDREN;
	snprintf(path, sizeof(path), "/tmp/sp_churn_%d.spool", (int)getpid());
	before = eng_fd_count();
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	base = eng_fd_count();
	CHECK_OK(sp_launch_suspended("sh", argv, NULL, &l));
	r = sp_recorder_attach(rec, sp_launch_pid(l), SP_ATTACH_ON_EXEC);
	if (r < 0)
		sp_launch_free(l);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_OK(sp_launch_resume(l)); /* closes the launch's two pipes */
	while (sp_launch_try_wait(l, &status) == 0)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	settle(rec);
	CHECK_OK(sp_recorder_finish(rec));
	fprintf(stderr, "exec storm: tracked %zu, fds %d -> %d, rings %zu\n",
		rec->procs.list.len, base, eng_fd_count(),
		sp__rings_count(&rec->rings));
	CHECK(rec->procs.list.len > 1); /* the execs' children were followed */
	CHECK(sp__rings_count(&rec->rings) > 0);
	CHECK_EQ_INT(eng_fd_count(), base + (int)sp__rings_count(&rec->rings));
	sp_recorder_close(rec);
	/* Everything the recorder opened (epoll, spool, threads' fds). */
	CHECK_EQ_INT(eng_fd_count(), before);
	sp_launch_free(l);
	check_spool(path);
}

static struct sp_recorder *open_memory(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	struct sp_sink *sink;

	o.threads = test_threads();
	o.sample_hz = 999;
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_recorder_open_sink(sink, &o, &rec));
	return rec;
}

/* A child that blocks on @gate, then exits 0 at once. */
static pid_t spawn_gated(int gate[2])
{
	pid_t pid;
	char c;

	CHECK(pipe(gate) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(gate[1]);
		_exit(read(gate[0], &c, 1) < 0 ? 1 : 0);
	}
	close(gate[0]);
	return pid;
}

/* Children exiting immediately race the attach: any clean outcome. */
static void race_attach(struct sp_recorder *rec)
{
	int seen[3] = { 0, 0, 0 }, i, r;

	for (i = 0; i < RACERS; i++) {
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (pid == 0)
			_exit(0);
		r = sp_recorder_attach(rec, pid,
				       i % 2 ? SP_ATTACH_RUNNING :
					       SP_ATTACH_STOP_WHILE_ATTACHING);
		CHECK(r == SP_ATTACHED || r == SP_EXITED ||
		      r == SP_ETARGETGONE);
		seen[r == SP_ATTACHED ? 0 : r == SP_EXITED ? 1 : 2]++;
		CHECK(waitpid(pid, NULL, 0) == pid);
	}
	fprintf(stderr, "race: attached %d, exited %d, gone %d\n", seen[0],
		seen[1], seen[2]);
}

static void test_vanishing(void)
{
	struct sp_recorder *rec = open_memory();
	pid_t gone = eng_spawn_busy(), pid;
	int gate[2], r;

	eng_kill_reap(gone);
	r = sp_recorder_attach(rec, gone, SP_ATTACH_STOP_WHILE_ATTACHING);
	CHECK(r == SP_ETARGETGONE || r == SP_EXITED);
	r = sp_recorder_attach(rec, gone, SP_ATTACH_RUNNING);
	CHECK(r == SP_ETARGETGONE || r == SP_EXITED);
	pid = spawn_gated(gate);
	r = sp_recorder_attach(rec, pid, SP_ATTACH_STOP_WHILE_ATTACHING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_EQ_INT(sp_recorder_process_is_active(rec, pid), 1);
	close(gate[1]); /* the child exits right after attach */
	race_attach(rec);
	CHECK(waitpid(pid, NULL, 0) == pid);
	settle(rec);
	CHECK_EQ_INT(sp_recorder_process_is_active(rec, pid), 0);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
}

static void test_reattach(void)
{
	struct sp_recorder *rec = open_memory();
	pid_t pid = eng_spawn_busy();
	int r, fds;

	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	fds = eng_fd_count();
	CHECK_EQ_INT(sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING),
		     SP_ALREADY_ATTACHED);
	CHECK_EQ_INT(sp_recorder_attach(rec, pid,
					SP_ATTACH_STOP_WHILE_ATTACHING),
		     SP_ALREADY_ATTACHED);
	CHECK_EQ_INT(eng_fd_count(), fds);
	CHECK_EQ_INT(sp_recorder_active_process_count(rec), 1);
	eng_record_for(rec, 100, 20);
	eng_kill_reap(pid);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
}

int main(void)
{
	test_exec_storm();
	test_vanishing();
	test_reattach();
	return T_EXIT_PASS;
}
