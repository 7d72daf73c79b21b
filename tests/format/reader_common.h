/* SPDX-License-Identifier: MIT */
/* Shared by the reader tests: temp files, a seeded recording generator, checks. */
#ifndef SP_TESTS_FORMAT_READER_COMMON_H
#define SP_TESTS_FORMAT_READER_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"

/* A struct sp_sink_opts of the fields given (a compound literal). */
#define SINK_OPTS(...)                                                         \
	(&(struct sp_sink_opts){ .size = sizeof(struct sp_sink_opts),          \
				 __VA_ARGS__ })

/*
 * gen_recording() drives a writer with a deterministic pseudo-random
 * sequence of calls (several processes and threads, user and kernel
 * modules, retirements by pid and by module, pinned, unpinned and marker
 * frames, Python-runtime records, negative deltas) and keeps, next to it,
 * what every reader must give back: per sample the timestamp, pid, tid
 * and the frames leaf to root with the module each one resolves to. The
 * expected resolution comes from an independent model of SPULSE3 §6: the
 * writer re-interns unpinned frames after every module change, so an
 * unpinned frame resolves against the modules active when the sample
 * was written (newest first, same pid for user frames).
 */

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* ---- files ---- */

static char tmp_dir[64];
static char tmp_names[64][160];
static int tmp_count;

/* Removes every file tmp_path() named, then the directory (atexit). */
static inline void tmp_cleanup(void)
{
	int i;

	for (i = 0; i < tmp_count; i++)
		unlink(tmp_names[i]);
	rmdir(tmp_dir);
}

/* A path in this test's private temporary directory. */
static inline const char *tmp_path(const char *name)
{
	int i;

	if (!tmp_dir[0]) {
		snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/sp-reader-XXXXXX");
		CHECK(mkdtemp(tmp_dir) != NULL);
		atexit(tmp_cleanup);
	}
	for (i = 0; i < tmp_count; i++)
		if (strcmp(strrchr(tmp_names[i], '/') + 1, name) == 0)
			return tmp_names[i];
	CHECK(tmp_count < 64);
	snprintf(tmp_names[tmp_count], sizeof(tmp_names[0]), "%s/%s", tmp_dir,
		 name);
	return tmp_names[tmp_count++];
}

static inline void write_at_end(const char *path, const void *data, size_t len,
				int flags)
{
	int fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	const char *p = data;

	CHECK(fd >= 0);
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		CHECK(n > 0);
		p += n;
		len -= (size_t)n;
	}
	close(fd);
}

static inline void write_file(const char *path, const void *data, size_t len)
{
	write_at_end(path, data, len, O_TRUNC);
}

static inline void append_file(const char *path, const void *data, size_t len)
{
	write_at_end(path, data, len, O_APPEND);
}

static inline void truncate_file(const char *path, off_t len)
{
	CHECK(truncate(path, len) == 0);
}

/* ---- expected recording ---- */

struct exp_frame {
	struct sp_frame frame;
	uint32_t module_id; /* resolution (§6) */
	uint64_t rel;
};

struct exp_sample {
	uint64_t ts;
	int32_t pid;
	int32_t tid;
	uint32_t first; /* index into recording.frames */
	uint32_t nframes;
};

#define REC_MAX_MODULES 4096
#define REC_NPIDS 4

struct recording {
	struct exp_sample *samples;
	size_t nsamples, cap_samples;
	struct exp_frame *frames;
	size_t nframes, cap_frames;
	struct sp_python_record *python;
	size_t npython, cap_python;
	/* Model of the module table. */
	struct sp_module mods[REC_MAX_MODULES];
	char paths[REC_MAX_MODULES][24];
	int active[REC_MAX_MODULES];
	size_t nmods;
	uint64_t last_ts;
};

