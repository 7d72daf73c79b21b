/* SPDX-License-Identifier: MIT */
/* Fuzz target: a byte program of writer calls, read back through Snapshot. */
#include <stackpulse/sink.h>
#include <stackpulse/snapshot.h>
#include <stackpulse/writer.h>

#include "fuzz_spool.h"

/* A struct sp_sink_opts of the fields given (a compound literal). */
#define SINK_OPTS(...)                                                         \
	(&(struct sp_sink_opts){ .size = sizeof(struct sp_sink_opts),          \
				 __VA_ARGS__ })

/*
 * Program: byte 0 picks the chunk size (small, so records straddle chunk
 * boundaries), byte 1 optionally a tiny id_limit, then one op per byte
 * (op % 9) followed by its argument bytes (a missing byte reads as 0):
 *
 *   0 module   flags start size off ino maj min gen path-index
 *   1 sample   ts pid tid nframes, then per frame: kind arg
 *   2 python   ts pid flag          3 deactivate process  pid
 *   4 deactivate module  id         5 flush
 *   6 repeat the last frames at ts+1 (the writer's memo fast path)
 *   7 deep sample: n, base          8 last frames, other pid/tid
 *
 * A small model says whether each call is valid. Valid calls must succeed
 * (or fail only with SP_EIDSPACE under a tiny id_limit, -ENOMEM under the
 * failing allocator); invalid ones must fail. A failed call, an empty
 * sample and a flush must leave sp_writer_bytes() unchanged. Snapshot must
 * then open the output without corruption or recovery, with exactly the
 * accepted modules, samples (frames leaf to root) and Python records.
 * The program runs on a memory sink, on a zstd sink (every 4th input, by
 * hash) whose decompressed output must be byte-identical, and on a memory
 * sink with one failed allocation.
 */

#define MAX_FRAMES 64

struct prog {
	const uint8_t *p;
	size_t n, pos;
};

static uint8_t next(struct prog *g)
{
	return g->pos < g->n ? g->p[g->pos++] : 0;
}

struct want_sample {
	uint64_t ts;
	int32_t pid, tid;
	size_t n;
	struct sp_frame f[MAX_FRAMES];
};

struct model {
	struct sp_module mods[256];
	bool retired[256];
	size_t nmods;
	struct want_sample *smp;
	size_t nsmp, cap;
	struct sp_python_record py[4096];
	size_t npy;
	uint64_t last_ns;
	struct want_sample last; /* frames of the last sample call */
};

static const struct {
	const char *s;
	size_t len;
	bool valid;
} paths[8] = {
	{ "", 0, true },
	{ "/bin/app", 8, true },
	{ "[kernel]", 8, true },
	{ "a\0b", 3, true },
	{ "\xff", 1, false },
	{ "/lib/\xc3\xa9.so", 10, true },
	{ "\xed\xa0\x80", 3, false },
	{ "\xf4\x90\x80\x80", 4, false },
};

static bool frame_valid(const struct model *m, const struct sp_frame *f)
{
	const struct sp_module *mod;

	if (f->mode == SP_FRAME_TRUNCATED)
		return !f->abs_ip && !f->file_relative_ip &&
		       f->module_id == SP_NO_MODULE;
	if (f->mode != SP_FRAME_USER && f->mode != SP_FRAME_KERNEL)
		return false;
	if (f->module_id == SP_NO_MODULE)
		return true;
	if (f->module_id >= m->nmods)
		return false;
	mod = &m->mods[f->module_id];
	return f->file_relative_ip >= mod->file_offset &&
	       mod->end >= mod->start &&
	       f->file_relative_ip - mod->file_offset < mod->end - mod->start &&
	       f->abs_ip ==
		       mod->start + (f->file_relative_ip - mod->file_offset);
}

static void make_frame(const struct model *m, struct prog *g,
		       struct sp_frame *f)
{
	uint8_t kind = next(g), arg = next(g);
	const struct sp_module *mod;

