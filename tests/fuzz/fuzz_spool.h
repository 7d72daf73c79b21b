/* SPDX-License-Identifier: MIT */
/* Fuzz helpers: decode a spool the way a reader does, check a spool view. */
#ifndef SP_TESTS_FUZZ_SPOOL_H
#define SP_TESTS_FUZZ_SPOOL_H

#include <errno.h>

#include <stackpulse/spool.h>

#include "format_internal.h"
#include "fuzz.h"

/*
 * struct fuzz_run is the reference decode of one byte stream: the header,
 * then sp__spool_decode(SP_DECODE_APPLY) record by record until the end,
 * a cut-off record (SP_ETRUNCATED) or a corrupt one, exactly the loop of
 * Snapshot. It keeps where every record ended, its tag and every sample,
 * so the readers can be compared with it and prefixes with the whole.
 *
 *   status  0 clean end | SP_ETRUNCATED | SP_ECORRUPT | -ENOMEM
 *           (header problems: what sp__spool_header returned)
 */
struct fuzz_run {
	struct sp_spool spool;
	struct fuzz_alloc alloc;
	int hdr; /* header length, or the header error */
	int status;
	size_t stop; /* offset where decoding stopped */
	size_t nrec;
	size_t *ends; /* end offset of record i */
	uint8_t *tags;
	size_t nsamples;
	struct sp_sample *samples;
	size_t npython;
};

static inline void fuzz_counts(const struct sp_spool *s, uint32_t c[4])
{
	c[0] = sp_spool_module_count(s);
	c[1] = sp_spool_frame_count(s);
	c[2] = sp_spool_stack_count(s);
	c[3] = sp_spool_thread_count(s);
}

/* One failed decode must leave cursor and spool exactly as they were. */
static inline void fuzz_check_failed(const struct fuzz_run *r,
				     const struct sp__cursor *cur, size_t pos,
				     const uint32_t before[4],
				     const struct sp_diag *diag)
{
	uint32_t after[4];

	fuzz_counts(&r->spool, after);
	FUZZ_CHECK(cur->pos == pos);
	FUZZ_CHECK(memcmp(before, after, sizeof(after)) == 0);
	FUZZ_CHECK(r->status == SP_ETRUNCATED || r->status == SP_ECORRUPT ||
		   r->status == -ENOMEM);
	if (r->status == SP_ECORRUPT)
		FUZZ_CHECK(diag->offset == pos && diag->message[0] != 0);
}

static inline void fuzz_note_record(struct fuzz_run *r,
				    const struct sp__cursor *cur,
				    const struct sp__event *ev)
{
	r->ends[r->nrec] = cur->pos;
	r->tags[r->nrec++] = ev->tag;
	if (ev->tag == SP_TAG_PYTHON)
		r->npython++;
	if (ev->tag != SP_TAG_SAMPLE)
		return;
	FUZZ_CHECK(ev->u.sample.stack < sp_spool_stack_count(&r->spool));
	FUZZ_CHECK(ev->u.sample.thread < sp_spool_thread_count(&r->spool));
	FUZZ_CHECK(cur->last_ns == ev->u.sample.timestamp_ns);
	sp__spool_note_sample(&r->spool, ev->u.sample.timestamp_ns);
	r->samples[r->nsamples++] = ev->u.sample;
}

/* Decodes buf[0..len) as a whole stream into @r (free with fuzz_run_fini). */
static inline void fuzz_run_decode(struct fuzz_run *r, const uint8_t *buf,
				   size_t len)
{
	struct sp__cursor cur = { .buf = buf, .len = len };
	struct sp_diag diag;
	struct sp__event ev;
	struct sp__mem mem;
	uint32_t before[4];
	size_t pos;

	memset(r, 0, sizeof(*r));
	fuzz_alloc_init(&r->alloc, 0);
	sp__mem_init(&mem, &r->alloc.hook);
	sp__spool_init(&r->spool, &mem, true);
	r->ends = calloc(len + 1, sizeof(*r->ends));
	r->tags = calloc(len + 1, 1);
	r->samples = calloc(len / 4 + 1, sizeof(*r->samples));
	FUZZ_CHECK(r->ends && r->tags && r->samples);
	r->hdr = sp__spool_header(buf, len, &r->spool.start_us,
				  &r->spool.interval_us, &diag);
	r->status = r->hdr < 0 ? r->hdr : 0;
	if (r->hdr < 0)
		return;
	FUZZ_CHECK(r->hdr >= 10 && (size_t)r->hdr <= len && r->hdr <= 28);
	cur.pos = (size_t)r->hdr;
	while (cur.pos < len) {
		pos = cur.pos;
		fuzz_counts(&r->spool, before);
		memset(&diag, 0, sizeof(diag));
		r->status = sp__spool_decode(&r->spool, &cur, SP_DECODE_APPLY,
					     &ev, &diag);
		if (r->status) {
			fuzz_check_failed(r, &cur, pos, before, &diag);
			break;
		}
		FUZZ_CHECK(cur.pos > pos && cur.pos <= len);
		fuzz_note_record(r, &cur, &ev);
	}
	r->stop = cur.pos;
}

