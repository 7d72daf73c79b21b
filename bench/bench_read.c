/* SPDX-License-Identifier: MIT */
/* bench_spool reader benches: Snapshot open, Replay iterate, Tail, Replay RSS. */

/*
 * Each bench checks the sample count it saw against the scenario's, so a
 * reader that silently drops records fails the run instead of looking
 * fast. MB/s figures use the uncompressed spool size, also for zstd files,
 * so they compare directly with the memcpy baseline of the same bytes.
 *
 * The Replay memory figure for the bulk run comes from a fresh process:
 * this program re-executes itself with --replay-rss-child, and the child
 * reports its own VmHWM. A plain fork() would inherit the parent's pages
 * (and ru_maxrss survives exec), which would hide the Replay's own peak.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse.h>

#include "bench.h"

/* Polls in a row that return nothing although more bytes are visible. */
#define TAIL_MAX_IDLE_POLLS 1000

static int snapshot_pass(void *arg)
{
	const struct bench_file *f = arg;
	struct sp_snapshot *snap;
	int err;

	err = sp_snapshot_open(f->path, NULL, &snap);
	if (err)
		return err;
	if (sp_snapshot_sample_count(snap) != f->samples)
		err = -EBADMSG;
	sp_snapshot_close(snap);
	return err;
}

static int replay_open_pass(void *arg)
{
	const struct bench_file *f = arg;
	struct sp_replay *replay;
	int err;

	err = sp_replay_open(f->path, NULL, &replay);
	if (err)
		return err;
	if (sp_replay_sample_count(replay) != f->samples)
		err = -EBADMSG;
	sp_replay_close(replay);
	return err;
}

struct replay_ctx {
	struct sp_replay *replay;
	uint64_t samples;
};

static int replay_iterate_pass(void *arg)
{
	struct replay_ctx *c = arg;
	struct sp_sample sample;
	uint64_t n = 0;
	int err;

	err = sp_replay_rewind(c->replay);
	if (err)
		return err;
	while ((err = sp_replay_next(c->replay, &sample)) == 1)
		n++;
	if (err < 0)
		return err;
	return n == c->samples ? 0 : -EBADMSG;
}

static int tail_pass(void *arg)
{
	const struct bench_file *f = arg;
	struct sp_tail *tail;
	uint64_t total = 0;
	int n, idle = 0, err;

	err = sp_tail_open(f->path, NULL, &tail);
	if (err)
		return err;
	for (;;) {
		n = sp_tail_poll(tail);
		if (n < 0 || ++idle > TAIL_MAX_IDLE_POLLS)
			break;
		if (n > 0)
			idle = 0;
		total += (uint64_t)n;
		if (n == 0 && !sp_tail_has_more(tail))
			break;
	}
	sp_tail_close(tail);
	if (n < 0)
		return n;
	return total == f->samples ? 0 : -EBADMSG;
}

/* One untimed pass of @fn between RSS probes: its own peak growth. */
static long measure_rss(bench_fn fn, void *ctx)
{
	long start = rss_peak_start();

	if (fn(ctx))
		return -1;
	return rss_peak_delta(start);
}

static void line_begin(struct json_line *j, const char *bench,
		       const struct bench_file *f)
{
	json_begin(j, bench, f->scenario);
	json_str(j, "compression", f->compression);
	json_u64(j, "samples", f->samples);
	json_u64(j, "bytes", f->raw_bytes);
	json_u64(j, "file_bytes", f->file_bytes);
}

static void line_rate(struct json_line *j, const struct bench_file *f,
		      double sec)
{
	double mb_s = (double)f->raw_bytes / 1e6 / sec;

	json_num(j, "samples_per_s", (double)f->samples / sec);
	json_num(j, "ns_per_sample", sec * 1e9 / (double)f->samples);
	json_num(j, "mb_s", mb_s);
	json_num(j, "vs_memcpy", mb_s / f->memcpy_mb_s);
}