#define REC_PUSH(arr, n, cap, item)                                            \
	do {                                                                   \
		if ((n) == (cap)) {                                            \
			(cap) = (cap) ? 2 * (cap) : 1024;                      \
			(arr) = realloc((arr), (cap) * sizeof(*(arr)));        \
			CHECK_PTR(arr);                                        \
		}                                                              \
		(arr)[(n)++] = (item);                                         \
	} while (0)

static const int32_t rec_pids[REC_NPIDS] = { 100, 201, 302, 4000000 };

static inline void rec_free(struct recording *rec)
{
	free(rec->samples);
	free(rec->frames);
	free(rec->python);
	free(rec);
}

static inline void rec_module(struct sp_writer *w, struct recording *rec,
			      struct rng *r, int32_t pid, int kernel)
{
	struct sp_module *m = &rec->mods[rec->nmods];
	uint64_t slot = rng_below(r, 4);
	uint32_t id;

	if (rec->nmods == REC_MAX_MODULES)
		return;
	memset(m, 0, sizeof(*m));
	if (kernel) {
		m->start = 0xffffffff81000000ull;
		m->end = m->start + 0x1000000;
		m->is_kernel = 1;
		m->pid = -1;
		snprintf(rec->paths[rec->nmods], 24, "[kernel.kallsyms]");
	} else {
		m->start = 0x400000 + slot * 0x100000;
		m->end = m->start + 0x40000 + rng_below(r, 0x40000);
		m->file_offset = rng_below(r, 16) * 0x1000;
		m->inode = rng_next(r) >> 20;
		m->dev_major = (uint32_t)rng_below(r, 300);
		m->dev_minor = (uint32_t)rng_below(r, 70000);
		m->inode_generation = rng_below(r, 3);
		m->pid = pid;
		snprintf(rec->paths[rec->nmods], 24, "/lib/l%zu.so",
			 rec->nmods);
	}
	m->path = rec->paths[rec->nmods];
	m->path_len = strlen(m->path);
	CHECK_OK(sp_writer_module(w, m, &id));
	CHECK_EQ(id, rec->nmods);
	rec->active[rec->nmods++] = 1;
}

/* §6 resolution of an unpinned frame against the active modules. */
static inline void rec_resolve(const struct recording *rec, int32_t pid,
			       struct exp_frame *f)
{
	size_t i = rec->nmods;

	f->module_id = SP_NO_MODULE;
	f->rel = 0;
	while (i-- > 0) {
		const struct sp_module *m = &rec->mods[i];
		int kernel = f->frame.mode == SP_FRAME_KERNEL;

		if (!rec->active[i] || (int)m->is_kernel != kernel ||
		    (!kernel && m->pid != pid))
			continue;
		if (f->frame.abs_ip < m->start || f->frame.abs_ip >= m->end)
			continue;
		f->module_id = (uint32_t)i;
		f->rel = f->frame.abs_ip - m->start + m->file_offset;
		return;
	}
}

/* A module of @pid (or the kernel), active or not; -1 if none. */
static inline long rec_pick_module(const struct recording *rec, struct rng *r,
				   int32_t pid)
{
	size_t i, n = 0, pick;

	for (i = 0; i < rec->nmods; i++)
		n += rec->mods[i].is_kernel || rec->mods[i].pid == pid;
	if (n == 0)
		return -1;
	pick = (size_t)rng_below(r, n);
	for (i = 0; i < rec->nmods; i++)
		if ((rec->mods[i].is_kernel || rec->mods[i].pid == pid) &&
		    pick-- == 0)
			return (long)i;
	return -1;
}

static inline struct exp_frame rec_frame(const struct recording *rec,
					 struct rng *r, int32_t pid)
{
	struct exp_frame f;
	uint64_t kind = rng_below(r, 100);
	long mi;

