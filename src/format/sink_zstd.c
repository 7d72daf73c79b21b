/* SPDX-License-Identifier: MIT */
/* The zstd sink: every chunk becomes one complete zstd frame. */

/*
 * A spool is tailed while it grows, so the compressed stream must be
 * decodable at every chunk boundary. Streaming compression with
 * ZSTD_e_flush would also achieve that, but each write then depends on the
 * window of earlier ones; one independent frame per chunk
 * (ZSTD_compress2, i.e. ZSTD_e_end) keeps every written byte decodable even
 * if the process dies, and costs a few bytes of frame header per 64 KiB
 * chunk. A concatenation of frames is itself a valid zstd stream.
 *
 * One ZSTD_CCtx and one output buffer (ZSTD_compressBound of the largest
 * chunk so far) are reused, so steady-state writes do not allocate. zstd
 * allocates through the sink's allocator hook (ZSTD_customMem); because
 * zstd's free callback gets no size, each block carries a 16-byte header
 * holding it.
 *
 * If the inner sink fails, the compressed frame is kept: the writer offers
 * the same chunk again (sink_internal.h), and the retry re-sends exactly
 * the frame that failed, so the inner sink can resume where it stopped.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced, ZSTD_customMem */
#include <errno.h>
#include <string.h>
#include <zstd.h>

#include <stackpulse/error.h>

#include "sink_internal.h"

#define ZMEM_HEADER 16

struct zstd_sink {
	struct sp__mem mem;
	struct sp_sink *inner;
	ZSTD_CCtx *cctx;
	unsigned char *out;
	size_t out_cap;
	size_t pending; /* compressed bytes of a frame the inner sink refused */
	size_t pending_src; /* length of the chunk that frame encodes */
};

static void *zmem_alloc(void *opaque, size_t size)
{
	const struct sp__mem *mem = opaque;
	unsigned char *p;

	if (size > SIZE_MAX - ZMEM_HEADER)
		return NULL;
	size += ZMEM_HEADER;
	p = sp__mem_alloc(mem, size);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof(size));
	return p + ZMEM_HEADER;
}

static void zmem_free(void *opaque, void *address)
{
	const struct sp__mem *mem = opaque;
	unsigned char *p;
	size_t size;

	if (!address)
		return;
	p = (unsigned char *)address - ZMEM_HEADER;
	memcpy(&size, p, sizeof(size));
	sp__mem_free(mem, p, size);
}

static int zstd_out_reserve(struct zstd_sink *z, size_t len)
{
	size_t bound = ZSTD_compressBound(len);
	void *out;

	if (bound == 0 || ZSTD_isError(bound))
		return -ENOMEM;
	if (bound <= z->out_cap)
		return 0;
	out = sp__mem_alloc(&z->mem, bound);
	if (!out)
		return -ENOMEM;
	sp__mem_free(&z->mem, z->out, z->out_cap);
	z->out = out;
	z->out_cap = bound;
	return 0;
}

static int zstd_write(void *ctx, const void *buf, size_t len)
{
	struct zstd_sink *z = ctx;
	size_t n;
	int err;

	if (z->pending && z->pending_src == len) {
		n = z->pending;
	} else {
		err = zstd_out_reserve(z, len);
		if (err)
			return err;
		n = ZSTD_compress2(z->cctx, z->out, z->out_cap, buf, len);
		if (ZSTD_isError(n))
			return SP_EZSTD;
	}
	err = sp_sink_write(z->inner, z->out, n);
	z->pending = err ? n : 0;
	z->pending_src = len;
	return err;
}

static int zstd_flush(void *ctx)
{
	struct zstd_sink *z = ctx;

	return sp_sink_flush(z->inner);
}

/* Every frame is complete already: finishing only ends the inner sink. */
static int zstd_finish(void *ctx)
{
	struct zstd_sink *z = ctx;
	int err = sp_sink_flush(z->inner);

	return err ? err : sp_sink_finish(z->inner);
}

static void zstd_free(void *ctx)
{
	struct zstd_sink *z = ctx;
	struct sp__mem mem = z->mem;

	ZSTD_freeCCtx(z->cctx);
	sp__mem_free(&mem, z->out, z->out_cap);
	sp_sink_free(z->inner);
	sp__mem_free(&mem, z, sizeof(*z));
}

static const struct sp_sink_ops zstd_ops = {
	.write = zstd_write,
	.flush = zstd_flush,
	.finish = zstd_finish,
	.free = zstd_free,
};

/* Creates the compression context at @level with allocations via @z->mem. */
static int zstd_cctx_new(struct zstd_sink *z, int level)
{
	ZSTD_customMem cmem = {
		.customAlloc = zmem_alloc,
		.customFree = zmem_free,
		.opaque = &z->mem,
	};
	size_t ret;

	z->cctx = ZSTD_createCCtx_advanced(cmem);
	if (!z->cctx)
		return -ENOMEM;
	ret = ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level);
	if (ZSTD_isError(ret))
		return SP_EZSTD;
	return 0;
}

SP_API int sp_sink_new_zstd(struct sp_sink *inner,
			    const struct sp_sink_opts *opts,
			    struct sp_sink **out)
{
	struct sp_sink_opts o;
	struct zstd_sink *z;
	struct sp__mem mem;
	int level, err;

	err = sp__sink_opts_load(opts, 0, &o);
	level = o.zstd_level ? o.zstd_level : 3;
	if (err || !inner || !out || level < ZSTD_minCLevel() ||
	    level > ZSTD_maxCLevel()) {
		sp_sink_free(inner);
		return -EINVAL;
	}
	sp__mem_init(&mem, o.allocator);
	z = sp__mem_calloc(&mem, 1, sizeof(*z));
	if (!z) {
		sp_sink_free(inner);
		return -ENOMEM;
	}
	z->mem = mem;
	z->inner = inner;
	err = zstd_cctx_new(z, level);
	if (!err)
		err = sp__sink_new(&zstd_ops, z, &mem, out);
	if (err)
		zstd_free(z);
	return err;
}
