/* SPDX-License-Identifier: MIT */
/* Benchmark: recorder pipeline throughput from a replayed fixture. */

/*
 * Captures a fixture once (two CPU-bound workloads built without frame
 * pointers, recorded at --hz with an inline recorder), then replays it
 * without perf through an inline recorder and threaded recorders with 1,
 * 2 and 4 unwinder threads, spread over R virtual rings for each R of
 * --rings (default 2,16,64,128; 0 = the captured rings as they were),
 * writing a real spool file each time. Modes alternate within each
 * repetition, so load on the machine hits them alike; each figure is the
 * best of --reps, and the main ones are also given as the median of the
 * repetitions (median_*: a shared machine's load makes the best a lucky
 * draw). One JSON line per mode and R:
 *   - wall throughput and its ratio to inline mode's (the wall time of
 *     the harness's feeding taken out: copying 8 KiB stacks into rings
 *     is not pipeline work, and the pipeline's threads keep working
 *     while the harness feeds, which this does not credit them for);
 *   - CPU per sample of the whole process (the harness's feeding taken
 *     out) and its ratio to inline mode's;
 *   - CPU per sample by thread: the serial stage (the sequencer, the
 *     thread calling sp_recorder_poll), the readers, the unwinders;
 *   - futex calls, other sleep/wake calls, voluntary and involuntary
 *     context switches per sample (every thread);
 *   - the 1-minute load average (the worst seen): the machine is shared.
 * The machine's sampling rate limit does not cap these numbers: the
 * replay feeds records as fast as the pipeline takes them.
 *
 *   bench_pipeline [--seconds S] [--hz HZ] [--reps N] [--quick]
 *                  [--inline-only] [--kernel] [--save-fixture FILE]
 *                  [--fixture FILE] [--keep-spools DIR] [--rings R,...]
 *                  [--modes 0,T,...] [--attach PID]
 *
 * --inline-only replays in inline mode only (one thread, so callgrind
 * counts every instruction of the pipeline deterministically); --modes
 * picks the modes (0 = inline, first: the ratios' base, then unwinder
 * thread counts; default 0,1,2,4).
 *
 * --kernel records (and replays) with kernel callchains.
 *
 * --attach PID captures that running process (say python3.12 -X perf)
 * instead of the two workloads; it is left running.
 *
 * --save-fixture writes the captured fixture to FILE; --fixture replays
 * FILE instead of capturing (no perf needed); --keep-spools leaves each
 * mode's last spool as DIR/replay-THREADS-RR.spool. Together they compare
 * two builds: the spools of one fixture and R must be byte-identical.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse.h>

#include "bench.h"
#include "harness.h"
#include "task_stats.h"
#include "workload_paths.h"

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

#define REPS_MAX 15

/* One replay's figures; over repetitions, each is the best seen. */
struct result {
	double wall;
	double cpu;    /* process CPU minus the harness's feeding */
	double feed;   /* the harness's feeding (copying records into rings) */
	double serial; /* the sequencer (calling) thread, feeding excluded */
	double readers;
	double workers;
	double other;
	double futex; /* system calls of the pipeline's threads */
	double wakes; /* eventfd writes and epoll/poll waits */
	double vcsw;  /* context switches, every thread */
	double ivcsw;
	double flt_serial; /* minor page faults by role (serial: with feeding) */
	double flt_readers;
	double flt_workers;
	double load1; /* load average when the replay started */
	uint64_t samples;
	uint64_t stalls; /* sp_pipeline_stats: reader stalls, records copied */
	uint64_t copied;
	uint64_t behind; /* jobs the workers wrote */
};

