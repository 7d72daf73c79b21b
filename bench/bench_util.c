/* SPDX-License-Identifier: MIT */
/* bench_spool helpers: best-of timing, JSON lines, RSS probes, baselines. */

/*
 * Peak RSS of one operation inside a long-lived process: writing "5" to
 * /proc/self/clear_refs resets VmHWM to the current VmRSS (Linux >= 4.0),
 * so VmHWM after the operation minus VmRSS before it is the operation's own
 * peak growth. The reset also lowers getrusage()'s ru_maxrss, so the
 * process-wide peak is tracked across resets by rss_process_peak_kib().
 *
 * The memcpy and read() baselines run in the same process right next to
 * the measured code, so the "vs_memcpy" ratios stay meaningful when other
 * jobs share the CPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int bench_best(bench_fn fn, void *ctx, int reps, double min_s, double *sec)
{
	double best = HUGE_VAL;
	int rep, err;

	for (rep = 0; rep < reps; rep++) {
		uint64_t start = bench_now_ns(), calls = 0;
		double elapsed;

		do {
			err = fn(ctx);
			if (err)
				return err;
			calls++;
			elapsed = (double)(bench_now_ns() - start) * 1e-9;
		} while (elapsed < min_s);
		if (elapsed / (double)calls < best)
			best = elapsed / (double)calls;
	}
	*sec = best;
	return 0;
}

static void json_raw(struct json_line *j, const char *key, const char *val)
{
	size_t room = sizeof(j->buf) - j->len;
	int n = snprintf(j->buf + j->len, room, "%s\"%s\":%s",
			 j->len > 1 ? "," : "", key, val);

	/* Keys and values are short and ours; a line never gets near 2 KiB. */
	if (n > 0 && (size_t)n < room)
		j->len += (size_t)n;
}

void json_begin(struct json_line *j, const char *bench, const char *scenario)
{
	j->buf[0] = '{';
	j->len = 1;
	json_str(j, "bench", bench);
	if (scenario)
		json_str(j, "scenario", scenario);
}

/* Strings are identifiers and paths we chose: no escaping needed. */
void json_str(struct json_line *j, const char *key, const char *val)
{
	char quoted[512];

	snprintf(quoted, sizeof(quoted), "\"%s\"", val);
	json_raw(j, key, quoted);
}

void json_u64(struct json_line *j, const char *key, uint64_t val)
{
	char num[32];

	snprintf(num, sizeof(num), "%llu", (unsigned long long)val);
	json_raw(j, key, num);
}

/* JSON has no NaN or infinity: a measurement that produced one is null. */
void json_num(struct json_line *j, const char *key, double val)
{
	char num[64];

	if (!isfinite(val))
		snprintf(num, sizeof(num), "null");
	else if (fabs(val) >= 1e4)
		snprintf(num, sizeof(num), "%.0f", val);
	else
		snprintf(num, sizeof(num), "%.4g", val);
	json_raw(j, key, num);
}

void json_bool(struct json_line *j, const char *key, bool val)
{
	json_raw(j, key, val ? "true" : "false");
}

void json_end(struct json_line *j)
{
	printf("%.*s}\n", (int)j->len, j->buf);
	fflush(stdout);
}

long rss_field_kib(const char *field)
{
	size_t flen = strlen(field);
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, flen) == 0 && line[flen] == ':')
			kib = strtol(line + flen + 1, NULL, 10);
	fclose(f);
	return kib;
}

/* Peak RSS before the last clear_refs reset (which ru_maxrss forgets). */
static long process_peak_kib;

long rss_process_peak_kib(void)
{
	long hwm = rss_field_kib("VmHWM");

	return hwm > process_peak_kib ? hwm : process_peak_kib;
}

long rss_peak_start(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	process_peak_kib = rss_process_peak_kib();
	n = write(fd, "5", 1);
	close(fd);
	return n == 1 ? rss_field_kib("VmRSS") : -1;
}

long rss_peak_delta(long start_kib)
{
	long peak = rss_field_kib("VmHWM");

	if (start_kib < 0 || peak < 0)
		return -1;
	return peak > start_kib ? peak - start_kib : 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n =
			pread(fd, (char *)buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int bench_read_file(const char *path, void **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t size;
	void *buf;
	int err;

	if (fd < 0)
		return -errno;
	size = lseek(fd, 0, SEEK_END);
	buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
	err = buf ? read_all(fd, buf, (size_t)size) : -ENOMEM;
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*data = buf;
	*len = (size_t)size;
	return 0;
}

struct copy_ctx {
	const void *src;
	void *dst;
	size_t len;
	int fd;
};

static int copy_memcpy(void *arg)
{
	struct copy_ctx *c = arg;

	memcpy(c->dst, c->src, c->len);
	/* Keep the copy: the compiler may not drop a store we never read. */
	__asm__ __volatile__("" : : "r"(c->dst) : "memory");
	return 0;
}

static int copy_read(void *arg)
{
	struct copy_ctx *c = arg;

	return read_all(c->fd, c->dst, c->len);
}

static void baseline_print(const struct bench_file *f, double memcpy_s,
			   double read_s)
{
	struct json_line j;
	double mb = (double)f->file_bytes / 1e6;

	json_begin(&j, "baseline", f->scenario);
	json_u64(&j, "bytes", f->file_bytes);
	json_num(&j, "memcpy_mb_s", mb / memcpy_s);
	json_num(&j, "read_mb_s", mb / read_s);
	json_end(&j);
}

int bench_baseline(const struct bench_opts *o, struct bench_file *f)
{
	struct copy_ctx c = { 0 };
	double memcpy_s = 0, read_s = 0;
	void *src;
	int err;

	err = bench_read_file(f->path, &src, &c.len);
	if (err)
		return err;
	c.src = src;
	c.dst = malloc(c.len + 1);
	c.fd = open(f->path, O_RDONLY | O_CLOEXEC);
	err = !c.dst ? -ENOMEM : c.fd < 0 ? -errno : 0;
	if (!err)
		err = bench_best(copy_memcpy, &c, o->reps, o->min_s, &memcpy_s);
	if (!err)
		err = bench_best(copy_read, &c, o->reps, o->min_s, &read_s);
	if (!err) {
		f->memcpy_mb_s = (double)c.len / 1e6 / memcpy_s;
		baseline_print(f, memcpy_s, read_s);
	}
	if (c.fd >= 0)
		close(c.fd);
	free(c.dst);
	free(src);
	return err;
}