static inline void fuzz_run_fini(struct fuzz_run *r)
{
	sp__spool_fini(&r->spool);
	FUZZ_CHECK(r->alloc.outstanding == 0);
	free(r->ends);
	free(r->tags);
	free(r->samples);
}

/* Is the stream usable by Snapshot/Replay (open succeeds)? */
static inline bool fuzz_run_opens(const struct fuzz_run *r)
{
	return r->hdr > 0 && (r->status == 0 || r->status == SP_ETRUNCATED);
}

static inline void fuzz_check_module(const struct sp_spool *s, uint32_t id)
{
	struct sp_module m;

	FUZZ_CHECK(sp_spool_module(s, id, &m) == 0);
	FUZZ_CHECK(m.id == id);
	FUZZ_CHECK(m.is_kernel == 0 || m.is_kernel == 1);
	FUZZ_CHECK(m.is_kernel ? m.pid == -1 : m.pid >= 1);
	FUZZ_CHECK(m.path != NULL && m.path[m.path_len] == 0);
	FUZZ_CHECK(m.deactivated_at == SP_NEVER ||
		   m.deactivated_at <= sp_spool_frame_count(s));
}

/* §5.2 / §6: what a frame and its resolution for @pid must look like. */
static inline void fuzz_check_frame(const struct sp_spool *s, uint32_t id,
				    int32_t pid)
{
	struct sp_frame_context c;
	struct sp_module m;
	struct sp_frame f;

	FUZZ_CHECK(sp_spool_frame(s, id, &f) == 0);
	FUZZ_CHECK(sp_spool_resolve(s, id, pid, &c) == 0);
	FUZZ_CHECK(c.frame_id == id && memcmp(&c.frame, &f, sizeof(f)) == 0);
	if (f.mode == SP_FRAME_TRUNCATED) {
		FUZZ_CHECK(f.abs_ip == 0 && f.file_relative_ip == 0);
		FUZZ_CHECK(f.module_id == SP_NO_MODULE);
		FUZZ_CHECK(c.module_id == SP_NO_MODULE);
		return;
	}
	FUZZ_CHECK(f.mode == SP_FRAME_USER || f.mode == SP_FRAME_KERNEL);
	if (f.module_id == SP_NO_MODULE) {
		FUZZ_CHECK(f.abs_ip == f.file_relative_ip);
		if (c.module_id == SP_NO_MODULE) {
			FUZZ_CHECK(c.file_relative_ip == 0);
			return;
		}
	} else {
		FUZZ_CHECK(c.module_id == f.module_id);
		FUZZ_CHECK(c.file_relative_ip == f.file_relative_ip);
	}
	/* Pinned or resolved: the address lies inside the module. */
	FUZZ_CHECK(sp_spool_module(s, c.module_id, &m) == 0);
	FUZZ_CHECK(m.start <= f.abs_ip && f.abs_ip < m.end);
	FUZZ_CHECK(c.file_relative_ip - m.file_offset == f.abs_ip - m.start);
	FUZZ_CHECK(c.file_relative_ip >= m.file_offset);
	FUZZ_CHECK(f.mode == (m.is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER));
	if (f.module_id == SP_NO_MODULE && !m.is_kernel)
		FUZZ_CHECK(m.pid == pid);
}

