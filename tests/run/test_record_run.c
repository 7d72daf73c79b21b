/* SPDX-License-Identifier: MIT */
/* Kernel test: sp_recorder_run_command / _pid end every way and leave nothing running. */

/*
 * Each case records into a memory sink on the public API only, as an
 * embedder would: a command that exits (its status comes back, samples
 * were recorded), one stopped by the duration (SIGTERM, reaped), one that
 * ignores SIGTERM (SIGKILL after term_wait_ms: the run ends in bounded
 * time), one stopped by the tick, a command that cannot be executed, a
 * pid recorded for a duration and left running, a pid that does not
 * exist, and bad options. "Nothing left" is checked with waitpid: after
 * every run this process has no child left to reap. Skips (77) only when
 * the kernel refuses perf_event_open.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "perf_skip.h"

/* A writable copy of a NULL-terminated list of words (execvp's argv). */
struct words {
	char *v[8];
};

static struct words *words(const char *const *src)
{
	struct words *w = calloc(1, sizeof(*w));
	size_t i;

	CHECK_PTR(w);
	for (i = 0; src[i]; i++) {
		CHECK(i + 1 < sizeof(w->v) / sizeof(w->v[0]));
		w->v[i] = strdup(src[i]);
		CHECK_PTR(w->v[i]);
	}
	return w;
}

static void words_free(struct words *w)
{
	size_t i;

	for (i = 0; w->v[i]; i++)
		free(w->v[i]);
	free(w);
}

static struct sp_recorder *open_rec(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o), .threads = 0 };
	struct sp_recorder *rec;
	struct sp_sink *sink;

	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_recorder_open_sink(sink, &o, &rec));
	return rec;
}

/* No child of ours is left, running or unreaped. */
static void check_no_children(void)
{
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
}

static uint64_t samples(struct sp_recorder *rec)
{
	struct sp_recording_summary s = { .size = sizeof(s) };

	sp_recorder_summary(rec, &s);
	return s.samples;
}

static void run_cmd(const char *const *cmd, const struct sp_record_run_opts *o,
		    struct sp_record_run_result *r, int want_err,
		    uint64_t *nsamples)
{
	struct sp_recorder *rec = open_rec();
	struct words *argv = words(cmd);
	int err;

	r->size = sizeof(*r);
	err = sp_recorder_run_command(rec, argv->v, NULL, o, r);
	words_free(argv);
	/* -ENOENT is also a command that cannot be executed. */
	if (err != want_err)
		skip_if_refused(err);
	CHECK_EQ_INT(err, want_err);
	CHECK_OK(sp_recorder_finish(rec));
	if (nsamples)
		*nsamples = samples(rec);
	sp_recorder_close(rec);
	check_no_children();
}

static void case_exits(void)
{
	static const char *const argv[] = {
		"/bin/sh", "-c",
		"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done;"
		" exit 3",
		NULL
	};
	struct sp_record_run_result r;
	uint64_t n;

	run_cmd(argv, NULL, &r, 0, &n);
	CHECK_EQ(r.end, SP_RECORD_RUN_EXITED);
	CHECK(r.reaped && WIFEXITED(r.wait_status));
	CHECK_EQ_INT(WEXITSTATUS(r.wait_status), 3);
	CHECK_EQ(r.signalled, 0);
	CHECK(r.pid > 0 && r.elapsed_ns > 0);
	CHECK(n > 0);
}

static void case_duration(void)
{
	static const char *const argv[] = { "/bin/sh", "-c",
					    "while :; do :; done", NULL };
	struct sp_record_run_opts o = { .size = sizeof(o), .duration_ms = 300 };
	struct sp_record_run_result r;
	uint64_t n;

	run_cmd(argv, &o, &r, 0, &n);
	CHECK_EQ(r.end, SP_RECORD_RUN_DURATION);
	CHECK_EQ(r.signalled, 1);
	CHECK(r.reaped && WIFSIGNALED(r.wait_status));
	CHECK_EQ_INT(WTERMSIG(r.wait_status), SIGTERM);
	CHECK(r.elapsed_ns >= 300000000ull);
	CHECK(n > 0);
}

