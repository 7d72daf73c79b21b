/* SPDX-License-Identifier: MIT */
/* Tail: read a spool in batches while a writer is still appending to it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse/error.h>
#include <stackpulse/tail.h>

#include "format_internal.h"
#include "source.h"

/*
 * A Tail decodes the stream through a sp__source window that holds only
 * the unconsumed suffix of what the file held at the last poll (for a
 * zstd spool: of what the decoder produced from the compressed bytes
 * fed so far). Definitions live in the spool for the Tail's lifetime;
 * everything else is per batch and reuses its storage (SPULSE3 §10):
 *
 *   file:  [consumed ........ | cut-off record? ] <- grows
 *           ^pos: next record   ^window end
 *
 * A batch ends after SP_TAIL_BATCH_SAMPLES samples, right after a tag-7
 * or tag-8 record, or when the next record is cut off at the current end
 * of the file; that record is decoded again by a later poll (the sample
 * baseline last_ns only moves past complete records, §9.2). On a corrupt
 * record the Tail stays before it, so every later poll fails the same way.
 *
 * has_more is set when a batch stopped early (sample limit, retirement)
 * with bytes already visible after it, or when the file grew between
 * open and the first poll. A batch that stopped at a cut-off record does
 * not set it: another poll cannot progress until the writer appends.
 *
 * discard_consumed punches holes behind @pos (zstd: behind the compressed
 * bytes fed to the decoder). The window never goes back to bytes before
 * those, so nothing punched is read again.
 */

struct sp_tail {
	struct sp__mem mem;
	struct sp_spool spool;
	struct sp__source src;
	struct sp_diag *diag;
	uint32_t flags;
	uint64_t pos; /* stream offset of the next record */
	uint64_t last_ns;
	uint64_t seen;	    /* largest file size observed */
	uint64_t discarded; /* end of the previous hole punch */
	bool opened;	    /* the batch decoded by open was not returned yet */
	bool has_more;
	struct sp__vec samples;		/* struct sp_sample */
	struct sp__vec pids;		/* int32_t */
	struct sp__vec retired_pids;	/* int32_t */
	struct sp__vec retired_modules; /* uint32_t */
	struct sp__vec python;		/* struct sp_python_record */
};

static void batch_clear(struct sp_tail *t)
{
	t->samples.len = 0;
	t->pids.len = 0;
	t->retired_pids.len = 0;
	t->retired_modules.len = 0;
	t->python.len = 0;
}

/* Adds @pid to the batch's observed pids unless already there. */
static void observe_pid(struct sp_tail *t, int32_t pid)
{
	const int32_t *p = t->pids.data;
	size_t i = t->pids.len;

	if (pid < 1)
		return;
	while (i-- > 0)
		if (p[i] == pid)
			return;
	/* Room was reserved before the record was decoded. */
	(void)sp__vec_push(&t->pids, &t->mem, &pid);
}

/*
 * Reserves what reporting the record at @tag needs, so that a record the
 * decoder applied is never lost to a failed allocation afterwards.
 */
static int batch_reserve(struct sp_tail *t, uint8_t tag)
{
	size_t modules = t->spool.modules.len;

	if (sp__vec_reserve(&t->pids, &t->mem, 1) ||
	    sp__vec_reserve(&t->python, &t->mem, 1) ||
	    sp__vec_reserve(&t->retired_pids, &t->mem, 1))
		return -ENOMEM;
	if (tag == SP_TAG_DEACTIVATE_PROCESS || tag == SP_TAG_DEACTIVATE_MODULE)
		return sp__vec_reserve(&t->retired_modules, &t->mem,
				       modules ? modules : 1);
	return 0;
}

static int32_t module_pid(const struct sp_spool *spool, uint32_t id)
{
	const struct sp_module *m = sp__vec_at(&spool->modules, id);

	return m->pid;
}