static void line_rss(struct json_line *j, long kib)
{
	if (kib >= 0)
		json_u64(j, "rss_delta_kib", (uint64_t)kib);
}

int bench_snapshot(const struct bench_opts *o, struct bench_file *f)
{
	struct json_line j;
	long rss = measure_rss(snapshot_pass, f);
	double sec;
	int err;

	err = bench_best(snapshot_pass, f, o->reps, o->min_s, &sec);
	if (err)
		return err;
	line_begin(&j, "snapshot_open", f);
	line_rate(&j, f, sec);
	line_rss(&j, rss);
	json_num(&j, "target", TARGET_SNAPSHOT_MB_S);
	json_bool(&j, "meets_target",
		  (double)f->raw_bytes / 1e6 / sec >= TARGET_SNAPSHOT_MB_S);
	json_end(&j);
	return 0;
}

/* Replay open + one full iteration, for the RSS probe. */
static int replay_full_pass(void *arg)
{
	const struct bench_file *f = arg;
	struct replay_ctx c = { .samples = f->samples };
	int err;

	err = sp_replay_open(f->path, NULL, &c.replay);
	if (err)
		return err;
	err = replay_iterate_pass(&c);
	sp_replay_close(c.replay);
	return err;
}

int bench_replay(const struct bench_opts *o, struct bench_file *f)
{
	struct replay_ctx c = { .samples = f->samples };
	double open_s = 0, iter_s = 0;
	struct json_line j;
	long rss = measure_rss(replay_full_pass, f);
	int err;

	err = bench_best(replay_open_pass, f, o->reps, o->min_s, &open_s);
	if (!err)
		err = sp_replay_open(f->path, NULL, &c.replay);
	if (!err) {
		err = bench_best(replay_iterate_pass, &c, o->reps, o->min_s,
				 &iter_s);
		sp_replay_close(c.replay);
	}
	if (err)
		return err;
	line_begin(&j, "replay_iterate", f);
	line_rate(&j, f, iter_s);
	json_num(&j, "open_mb_s", (double)f->raw_bytes / 1e6 / open_s);
	json_num(&j, "open_samples_per_s", (double)f->samples / open_s);
	line_rss(&j, rss);
	json_end(&j);
	return 0;
}

int bench_tail(const struct bench_opts *o, struct bench_file *f)
{
	struct json_line j;
	long rss = measure_rss(tail_pass, f);
	double sec;
	int err;

	err = bench_best(tail_pass, f, o->reps, o->min_s, &sec);
	if (err)
		return err;
	line_begin(&j, "tail_iterate", f);
	line_rate(&j, f, sec);
	line_rss(&j, rss);
	json_end(&j);
	return 0;
}

int bench_replay_rss(const struct bench_file *f)
{
	int status;
	pid_t pid;

	/* Unflushed output would be printed twice, once by the child. */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execl("/proc/self/exe", "bench_spool", "--replay-rss-child",
		      f->scenario, f->path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -ECHILD;
}

int bench_replay_rss_child(const char *scenario, const char *path)
{
	struct sp_replay *replay;
	struct sp_sample sample;
	struct json_line j;
	uint64_t n = 0;
	long peak;
	int err;

	err = sp_replay_open(path, NULL, &replay);
	if (err)
		return err;
	while ((err = sp_replay_next(replay, &sample)) == 1)
		n++;
	sp_replay_close(replay);
	if (err < 0)
		return err;
	peak = rss_field_kib("VmHWM");
	json_begin(&j, "replay_rss", scenario);
	json_u64(&j, "samples", n);
	json_num(&j, "peak_rss_kib", (double)peak);
	json_num(&j, "target", TARGET_REPLAY_RSS_KIB);
	json_bool(&j, "meets_target",
		  peak >= 0 && peak <= TARGET_REPLAY_RSS_KIB);
	json_end(&j);
	return 0;
}
