/* SPDX-License-Identifier: MIT */
/* The SPULSE3 writer: lifecycle, chunking and the non-sample records. */

/*
 * Output is byte-identical to stackpulse 0.10.x for the same calls
 * (SPULSE3 §7). Every public call follows the same three steps:
 *
 *   1. validate all inputs and id limits        -> -EINVAL / SP_EIDSPACE
 *   2. reserve everything that can fail: table
 *      space, then chunk space (may drain)      -> -ENOMEM / sink error
 *   3. encode and update the tables             (cannot fail)
 *
 * so a failed call leaves the output and every cache exactly as they were.
 * Samples follow the same scheme in writer_sample.c.
 *
 * Record layouts written here (§5, U = varint, S = zigzag varint):
 *
 *   header  "SPULSE3\0" U start_us U interval_us
 *   tag 1   U id S pid U start U end U offset U inode U major U minor
 *           U generation B is_kernel U path_len path[path_len]
 *   tag 6   U timestamp_ns S pid B is_python_runtime
 *   tag 7   S pid
 *   tag 8   U module_id
 */
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>

#include "opts.h"
#include "utf8.h"
#include "writer_internal.h"

#define SP_WRITER_DEFAULT_CHUNK (64 * 1024)
#define SP_REC_MODULE_MAX (1 + 5 + 10 + 4 * 10 + 5 + 5 + 10 + 1 + 10)
#define SP_REC_PYTHON_MAX (1 + 10 + 5 + 1)

static const unsigned char spulse3_magic[8] = { 'S', 'P', 'U', 'L',
						'S', 'E', '3', 0 };

/* ---- chunk buffer ---- */

/* Hands the buffered chunk to the sink; on failure keeps it for a retry. */
static int drain(struct sp_writer *w)
{
	int err;

	if (w->len == 0)
		return 0;
	err = sp_sink_write(w->sink, w->buf, w->len);
	if (err < 0) {
		w->stalled = true;
		return err;
	}
	w->drained += w->len;
	w->len = 0;
	w->stalled = false;
	return 0;
}

int sp__writer_make_room(struct sp_writer *w, size_t need)
{
	unsigned char *buf;
	int err;

	if (w->len > 0 && (w->stalled || need > w->chunk_size ||
			   w->len > w->chunk_size - need)) {
		err = drain(w);
		if (err)
			return err;
	}
	if (need <= w->cap - w->len)
		return 0;
	/* Only a record bigger than a whole chunk gets here (len is 0). */
	if (need > SIZE_MAX - w->len)
		return -ENOMEM;
	buf = sp__mem_realloc(&w->mem, w->buf, w->cap, w->len + need);
	if (!buf)
		return -ENOMEM;
	w->buf = buf;
	w->cap = w->len + need;
	return 0;
}

/*
 * §7 rule 3: a module, tag-7 or tag-8 record changes what unpinned
 * addresses mean, so their frames are interned afresh. Clearing costs the
 * table's capacity; a table left oversized by a deep stack is dropped
 * instead, which keeps clears amortized O(1) per interned frame.
 */
static void clear_unpinned(struct sp_writer *w)
{
	w->unpinned_gen++;
	if (w->unpinned.count == 0)
		return;
	if (w->unpinned.cap > 1024 && w->unpinned.count < w->unpinned.cap / 8)
		sp__map_fini(&w->unpinned, &w->mem);
	else
		sp__map_clear(&w->unpinned);
}

/* Common entry check of every record-writing call. */
static int writable(const struct sp_writer *w)
{
	if (!w)
		return -EINVAL;
	return w->finished ? -EPIPE : 0;
}

/* ---- lifecycle ---- */

/* Copies the caller's sized options (R4): unknown trailing bytes must be 0. */
static int opts_load(const struct sp_writer_opts *opts,
		     struct sp_writer_opts *o)
{
	int err = sp__opts_load(opts, opts ? opts->size : 0, o, sizeof(*o));

	if (err)
		return err;
	if (!o->chunk_size)
		o->chunk_size = SP_WRITER_DEFAULT_CHUNK;
	if (!o->id_limit)
		o->id_limit = UINT32_MAX;
	return 0;
}

