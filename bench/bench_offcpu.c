/* SPDX-License-Identifier: MIT */
/* Off-CPU recording cost beside perf record -e context-switches (issue 16). */

/*
 * bench_offcpu [--seconds S] [--kind mutex|sleep|pipe|fsync] [--runs N]
 *
 * Records tests/workloads' wl_offcpu (default: two threads fighting over
 * a mutex, the most switches per second) in off-CPU mode, then under
 * `perf record -e context-switches --call-graph dwarf,32768` on the same
 * workload, alternating, and prints one JSON line per run:
 *
 *   switches          context switches sampled (ours: switch-out
 *                     samples; perf: its samples)
 *   recorder_cpu_s    ours: getrusage(RUSAGE_SELF) around the recording
 *                     (this process does nothing else); perf: wait4()
 *                     rusage of perf minus the workload's own (wl_finish)
 *   cpu_us_per_switch recorder CPU per context switch
 *   blocked_s         ours: synthesised samples x the interval
 *   bytes             spool / perf.data size
 *   bytes_per_blocked_s
 * The machine is shared: compare the two tools' ratio within one run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse.h>

#include "perf_util.h"
#include "workload_paths.h"

extern char **environ;

/* The spool header's interval at the default 999 Hz. */
#define INTERVAL_S 1001e-6

static void print_line(const char *tool, const char *kind, uint64_t switches,
		       double cpu, double blocked, uint64_t bytes,
		       uint64_t lost)
{
	printf("{\"bench\":\"offcpu\",\"tool\":\"%s\",\"workload\":"
	       "\"wl_offcpu %s\",\"switches\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"recorder_cpu_s\":%.4f,"
	       "\"cpu_us_per_switch\":%.2f,\"blocked_s\":%.3f,\"bytes\":%" PRIu64
	       ",\"bytes_per_blocked_s\":%.0f}\n",
	       tool, kind, switches, lost, cpu,
	       switches ? 1e6 * cpu / (double)switches : 0, blocked, bytes,
	       blocked > 0 ? (double)bytes / blocked : 0);
	fflush(stdout);
}

static int run_ours(const char *dir, const char *secs, const char *kind,
		    double *blocked_out)
{
	const char *argv[] = { WL_OFFCPU_PATH, secs, kind, NULL };
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec = NULL;
	struct sp_launch *launch = NULL;
	char path[512];
	double cpu0 = bench_self_cpu_s(), cpu, blocked;
	int status = 0, r, err;

	snprintf(path, sizeof(path), "%s/bench-offcpu.spool", dir);
	o.mode = SP_PROFILE_OFF_CPU;
	err = sp_recorder_open(path, &o, &rec);
	if (!err)
		err = sp_launch_suspended(
			argv[0], (char *const *)(uintptr_t)argv, NULL, &launch);
	if (!err) {
		r = sp_recorder_attach(rec, sp_launch_pid(launch),
				       SP_ATTACH_ON_EXEC);
		err = r < 0 ? r : sp_launch_resume(launch);
	}
	while (!err && (r = sp_launch_try_wait(launch, &status)) == 0) {
		err = sp_recorder_poll(rec, 100, NULL);
		if (err == -EINTR)
			err = 0;
	}
	if (!err)
		err = sp_recorder_finish(rec);
	if (rec)
		sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	sp_launch_free(launch);
	cpu = bench_self_cpu_s() - cpu0;
	if (err) {
		fprintf(stderr, "bench_offcpu: ours: %s\n", sp_strerror(err));
		return err;
	}
	blocked = (double)sum.samples_synthesized * INTERVAL_S;
	print_line("stackpulse", kind, sum.sample_events, cpu, blocked,
		   bench_file_bytes(path), sum.lost_events + sum.switch_lost);
	*blocked_out = blocked;
	unlink(path);
	return 0;
}

static int run_perf(const char *dir, const char *secs, const char *kind,
		    double blocked)
{
	char data[512], rus[512], envv[600], home[600];
	const char *argv[] = {
		"perf",		"record",      "-q", "-e", "context-switches",
		"--call-graph", "dwarf,32768", "-o", data, "--",
		WL_OFFCPU_PATH, secs,	       kind, NULL
	};
	static char *env[1024];
	struct rusage ru;
	uint64_t samples = 0, lost = 0;
	double target;
	size_t n = 0, i;
	int status, err;

	snprintf(data, sizeof(data), "%s/bench-offcpu.perf.data", dir);
	snprintf(rus, sizeof(rus), "%s/bench-offcpu.rusage", dir);
	snprintf(envv, sizeof(envv), "WL_RUSAGE_FILE=%s", rus);
	snprintf(home, sizeof(home), "HOME=%s", dir);
	for (i = 0; environ[i] && n < 1020; i++)
		env[n++] = environ[i];
	env[n++] = envv;
	env[n++] = home;
	env[n] = NULL;
	err = bench_run_child(argv, env, &status, &ru);
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		unlink(data);
		return err < 0 ? err : -ECHILD;
	}
	target = bench_read_target_cpu(rus);
	err = bench_perf_stats(data, dir, &samples, &lost);
	/* perf's bytes per blocked second: the same blocked time as ours. */
	print_line("perf", kind, samples,
		   bench_rusage_s(&ru) - (target > 0 ? target : 0), blocked,
		   bench_file_bytes(data), lost);
	unlink(data);
	return err;
}

int main(int argc, char **argv)
{
	const char *secs = "2", *kind = "mutex";
	char dir[] = "/tmp/bench-offcpu-XXXXXX";
	int runs = 2, i, err = 0;
	double blocked = 0;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			secs = argv[i + 1];
		else if (!strcmp(argv[i], "--kind"))
			kind = argv[i + 1];
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
	}
	if (!mkdtemp(dir))
		return 1;
	for (i = 0; i < runs && !err; i++) {
		err = run_ours(dir, secs, kind, &blocked);
		if (!err && bench_have_perf())
			err = run_perf(dir, secs, kind, blocked);
	}
	rmdir(dir);
	return err ? 1 : 0;
}
