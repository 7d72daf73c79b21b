/* SPDX-License-Identifier: MIT */
/* Exporters: speedscope JSON (sampled profiles, one per thread). */

/*
 * The speedscope file format (https://www.speedscope.app/file-format-schema.json):
 *
 *   {"$schema": "...", "name": TITLE, "exporter": "stackpulse X.Y.Z",
 *    "activeProfileIndex": 0,
 *    "shared": {"frames": [{"name", "file"?, "line"?}, ...]},
 *    "profiles": [{"type": "sampled",
 *                  "name": "EXE (pid P) thread T" or "pid P thread T",
 *                  "unit": "microseconds", "startValue": 0,
 *                  "endValue": N x interval,
 *                  "samples": [[root .. leaf frame indices], ...],
 *                  "weights": [count x interval, ...]}, ...]}
 *
 * shared.frames holds one frame per function (sp__profile_functions():
 * name, module and kind, plus the file for Python), so the sandwich view
 * lists a function once, not once per line it was sampled at; "file" is
 * written when all its frames agree on it, else the module (as
 * speedscope's own perf importer fills it with the DSO), so that two
 * functions of one name in two modules (ld.so's _start and the
 * program's) stay apart in the viewer too. speedscope's frame has one
 * line, the function's start: "line" is the symbolizer's decl_line
 * (DWARF's first line of the function), written by the same rule as
 * "file": when all the function's frames agree on it, and only beside a
 * source file (a line under a module path would read as a line of the
 * module). decl_line is no part of what makes a function, so a function
 * never splits by it (the call-site lines are in the other formats). Each
 * thread's samples keep file (time) order, so the "Time Order" view is
 * real; consecutive identical stacks of a thread are merged into one
 * entry whose weight is their count times the spool's sample interval
 * (unit "microseconds"), or their count (unit "none") when the spool has
 * no interval. EXE is the process's executable (omitted when unknown).
 *
 * Bounded memory: samples of different threads interleave in the file, so
 * a profile needs its thread's samples gathered. Threads are processed in
 * batches of at most SS_BATCH (256 Ki) samples; one Replay pass collects
 * the runs of a batch's threads (12 bytes per run, at most 3 MiB). A thread with more samples than
 * that is streamed instead: one pass writes its "samples" array, a second
 * its "weights", with no buffer at all.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stackpulse/version.h>

#include "export_internal.h"

#define SS_BATCH (1u << 18)
#define SS_NONE UINT32_MAX

struct ss_run {
	uint32_t stack;
	uint32_t weight;
	uint32_t next; /* next run of the same thread, SS_NONE at the end */
};

struct ss_state {
	struct sp__profile *prof;
	struct sp__xout *out;
	uint32_t first, end; /* threads [first, end) of this batch */
	struct ss_run *runs;
	size_t nruns, runs_cap;
	uint32_t *head, *tail; /* per thread of the batch */
	/* Streaming one thread: the pending run and what to write. */
	uint32_t cur_stack, cur_weight;
	bool weights, need_comma;
	uint64_t unit; /* weight of a sample: interval in us, or 1 */
	bool timed;    /* unit "microseconds", else "none" */
};

static int collect_fn(void *ctx, uint64_t ts, uint32_t thread, uint32_t stack)
{
	struct ss_state *st = ctx;
	uint32_t t = thread - st->first, last;
	int err;

	(void)ts;
	last = st->tail[t];
	if (last != SS_NONE && st->runs[last].stack == stack &&
	    st->runs[last].weight < UINT32_MAX) {
		st->runs[last].weight++;
		return 0;
	}
	err = sp__xmem_reserve(&st->prof->mem, (void **)&st->runs,
			       &st->runs_cap, st->nruns + 1, sizeof(*st->runs));
	if (err)
		return err;
	st->runs[st->nruns] = (struct ss_run){ stack, 1, SS_NONE };
	if (last == SS_NONE)
		st->head[t] = (uint32_t)st->nruns;
	else
		st->runs[last].next = (uint32_t)st->nruns;
	st->tail[t] = (uint32_t)st->nruns++;
	return 0;
}

static void write_stack(struct ss_state *st, uint32_t stack)
{
	const uint32_t *f = sp__profile_stack_frames(st->prof, stack);
	uint32_t i, n = st->prof->stacks[stack].len;

	sp__xout_char(st->out, '[');
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(st->out, ',');
		sp__xout_u64(st->out, st->prof->func_of_frame[f[i]]);
	}
	sp__xout_char(st->out, ']');
}

/* Writes one run as an element of "samples" or "weights". */
static void write_run(struct ss_state *st, uint32_t stack, uint32_t weight)
{
	if (st->need_comma)
		sp__xout_char(st->out, ',');
	st->need_comma = true;
	if (st->weights)
		sp__xout_u64(st->out, weight * st->unit);
	else
		write_stack(st, stack);
}

static void profile_open(struct ss_state *st, uint32_t thread)
{
	const struct sp__xthread *t = &st->prof->threads[thread];
	const char *exe = sp__profile_process_name(st->prof, t->pid);
	char name[512]; /* a longer executable name is cut */

	if (thread)
		sp__xout_char(st->out, ',');
	sp__xout_str(st->out, "\n{\"type\":\"sampled\",\"name\":");
	if (exe)
		snprintf(name, sizeof(name), "%s (pid %d) thread %d", exe,
			 (int)t->pid, (int)t->tid);
	else
		snprintf(name, sizeof(name), "pid %d thread %d", (int)t->pid,
			 (int)t->tid);
	sp__xout_json_str(st->out, name);
	sp__xout_str(st->out, st->timed ? ",\"unit\":\"microseconds\"" :
					  ",\"unit\":\"none\"");
	sp__xout_str(st->out, ",\"startValue\":0,\"endValue\":");
	sp__xout_u64(st->out, t->samples * st->unit);
	sp__xout_str(st->out, ",\"samples\":[");
}