	memset(f, 0, sizeof(*f));
	f->module_id = SP_NO_MODULE;
	switch (kind % 5) {
	case 0:
		f->abs_ip = f->file_relative_ip = 0x10 + arg * 0x800ull;
		break;
	case 1:
		f->mode = SP_FRAME_KERNEL;
		f->abs_ip = f->file_relative_ip = 0xffffffff81000000ull + arg;
		break;
	case 2:
		f->module_id = (uint32_t)(arg % (m->nmods + 1));
		mod = f->module_id < m->nmods ? &m->mods[f->module_id] : NULL;
		f->file_relative_ip = (mod ? mod->file_offset : 0) +
				      (kind >> 3) * 0x100ull + arg;
		f->abs_ip = mod ? mod->start + f->file_relative_ip -
					    mod->file_offset :
				  0;
		f->mode = kind & 0x80 ? SP_FRAME_KERNEL : SP_FRAME_USER;
		break;
	case 3:
		f->mode = SP_FRAME_TRUNCATED;
		f->abs_ip = (arg % 8 == 7);
		break;
	default:
		f->mode = 3 + arg % 2;
		break;
	}
}

static void make_module(struct prog *g, struct sp_module *mod, bool *valid)
{
	uint8_t flags = next(g);
	size_t pi;

	memset(mod, 0, sizeof(*mod));
	mod->is_kernel = flags & 1;
	mod->pid = (flags >> 1) & 3;
	mod->start = (next(g) % 8) * 0x1000ull;
	mod->end = mod->start + (next(g) % 4) * 0x1000ull;
	if (flags & 0x40) /* end before start: legal in the format */
		mod->start = mod->end + 0x1000;
	if (mod->is_kernel) {
		mod->start |= 0xffffffff81000000ull;
		mod->end |= 0xffffffff81000000ull;
	}
	mod->file_offset = (next(g) % 4) * 0x100ull;
	mod->inode = next(g);
	mod->dev_major = next(g);
	mod->dev_minor = next(g);
	mod->inode_generation = next(g);
	pi = next(g) % 8;
	mod->path = paths[pi].s;
	mod->path_len = paths[pi].len;
	*valid = paths[pi].valid && (mod->is_kernel || mod->pid >= 1);
}

static uint64_t make_ts(const struct model *m, uint8_t b)
{
	if (b == 0xff)
		return UINT64_MAX;
	if (b == 0xfe)
		return 0;
	return m->last_ns + (uint64_t)(int64_t)(int8_t)b * 1000;
}

static bool delta_ok(uint64_t last, uint64_t ts)
{
	return ts >= last ? ts - last <= INT64_MAX :
			    last - ts <= (uint64_t)INT64_MAX + 1;
}

/* A sample call with its validity; fills m->last with the frames. */
static bool sample_valid(const struct model *m, const struct want_sample *s)
{
	size_t i;

	if (s->pid < 1 || s->tid < 1)
		return false;
	if (s->n == 0)
		return true;
	if (!delta_ok(m->last_ns, s->ts))
		return false;
	for (i = 0; i < s->n; i++)
		if (!frame_valid(m, &s->f[i]))
			return false;
	return true;
}

static void make_sample(struct model *m, struct prog *g, uint8_t op)
{
	struct want_sample *s = &m->last;
	size_t i;
	uint8_t b;

	s->ts = make_ts(m, next(g));
	if (op == 6) {
		s->ts = m->last_ns + 1;
		return;
	}
	s->pid = next(g) % 4;
	s->tid = next(g) % 4;
	if (op == 8)
		return;
	if (op == 7) {
		s->n = next(g) % MAX_FRAMES + 1;
		b = next(g);
		for (i = 0; i < s->n; i++) {
			memset(&s->f[i], 0, sizeof(s->f[i]));
			s->f[i].module_id = SP_NO_MODULE;
			s->f[i].abs_ip = s->f[i].file_relative_ip =
				0x1000 + (b + i % 7) * 0x10ull;
		}
		return;
	}
	s->n = next(g) % 6;
	for (i = 0; i < s->n; i++)
		make_frame(m, g, &s->f[i]);
}

