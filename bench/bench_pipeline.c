/* SPDX-License-Identifier: MIT */
/* Benchmark: recorder pipeline throughput from a replayed fixture. */

/*
 * Captures a fixture once (two CPU-bound workloads built without frame
 * pointers, recorded at --hz with an inline recorder), then replays it
 * without perf through an inline recorder and threaded recorders with 1,
 * 2 and 4 unwinder threads, writing a real spool file each time. One
 * JSON line per mode: samples per wall second, process CPU microseconds
 * per sample (every thread of this process, so the readers and workers
 * count) and the ratio to inline mode measured in the same run. The
 * machine's sampling rate limit does not cap these numbers: the replay
 * feeds records as fast as the pipeline takes them.
 *
 *   bench_pipeline [--seconds S] [--hz HZ] [--reps N] [--quick]
 *                  [--inline-only] [--kernel] [--save-fixture FILE]
 *                  [--fixture FILE] [--keep-spools DIR] [--attach PID]
 *
 * --inline-only replays in inline mode only (one thread, so callgrind
 * counts every instruction of the pipeline deterministically).
 *
 * --kernel records (and replays) with kernel callchains.
 *
 * --attach PID captures that running process (say python3.12 -X perf)
 * instead of the two workloads; it is left running.
 *
 * --save-fixture writes the captured fixture to FILE; --fixture replays
 * FILE instead of capturing (no perf needed); --keep-spools leaves each
 * mode's last spool as DIR/replay-THREADS.spool. Together they compare
 * two builds: the spools of one fixture must be byte-identical.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse.h>

#include "bench.h"
#include "harness.h"
#include "workload_paths.h"

#define TARGET_SAMPLES_PER_CPU_S 200000.0

/* Recorder flags of the capture, which every replay must use too. */
static uint32_t rec_flags;

