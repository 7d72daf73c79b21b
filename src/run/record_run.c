/* SPDX-License-Identifier: MIT */
/* Recording a launched command or a running process until it ends or for a while. */

/*
 * Built on the public Recorder and launch API plus base's option loader
 * (the room's include paths allow nothing else). One loop serves both
 * targets: poll with a bounded timeout, then check in this order the
 * target (the command reaped, or no attached process alive), the caller's
 * tick, and the deadline. Time is CLOCK_MONOTONIC; the deadline is
 * computed in nanoseconds from a millisecond count checked for overflow.
 *
 * Ending a command that still runs: SIGTERM, then polls (so its exit is
 * recorded, and so the wait is never longer than @term_wait_ms) until it
 * is reaped, then SIGKILL and a blocking reap: SIGKILL cannot be ignored,
 * so that wait ends. A launch that failed before the exec is killed and
 * reaped by sp_launch_free() (it never resumed).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include <stackpulse/error.h>
#include <stackpulse/launch.h>
#include <stackpulse/record_run.h>

#include "opts.h"

#define DEFAULT_POLL_MS 100
#define DEFAULT_TERM_WAIT_MS 2000
#define NS_PER_MS 1000000ull

struct run {
	struct sp_recorder *rec;
	struct sp_record_run_opts o;
	struct sp_record_run_result r;
	struct sp_launch *launch; /* NULL for a pid run */
	uint64_t start_ns, deadline_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int run_init(struct run *run, struct sp_recorder *rec,
		    const struct sp_record_run_opts *opts,
		    const struct sp_record_run_result *out)
{
	int err;

	memset(run, 0, sizeof(*run));
	if (!rec || (out && !sp__opts_size_ok(out->size)))
		return -EINVAL;
	err = sp__opts_load(opts, opts ? opts->size : 0, &run->o,
			    sizeof(run->o));
	if (err)
		return err;
	if (run->o.duration_ms > UINT64_MAX / NS_PER_MS / 2)
		return -EINVAL; /* would overflow the deadline */
	if (!run->o.poll_ms)
		run->o.poll_ms = DEFAULT_POLL_MS;
	if (run->o.poll_ms > INT32_MAX)
		return -EINVAL;
	if (!run->o.term_wait_ms)
		run->o.term_wait_ms = DEFAULT_TERM_WAIT_MS;
	run->rec = rec;
	return 0;
}

static void run_started(struct run *run)
{
	run->start_ns = now_ns();
	run->deadline_ns =
		run->o.duration_ms ?
			run->start_ns + run->o.duration_ms * NS_PER_MS :
			UINT64_MAX;
}

/* One poll; an interrupting signal is the caller's business, not an error. */
static int run_poll(struct run *run, int timeout_ms)
{
	int err = sp_recorder_poll(run->rec, timeout_ms, NULL);

	return err == -EINTR ? 0 : err;
}

/* 1 when the command was reaped now or before, 0 running, or -errno. */
static int command_reap(struct run *run, bool nohang)
{
	int status = 0, r;

	if (run->r.reaped)
		return 1;
	r = nohang ? sp_launch_try_wait(run->launch, &status) :
		     sp_launch_wait(run->launch, &status);
	if (r == 1) {
		run->r.reaped = 1;
		run->r.wait_status = status;
	}
	return r;
}

/* Whether the targets are gone; < 0 on a wait error. */
static int targets_done(struct run *run)
{
	if (run->launch)
		return command_reap(run, true);
	return sp_recorder_active_process_count(run->rec) <= 0;
}

