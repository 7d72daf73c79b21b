/* SPDX-License-Identifier: MIT */
/* minimal_profiler: attach to a running process for N seconds, print its hottest stacks. */

/*
 * Usage: minimal_profiler PID [SECONDS [TOP]]
 *
 * Nothing touches the disk: the recorder writes the spool into a buffer
 * of ours through a callback sink, and a Snapshot reads that buffer back.
 * The target is attached with SP_ATTACH_STOP_WHILE_ATTACHING (stopped for
 * the moment its memory maps are read, then resumed), sampled for
 * SECONDS (default 5) or until it exits, and the TOP (default 5) stacks
 * are printed leaf first with the names the Symbolizer finds.
 *
 * Exit status: 0 done, 1 failed, 2 usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

#define MAX_FRAMES 128

/* The spool bytes, appended by the callback sink. */
struct buffer {
	unsigned char *data;
	size_t len, cap;
};

struct stack_count {
	int32_t pid;
	uint32_t stack;
	uint64_t count;
};

static int buffer_write(void *ctx, const void *bytes, size_t len)
{
	struct buffer *b = ctx;
	unsigned char *grown;
	size_t cap = b->cap ? b->cap : 65536;

	while (cap - b->len < len)
		cap *= 2;
	if (cap != b->cap) {
		grown = realloc(b->data, cap);
		if (!grown)
			return -ENOMEM; /* the writer keeps the chunk */
		b->data = grown;
		b->cap = cap;
	}
	memcpy(b->data + b->len, bytes, len);
	b->len += len;
	return 0;
}

static const struct sp_sink_ops buffer_ops = { .write = buffer_write };

/* Records @pid into @buf for @seconds or until it exits. */
static int record(int32_t pid, double seconds, struct buffer *buf)
{
	struct sp_recorder_opts opts = { .size = sizeof(opts) };
	struct sp_record_run_opts run = {
		.size = sizeof(run),
		.duration_ms = (uint64_t)(seconds * 1000),
	};
	struct sp_recorder *rec;
	struct sp_sink *sink;
	int err, finish_err;

	err = sp_sink_new_callback(&buffer_ops, buf, NULL, &sink);
	if (err < 0)
		return err;
	err = sp_recorder_open_sink(sink, &opts, &rec); /* takes the sink */
	if (err < 0)
		return err;
	/* Attach (stopped only while its maps are read), poll, stop. */
	err = sp_recorder_run_pid(rec, pid, &run, NULL);
	finish_err = sp_recorder_finish(rec);
	sp_recorder_close(rec);
	return err < 0 ? err : finish_err;
}

static int by_key(const void *pa, const void *pb)
{
	const struct stack_count *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int by_count_desc(const void *pa, const void *pb)
{
	const struct stack_count *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return by_key(pa, pb);
}

/* Samples per distinct (pid, stack), hottest first; returns how many. */
static size_t count_stacks(const struct sp_snapshot *snap,
			   struct stack_count *v)
{
	size_t i, out = 0, n = sp_snapshot_sample_count(snap);
	struct sp_sample s;

	for (i = 0; i < n; i++) {
		sp_snapshot_sample(snap, i, &s);
		v[i] = (struct stack_count){ s.pid, s.stack, 1 };
	}
	qsort(v, n, sizeof(*v), by_key);
	for (i = 0; i < n; i++) {
		if (out && by_key(&v[out - 1], &v[i]) == 0)
			v[out - 1].count++;
		else
			v[out++] = v[i];
	}
	qsort(v, out, sizeof(*v), by_count_desc);
	return out;
}

static int print_stack(struct sp_symbolizer *sym, const struct stack_count *sc,
		       uint64_t total)
{
	const struct sp_resolved_frame *f[MAX_FRAMES];
	int n, i;

	n = sp_symbolizer_resolve_stack(sym, sc->stack, sc->pid, f, MAX_FRAMES);
	if (n < 0)
		return n;
	printf("%5.1f%%  %llu samples\n", 100.0 * sc->count / total,
	       (unsigned long long)sc->count);
	for (i = 0; i < n && i < MAX_FRAMES; i++)
		printf("        %s%s%s%s\n", f[i]->name,
		       f[i]->module ? "  [" : "",
		       f[i]->module ? f[i]->module : "",
		       f[i]->module ? "]" : "");
	return 0;
}

/* Reads the recorded bytes back and prints the @top hottest stacks. */
static int report(const struct buffer *buf, size_t top)
{
	struct sp_snapshot *snap;
	struct sp_symbolizer *sym = NULL;
	struct stack_count *v;
	size_t i, n, total;
	int err = sp_snapshot_open_buffer(buf->data, buf->len, NULL, &snap);

	if (err < 0)
		return err;
	total = sp_snapshot_sample_count(snap);
	v = malloc((total ? total : 1) * sizeof(*v));
	err = v ? sp_symbolizer_new(sp_snapshot_spool(snap), NULL, &sym) :
		  -ENOMEM;
	if (err >= 0) {
		n = count_stacks(snap, v);
		printf("%zu samples, %zu distinct stacks\n", total, n);
		for (i = 0; i < n && i < top && err >= 0; i++)
			err = print_stack(sym, &v[i], total);
	}
	sp_symbolizer_free(sym);
	free(v);
	sp_snapshot_close(snap);
	return err;
}

int main(int argc, char **argv)
{
	struct buffer buf = { 0 };
	long pid = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	double seconds = argc > 2 ? strtod(argv[2], NULL) : 5.0;
	long top = argc > 3 ? strtol(argv[3], NULL, 10) : 5;
	int err;

	if (argc < 2 || argc > 4 || pid <= 0 || pid > INT32_MAX ||
	    !(seconds > 0) || top <= 0) {
		fprintf(stderr,
			"usage: minimal_profiler PID [SECONDS [TOP]]\n");
		return 2;
	}
	err = record((int32_t)pid, seconds, &buf);
	if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "minimal_profiler: perf_event_open refused; "
				"see /proc/sys/kernel/perf_event_paranoid "
				"(docs/explanation/permissions.md)\n");
	if (err >= 0)
		err = report(&buf, (size_t)top);
	if (err < 0)
		fprintf(stderr, "minimal_profiler: pid %ld: %s\n", pid,
			sp_strerror(err));
	free(buf.data);
	return err < 0;
}