	memset(&f, 0, sizeof(f));
	f.frame.module_id = SP_NO_MODULE;
	mi = kind < 30 ? rec_pick_module(rec, r, pid) : -1;
	if (mi >= 0) {
		const struct sp_module *m = &rec->mods[mi];
		uint64_t off = rng_below(r, 32) * 0x100 + 0x10;

		if (off >= m->end - m->start)
			off = 0;
		f.frame.module_id = (uint32_t)mi;
		f.frame.abs_ip = m->start + off;
		f.frame.file_relative_ip = m->file_offset + off;
		f.frame.mode = m->is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER;
		f.module_id = (uint32_t)mi;
		f.rel = f.frame.file_relative_ip;
		return f;
	}
	if (kind < 75) {
		f.frame.mode = SP_FRAME_USER;
		f.frame.abs_ip = 0x400000 + rng_below(r, 5) * 0x100000 +
				 rng_below(r, 64) * 0x1000 + 0x23;
	} else {
		f.frame.mode = SP_FRAME_KERNEL;
		f.frame.abs_ip = (rng_below(r, 5) ? 0xffffffff81000000ull :
						    0xffffffffa0000000ull) +
				 rng_below(r, 64) * 0x800 + 7;
	}
	f.frame.file_relative_ip = f.frame.abs_ip;
	rec_resolve(rec, pid, &f);
	return f;
}

static inline void rec_sample(struct sp_writer *w, struct recording *rec,
			      struct rng *r)
{
	struct sp_frame frames[16];
	struct exp_sample s;
	struct exp_frame f;
	size_t i, depth = 1 + (size_t)rng_below(r, 8);
	int p = (int)rng_below(r, REC_NPIDS);
	uint64_t step = rng_below(r, 100000);

	s.pid = rec_pids[p];
	s.tid = s.pid + 1 + (int32_t)rng_below(r, 3);
	/* Some samples go back in time: negative deltas (§5.5). */
	s.ts = rng_below(r, 10) == 0 && rec->last_ts > step / 4 ?
		       rec->last_ts - step / 4 :
		       rec->last_ts + step;
	s.first = (uint32_t)rec->nframes;
	s.nframes = (uint32_t)depth;
	for (i = 0; i < depth; i++) {
		if (i + 1 == depth && rng_below(r, 8) == 0) {
			/* A truncated marker sits at the root end. */
			memset(&f, 0, sizeof(f));
			f.frame.mode = SP_FRAME_TRUNCATED;
			f.frame.module_id = SP_NO_MODULE;
			f.module_id = SP_NO_MODULE;
		} else {
			f = rec_frame(rec, r, s.pid);
		}
		frames[i] = f.frame;
		REC_PUSH(rec->frames, rec->nframes, rec->cap_frames, f);
	}
	CHECK_OK(sp_writer_sample(w, s.ts, s.pid, s.tid, frames, depth));
	rec->last_ts = s.ts;
	REC_PUSH(rec->samples, rec->nsamples, rec->cap_samples, s);
}

static inline void rec_retire_pid(struct sp_writer *w, struct recording *rec,
				  int32_t pid)
{
	size_t i;

	CHECK_OK(sp_writer_deactivate_process(w, pid));
	for (i = 0; i < rec->nmods; i++)
		if (!rec->mods[i].is_kernel && rec->mods[i].pid == pid)
			rec->active[i] = 0;
}

static inline void rec_step(struct sp_writer *w, struct recording *rec,
			    struct rng *r)
{
	uint64_t ev = rng_below(r, 1000);
	int32_t pid = rec_pids[rng_below(r, REC_NPIDS)];
	struct sp_python_record py;

	if (ev < 12) {
		rec_module(w, rec, r, pid, ev == 0);
	} else if (ev < 16) {
		rec_retire_pid(w, rec, pid);
		rec_module(w, rec, r, pid, 0);
	} else if (ev < 22 && rec->nmods > 0) {
		size_t id = (size_t)rng_below(r, rec->nmods);

		CHECK_OK(sp_writer_deactivate_module(w, (uint32_t)id));
		rec->active[id] = 0;
	} else if (ev < 35) {
		py.timestamp_ns = rng_next(r) >> 8;
		py.pid = pid;
		py.is_python_runtime = (uint32_t)rng_below(r, 2);
		CHECK_OK(sp_writer_python_runtime(w, py.timestamp_ns, py.pid,
						  py.is_python_runtime));
		REC_PUSH(rec->python, rec->npython, rec->cap_python, py);
	} else {
		rec_sample(w, rec, r);
	}
}