static void write_buffered(struct ss_state *st, uint32_t thread)
{
	uint32_t r, head = st->head[thread - st->first];

	profile_open(st, thread);
	for (st->weights = false;; st->weights = true) {
		st->need_comma = false;
		for (r = head; r != SS_NONE; r = st->runs[r].next)
			write_run(st, st->runs[r].stack, st->runs[r].weight);
		if (st->weights)
			break;
		sp__xout_str(st->out, "],\"weights\":[");
	}
	sp__xout_str(st->out, "]}");
}

static int batch(struct ss_state *st, uint32_t first, uint32_t end)
{
	size_t n = end - first, size = n * sizeof(uint32_t);
	uint32_t t;
	int err;

	st->first = first;
	st->end = end;
	st->nruns = 0;
	st->head = sp__xmem_alloc(&st->prof->mem, size);
	st->tail = sp__xmem_alloc(&st->prof->mem, size);
	err = st->head && st->tail ? 0 : -ENOMEM;
	if (!err) {
		memset(st->head, 0xff, size);
		memset(st->tail, 0xff, size);
		err = sp__profile_each_sample(st->prof, first, end, collect_fn,
					      st);
	}
	for (t = first; !err && t < end; t++)
		write_buffered(st, t);
	sp__xmem_free(&st->prof->mem, st->head, size);
	sp__xmem_free(&st->prof->mem, st->tail, size);
	return err;
}

static int stream_fn(void *ctx, uint64_t ts, uint32_t thread, uint32_t stack)
{
	struct ss_state *st = ctx;

	(void)ts;
	(void)thread;
	if (st->cur_weight && st->cur_stack == stack &&
	    st->cur_weight < UINT32_MAX) {
		st->cur_weight++;
		return 0;
	}
	if (st->cur_weight)
		write_run(st, st->cur_stack, st->cur_weight);
	st->cur_stack = stack;
	st->cur_weight = 1;
	return 0;
}

/* A thread too big to buffer: two passes, "samples" then "weights". */
static int stream(struct ss_state *st, uint32_t thread)
{
	int err = 0;

	st->first = thread;
	profile_open(st, thread);
	for (st->weights = false; !err; st->weights = true) {
		st->need_comma = false;
		st->cur_weight = 0;
		err = sp__profile_each_sample(st->prof, thread, thread + 1,
					      stream_fn, st);
		if (st->cur_weight)
			write_run(st, st->cur_stack, st->cur_weight);
		if (st->weights)
			break;
		sp__xout_str(st->out, "],\"weights\":[");
	}
	sp__xout_str(st->out, "]}");
	return err;
}

static int write_profiles(struct ss_state *st)
{
	const struct sp__profile *prof = st->prof;
	uint32_t t = 0, end;
	uint64_t sum;
	int err = 0;

	while (!err && t < prof->nthreads) {
		if (prof->threads[t].samples > SS_BATCH) {
			err = stream(st, t++);
			continue;
		}
		sum = 0;
		for (end = t; end < prof->nthreads; end++) {
			sum += prof->threads[end].samples;
			if (sum > SS_BATCH)
				break;
		}
		err = batch(st, t, end);
		t = end;
	}
	return err;
}

static void write_frames(struct sp__profile *prof, struct sp__xout *out)
{
	size_t i;

	for (i = 0; i < prof->nfuncs; i++) {
		const struct sp__xfunc *f = &prof->funcs[i];

		sp__xout_str(out, i ? ",\n{\"name\":" : "\n{\"name\":");
		sp__xout_json_str(out, f->name);
		if (f->file || f->module) {
			sp__xout_str(out, ",\"file\":");
			sp__xout_json_str(out, f->file ? f->file : f->module);
		}
		if (f->file && f->decl_line) {
			sp__xout_str(out, ",\"line\":");
			sp__xout_u64(out, f->decl_line);
		}
		sp__xout_char(out, '}');
	}
}

int sp__export_speedscope(struct sp__profile *prof, struct sp_sink *sink)
{
	struct ss_state st = { .prof = prof };
	struct sp__xout out;
	int err = sp__profile_functions(prof);

	if (!err)
		err = sp__xout_init_sink(&out, &prof->mem, sink);
	if (err)
		return err;
	st.unit = sp_spool_sample_interval_us(prof->spool);
	st.timed = st.unit != 0;
	if (!st.timed)
		st.unit = 1;
	st.out = &out;
	sp__xout_str(&out, "{\"$schema\":\"https://www.speedscope.app/"
			   "file-format-schema.json\",\n\"name\":");
	sp__xout_json_str(&out, prof->title);
	sp__xout_str(&out, ",\n\"exporter\":\"stackpulse ");
	sp__xout_str(&out, sp_version());
	sp__xout_str(&out, "\",\n\"activeProfileIndex\":0,\n"
			   "\"shared\":{\"frames\":[");
	write_frames(prof, &out);
	sp__xout_str(&out, "]},\n\"profiles\":[");
	err = write_profiles(&st);
	sp__xout_str(&out, "]}\n");
	sp__xmem_free(&prof->mem, st.runs, st.runs_cap * sizeof(*st.runs));
	if (err) {
		sp__xout_finish(&out);
		return err;
	}
	return sp__xout_finish(&out);
}