static void writer_init(struct sp_writer *w, const struct sp__mem *mem,
			const struct sp_writer_opts *o, struct sp_sink *sink)
{
	w->mem = *mem;
	w->sink = sink;
	w->chunk_size = o->chunk_size;
	w->id_limit = o->id_limit;
	w->unpinned_gen = 1;
	for (size_t i = 0; i < SP__WRITER_TIDS; i++)
		w->tids[i].index = UINT32_MAX;
	sp__map_init(&w->pinned);
	sp__map_init(&w->unpinned);
	sp__map_init(&w->nodes);
	sp__map_init(&w->threads);
	sp__vec_init(&w->modules, sizeof(struct sp__wmodule));
}

/* §3 header, flushed at once so a Tail can open the destination. */
static int write_header(struct sp_writer *w, const struct sp_writer_opts *o)
{
	int err = sp__writer_reserve(w, sizeof(spulse3_magic) + 20);

	if (err)
		return err;
	memcpy(w->buf, spulse3_magic, sizeof(spulse3_magic));
	w->len = sizeof(spulse3_magic);
	sp__writer_u(w, o->start_timestamp_us);
	sp__writer_u(w, o->sample_interval_us);
	err = drain(w);
	return err ? err : sp_sink_flush(w->sink);
}

SP_API int sp_writer_new(struct sp_sink *sink,
			 const struct sp_writer_opts *opts,
			 struct sp_writer **out)
{
	struct sp_writer_opts o;
	struct sp_writer *w;
	struct sp__mem mem;
	int err;

	if (!sink || !out) {
		sp_sink_free(sink);
		return -EINVAL;
	}
	err = opts_load(opts, &o);
	if (err)
		goto err_free_sink;
	sp__mem_init(&mem, o.allocator);
	w = sp__mem_calloc(&mem, 1, sizeof(*w));
	err = -ENOMEM;
	if (!w)
		goto err_free_sink;
	writer_init(w, &mem, &o, sink);
	w->buf = sp__mem_alloc(&mem, o.chunk_size);
	if (!w->buf)
		goto err_free_writer;
	w->cap = o.chunk_size;
	err = write_header(w, &o);
	if (err)
		goto err_free_writer;
	*out = w;
	return 0;

err_free_writer:
	sp_writer_free(w);
	return err;
err_free_sink:
	sp_sink_free(sink);
	return err;
}

SP_API void sp_writer_free(struct sp_writer *w)
{
	struct sp__mem mem;

	if (!w)
		return;
	mem = w->mem;
	sp__writer_memo_free(w);
	sp__map_fini(&w->pinned, &mem);
	sp__map_fini(&w->unpinned, &mem);
	sp__map_fini(&w->nodes, &mem);
	sp__map_fini(&w->threads, &mem);
	sp__vec_fini(&w->modules, &mem);
	sp__mem_free(&mem, w->buf, w->cap);
	sp_sink_free(w->sink);
	sp__mem_free(&mem, w, sizeof(*w));
}

SP_API int sp_writer_flush(struct sp_writer *w)
{
	int err = writable(w);

	if (!err)
		err = drain(w);
	return err ? err : sp_sink_flush(w->sink);
}

SP_API int sp_writer_push(struct sp_writer *w)
{
	int err = writable(w);

	return err ? err : drain(w);
}

SP_API int sp_writer_finish(struct sp_writer *w)
{
	int err;

	if (!w)
		return -EINVAL;
	if (w->finished)
		return 0;
	err = drain(w);
	if (!err)
		err = sp_sink_flush(w->sink);
	if (!err)
		err = sp_sink_finish(w->sink);
	if (!err)
		w->finished = true;
	return err;
}

SP_API struct sp_sink *sp_writer_sink(struct sp_writer *w)
{
	return w ? w->sink : NULL;
}

SP_API uint64_t sp_writer_bytes(const struct sp_writer *w)
{
	return w ? w->drained + w->len : 0;
}