static inline void fuzz_check_node(const struct sp_spool *s, uint32_t id,
				   uint32_t *ids)
{
	struct sp_stack_node n, p;
	uint32_t i, nframes = sp_spool_frame_count(s);
	int depth;

	FUZZ_CHECK(sp_spool_stack_node(s, id, &n) == 0);
	FUZZ_CHECK(n.frame < nframes);
	if (n.parent == SP_NO_PARENT) {
		FUZZ_CHECK(n.depth == 1);
	} else {
		FUZZ_CHECK(n.parent < id);
		FUZZ_CHECK(sp_spool_stack_node(s, n.parent, &p) == 0);
		FUZZ_CHECK(n.depth == p.depth + 1);
	}
	FUZZ_CHECK(n.depth <= id + 1);
	depth = sp_spool_stack_frames(s, id, ids, n.depth);
	FUZZ_CHECK(depth == (int)n.depth);
	for (i = 0; i < n.depth; i++)
		FUZZ_CHECK(ids[i] < nframes);
	FUZZ_CHECK(ids[0] == n.frame);
	/* A short buffer still reports the full depth and the leaf frame. */
	FUZZ_CHECK(sp_spool_stack_frames(s, id, ids, 1) == (int)n.depth);
	FUZZ_CHECK(ids[0] == n.frame);
}

/* One sample's stack: contexts leaf first agree with frames + resolve. */
static inline void fuzz_check_stack(const struct sp_spool *s, uint32_t stack,
				    int32_t pid, uint32_t *ids,
				    struct sp_frame_context *ctx)
{
	struct sp_frame_context one;
	struct sp_stack_node n;
	int i, depth;

	FUZZ_CHECK(sp_spool_stack_node(s, stack, &n) == 0);
	depth = sp_spool_stack_frames(s, stack, ids, n.depth);
	FUZZ_CHECK(depth == (int)n.depth);
	FUZZ_CHECK(sp_spool_stack_contexts(s, stack, pid, ctx, n.depth) ==
		   depth);
	for (i = 0; i < depth; i++) {
		FUZZ_CHECK(ctx[i].frame_id == ids[i]);
		FUZZ_CHECK(sp_spool_resolve(s, ids[i], pid, &one) == 0);
		FUZZ_CHECK(memcmp(&one, &ctx[i], sizeof(one)) == 0);
	}
}

static inline void fuzz_check_kernel_addresses(const struct sp_spool *s)
{
	size_t i, n = sp_spool_kernel_addresses(s, NULL, 0), kept;
	uint64_t *out;

	out = calloc(n + 1, sizeof(*out));
	FUZZ_CHECK(out != NULL);
	kept = sp_spool_kernel_addresses(s, out, n);
	FUZZ_CHECK(kept <= n);
	for (i = 1; i < kept; i++)
		FUZZ_CHECK(out[i - 1] < out[i]);
	free(out);
}

/*
 * Checks every definition of @s and, through @pids (one per thread plus
 * pid 1), every frame's resolution. Linear in the number of definitions
 * times threads, capped so a large corpus file stays fast.
 */
static inline void fuzz_check_spool(const struct sp_spool *s)
{
	uint32_t i, j, c[4];
	uint32_t *ids;
	struct sp_thread t;

	fuzz_counts(s, c);
	for (i = 0; i < c[0]; i++)
		fuzz_check_module(s, i);
	ids = calloc(c[2] + 1, sizeof(*ids));
	FUZZ_CHECK(ids != NULL);
	for (i = 0; i < c[2]; i++)
		fuzz_check_node(s, i, ids);
	free(ids);
	for (j = 0; j < c[1]; j++)
		fuzz_check_frame(s, j, 1);
	for (i = 0; i < c[3] && i < 8; i++) {
		FUZZ_CHECK(sp_spool_thread(s, i, &t) == 0);
		FUZZ_CHECK(t.pid >= 1 && t.tid >= 1);
		for (j = 0; j < c[1]; j++)
			fuzz_check_frame(s, j, t.pid);
	}
	FUZZ_CHECK(sp_spool_module(s, c[0], &(struct sp_module){ 0 }) ==
		   -EINVAL);
	FUZZ_CHECK(sp_spool_stack_frames(s, c[2], NULL, 0) == -EINVAL);
	fuzz_check_kernel_addresses(s);
}

#endif /* SP_TESTS_FUZZ_SPOOL_H */