/* Reports one decoded record; returns true when it ends the batch. */
static bool batch_add(struct sp_tail *t, const struct sp__event *ev)
{
	const struct sp__vec *retired = &t->spool.retired;

	switch (ev->tag) {
	case SP_TAG_SAMPLE:
		sp__spool_note_sample(&t->spool, ev->u.sample.timestamp_ns);
		(void)sp__vec_push(&t->samples, &t->mem, &ev->u.sample);
		observe_pid(t, ev->u.sample.pid);
		return t->samples.len == SP_TAIL_BATCH_SAMPLES;
	case SP_TAG_MODULE:
		observe_pid(t, ev->u.pid);
		return false;
	case SP_TAG_PYTHON:
		(void)sp__vec_push(&t->python, &t->mem, &ev->u.python);
		observe_pid(t, ev->u.python.pid);
		return false;
	case SP_TAG_DEACTIVATE_PROCESS:
		observe_pid(t, ev->u.pid);
		(void)sp__vec_push(&t->retired_pids, &t->mem, &ev->u.pid);
		break;
	case SP_TAG_DEACTIVATE_MODULE:
		observe_pid(t, module_pid(&t->spool, ev->u.module_id));
		break;
	default:
		return false;
	}
	/* A tag 7 that retired nothing leaves retired->data NULL. */
	if (retired->len)
		memcpy((uint32_t *)t->retired_modules.data +
			       t->retired_modules.len,
		       retired->data, retired->len * sizeof(uint32_t));
	t->retired_modules.len += retired->len;
	return true;
}

/* Decodes the record at t->pos; 1 = decoded, 0 = cut off for now. */
static int decode_next(struct sp_tail *t, struct sp__event *ev)
{
	struct sp__cursor cur;
	int err;

	for (;;) {
		sp__source_cursor(&t->src, t->pos, t->last_ns, &cur);
		if (cur.pos < cur.len) {
			err = batch_reserve(t, cur.buf[cur.pos]);
			if (err)
				return err;
		}
		err = sp__spool_decode(&t->spool, &cur, SP_DECODE_APPLY, ev,
				       t->diag);
		if (err != SP_ETRUNCATED)
			break;
		err = sp__source_extend(&t->src, t->pos);
		if (err <= 0)
			return err;
	}
	if (err)
		return err;
	t->pos = cur.offset + cur.pos;
	t->last_ns = cur.last_ns;
	return 1;
}

/* Whether stream bytes past t->pos are already visible. */
static bool bytes_visible(const struct sp_tail *t)
{
	return t->src.win_off + t->src.win.len > t->pos ||
	       t->src.file_pos < t->src.file_size ||
	       (t->src.zstd && t->src.in_pos < t->src.in_len);
}

static int decode_batch(struct sp_tail *t)
{
	struct sp__event ev;
	uint64_t start = t->pos;
	int err;

	batch_clear(t);
	t->has_more = false;
	while ((err = decode_next(t, &ev)) > 0) {
		if (batch_add(t, &ev)) {
			t->has_more = bytes_visible(t);
			break;
		}
	}
	/* Keep only the unconsumed suffix. */
	sp__source_drop(&t->src, t->pos);
	if (err < 0 && t->pos == start)
		return err;
	/*
	 * Records before a bad one are delivered; the next poll starts at
	 * the bad record and reports the error.
	 */
	if (err < 0)
		t->has_more = true;
	return (int)t->samples.len;
}

/* Learns the file's current size; a file shorter than before is fatal. */
static int tail_stat(struct sp_tail *t)
{
	uint64_t before = t->src.file_size;
	int err = sp__source_stat(&t->src);

	if (err)
		return err;
	if (t->src.file_size < t->seen) {
		/* Never read with the smaller size: it is an error state. */
		t->src.file_size = before;
		return SP_ESHRANK;
	}
	t->seen = t->src.file_size;
	return 0;
}

static void tail_free(struct sp_tail *t)
{
	sp__source_close(&t->src);
	sp__vec_fini(&t->samples, &t->mem);
	sp__vec_fini(&t->pids, &t->mem);
	sp__vec_fini(&t->retired_pids, &t->mem);
	sp__vec_fini(&t->retired_modules, &t->mem);
	sp__vec_fini(&t->python, &t->mem);
	sp__spool_fini(&t->spool);
	sp__mem_free(&t->mem, t, sizeof(*t));
}