SP_API uint32_t sp_writer_frame_count(const struct sp_writer *w)
{
	return w ? w->frame_count : 0;
}

/* ---- module records ---- */

static int module_check(const struct sp_writer *w, const struct sp_module *m)
{
	if (!m || (!m->path && m->path_len))
		return -EINVAL;
	if (!m->is_kernel && m->pid < 1)
		return -EINVAL;
	/* The readers refuse longer paths: never write one they cannot read. */
	if (m->path_len > SP_SPOOL_PATH_MAX)
		return -ENAMETOOLONG;
	/* §5.1 strict UTF-8 (the recorder escapes other paths, utf8.h). */
	if (!sp__utf8_valid((const uint8_t *)m->path, m->path_len))
		return -EINVAL;
	return w->modules.len >= w->id_limit ? SP_EIDSPACE : 0;
}

static void module_encode(struct sp_writer *w, const struct sp_module *m,
			  uint32_t id)
{
	sp__writer_byte(w, 1);
	sp__writer_u(w, id);
	/* §5.1: kernel modules are written with pid -1, flag exactly 00/01. */
	sp__writer_s(w, m->is_kernel ? -1 : m->pid);
	sp__writer_u(w, m->start);
	sp__writer_u(w, m->end);
	sp__writer_u(w, m->file_offset);
	sp__writer_u(w, m->inode);
	sp__writer_u(w, m->dev_major);
	sp__writer_u(w, m->dev_minor);
	sp__writer_u(w, m->inode_generation);
	sp__writer_byte(w, m->is_kernel ? 1 : 0);
	sp__writer_u(w, m->path_len);
	if (m->path_len)
		memcpy(w->buf + w->len, m->path, m->path_len);
	w->len += m->path_len;
}

SP_API int sp_writer_module(struct sp_writer *w, const struct sp_module *m,
			    uint32_t *id_out)
{
	struct sp__wmodule *wm;
	uint32_t id;
	int err = writable(w);

	if (!err)
		err = module_check(w, m);
	if (!err)
		err = sp__vec_reserve(&w->modules, &w->mem, 1);
	if (!err)
		err = sp__writer_reserve(w, SP_REC_MODULE_MAX + m->path_len);
	if (err)
		return err;
	id = (uint32_t)w->modules.len;
	module_encode(w, m, id);
	wm = sp__vec_at(&w->modules, w->modules.len++);
	wm->start = m->start;
	wm->end = m->end;
	wm->file_offset = m->file_offset;
	clear_unpinned(w);
	if (id_out)
		*id_out = id;
	return 0;
}

/* ---- python, deactivation ---- */

SP_API int sp_writer_python_runtime(struct sp_writer *w, uint64_t timestamp_ns,
				    int32_t pid, bool is_python_runtime)
{
	int err = writable(w);

	if (!err && pid < 1)
		err = -EINVAL;
	if (!err)
		err = sp__writer_reserve(w, SP_REC_PYTHON_MAX);
	if (err)
		return err;
	sp__writer_byte(w, 6);
	sp__writer_u(w, timestamp_ns);
	sp__writer_s(w, pid);
	sp__writer_byte(w, is_python_runtime ? 1 : 0);
	return 0;
}

SP_API int sp_writer_deactivate_process(struct sp_writer *w, int32_t pid)
{
	int err = writable(w);

	if (!err && pid < 1)
		err = -EINVAL;
	if (!err)
		err = sp__writer_reserve(w, 1 + 5);
	if (err)
		return err;
	sp__writer_byte(w, 7);
	sp__writer_s(w, pid);
	clear_unpinned(w);
	return 0;
}

SP_API int sp_writer_deactivate_module(struct sp_writer *w, uint32_t module_id)
{
	int err = writable(w);

	if (!err && module_id >= w->modules.len)
		err = -EINVAL;
	if (!err)
		err = sp__writer_reserve(w, 1 + 5);
	if (err)
		return err;
	sp__writer_byte(w, 8);
	sp__writer_u(w, module_id);
	clear_unpinned(w);
	return 0;
}
