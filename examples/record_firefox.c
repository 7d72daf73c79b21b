/* SPDX-License-Identifier: MIT */
/* record_firefox: record a command and write a Firefox Profiler file of it. */

/*
 * Usage: record_firefox OUT.json.gz COMMAND [ARGS...]
 *
 * The command is launched suspended, recorded from its first instruction
 * (SP_ATTACH_ON_EXEC) into the spool OUT.json.gz.spool until it exits,
 * and that spool is then exported with sp_export(SP_EXPORT_FIREFOX):
 * gzip-compressed JSON in the Firefox Profiler's processed format, which
 * https://profiler.firefox.com opens with "Load a profile from file". The
 * spool is kept next to the output so other formats can be exported from
 * it later (`spulse export`).
 *
 * The spool header gets the wall-clock start time, so the profile's
 * timeline shows real times.
 *
 * Exit status: 0 written, 1 failed, 2 usage error.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <stackpulse.h>

#define SAMPLE_HZ 999

static void print_error(const char *what, int err)
{
	fprintf(stderr, "record_firefox: %s: %s\n", what, sp_strerror(err));
	if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "record_firefox: perf_event_open refused; "
				"see /proc/sys/kernel/perf_event_paranoid "
				"(docs/explanation/permissions.md)\n");
}

static uint64_t wall_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Launches @argv, records it into @spool until it exits. */
static int record_command(const char *spool, char **argv, int *status)
{
	struct sp_recorder_opts opts = {
		.size = sizeof(opts),
		.sample_hz = SAMPLE_HZ,
		.start_timestamp_us = wall_clock_us(),
		/* .sample_interval_us 0: derived from the rate */
	};
	struct sp_record_run_result res = { .size = sizeof(res) };
	struct sp_recorder *rec;
	int err, finish_err;

	err = sp_recorder_open(spool, &opts, &rec);
	if (err < 0)
		return err;
	/* Launch, attach on exec, poll until it exits, reap it. */
	err = sp_recorder_run_command(rec, argv, NULL, NULL, &res);
	*status = res.wait_status;
	finish_err = sp_recorder_finish(rec); /* drains and flushes: always */
	sp_recorder_close(rec);
	return err < 0 ? err : finish_err;
}

/* Exports @spool to @out in the Firefox Profiler format. */
static int export_firefox(const char *spool, const char *out)
{
	struct sp_export_opts opts = {
		.size = sizeof(opts),
		.title = "record_firefox",
	};
	struct sp_sink *sink;
	/* The profile takes its name only once complete; never removed. */
	int err = sp_sink_open_file_atomic(out, NULL, &sink);

	if (err < 0)
		return err;
	err = sp_export(spool, SP_EXPORT_FIREFOX, sink, &opts);
	if (err >= 0)
		err = sp_sink_finish(sink);
	sp_sink_free(sink);
	return err;
}

int main(int argc, char **argv)
{
	char *spool;
	int err, status = 0;

	if (argc < 3) {
		fprintf(stderr,
			"usage: record_firefox OUT.json.gz COMMAND [ARGS]\n");
		return 2;
	}
	spool = malloc(strlen(argv[1]) + sizeof(".spool"));
	if (!spool)
		return 1;
	strcpy(spool, argv[1]);
	strcat(spool, ".spool");
	err = record_command(spool, argv + 2, &status);
	if (err < 0) {
		print_error(argv[2], err);
	} else {
		if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
			fprintf(stderr, "record_firefox: %s exited with %d\n",
				argv[2], WEXITSTATUS(status));
		err = export_firefox(spool, argv[1]);
		if (err == -EOPNOTSUPP)
			fprintf(stderr, "record_firefox: this libstackpulse "
					"cannot write Firefox profiles yet\n");
		if (err < 0)
			print_error(argv[1], err);
		else
			printf("wrote %s (spool: %s)\n", argv[1], spool);
	}
	free(spool);
	return err < 0;
}