static int tail_load(struct sp_tail *t, const char *path)
{
	int err;

	err = sp__source_open(&t->src, &t->mem, path,
			      t->flags & SP_READER_OWNS_FILE);
	if (err)
		return err;
	t->seen = t->src.file_size;
	err = sp__vec_reserve(&t->samples, &t->mem, SP_TAIL_BATCH_SAMPLES);
	if (err)
		return err;
	err = sp__source_header(&t->src, &t->spool, t->diag);
	if (err < 0)
		return err;
	t->pos = (uint64_t)err;
	err = decode_batch(t);
	if (err < 0)
		return err;
	t->opened = true;
	return 0;
}

SP_API int sp_tail_open(const char *path, const struct sp_reader_opts *opts,
			struct sp_tail **out)
{
	struct sp_reader_opts o;
	struct sp__mem mem;
	struct sp_tail *t;
	int err;

	if (!path || !out)
		return -EINVAL;
	err = sp__reader_opts_load(opts, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	t = sp__mem_calloc(&mem, 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->mem = mem;
	t->diag = o.diag;
	t->flags = o.flags;
	t->src.fd = -1;
	sp__spool_init(&t->spool, &mem, false);
	sp__vec_init(&t->samples, sizeof(struct sp_sample));
	sp__vec_init(&t->pids, sizeof(int32_t));
	sp__vec_init(&t->retired_pids, sizeof(int32_t));
	sp__vec_init(&t->retired_modules, sizeof(uint32_t));
	sp__vec_init(&t->python, sizeof(struct sp_python_record));
	err = tail_load(t, path);
	if (err) {
		tail_free(t);
		return err;
	}
	*out = t;
	return 0;
}

SP_API void sp_tail_close(struct sp_tail *tail)
{
	if (tail)
		tail_free(tail);
}

SP_API const struct sp_spool *sp_tail_spool(const struct sp_tail *tail)
{
	return &tail->spool;
}

SP_API int sp_tail_poll(struct sp_tail *tail)
{
	uint64_t before = tail->src.file_size;
	int err;

	err = tail_stat(tail);
	if (err)
		return err;
	if (tail->opened) {
		/* §10: the first poll hands out the batch decoded by open. */
		tail->opened = false;
		if (tail->src.file_size > before)
			tail->has_more = true;
		return (int)tail->samples.len;
	}
	return decode_batch(tail);
}

SP_API size_t sp_tail_sample_count(const struct sp_tail *tail)
{
	return tail->samples.len;
}

SP_API int sp_tail_sample(const struct sp_tail *tail, size_t index,
			  struct sp_sample *out)
{
	if (index >= tail->samples.len)
		return -EINVAL;
	*out = *(const struct sp_sample *)sp__vec_at(&tail->samples, index);
	return 0;
}

SP_API size_t sp_tail_pids(const struct sp_tail *tail, const int32_t **pids)
{
	*pids = tail->pids.data;
	return tail->pids.len;
}

SP_API size_t sp_tail_retired_pids(const struct sp_tail *tail,
				   const int32_t **pids)
{
	*pids = tail->retired_pids.data;
	return tail->retired_pids.len;
}

SP_API size_t sp_tail_retired_modules(const struct sp_tail *tail,
				      const uint32_t **modules)
{
	*modules = tail->retired_modules.data;
	return tail->retired_modules.len;
}

SP_API size_t sp_tail_python_records(const struct sp_tail *tail,
				     const struct sp_python_record **records)
{
	*records = tail->python.data;
	return tail->python.len;
}

SP_API bool sp_tail_has_more(const struct sp_tail *tail)
{
	return tail->has_more;
}

SP_API uint64_t sp_tail_consumed(const struct sp_tail *tail)
{
	return tail->src.zstd ? tail->src.fed : tail->pos;
}

SP_API int sp_tail_discard_consumed(struct sp_tail *tail)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t end = sp_tail_consumed(tail);

	if (!(tail->flags & SP_READER_OWNS_FILE))
		return -EPERM;
	if (page > 0)
		end -= end % (uint64_t)page;
	if (end <= tail->discarded)
		return 0;
	if (fallocate(tail->src.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)tail->discarded,
		      (off_t)(end - tail->discarded)) < 0)
		return -errno;
	tail->discarded = end;
	return 0;
}