/* Writes @nsamples samples (plus everything around them) with @w. */
static inline struct recording *gen_recording(struct sp_writer *w,
					      uint64_t seed, size_t nsamples)
{
	struct recording *rec = calloc(1, sizeof(*rec));
	struct rng r = { seed * 0x9e3779b97f4a7c15ull + 1 };
	size_t i;

	CHECK_PTR(rec);
	rec->last_ts = 1000000000ull;
	rec_module(w, rec, &r, 0, 1);
	for (i = 0; i < REC_NPIDS; i++) {
		rec_module(w, rec, &r, rec_pids[i], 0);
		rec_module(w, rec, &r, rec_pids[i], 0);
	}
	while (rec->nsamples < nsamples)
		rec_step(w, rec, &r);
	return rec;
}

/*
 * A writer into a memory sink, optionally compressed; *@mem receives the
 * memory sink (owned by the writer) to read the bytes from.
 */
static inline struct sp_writer *mem_writer(int zstd, size_t chunk,
					   struct sp_sink **mem)
{
	struct sp_writer_opts o = { .size = sizeof(o) };
	struct sp_sink *sink, *z;
	struct sp_writer *w;

	o.start_timestamp_us = 1700000000000000ull;
	o.sample_interval_us = 1000;
	o.chunk_size = chunk;
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	*mem = sink;
	if (zstd) {
		CHECK_OK(
			sp_sink_new_zstd(sink, SINK_OPTS(.zstd_level = 1), &z));
		sink = z;
	}
	CHECK_OK(sp_writer_new(sink, &o, &w));
	return w;
}

/*
 * Finishes @w, stores its bytes in @path and frees it. Returns the size.
 */
static inline size_t finish_to_file(struct sp_writer *w, struct sp_sink *mem,
				    const char *path)
{
	const void *data;
	size_t len;

	CHECK_OK(sp_writer_finish(w));
	CHECK_OK(sp_sink_memory_data(mem, &data, &len));
	write_file(path, data, len);
	sp_writer_free(w);
	return len;
}

/* ---- comparison ---- */

static inline void check_sample(const struct sp_spool *spool,
				const struct sp_sample *got,
				const struct recording *rec, size_t idx)
{
	const struct exp_sample *e;
	struct sp_frame_context ctx[16];
	uint32_t i;
	int depth;

	CHECK(idx < rec->nsamples);
	e = &rec->samples[idx];
	if (got->timestamp_ns != e->ts)
		fprintf(stderr, "sample %zu\n", idx);
	CHECK_EQ(got->timestamp_ns, e->ts);
	CHECK_EQ_INT(got->pid, e->pid);
	CHECK_EQ_INT(got->tid, e->tid);
	depth = sp_spool_stack_contexts(spool, got->stack, got->pid, ctx, 16);
	CHECK_EQ_INT(depth, e->nframes);
	for (i = 0; i < e->nframes; i++) {
		const struct exp_frame *f = &rec->frames[e->first + i];

		if (ctx[i].module_id != f->module_id)
			fprintf(stderr, "sample %zu frame %u\n", idx, i);
		CHECK_EQ(ctx[i].frame.abs_ip, f->frame.abs_ip);
		CHECK_EQ(ctx[i].frame.file_relative_ip,
			 f->frame.file_relative_ip);
		CHECK_EQ(ctx[i].frame.module_id, f->frame.module_id);
		CHECK_EQ(ctx[i].frame.mode, f->frame.mode);
		CHECK_EQ(ctx[i].module_id, f->module_id);
		CHECK_EQ(ctx[i].file_relative_ip, f->rel);
	}
}

