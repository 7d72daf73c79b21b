/* SPDX-License-Identifier: MIT */
/* Kernel test: a target stopped for an attach is resumed even if we die. */

/*
 * Issue 20 item 5. SP_ATTACH_STOP_WHILE_ATTACHING stops the target's whole
 * thread group; a recorder killed before its SIGCONT used to leave the
 * target in state T forever. Checked here on the library alone (the CLI
 * test cli_record_attach_kill does it 50 times through spulse):
 *   - kill: a forked recorder attaching to a 300-thread target is
 *     SIGKILLed at a random moment while the target is stopped, ROUNDS
 *     times; the target must leave state T every time;
 *   - hygiene: a STOP attach in this process leaves no zombie or extra
 *     child after sp_recorder_close(), delivers no SIGCHLD, and a
 *     guardian killed behind the recorder's back is replaced at the next
 *     STOP attach.
 * Exit 77 only when perf_event_open is refused.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/recorder.h>

#include "check.h"
#include "eng_util.h"
#include "proc_maps.h"
#include "threads_env.h"
#include "workload_paths.h"

#define ROUNDS 10
#define THREADS "300"

static volatile sig_atomic_t sigchld_count;

static void on_sigchld(int sig)
{
	(void)sig;
	sigchld_count = sigchld_count + 1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static char state_of(pid_t pid)
{
	char st = 0;

	return sp__proc_stat(pid, 0, NULL, &st) == 0 ? st : 0;
}

/* wl_manythreads with @threads threads, once they all run. */
static pid_t spawn_target(const char *threads)
{
	int p[2];
	char c;
	pid_t pid;

	CHECK_OK(pipe(p));
	pid = fork();
	if (pid == 0) {
		/* Not left behind when a failed CHECK ends the test. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		execl(WL_MANYTHREADS_PATH, "wl_manythreads", "120", threads,
		      (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	close(p[1]);
	CHECK_EQ((int)read(p[0], &c, 1), 1); /* "ready ..." */
	close(p[0]);
	return pid;
}

static char spool_path[64];

static struct sp_recorder *rec_open(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;

	o.threads = test_threads();
	CHECK_OK(sp_recorder_open(spool_path, &o, &rec));
	return rec;
}

/* The recorder process of test_kill: attach, then linger. */
static void recorder_child(pid_t target)
{
	struct sp_recorder *rec = rec_open();
	int r = sp_recorder_attach(rec, target, SP_ATTACH_STOP_WHILE_ATTACHING);

	_exit(r == SP_ATTACHED ? 0 : r == -EPERM || r == -EACCES ? 77 : 1);
}

/* Waits up to 10 s for @pid to leave state T; true if it did. */
static bool resumed(pid_t pid)
{
	int i;

	for (i = 0; i < 1000; i++) {
		if (state_of(pid) != 'T')
			return true;
		sleep_ms(10);
	}
	return false;
}

static void test_kill(void)
{
	pid_t target = spawn_target(THREADS), rec;
	unsigned seed = (unsigned)getpid();
	int round, st, stopped_seen = 0, left = 0, i;

	for (round = 0; round < ROUNDS; round++) {
		rec = fork();
		if (rec == 0)
			recorder_child(target);
		CHECK(rec > 0);
		/* Until the stop is seen (or the recorder is done). */
		for (i = 0; i < 20000 && state_of(target) != 'T'; i++) {
			if (waitpid(rec, &st, WNOHANG) == rec)
				break;
			usleep(200);
		}
		stopped_seen += state_of(target) == 'T';
		usleep((useconds_t)(rand_r(&seed) % 300000));
		kill(rec, SIGKILL);
		waitpid(rec, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
			eng_skip_if_refused(-EPERM);
		if (!resumed(target)) {
			left++;
			fprintf(stderr, "round %d: the target stays stopped\n",
				round);
			kill(target, SIGCONT);
		}
	}
	fprintf(stderr,
		"%d of %d kills left the target stopped (%d caught "
		"it stopped)\n",
		left, ROUNDS, stopped_seen);
	CHECK_EQ_INT(left, 0);
	CHECK(stopped_seen > 0); /* the kills did land in the window */
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

/* Pids of this process's children, from /proc/self/task/TID/children. */
static int children(pid_t *out, int cap)
{
	char path[64], buf[4096], *p, *end;
	FILE *f;
	int n = 0;
	long v;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children",
		 (int)gettid());
	f = fopen(path, "r");
	CHECK_PTR(f);
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	for (p = buf; n < cap; p = end) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		out[n++] = (pid_t)v;
	}
	return n;
}

static void test_hygiene(void)
{
	/* Exits only: stopping and resuming the targets is SIGCHLD too. */
	struct sigaction sa = { .sa_handler = on_sigchld,
				.sa_flags = SA_NOCLDSTOP };
	pid_t a = spawn_target("4"), b = spawn_target("4"), kids[8];
	struct sp_recorder *rec;
	int n, i;

	sigemptyset(&sa.sa_mask);
	CHECK_OK(sigaction(SIGCHLD, &sa, NULL));
	rec = rec_open();
	eng_skip_if_refused(
		sp_recorder_attach(rec, a, SP_ATTACH_STOP_WHILE_ATTACHING));
	CHECK(state_of(a) != 'T');
	/* The guardian is the one child besides the two targets. */
	n = children(kids, 8);
	CHECK_EQ_INT(n, 3);
	for (i = 0; i < n; i++)
		if (kids[i] != a && kids[i] != b)
			kill(kids[i], SIGKILL);
	sleep_ms(50);
	/* Killed behind our back: replaced at the next STOP attach. */
	CHECK_EQ_INT(sp_recorder_attach(rec, b, SP_ATTACH_STOP_WHILE_ATTACHING),
		     SP_ATTACHED);
	CHECK(state_of(b) != 'T');
	CHECK_OK(sp_recorder_poll(rec, 10, NULL));
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	/* No guardian, dead or alive, is left; no SIGCHLD came from one. */
	CHECK_EQ_INT(children(kids, 8), 2);
	CHECK_EQ_INT(waitpid(-1, NULL, WNOHANG | __WALL), 0);
	CHECK_EQ_INT(sigchld_count, 0);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
}

int main(void)
{
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp_guardian_%d.spool",
		 (int)getpid());
	test_kill();
	test_hygiene();
	unlink(spool_path);
	return T_EXIT_PASS;
}