static void accept_sample(struct model *m)
{
	if (m->last.n == 0)
		return;
	if (m->nsmp == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->smp = realloc(m->smp, m->cap * sizeof(*m->smp));
		FUZZ_CHECK(m->smp != NULL);
	}
	m->smp[m->nsmp++] = m->last;
	m->last_ns = m->last.ts;
}

static void retire_pid(struct model *m, int32_t pid)
{
	size_t i;

	for (i = 0; i < m->nmods; i++)
		if (!m->mods[i].is_kernel && m->mods[i].pid == pid)
			m->retired[i] = true;
}

static int skip(bool *valid, bool *writes)
{
	*valid = true;
	*writes = false;
	return 0;
}

/*
 * Runs one op; returns the writer's result and whether the model allows
 * it. One case per op keeps each call next to its model update, hence the
 * length.
 */
static int run_op(struct sp_writer *w, struct model *m, struct prog *g,
		  bool *valid, bool *writes)
{
	uint8_t op = next(g) % 9;
	struct sp_python_record *py = &m->py[m->npy];
	struct sp_module mod;
	uint32_t id;
	int32_t pid;
	int err;

	*writes = true;
	switch (op) {
	case 0:
		make_module(g, &mod, valid);
		if (m->nmods == 256) /* the model is full: skip the call */
			return skip(valid, writes);
		err = sp_writer_module(w, &mod, NULL);
		if (!err && *valid) {
			mod.pid = mod.is_kernel ? -1 : mod.pid;
			m->mods[m->nmods++] = mod;
		}
		return err;
	case 2:
		py->timestamp_ns = next(g) * 100ull;
		py->pid = next(g) % 3;
		py->is_python_runtime = next(g) & 1;
		*valid = py->pid >= 1;
		if (m->npy == 4096)
			return skip(valid, writes);
		err = sp_writer_python_runtime(w, py->timestamp_ns, py->pid,
					       py->is_python_runtime);
		m->npy += !err && *valid;
		return err;
	case 3:
		pid = next(g) % 4;
		*valid = pid >= 1;
		err = sp_writer_deactivate_process(w, pid);
		if (!err && *valid)
			retire_pid(m, pid);
		return err;
	case 4:
		id = next(g) % (uint32_t)(m->nmods + 2);
		*valid = id < m->nmods;
		err = sp_writer_deactivate_module(w, id);
		if (!err && *valid)
			m->retired[id] = true;
		return err;
	case 5:
		*valid = true;
		*writes = false;
		return sp_writer_flush(w);
	default:
		make_sample(m, g, op);
		*valid = sample_valid(m, &m->last);
		*writes = m->last.n > 0;
		err = sp_writer_sample(w, m->last.ts, m->last.pid, m->last.tid,
				       m->last.f, m->last.n);
		if (!err && *valid)
			accept_sample(m);
		return err;
	}
}

struct outcome {
	int *results;
	size_t nres;
	uint8_t *bytes; /* plain spool (decompressed for zstd) */
	size_t len;
};

/* Frames read back leaf to root equal what was written (§5.2). */
static void check_frames(const struct sp_spool *s, const struct sp_sample *got,
			 const struct want_sample *w)
{
	struct sp_frame_context ctx[MAX_FRAMES];
	const struct sp_frame *f;
	struct sp_module mod;
	size_t i;

	FUZZ_CHECK(sp_spool_stack_contexts(s, got->stack, got->pid, ctx,
					   MAX_FRAMES) == (int)w->n);
	for (i = 0; i < w->n; i++) {
		f = &w->f[i];
		FUZZ_CHECK(ctx[i].frame.module_id == f->module_id);
		if (f->mode == SP_FRAME_TRUNCATED ||
		    f->module_id == SP_NO_MODULE) {
			FUZZ_CHECK(ctx[i].frame.mode == f->mode);
			FUZZ_CHECK(ctx[i].frame.abs_ip == f->abs_ip);
			continue;
		}
		FUZZ_CHECK(sp_spool_module(s, f->module_id, &mod) == 0);
		FUZZ_CHECK(ctx[i].frame.file_relative_ip ==
			   f->file_relative_ip);
		/* Only the file-relative address is written (§5.2). */
		FUZZ_CHECK(ctx[i].frame.abs_ip ==
			   mod.start + (f->file_relative_ip - mod.file_offset));
		FUZZ_CHECK(ctx[i].frame.mode ==
			   (mod.is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER));
	}
}

