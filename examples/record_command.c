/* SPDX-License-Identifier: MIT */
/* record_command: the tutorial's recorder: run a command and sample it into a spool. */

/*
 * Usage: record_command SPOOL COMMAND [ARGS...]
 *
 * The command is started suspended just before its execve, the recorder
 * attaches with SP_ATTACH_ON_EXEC (counters switch on at the exec, so the
 * first instruction of the new program is covered) and only then is the
 * command let go. The loop polls the recorder, which drains the kernel's
 * rings, unwinds each sample and appends it to the spool, until the
 * command exits; sp_recorder_finish() then drains what is left.
 * docs/tutorial.md walks through this file. The same loop, with a time
 * limit and the end of a command that outlives it, is one call:
 * sp_recorder_run_command() (stackpulse/record_run.h; record_firefox.c
 * uses it).
 *
 * Exit status: 0 recorded, 1 failed, 2 usage error.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include <stackpulse.h>

#define SAMPLE_HZ 999

static uint64_t wall_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Step 1a: a recorder writing @path, with a wall-clock anchor. */
static int open_recorder(const char *path, struct sp_recorder **rec)
{
	struct sp_recorder_opts opts = {
		.size = sizeof(opts),
		.sample_hz = SAMPLE_HZ,
		.start_timestamp_us = wall_clock_us(),
		/* .sample_interval_us 0: derived from the rate (1001 us) */
	};

	return sp_recorder_open(path, &opts, rec);
}

/* Step 1b: start the command suspended, attach, then let it exec. */
static int start_command(struct sp_recorder *rec, char **argv,
			 struct sp_launch **launch)
{
	int err = sp_launch_suspended(argv[0], argv, NULL, launch);

	if (err < 0)
		return err;
	err = sp_recorder_attach(rec, sp_launch_pid(*launch),
				 SP_ATTACH_ON_EXEC);
	if (err < 0)
		return err;
	return sp_launch_resume(*launch);
}

/* Step 1c: poll until the command has exited; @status is its wait status. */
static int record_until_exit(struct sp_recorder *rec, struct sp_launch *launch,
			     int *status)
{
	int err, reaped;

	do {
		err = sp_recorder_poll(rec, 100, NULL);
		if (err < 0 && err != -EINTR)
			return err;
		reaped = sp_launch_try_wait(launch, status);
	} while (reaped == 0);
	return reaped < 0 ? reaped : 0;
}

static void print_summary(const struct sp_recorder *rec, int status)
{
	struct sp_recording_summary sum = { .size = sizeof(sum) };

	sp_recorder_summary(rec, &sum);
	printf("recorded %llu samples, %llu lost, %llu truncated stacks\n",
	       (unsigned long long)sum.samples,
	       (unsigned long long)sum.lost_events,
	       (unsigned long long)sum.truncated_frame_markers);
	if (WIFEXITED(status))
		printf("command exited with status %d\n", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		printf("command killed by signal %d\n", WTERMSIG(status));
}

static void print_error(const char *what, int err)
{
	fprintf(stderr, "record_command: %s: %s\n", what, sp_strerror(err));
	if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "record_command: perf_event_open refused; "
				"see /proc/sys/kernel/perf_event_paranoid "
				"(docs/explanation/permissions.md)\n");
}

int main(int argc, char **argv)
{
	struct sp_recorder *rec;
	struct sp_launch *launch = NULL;
	int err, finish_err, status = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: record_command SPOOL COMMAND [ARGS]\n");
		return 2;
	}
	err = open_recorder(argv[1], &rec);
	if (err < 0) {
		print_error(argv[1], err);
		return 1;
	}
	err = start_command(rec, argv + 2, &launch);
	if (err >= 0)
		err = record_until_exit(rec, launch, &status);
	/* Always finish: it drains the rings and flushes the spool. */
	finish_err = sp_recorder_finish(rec);
	if (err >= 0)
		err = finish_err;
	if (err >= 0)
		print_summary(rec, status);
	else
		print_error(argv[2], err);
	sp_recorder_close(rec);
	sp_launch_free(launch); /* kills the command if it never ran */
	return err < 0;
}
