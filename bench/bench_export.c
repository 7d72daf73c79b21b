/* SPDX-License-Identifier: MIT */
/* Benchmark: exporting a 1M-sample spool to each format (seconds, peak RSS). */

/*
 * usage: bench_export [--samples N] [--dir DIR]
 * Writes one spool (default 1,000,000 samples, 8 threads, 4096 distinct
 * stacks of depth 8..23 pinned to this executable's code, so symbols are
 * real; one frame in eight is a kernel frame), then exports it once per
 * format in a forked child writing to /dev/null. A child's wall time and
 * its peak RSS (wait4 rusage) are one JSON line:
 *   {"bench":"export","format":"folded","samples":1000000,"seconds":..,
 *    "peak_rss_kib":..,"out_bytes":..,"target_s":2,"target_rss_kib":262144,
 *    "ok":true}
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

#include "self_spool.h"

#define TARGET_S 2.0
#define TARGET_RSS_KIB (256 * 1024)

static const struct {
	const char *name;
	enum sp_export_format format;
} formats[] = {
	{ "folded", SP_EXPORT_FOLDED },
	{ "flamegraph", SP_EXPORT_FLAMEGRAPH },
	{ "icicle", SP_EXPORT_ICICLE },
	{ "speedscope", SP_EXPORT_SPEEDSCOPE },
	{ "firefox", SP_EXPORT_FIREFOX },
	{ "pprof", SP_EXPORT_PPROF },
};

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

/* Child: export to /dev/null; exit 0, 3 (not built) or 1. */
static void child(const char *path, enum sp_export_format fmt)
{
	struct sp_sink *sink;
	int fd = open("/dev/null", O_WRONLY), err;

	if (fd < 0 || sp_sink_new_fd(fd, SP_SINK_CLOSE_FD, NULL, &sink))
		_exit(1);
	err = sp_export(path, fmt, sink, NULL);
	sp_sink_free(sink);
	_exit(err == -EOPNOTSUPP ? 3 : err ? 1 : 0);
}

static int run_one(const char *path, uint64_t samples, size_t i)
{
	struct rusage ru;
	double t0 = now_s(), sec;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		child(path, formats[i].format);
	if (wait4(pid, &status, 0, &ru) < 0)
		return -errno;
	sec = now_s() - t0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		return 0;
	printf("{\"bench\":\"export\",\"format\":\"%s\",\"samples\":%" PRIu64
	       ",\"seconds\":%.3f,\"peak_rss_kib\":%ld,\"target_s\":%.1f,"
	       "\"target_rss_kib\":%d,\"ok\":%s}\n",
	       formats[i].name, samples, sec, ru.ru_maxrss, TARGET_S,
	       TARGET_RSS_KIB,
	       WIFEXITED(status) && !WEXITSTATUS(status) && sec <= TARGET_S &&
			       ru.ru_maxrss <= TARGET_RSS_KIB ?
		       "true" :
		       "false");
	fflush(stdout);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

int main(int argc, char **argv)
{
	uint64_t samples = 1000000;
	const char *dir = "/tmp";
	char path[512];
	size_t i;
	int err = 0, a;

	for (a = 1; a + 1 < argc; a += 2) {
		if (!strcmp(argv[a], "--samples"))
			samples = strtoull(argv[a + 1], NULL, 10);
		else if (!strcmp(argv[a], "--dir"))
			dir = argv[a + 1];
	}
	snprintf(path, sizeof(path), "%s/bench_export.%d.spool", dir,
		 (int)getpid());
	err = write_spool(path, samples);
	if (err) {
		fprintf(stderr, "bench_export: writing %s: %s\n", path,
			sp_strerror(err));
		return 1;
	}
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (run_one(path, samples, i))
			err = 1;
	unlink(path);
	return err ? 1 : 0;
}