static void keep_best(struct result *best, const struct result *r)
{
	double *b = &best->wall;
	const double *v = &r->wall;
	size_t i, n = offsetof(struct result, load1) / sizeof(double);

	for (i = 0; i < n; i++)
		if (v[i] < b[i])
			b[i] = v[i];
	if (r->load1 > best->load1)
		best->load1 = r->load1; /* the worst load seen */
	best->samples = r->samples;
	best->stalls = r->stalls;
	best->copied = r->copied;
	best->behind = r->behind;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Field by field, the median of @n results (each figure on its own). */
static void median_of(const struct result *rs, int n, struct result *med)
{
	size_t f, nf = offsetof(struct result, load1) / sizeof(double);
	double v[REPS_MAX];
	int i;

	*med = rs[0];
	for (f = 0; f < nf; f++) {
		for (i = 0; i < n; i++)
			v[i] = (&rs[i].wall)[f];
		qsort(v, (size_t)n, sizeof(v[0]), dbl_cmp);
		(&med->wall)[f] = n % 2 ? v[n / 2] :
					  (v[n / 2 - 1] + v[n / 2]) / 2;
	}
}

static void measured(struct result *res, const struct task_stats *d,
		     const struct sp__pipeline_syscalls *sc)
{
	res->serial = d->cpu_ns[TASK_MAIN] / 1e9 - res->feed;
	res->readers = d->cpu_ns[TASK_READER] / 1e9;
	res->workers = d->cpu_ns[TASK_WORKER] / 1e9;
	res->other = d->cpu_ns[TASK_OTHER] / 1e9;
	res->futex = (double)sc->futex;
	res->wakes = (double)sc->eventfd;
	res->flt_serial = (double)d->minflt[TASK_MAIN];
	res->flt_readers = (double)d->minflt[TASK_READER];
	res->flt_workers = (double)d->minflt[TASK_WORKER];
	res->vcsw = 0;
	res->ivcsw = 0;
	for (int i = 0; i < TASK_ROLES; i++) {
		res->vcsw += (double)d->vcsw[i];
		res->ivcsw += (double)d->ivcsw[i];
	}
}

static int replay_once(const struct sp__vec *fix, uint32_t threads,
		       uint32_t rings, const char *keep_dir, struct result *res)
{
	char path[4096];

	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_pipeline_stats st = { .size = sizeof(st) };
	struct sp__pipeline_syscalls sc = { 0 };
	struct task_stats before, after, d;
	struct sp_recorder *rec;
	struct sp__replay *rp = NULL;
	double c0 = 0;
	uint64_t t0 = 0;
	int err;

	memset(res, 0, sizeof(*res));
	o.threads = threads;
	o.flags = rec_flags;
	if (keep_dir)
		snprintf(path, sizeof(path), "%s/replay-%u-R%u.spool", keep_dir,
			 threads, rings);
	else
		snprintf(path, sizeof(path), "/tmp/bench-pipeline.spool");
	err = sp_recorder_open(path, &o, &rec);
	if (err)
		return err;
	err = sp__replay_open(rec, fix->data, fix->len, rings, &rp);
	res->load1 = task_load1();
	if (!err) { /* timed from here: opening and loading are setup */
		task_stats_read(&before);
		c0 = cpu_s();
		t0 = bench_now_ns();
		err = sp__replay_run(rp, 512, NULL);
	}
	if (!err)
		err = sp_recorder_finish(rec);
	res->wall = (double)(bench_now_ns() - t0) / 1e9;
	res->cpu = cpu_s() - c0;
	if (rp) { /* the harness's copying is not pipeline work */
		task_stats_read(&after); /* the threads live until close */
		task_stats_diff(&after, &before, &d);
		sp__replay_syscalls(rp, &sc);
		res->feed = (double)sp__replay_feed_cpu_ns(rp) / 1e9;
		res->cpu -= res->feed;
		res->wall -= (double)sp__replay_feed_wall_ns(rp) / 1e9;
		measured(res, &d, &sc);
	}
	sp_recorder_summary(rec, &sum);
	if (threads && !sp_recorder_pipeline_stats(rec, &st)) {
		res->stalls = st.reader_stalls;
		res->copied = st.records_copied;
		res->behind = st.jobs_written_by_workers;
	}
	sp_recorder_close(rec);
	sp__replay_free(rp);
	res->samples = sum.samples;
	if (!keep_dir)
		unlink(path);
	return err;
}

/*
 * The targets (docs/explanation/pipeline.md): a serial stage of
 * at most 0.15 us per sample, threaded CPU at most 1.3x inline's, at most
 * 0.05 futex calls and context switches per sample, 2 workers at least
 * 1.5x inline's wall throughput.
 */
#define TARGET_SERIAL_US 0.15
#define TARGET_CPU_RATIO 1.3
#define TARGET_PER_SAMPLE 0.05
#define TARGET_SPEEDUP_2 1.5

static void report(uint32_t threads, uint32_t rings, const struct result *r,
		   const struct result *inline_r, const struct result *med,
		   const struct result *inline_med)
{
	struct json_line j;
	char name[48];
	double n = r->samples ? (double)r->samples : 1;
	double per_cpu = r->samples / r->cpu;

	if (threads)
		snprintf(name, sizeof(name), "threads_%u_R%u", threads, rings);
	else
		snprintf(name, sizeof(name), "inline_R%u", rings);
	json_begin(&j, "pipeline_replay", name);
	json_u64(&j, "threads", threads);
	json_u64(&j, "rings", rings);
	json_u64(&j, "samples", r->samples);
	json_num(&j, "wall_s", r->wall);
	json_num(&j, "samples_per_s", r->samples / r->wall);
	json_num(&j, "speedup_vs_inline", inline_r->wall / r->wall);
	json_num(&j, "cpu_us_per_sample", r->cpu * 1e6 / n);
	json_num(&j, "cpu_ratio_vs_inline", r->cpu / inline_r->cpu);
	json_num(&j, "samples_per_cpu_s", per_cpu);
	json_num(&j, "serial_us_per_sample", r->serial * 1e6 / n);
	json_num(&j, "readers_us_per_sample", r->readers * 1e6 / n);
	json_num(&j, "workers_us_per_sample", r->workers * 1e6 / n);
	json_num(&j, "other_us_per_sample", r->other * 1e6 / n);
	json_num(&j, "futex_per_sample", r->futex / n);
	json_num(&j, "wake_calls_per_sample", r->wakes / n);
	json_num(&j, "vcsw_per_sample", r->vcsw / n);
	json_num(&j, "ivcsw_per_sample", r->ivcsw / n);
	json_num(&j, "faults_serial_per_sample", r->flt_serial / n);
	json_num(&j, "faults_readers_per_sample", r->flt_readers / n);
	json_num(&j, "faults_workers_per_sample", r->flt_workers / n);
	json_num(&j, "feed_cpu_s_excluded", r->feed);
	json_num(&j, "load1", r->load1);
	json_num(&j, "median_speedup_vs_inline", inline_med->wall / med->wall);
	json_num(&j, "median_cpu_us_per_sample", med->cpu * 1e6 / n);
	json_num(&j, "median_cpu_ratio_vs_inline", med->cpu / inline_med->cpu);
	json_num(&j, "median_serial_us_per_sample", med->serial * 1e6 / n);
	json_num(&j, "median_futex_per_sample", med->futex / n);
	json_num(&j, "median_vcsw_per_sample", med->vcsw / n);
	json_u64(&j, "reader_stalls", r->stalls);
	json_u64(&j, "records_copied", r->copied);
	json_u64(&j, "jobs_written_by_workers", r->behind);
	if (threads) {
		json_bool(&j, "meets_serial",
			  r->serial * 1e6 / n <= TARGET_SERIAL_US);
		json_bool(&j, "meets_cpu_ratio",
			  r->cpu <= TARGET_CPU_RATIO * inline_r->cpu);
		json_bool(&j, "meets_futex", r->futex / n <= TARGET_PER_SAMPLE);
		json_bool(&j, "meets_vcsw", r->vcsw / n <= TARGET_PER_SAMPLE);
		if (threads == 2)
			json_bool(&j, "meets_speedup",
				  inline_r->wall / r->wall >= TARGET_SPEEDUP_2);
	}
	json_end(&j);
}

/*
 * Parses "2,16,64" (each at most @max) into @out (at most 16 entries);
 * returns the count, 0 when malformed.
 */
static size_t parse_list(const char *s, uint32_t *out, uint32_t max)
{
	size_t n = 0;
	char *end;

	for (;;) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v > max || n == 16)
			return 0;
		out[n++] = (uint32_t)v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
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
	uint32_t modes[16] = { 0, 1, 2, 4 }, rings[16] = { 2, 16, 64, 128 };
	static struct result best[16], med[16], runs[16][REPS_MAX];
	struct result r;
	size_t nrings = 4, k;
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
		else if (!strcmp(argv[i], "--modes") && i + 1 < argc) {
			nmodes = (int)parse_list(argv[++i], modes,
						 SP_RECORDER_THREADS_MAX);
			if (!nmodes || modes[0] != 0) {
				fprintf(stderr, "--modes: 0 first, then "
						"thread counts\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--rings") && i + 1 < argc) {
			nrings = parse_list(argv[++i], rings,
					    SP__REPLAY_RINGS_MAX);
			if (!nrings) {
				fprintf(stderr, "--rings: a list of 0..%u\n",
					SP__REPLAY_RINGS_MAX);
				return 2;
			}
		} else if (!strcmp(argv[i], "--attach") && i + 1 < argc &&
			   atoi(argv[i + 1]) > 0) {
			target = (pid_t)atoi(argv[++i]);
		} else {
			fprintf(stderr,
				"usage: %s [--seconds S] [--hz HZ] "
				"[--reps N] [--quick] [--inline-only] [--kernel] "
				"[--save-fixture FILE] [--fixture FILE] "
				"[--keep-spools DIR] [--rings R,R,...] "
				"[--modes 0,T,...] [--attach PID]\n",
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
	if (reps < 1 || reps > REPS_MAX) {
		fprintf(stderr, "--reps: 1 to %d\n", REPS_MAX);
		return 2;
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
	for (k = 0; k < nrings; k++) {
		/* Modes alternate within a repetition: load hits all alike. */
		for (m = 0; m < nmodes; m++) {
			memset(&best[m], 0x7f, sizeof(best[m]));
			best[m].load1 = 0;
		}
		for (i = 0; i < reps; i++)
			for (m = 0; m < nmodes; m++) {
				err = replay_once(&fix, modes[m], rings[k],
						  keep, &r);
				if (err) {
					fprintf(stderr, "replay: %s\n",
						sp_strerror(err));
					return 1;
				}
				keep_best(&best[m], &r);
				runs[m][i] = r;
			}
		for (m = 0; m < nmodes; m++)
			median_of(runs[m], reps, &med[m]);
		for (m = 0; m < nmodes; m++)
			report(modes[m], rings[k], &best[m], &best[0], &med[m],
			       &med[0]);
	}
	sp__vec_fini(&fix, &mem);
	return 0;
}