static void check_modules(const struct sp_spool *s, const struct model *m)
{
	struct sp_module got;
	size_t i;

	FUZZ_CHECK(sp_spool_module_count(s) == m->nmods);
	for (i = 0; i < m->nmods; i++) {
		const struct sp_module *w = &m->mods[i];

		FUZZ_CHECK(sp_spool_module(s, (uint32_t)i, &got) == 0);
		FUZZ_CHECK(got.start == w->start && got.end == w->end &&
			   got.file_offset == w->file_offset &&
			   got.inode == w->inode &&
			   got.inode_generation == w->inode_generation &&
			   got.dev_major == w->dev_major &&
			   got.dev_minor == w->dev_minor && got.pid == w->pid &&
			   got.is_kernel == (w->is_kernel ? 1u : 0u));
		FUZZ_CHECK(got.path_len == w->path_len &&
			   memcmp(got.path, w->path, w->path_len) == 0);
		FUZZ_CHECK((got.deactivated_at != SP_NEVER) == m->retired[i]);
	}
}

/* Snapshot on the output holds exactly what the model accepted. */
static void verify(const uint8_t *bytes, size_t len, const struct model *m)
{
	struct sp_snapshot *snap = NULL;
	struct sp_diag diag = { 0 };
	struct sp_reader_opts o = { .size = sizeof(o), .diag = &diag };
	struct sp_python_record py;
	struct sp_sample got;
	size_t i;

	if (sp_snapshot_open_buffer(bytes, len, &o, &snap)) {
		fprintf(stderr, "snapshot: %s at %llu\n", diag.message,
			(unsigned long long)diag.offset);
		FUZZ_CHECK(!"writer output does not open");
	}
	FUZZ_CHECK(!sp_snapshot_is_recovered(snap));
	FUZZ_CHECK(sp_snapshot_sample_count(snap) == m->nsmp);
	for (i = 0; i < m->nsmp; i++) {
		FUZZ_CHECK(sp_snapshot_sample(snap, i, &got) == 0);
		FUZZ_CHECK(got.timestamp_ns == m->smp[i].ts);
		FUZZ_CHECK(got.pid == m->smp[i].pid &&
			   got.tid == m->smp[i].tid);
		check_frames(sp_snapshot_spool(snap), &got, &m->smp[i]);
	}
	check_modules(sp_snapshot_spool(snap), m);
	FUZZ_CHECK(sp_snapshot_python_record_count(snap) == m->npy);
	for (i = 0; i < m->npy; i++) {
		FUZZ_CHECK(sp_snapshot_python_record(snap, i, &py) == 0);
		FUZZ_CHECK(memcmp(&py, &m->py[i], sizeof(py)) == 0);
	}
	fuzz_check_spool(sp_snapshot_spool(snap));
	sp_snapshot_close(snap);
}

static void check_result(int err, bool valid, bool id_limited, bool oom)
{
	if (!valid) {
		FUZZ_CHECK(err == -EINVAL || err == SP_EDELTA);
		return;
	}
	FUZZ_CHECK(err == 0 || (id_limited && err == SP_EIDSPACE) ||
		   (oom && err == -ENOMEM));
}

/* Runs the program through the writer on @sink; fills @out. */
static void run_prog(const uint8_t *data, size_t size, struct sp_sink *sink,
		     struct sp_sink *mem_sink, struct fuzz_alloc *a,
		     struct outcome *out)
{
	struct prog g = { .p = data, .n = size };
	struct sp_writer_opts o = { .size = sizeof(o), .allocator = &a->hook };
	struct model *m = calloc(1, sizeof(*m));
	struct sp_writer *w = NULL;
	const void *bytes;
	uint64_t before;
	bool valid, writes;
	uint8_t b;
	int err;

