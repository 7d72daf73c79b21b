/* SPDX-License-Identifier: MIT */
/* Benchmark: the same chunk stream through the fd sink and the io_uring sink. */

/*
 * usage: bench_sink [--bytes N] [--chunk N] [--reps N] [--dir DIR]
 *                   [--depth N] [--sync]
 * Appends N bytes (default 1 GiB) in chunks of 64 KiB to a fresh file in
 * DIR (default /tmp), once per sink and repetition, alternating sinks so
 * page-cache writeback of one run disturbs the others alike. Per sink, the
 * best repetition (by wall time) is one JSON line:
 *   {"bench":"sink","sink":"uring","bytes":..,"chunk":65536,
 *    "write_s":..,"wall_s":..,"mb_s":..,"caller_cpu_s":..,
 *    "process_cpu_s":..,"reps":3}
 * write_s covers the sp_sink_write() calls, wall_s adds the final flush
 * (all data in the page cache; with --sync on disk). caller_cpu_s is the
 * CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID): what the
 * recorder's thread pays. process_cpu_s (getrusage RUSAGE_SELF) includes
 * the kernel's iou-wrk threads, which do the page-cache copy for io_uring.
 * A last line compares io_uring with the fd sink:
 *   {"bench":"sink_ratio","mb_s_uring_over_fd":..,
 *    "caller_cpu_uring_over_fd":..,"process_cpu_uring_over_fd":..}
 * Sinks: fd (write(2)), uring (default options, or --depth), uring_pwrite
 * (the uring sink's pwrite fallback, SP_SINK_URING_PWRITE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

enum {
	SINK_FD,
	SINK_URING,
	SINK_URING_PWRITE,
	NSINKS
};

static const char *const sink_names[NSINKS] = { "fd", "uring", "uring_pwrite" };

struct cfg {
	uint64_t bytes;
	size_t chunk;
	int reps;
	uint32_t depth;
	bool sync;
	const char *dir;
};

struct result {
	double write_s, wall_s, caller_cpu_s, process_cpu_s;
};

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double process_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int open_sink(const struct cfg *c, int kind, const char *path,
		     struct sp_sink **out)
{
	struct sp_sink_opts o = { .size = sizeof(o) };
	int fd, err;

	o.uring_queue_depth = c->depth;
	o.flags = c->sync ? SP_SINK_URING_DATASYNC : 0;
	if (kind == SINK_URING_PWRITE)
		o.flags |= SP_SINK_URING_PWRITE;
	if (kind != SINK_FD)
		return sp_sink_open_uring(path, &o, out);
	if (c->sync)
		return sp_sink_open_file(path, NULL, out);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	o.flags = SP_SINK_CLOSE_FD;
	err = sp_sink_new_fd(fd, &o, out);
	if (err)
		close(fd);
	return err;
}

/* One run: every chunk differs in its first 8 bytes. */
static int run(const struct cfg *c, int kind, unsigned char *chunk,
	       struct result *r)
{
	char path[4096];
	struct sp_sink *sink;
	double t0, cpu0, pcpu0;
	uint64_t done, n = 0;
	int err;

	snprintf(path, sizeof(path), "%s/bench_sink.%d.tmp", c->dir,
		 (int)getpid());
	err = open_sink(c, kind, path, &sink);
	if (err)
		return err;
	t0 = clock_s(CLOCK_MONOTONIC);
	cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	pcpu0 = process_cpu_s();
	for (done = 0; done < c->bytes && !err; done += c->chunk) {
		memcpy(chunk, &n, sizeof(n));
		n++;
		err = sp_sink_write(sink, chunk, c->chunk);
	}
	r->write_s = clock_s(CLOCK_MONOTONIC) - t0;
	/* The fd sink's finish does not flush: flush every sink first. */
	if (!err)
		err = sp_sink_flush(sink);
	if (!err)
		err = sp_sink_finish(sink);
	r->wall_s = clock_s(CLOCK_MONOTONIC) - t0;
	r->caller_cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	r->process_cpu_s = process_cpu_s() - pcpu0;
	sp_sink_free(sink);
	unlink(path);
	return err;
}

static void print_result(const struct cfg *c, int kind, const struct result *r)
{
	uint64_t total = (c->bytes + c->chunk - 1) / c->chunk * c->chunk;

	printf("{\"bench\":\"sink\",\"sink\":\"%s\",\"bytes\":%" PRIu64
	       ",\"chunk\":%zu,\"sync\":%s,\"write_s\":%.4f,\"wall_s\":%.4f,"
	       "\"mb_s\":%.1f,\"caller_cpu_s\":%.4f,\"process_cpu_s\":%.4f,"
	       "\"reps\":%d}\n",
	       sink_names[kind], total, c->chunk, c->sync ? "true" : "false",
	       r->write_s, r->wall_s, (double)total / 1e6 / r->wall_s,
	       r->caller_cpu_s, r->process_cpu_s, c->reps);
}

static void print_ratio(const struct result *best)
{
	const struct result *fd = &best[SINK_FD], *u = &best[SINK_URING];

	printf("{\"bench\":\"sink_ratio\",\"mb_s_uring_over_fd\":%.3f,"
	       "\"caller_cpu_uring_over_fd\":%.3f,"
	       "\"process_cpu_uring_over_fd\":%.3f}\n",
	       fd->wall_s / u->wall_s, u->caller_cpu_s / fd->caller_cpu_s,
	       u->process_cpu_s / fd->process_cpu_s);
}

static int parse_args(int argc, char **argv, struct cfg *c)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--sync")) {
			c->sync = true;
			continue;
		}
		if (!v)
			return -1;
		if (!strcmp(argv[i], "--bytes"))
			c->bytes = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--chunk"))
			c->chunk = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--reps"))
			c->reps = atoi(v);
		else if (!strcmp(argv[i], "--depth"))
			c->depth = (uint32_t)atoi(v);
		else if (!strcmp(argv[i], "--dir"))
			c->dir = v;
		else
			return -1;
		i++;
	}
	return c->bytes && c->chunk && c->reps > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct cfg c = { 1ull << 30, 64 * 1024, 3, 0, false, "/tmp" };
	struct result best[NSINKS], r;
	unsigned char *chunk;
	int rep, kind, err;

	if (parse_args(argc, argv, &c)) {
		fprintf(stderr,
			"usage: bench_sink [--bytes N] [--chunk N] "
			"[--reps N] [--dir DIR] [--depth N] [--sync]\n");
		return 2;
	}
	chunk = malloc(c.chunk);
	if (!chunk)
		return 1;
	memset(chunk, 'x', c.chunk);
	for (rep = 0; rep < c.reps; rep++) {
		for (kind = 0; kind < NSINKS; kind++) {
			err = run(&c, kind, chunk, &r);
			if (err) {
				fprintf(stderr, "bench_sink: %s: %s\n",
					sink_names[kind], sp_strerror(err));
				return 1;
			}
			if (rep == 0 || r.wall_s < best[kind].wall_s)
				best[kind] = r;
		}
	}
	for (kind = 0; kind < NSINKS; kind++)
		print_result(&c, kind, &best[kind]);
	print_ratio(best);
	free(chunk);
	return 0;
}
