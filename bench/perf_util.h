/* SPDX-License-Identifier: MIT */
/* Running `perf` as the baseline of a benchmark and reading its results. */
#ifndef SP_BENCH_PERF_UTIL_H
#define SP_BENCH_PERF_UTIL_H

#include <stdint.h>
#include <sys/resource.h>

/*
 * fork + exec @argv (PATH searched) with @envp (NULL: this environment);
 * waits and stores the child's wait status and wait4() rusage (which
 * includes the children it reaped). Returns 0 or -errno.
 */
int bench_run_child(const char *const argv[], char *const envp[], int *status,
		    struct rusage *ru);

/*
 * perf's sample count and lost samples from `perf report --stats` on
 * @data, with HOME=@home (no ~/.debug writes). The lost count is the
 * event's own LOST_SAMPLES figure when perf prints one (perf 6.x, per
 * event), else perf's "lost P%" share of all generated samples turned
 * back into a count. Returns 0 or -errno.
 */
int bench_perf_stats(const char *data, const char *home, uint64_t *samples,
		     uint64_t *lost);

/* Whether a `perf` binary runs here. */
int bench_have_perf(void);

/* user + sys seconds of @ru. */
double bench_rusage_s(const struct rusage *ru);

/* user + sys seconds of this process so far. */
double bench_self_cpu_s(void);

/* The size of the file at @path; 0 if it cannot be stat'ed. */
uint64_t bench_file_bytes(const char *path);

/*
 * The "user sys" line wl_finish() wrote to @path, as seconds; -1 if
 * missing or malformed. The file is removed.
 */
double bench_read_target_cpu(const char *path);

#endif /* SP_BENCH_PERF_UTIL_H */