static inline void check_python(const struct sp_python_record *got,
				const struct recording *rec, size_t idx)
{
	CHECK(idx < rec->npython);
	CHECK_EQ(got->timestamp_ns, rec->python[idx].timestamp_ns);
	CHECK_EQ_INT(got->pid, rec->python[idx].pid);
	CHECK_EQ(got->is_python_runtime, rec->python[idx].is_python_runtime);
}

static inline void verify_snapshot(const char *path,
				   const struct recording *rec)
{
	struct sp_python_record py;
	struct sp_snapshot *s;
	struct sp_sample smp;
	size_t i;

	CHECK_OK(sp_snapshot_open(path, NULL, &s));
	CHECK(!sp_snapshot_is_recovered(s));
	CHECK_EQ(sp_snapshot_sample_count(s), rec->nsamples);
	for (i = 0; i < rec->nsamples; i++) {
		CHECK_OK(sp_snapshot_sample(s, i, &smp));
		check_sample(sp_snapshot_spool(s), &smp, rec, i);
	}
	CHECK_EQ(sp_snapshot_python_record_count(s), rec->npython);
	for (i = 0; i < rec->npython; i++) {
		CHECK_OK(sp_snapshot_python_record(s, i, &py));
		check_python(&py, rec, i);
	}
	sp_snapshot_close(s);
}

static inline void verify_replay(const char *path, const struct recording *rec)
{
	struct sp_python_record py;
	struct sp_replay *r;
	struct sp_sample smp;
	size_t i, pass;

	CHECK_OK(sp_replay_open(path, NULL, &r));
	CHECK(!sp_replay_is_recovered(r));
	CHECK_EQ(sp_replay_sample_count(r), rec->nsamples);
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < rec->nsamples; i++) {
			CHECK_EQ_INT(sp_replay_next(r, &smp), 1);
			check_sample(sp_replay_spool(r), &smp, rec, i);
		}
		CHECK_EQ_INT(sp_replay_next(r, &smp), 0);
		CHECK_OK(sp_replay_rewind(r));
	}
	CHECK_EQ(sp_replay_python_record_count(r), rec->npython);
	for (i = 0; i < rec->npython; i++) {
		CHECK_OK(sp_replay_python_record(r, i, &py));
		check_python(&py, rec, i);
	}
	sp_replay_close(r);
}

/* Checks the current batch of @t against rec from *@next on. */
static inline void check_tail_batch(struct sp_tail *t,
				    const struct recording *rec, size_t *next,
				    size_t *next_py)
{
	const struct sp_python_record *py;
	struct sp_sample smp;
	size_t i, n = sp_tail_sample_count(t), np;

	CHECK(n <= SP_TAIL_BATCH_SAMPLES);
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_tail_sample(t, i, &smp));
		check_sample(sp_tail_spool(t), &smp, rec, (*next)++);
	}
	CHECK_EQ_INT(sp_tail_sample(t, n, &smp), -EINVAL);
	np = sp_tail_python_records(t, &py);
	for (i = 0; i < np; i++)
		check_python(&py[i], rec, (*next_py)++);
}

static inline void verify_tail(const char *path, const struct recording *rec)
{
	struct sp_tail *t;
	size_t next = 0, next_py = 0;
	int n, polls = 0;

	CHECK_OK(sp_tail_open(path, NULL, &t));
	do {
		n = sp_tail_poll(t);
		CHECK_OK(n);
		CHECK_EQ(n, sp_tail_sample_count(t));
		check_tail_batch(t, rec, &next, &next_py);
		CHECK(++polls < 1000000);
	} while (n > 0 || sp_tail_has_more(t));
	CHECK_EQ(next, rec->nsamples);
	CHECK_EQ(next_py, rec->npython);
	CHECK_EQ_INT(sp_tail_poll(t), 0);
	sp_tail_close(t);
}

#endif /* SP_TESTS_FORMAT_READER_COMMON_H */