/* Polls until the targets end, the deadline passes or the tick stops. */
static int run_loop(struct run *run)
{
	int err, done, t;

	for (;;) {
		err = run_poll(run, (int)run->o.poll_ms);
		if (err < 0)
			return err;
		done = targets_done(run);
		if (done < 0)
			return done;
		if (done) {
			run->r.end = SP_RECORD_RUN_EXITED;
			return 0;
		}
		if (run->o.tick) {
			t = run->o.tick(run->o.ctx, run->rec);
			if (t < 0)
				return t;
			if (t > 0) {
				run->r.end = SP_RECORD_RUN_STOPPED;
				return 0;
			}
		}
		if (now_ns() >= run->deadline_ns) {
			run->r.end = SP_RECORD_RUN_DURATION;
			return 0;
		}
	}
}

/*
 * SIGTERM a command that still runs, keep recording while it exits, and
 * SIGKILL it after term_wait_ms. Always ends with the command reaped
 * (unless waitpid itself fails); returns the first poll or wait error.
 */
static int command_end(struct run *run)
{
	uint64_t limit;
	int32_t pid = sp_launch_pid(run->launch);
	int err = 0, r;

	r = command_reap(run, true);
	if (r != 0)
		return r < 0 ? r : 0;
	run->r.signalled = 1;
	kill(pid, SIGTERM);
	limit = now_ns() + (uint64_t)run->o.term_wait_ms * NS_PER_MS;
	while ((r = command_reap(run, true)) == 0 && now_ns() < limit) {
		int e = run_poll(run, 10);

		if (e < 0 && !err)
			err = e;
	}
	if (r == 0) {
		run->r.signalled = 2;
		kill(pid, SIGKILL);
		r = command_reap(run, false);
	}
	return r < 0 && !err ? r : err;
}

static int run_finish(struct run *run, int err,
		      struct sp_record_run_result *out)
{
	size_t size;

	run->r.elapsed_ns = run->start_ns ? now_ns() - run->start_ns : 0;
	if (out) {
		size = out->size < sizeof(run->r) ? out->size : sizeof(run->r);
		run->r.size = size;
		memcpy(out, &run->r, size);
	}
	return err;
}

/* Launch suspended, attach on exec, let it exec. */
static int command_start(struct run *run, char *const argv[],
			 char *const envp[])
{
	int err = sp_launch_suspended(argv[0], argv, envp, &run->launch);

	if (err < 0)
		return err;
	run->r.pid = sp_launch_pid(run->launch);
	err = sp_recorder_attach(run->rec, run->r.pid, SP_ATTACH_ON_EXEC);
	if (err < 0)
		return err;
	run_started(run);
	err = sp_launch_resume(run->launch);
	if (err < 0)
		command_reap(run, false); /* the child _exit()s at once */
	return err < 0 ? err : 0;
}

int sp_recorder_run_command(struct sp_recorder *recorder, char *const argv[],
			    char *const envp[],
			    const struct sp_record_run_opts *opts,
			    struct sp_record_run_result *out)
{
	struct run run;
	int err = run_init(&run, recorder, opts, out), end_err;

	if (err)
		return err;
	if (!argv || !argv[0])
		return -EINVAL;
	err = command_start(&run, argv, envp);
	if (!err)
		err = run_loop(&run);
	if (run.launch && run.start_ns) {
		end_err = command_end(&run);
		if (!err)
			err = end_err;
	}
	/* Kills and reaps a child that never resumed; nothing else is left. */
	sp_launch_free(run.launch);
	return run_finish(&run, err, out);
}

int sp_recorder_run_pid(struct sp_recorder *recorder, int32_t pid,
			const struct sp_record_run_opts *opts,
			struct sp_record_run_result *out)
{
	struct run run;
	int err = run_init(&run, recorder, opts, out);

	if (err)
		return err;
	if (pid <= 0)
		return -EINVAL;
	run.r.pid = pid;
	err = sp_recorder_attach(recorder, pid, SP_ATTACH_STOP_WHILE_ATTACHING);
	if (err == SP_EXITED)
		err = SP_ETARGETGONE;
	if (err >= 0) {
		run_started(&run);
		err = run_loop(&run);
	}
	return run_finish(&run, err < 0 ? err : 0, out);
}