static void case_ignores_term(void)
{
	static const char *const argv[] = { "/bin/sh", "-c",
					    "trap '' TERM; while :; do :; done",
					    NULL };
	struct sp_record_run_opts o = { .size = sizeof(o),
					.duration_ms = 200,
					.term_wait_ms = 300 };
	struct sp_record_run_result r;

	run_cmd(argv, &o, &r, 0, NULL);
	CHECK_EQ(r.signalled, 2);
	CHECK(r.reaped && WIFSIGNALED(r.wait_status));
	CHECK_EQ_INT(WTERMSIG(r.wait_status), SIGKILL);
	/* 200 ms, then at most the 300 ms grace and the reap. */
	CHECK(r.elapsed_ns < 30000000000ull);
}

static int ticks;

static int stop_at_third(void *ctx, struct sp_recorder *rec)
{
	CHECK(ctx == &ticks && rec != NULL);
	return ++ticks >= 3;
}

static int fail_tick(void *ctx, struct sp_recorder *rec)
{
	(void)ctx;
	(void)rec;
	return -ECANCELED;
}

static void case_tick(void)
{
	static const char *const argv[] = { "/bin/sh", "-c", "sleep 30", NULL };
	struct sp_record_run_opts o = { .size = sizeof(o),
					.poll_ms = 10,
					.tick = stop_at_third,
					.ctx = &ticks };
	struct sp_record_run_result r;

	run_cmd(argv, &o, &r, 0, NULL);
	CHECK_EQ(r.end, SP_RECORD_RUN_STOPPED);
	CHECK_EQ_INT(ticks, 3);
	CHECK(r.reaped);
	o.tick = fail_tick;
	run_cmd(argv, &o, &r, -ECANCELED, NULL);
	CHECK(r.reaped);
}

static void case_not_found(void)
{
	static const char *const argv[] = { "/nonexistent/command", NULL };
	struct sp_record_run_result r;

	run_cmd(argv, NULL, &r, -ENOENT, NULL);
	CHECK(r.reaped);
}

static void case_pid(void)
{
	struct sp_record_run_opts o = { .size = sizeof(o), .duration_ms = 300 };
	struct sp_record_run_result r = { .size = sizeof(r) };
	struct sp_recorder *rec = open_rec();
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "while :; do :; done",
		      (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	usleep(50000);
	CHECK_EQ_INT(sp_recorder_run_pid(rec, pid, &o, &r), 0);
	CHECK_EQ(r.end, SP_RECORD_RUN_DURATION);
	CHECK_EQ_INT(r.pid, pid);
	CHECK_EQ(r.signalled, 0);
	CHECK_OK(sp_recorder_finish(rec));
	CHECK(samples(rec) > 0);
	sp_recorder_close(rec);
	/* A pid run never signals its target: it still runs. */
	CHECK_EQ_INT(waitpid(pid, &status, WNOHANG), 0);
	kill(pid, SIGKILL);
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	/* It is gone now: the run says so at once. */
	rec = open_rec();
	CHECK_EQ_INT(sp_recorder_run_pid(rec, pid, &o, &r), SP_ETARGETGONE);
	sp_recorder_close(rec);
}

static void case_bad_args(void)
{
	struct sp_record_run_opts o = { .size = sizeof(o) };
	struct sp_record_run_result r = { .size = 3 };
	struct sp_recorder *rec = open_rec();
	static const char *const cmd[] = { "/bin/true", NULL };
	struct words *argv = words(cmd);
	char *empty[] = { NULL };

	CHECK_EQ_INT(sp_recorder_run_command(NULL, argv->v, NULL, NULL, NULL),
		     -EINVAL);
	CHECK_EQ_INT(sp_recorder_run_command(rec, empty, NULL, NULL, NULL),
		     -EINVAL);
	CHECK_EQ_INT(sp_recorder_run_command(rec, argv->v, NULL, NULL, &r),
		     -EINVAL);
	o.duration_ms = UINT64_MAX;
	CHECK_EQ_INT(sp_recorder_run_command(rec, argv->v, NULL, &o, NULL),
		     -EINVAL);
	words_free(argv);
	CHECK_EQ_INT(sp_recorder_run_pid(rec, 0, NULL, NULL), -EINVAL);
	sp_recorder_close(rec);
	check_no_children();
}

int main(void)
{
	case_exits();
	case_duration();
	case_ignores_term();
	case_tick();
	case_not_found();
	case_pid();
	case_bad_args();
	return 0;
}
