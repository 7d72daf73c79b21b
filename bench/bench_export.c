/* SPDX-License-Identifier: MIT */
/* Benchmark: exporting a 1M-sample spool to each format (seconds, peak RSS). */

/*
 * usage: bench_export [--samples N] [--dir DIR] [--format NAME]
 *                     [--spool PATH]
 * Writes one spool (default 1,000,000 samples, 8 threads, 4096 distinct
 * stacks of depth 8..23 pinned to this executable's code, so symbols are
 * real; one frame in eight is a kernel frame), then exports it once per
 * format (or only NAME) in a forked child whose sink counts the bytes and
 * drops them. --spool PATH exports PATH instead, writing it first (and
 * keeping it) when it does not exist, so one format can be profiled under
 * perf without the writing. A child's wall time, its CPU time (user +
 * system: steadier than wall time on a loaded machine), its peak RSS
 * (wait4 rusage) and the output size (sent back through a pipe) are one
 * JSON line:
 *   {"bench":"export","format":"folded","samples":1000000,"seconds":..,
 *    "cpu_s":..,"peak_rss_kib":..,"out_bytes":..,"target_s":2,
 *    "target_rss_kib":262144,"ok":true}
 * Formats the library does not build (exit 3 in the child) are skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "formats.h"
#include "self_spool.h"

#define TARGET_S 2.0
#define TARGET_RSS_KIB (256 * 1024)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_spool(const char *path, uint64_t samples)
{
	struct sp_frame frames[24];
	struct sp_module m;
	struct sp_writer *w;
	struct sp_sink *sink;
	char mpath[512];
	uint64_t i, span;
	uint32_t id, d, depth, s;
	int err;

	/* The r-x mapping of this executable. */
	if (self_spool_module((uint64_t)(uintptr_t)&write_spool, 1000, &m,
			      mpath, sizeof(mpath)))
		return -ENOENT;
	span = m.end - m.start;
	err = sp_sink_open_file(path, NULL, &sink);
	if (!err)
		err = sp_writer_new(sink, NULL, &w);
	if (!err)
		err = sp_writer_module(w, &m, &id);
	for (i = 0; !err && i < samples; i++) {
		s = (uint32_t)((i * 2654435761u) >> 20) & 4095;
		depth = 8 + s % 16;
		for (d = 0; d < depth; d++) {
			uint64_t off = ((s >> (d % 12)) * 977 + d * 131) % span;

			frames[d] = self_spool_frame(&m, id, m.start + off);
		}
		if (s % 8 == 0)
			frames[0] = (struct sp_frame){
				.abs_ip = 0xffffffff81000000ull + s * 64,
				.file_relative_ip =
					0xffffffff81000000ull + s * 64,
				.module_id = SP_NO_MODULE,
				.mode = SP_FRAME_KERNEL,
			};
		err = sp_writer_sample(w, 1000000 + i * 1000000, 1000,
				       1000 + (int32_t)(i % 8), frames, depth);
	}
	if (!err)
		err = sp_writer_finish(w);
	sp_writer_free(w);
	return err;
}

static int count_write(void *ctx, const void *buf, size_t len)
{
	(void)buf;
	*(uint64_t *)ctx += len;
	return 0;
}

/*
 * Child: export into a counting sink, send the byte count up @fd; exit 0,
 * 3 (format not built) or 1.
 */
static void child(const char *path, enum sp_export_format fmt, int fd)
{
	static const struct sp_sink_ops ops = { .write = count_write };
	struct sp_sink *sink;
	uint64_t bytes = 0;
	int err;

	if (sp_sink_new_callback(&ops, &bytes, NULL, &sink))
		_exit(1);
	err = sp_export(path, fmt, sink, NULL);
	sp_sink_free(sink);
	if (!err && write(fd, &bytes, sizeof(bytes)) != sizeof(bytes))
		err = -EIO;
	_exit(err == -EOPNOTSUPP ? 3 : err ? 1 : 0);
}

static void print_result(const char *name, uint64_t samples, double sec,
			 const struct rusage *ru, uint64_t bytes, bool ok)
{
	double cpu =
		(double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
		(double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;

	ok = ok && sec <= TARGET_S && ru->ru_maxrss <= TARGET_RSS_KIB;
	printf("{\"bench\":\"export\",\"format\":\"%s\",\"samples\":%" PRIu64
	       ",\"seconds\":%.3f,\"cpu_s\":%.3f,\"peak_rss_kib\":%ld,"
	       "\"out_bytes\":%" PRIu64 ",\"target_s\":%.1f,"
	       "\"target_rss_kib\":%d,\"ok\":%s}\n",
	       name, samples, sec, cpu, ru->ru_maxrss, bytes, TARGET_S,
	       TARGET_RSS_KIB, ok ? "true" : "false");
	fflush(stdout);
}

static int run_one(const char *path, uint64_t samples, const char *name,
		   enum sp_export_format fmt)
{
	struct rusage ru;
	uint64_t bytes = 0;
	double t0, sec;
	int status, fds[2];
	pid_t pid;

	if (pipe(fds) < 0)
		return -errno;
	t0 = now_s();
	pid = fork();
	if (pid == 0)
		child(path, fmt, fds[1]);
	close(fds[1]);
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
		close(fds[0]);
		return -errno;
	}
	sec = now_s() - t0;
	if (read(fds[0], &bytes, sizeof(bytes)) != sizeof(bytes))
		bytes = 0;
	close(fds[0]);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		return 0;
	status = WIFEXITED(status) && !WEXITSTATUS(status);
	print_result(name, samples, sec, &ru, bytes, status);
	return status ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	uint64_t samples = 1000000;
	const char *dir = "/tmp", *only = NULL, *spool = NULL, *name;
	enum sp_export_format fmt;
	char path[512];
	size_t i;
	int err = 0, a;

	for (a = 1; a + 1 < argc; a += 2) {
		if (!strcmp(argv[a], "--samples"))
			samples = strtoull(argv[a + 1], NULL, 10);
		else if (!strcmp(argv[a], "--dir"))
			dir = argv[a + 1];
		else if (!strcmp(argv[a], "--format"))
			only = argv[a + 1];
		else if (!strcmp(argv[a], "--spool"))
			spool = argv[a + 1];
	}
	if (only && spulse_export_format_parse(only, &fmt)) {
		fprintf(stderr, "bench_export: unknown format %s\n", only);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/bench_export.%d.spool", dir,
		 (int)getpid());
	if (spool && access(spool, F_OK) == 0)
		err = 0;
	else
		err = write_spool(spool ? spool : path, samples);
	if (err) {
		fprintf(stderr, "bench_export: writing %s: %s\n",
			spool ? spool : path, sp_strerror(err));
		return 1;
	}
	for (i = 0; (name = spulse_export_format_at(i, &fmt)); i++)
		if ((!only || !strcmp(only, name)) &&
		    run_one(spool ? spool : path, samples, name, fmt))
			err = 1;
	if (!spool)
		unlink(path);
	return err ? 1 : 0;
}