static pid_t spawn(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(path, path, "60", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int capture(struct sp__vec *fix, double seconds, uint32_t hz,
		   pid_t target, uint64_t *live)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp__capture *cap = NULL;
	struct sp_recorder *rec;
	pid_t a = target ? target : spawn(WL_THREADS_PATH);
	pid_t b = target ? 0 : spawn(WL_SHAREDLIB_PATH);
	uint64_t end;
	int err;

	usleep(100000);
	o.flags = rec_flags;
	o.sample_hz = hz;
	o.stack_size = 8192;
	err = sp_recorder_open("/tmp/bench-pipeline-live.spool", &o, &rec);
	if (!err)
		err = sp_recorder_attach(rec, a, SP_ATTACH_RUNNING);
	if (err >= 0 && b)
		err = sp_recorder_attach(rec, b, SP_ATTACH_RUNNING);
	if (err >= 0)
		err = sp__capture_begin(rec, fix, &cap);
	end = bench_now_ns() + (uint64_t)(seconds * 1e9);
	while (err >= 0 && bench_now_ns() < end)
		err = sp_recorder_poll(rec, 20, NULL);
	if (err >= 0) {
		sp_recorder_disable(rec);
		err = sp_recorder_flush(rec);
	}
	if (cap) { /* ended whatever happened: it holds the recorder's tap */
		int cerr = sp__capture_end(cap);

		err = err < 0 ? err : cerr;
	}
	sp_recorder_summary(rec, &sum);
	*live = sum.samples;
	sp_recorder_close(rec);
	if (!target) {
		kill(a, SIGKILL);
		kill(b, SIGKILL);
		waitpid(a, NULL, 0);
		waitpid(b, NULL, 0);
	}
	unlink("/tmp/bench-pipeline-live.spool");
	return err < 0 ? err : 0;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct result {
	double wall;
	double cpu;  /* process CPU minus the harness's feeding */
	double feed; /* the harness's feeding (copying records into rings) */
	uint64_t samples;
};

static int replay_once(const struct sp__vec *fix, uint32_t threads,
		       const char *keep_dir, struct result *res)
{
	char path[4096];

	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec;
	struct sp__replay *rp = NULL;
	double c0 = 0;
	uint64_t t0 = 0;
	int err;

	o.threads = threads;
	o.flags = rec_flags;
	if (keep_dir)
		snprintf(path, sizeof(path), "%s/replay-%u.spool", keep_dir,
			 threads);
	else
		snprintf(path, sizeof(path), "/tmp/bench-pipeline.spool");
	err = sp_recorder_open(path, &o, &rec);
	if (err)
		return err;
	err = sp__replay_open(rec, fix->data, fix->len, &rp);
	if (!err) { /* timed from here: opening and loading are setup */
		c0 = cpu_s();
		t0 = bench_now_ns();
		err = sp__replay_run(rp, 512, NULL);
	}
	if (!err)
		err = sp_recorder_finish(rec);
	res->wall = (double)(bench_now_ns() - t0) / 1e9;
	res->cpu = cpu_s() - c0;
	if (rp) { /* the harness's copying is not pipeline work */
		res->feed = (double)sp__replay_feed_cpu_ns(rp) / 1e9;
		res->cpu -= res->feed;
	}
	sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	sp__replay_free(rp);
	res->samples = sum.samples;
	if (!keep_dir)
		unlink(path);
	return err;
}

static void report(uint32_t threads, const struct result *r,
		   const struct result *inline_r)
{
	struct json_line j;
	char name[32];
	double per_cpu = r->samples / r->cpu;

	snprintf(name, sizeof(name), threads ? "threads_%u" : "inline",
		 threads);
	json_begin(&j, "pipeline_replay", name);
	json_u64(&j, "threads", threads);
	json_u64(&j, "samples", r->samples);
	json_num(&j, "wall_s", r->wall);
	json_num(&j, "samples_per_s", r->samples / r->wall);
	json_num(&j, "cpu_us_per_sample", r->cpu * 1e6 / r->samples);
	json_num(&j, "samples_per_cpu_s", per_cpu);
	json_num(&j, "feed_cpu_s_excluded", r->feed);
	json_num(&j, "speedup_vs_inline", inline_r->wall / r->wall);
	json_num(&j, "target_samples_per_cpu_s", TARGET_SAMPLES_PER_CPU_S);
	json_bool(&j, "meets_target", per_cpu >= TARGET_SAMPLES_PER_CPU_S);
	json_end(&j);
}

/* Writes or reads a whole fixture file (@fix is a byte vector). */
static int fixture_save(const struct sp__vec *fix, const char *path)
{
	FILE *f = fopen(path, "wb");
	int err = 0;

	if (!f)
		return -errno;
	if (fwrite(fix->data, 1, fix->len, f) != fix->len)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int fixture_load(struct sp__vec *fix, const struct sp__mem *mem,
			const char *path)
{
	FILE *f = fopen(path, "rb");
	char buf[65536];
	size_t n;
	int err = 0;

	if (!f)
		return -errno;
	while (!err && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		err = sp__vec_reserve(fix, mem, n);
		if (!err) {
			memcpy((char *)fix->data + fix->len, buf, n);
			fix->len += n;
		}
	}
	if (!err && ferror(f))
		err = -EIO;
	fclose(f);
	return err;
}

int main(int argc, char **argv)
{
	static const uint32_t modes[] = { 0, 1, 2, 4 };
	struct result best[4], r;
	struct sp__vec fix;
	struct sp__mem mem;
	const char *save = NULL, *load = NULL, *keep = NULL;
	double seconds = 3.0;
	uint32_t hz = 10000;
	uint64_t live = 0;
	pid_t target = 0;
	int reps = 3, nmodes = 4, i, m, err;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--hz") && i + 1 < argc)
			hz = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--quick"))
			seconds = 0.5, reps = 1;
		else if (!strcmp(argv[i], "--inline-only"))
			nmodes = 1;
		else if (!strcmp(argv[i], "--kernel"))
			rec_flags |= SP_RECORDER_KERNEL;
		else if (!strcmp(argv[i], "--save-fixture") && i + 1 < argc)
			save = argv[++i];
		else if (!strcmp(argv[i], "--fixture") && i + 1 < argc)
			load = argv[++i];
		else if (!strcmp(argv[i], "--keep-spools") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--attach") && i + 1 < argc &&
			 atoi(argv[i + 1]) > 0)
			target = (pid_t)atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: %s [--seconds S] [--hz HZ] "
				"[--reps N] [--quick] [--inline-only] [--kernel] "
				"[--save-fixture FILE] [--fixture FILE] "
				"[--keep-spools DIR] [--attach PID]\n",
				argv[0]);
			return 2;
		}
	}
	sp__mem_init(&mem, NULL);
	sp__vec_init(&fix, 1);
	if (load) {
		err = fixture_load(&fix, &mem, load);
		if (err) {
			fprintf(stderr, "%s: %s\n", load, sp_strerror(err));
			return 1;
		}
	} else {
		err = capture(&fix, seconds, hz, target, &live);
		if (err) {
			fprintf(stderr, "capture: %s\n", sp_strerror(err));
			return err == -EACCES || err == -EPERM ? 77 : 1;
		}
	}
	if (save) {
		err = fixture_save(&fix, save);
		if (err) {
			fprintf(stderr, "%s: %s\n", save, sp_strerror(err));
			return 1;
		}
	}
	fprintf(stderr, "fixture: %zu bytes, %llu live samples\n", fix.len,
		(unsigned long long)live);
	for (m = 0; m < nmodes; m++) {
		best[m].wall = 1e30;
		for (i = 0; i < reps; i++) {
			err = replay_once(&fix, modes[m], keep, &r);
			if (err) {
				fprintf(stderr, "replay: %s\n",
					sp_strerror(err));
				return 1;
			}
			if (r.wall < best[m].wall)
				best[m] = r;
		}
		report(modes[m], &best[m], &best[0]);
	}
	sp__vec_fini(&fix, &mem);
	return 0;
}
