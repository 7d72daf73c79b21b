/* SPDX-License-Identifier: MIT */
/* bench_spool internals: options, timing, JSON lines, RSS probes, readers. */
#ifndef SP_BENCH_H
#define SP_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every measurement is "best of @reps repetitions", and each repetition
 * repeats the operation until @min_s seconds have passed, so short
 * operations are timed over many iterations. On a noisy shared machine the
 * best repetition is the one least disturbed by other load. Each result is
 * one JSON object on one stdout line.
 */

struct bench_opts {
	bool quick;
	int reps;
	double min_s;
	const char *only;      /* run just this scenario (NULL: all) */
	uint64_t bulk_samples; /* samples of the bulk run (0: skip it) */
	const char *dir;       /* scratch directory for spool files */
};

/* A spool file written for the reader benches, with its baselines. */
struct bench_file {
	const char *scenario;
	const char *path;
	const char *compression; /* "none" or "zstd" */
	uint64_t samples;
	uint64_t raw_bytes; /* uncompressed spool bytes */
	uint64_t file_bytes;
	double memcpy_mb_s; /* baseline: memcpy of the raw spool bytes */
};

/* Targets reported (never enforced). */
#define TARGET_WRITER_SAMPLES_PER_S 5e6
#define TARGET_BYTES_PER_SAMPLE 4.0
#define TARGET_SNAPSHOT_MB_S 500.0
#define TARGET_REPLAY_RSS_KIB (64 * 1024)

uint64_t bench_now_ns(void);

/* One timed operation: returns 0 or a negative code (which stops timing). */
typedef int (*bench_fn)(void *ctx);

/*
 * bench_best times @fn and stores the best seconds per call in *@sec.
 * @param reps repetitions (best one wins); @param min_s seconds per rep.
 * @return 0 or the first error of @fn.
 */
int bench_best(bench_fn fn, void *ctx, int reps, double min_s, double *sec);

/* A JSON object being built; json_end() prints it as one line. */
struct json_line {
	char buf[2048];
	size_t len;
};

void json_begin(struct json_line *j, const char *bench, const char *scenario);
void json_str(struct json_line *j, const char *key, const char *val);
void json_u64(struct json_line *j, const char *key, uint64_t val);
void json_num(struct json_line *j, const char *key, double val);
void json_bool(struct json_line *j, const char *key, bool val);
void json_end(struct json_line *j);

/* /proc/self/status field in KiB ("VmRSS", "VmHWM"), or -1. */
long rss_field_kib(const char *field);

/*
 * rss_peak_start resets the peak RSS to the current RSS (clear_refs 5)
 * and returns the current RSS in KiB, or -1 if the kernel refuses.
 * rss_peak_delta returns the peak growth since then in KiB, or -1.
 */
long rss_peak_start(void);
long rss_peak_delta(long start_kib);

/* Peak RSS of the whole process so far in KiB, despite resets. */
long rss_process_peak_kib(void);

/* Reads @path into a malloc'ed buffer. @return 0 or -errno. */
int bench_read_file(const char *path, void **data, size_t *len);

/* Baselines for @f: memcpy and read() of its bytes; prints one line. */
int bench_baseline(const struct bench_opts *o, struct bench_file *f);

/* Reader benches (bench_read.c); each prints one line. */
int bench_snapshot(const struct bench_opts *o, struct bench_file *f);
int bench_replay(const struct bench_opts *o, struct bench_file *f);
int bench_tail(const struct bench_opts *o, struct bench_file *f);

/*
 * bench_replay_rss runs Replay open + full iteration of @f in a fresh
 * process (fork + exec of this program with --replay-rss-child) so the
 * peak RSS is the replay's alone; the child prints the line.
 */
int bench_replay_rss(const struct bench_file *f);
int bench_replay_rss_child(const char *scenario, const char *path);

#endif /* SP_BENCH_H */