	FUZZ_CHECK(m != NULL);
	o.chunk_size = 16 + (next(&g) % 64) * 8;
	b = next(&g);
	o.id_limit = b & 0x80 ? 2 + b % 16 : 0;
	o.start_timestamp_us = next(&g) * 1000ull;
	o.sample_interval_us = 1000;
	out->results = calloc(size + 1, sizeof(int));
	FUZZ_CHECK(out->results != NULL);
	if (sp_writer_new(sink, &o, &w))
		goto out;
	while (g.pos < g.n) {
		before = sp_writer_bytes(w);
		err = run_op(w, m, &g, &valid, &writes);
		out->results[out->nres++] = err;
		check_result(err, valid, o.id_limit != 0, a->fail_at != 0);
		if (err || !writes)
			FUZZ_CHECK(sp_writer_bytes(w) == before);
		else
			FUZZ_CHECK(sp_writer_bytes(w) > before);
	}
	err = sp_writer_finish(w);
	/* Under the failing allocator the final drain may be the one hit. */
	if (err == -ENOMEM && a->fail_at)
		err = sp_writer_finish(w);
	FUZZ_CHECK(err == 0);
	FUZZ_CHECK(sp_sink_memory_data(mem_sink, &bytes, &out->len) == 0);
	verify(bytes, out->len, m);
	out->bytes = fuzz_dup(bytes, out->len);
	sp_writer_free(w);
out:
	free(m->smp);
	free(m);
}

static void run_plain(const uint8_t *data, size_t size, uint64_t fail_at,
		      struct outcome *out)
{
	struct sp_sink *sink;
	struct fuzz_alloc a;

	fuzz_alloc_init(&a, fail_at);
	memset(out, 0, sizeof(*out));
	if (sp_sink_new_memory(SINK_OPTS(.allocator = &a.hook), &sink) == 0)
		run_prog(data, size, sink, sink, &a, out);
	FUZZ_CHECK(a.outstanding == 0);
}

static void run_zstd(const uint8_t *data, size_t size, struct outcome *out)
{
	struct sp_sink *mem_sink, *sink;
	struct fuzz_alloc a;
	struct sp__vec plain;
	struct sp__mem mem;

	fuzz_alloc_init(&a, 0);
	memset(out, 0, sizeof(*out));
	FUZZ_CHECK(sp_sink_new_memory(SINK_OPTS(.allocator = &a.hook),
				      &mem_sink) == 0);
	FUZZ_CHECK(sp_sink_new_zstd(mem_sink,
				    SINK_OPTS(.allocator = &a.hook,
					      .zstd_level = 1),
				    &sink) == 0);
	run_prog(data, size, sink, mem_sink, &a, out);
	FUZZ_CHECK(a.outstanding == 0);
	/* out->bytes is the compressed stream: decompress it for comparison. */
	sp__mem_init(&mem, NULL);
	sp__vec_init(&plain, 1);
	FUZZ_CHECK(sp__unzstd_all(&mem, out->bytes, out->len, &plain, NULL) ==
		   0);
	free(out->bytes);
	out->bytes = fuzz_dup(plain.data, plain.len);
	out->len = plain.len;
	sp__vec_fini(&plain, &mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size);
	struct outcome plain, z = { 0 }, oom;

	run_plain(data, size, 0, &plain);
	/* zstd contexts cost ~25 ms under ASan: compare on every 4th input. */
	if (h % 4 == 0) {
		run_zstd(data, size, &z);
		FUZZ_CHECK(plain.nres == z.nres && plain.len == z.len);
		FUZZ_CHECK(memcmp(plain.results, z.results,
				  plain.nres * sizeof(int)) == 0);
		FUZZ_CHECK(memcmp(plain.bytes, z.bytes, plain.len) == 0);
	}
	run_plain(data, size, 1 + (h >> 8) % 64, &oom);
	free(plain.results);
	free(plain.bytes);
	free(z.results);
	free(z.bytes);
	free(oom.results);
	free(oom.bytes);
	return 0;
}
