/* SPDX-License-Identifier: MIT */
/* Incremental decompression of zstd-compressed spools. */
#include <errno.h>
#include <stdbool.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem: allocate through the hook */
#include <zstd.h>
#include <zstd_errors.h>

#include <stackpulse/error.h>

#include "format_internal.h"

/*
 * The zstd sink writes one complete frame per chunk, so a compressed spool
 * is a sequence of frames. ZSTD_decompressStream walks across frame
 * boundaries by itself; a final frame that stops early (writer still
 * running, or crashed) simply produces less output, which the record
 * decoder then sees as a cut-off tail. The decompression context allocates
 * through the reader's allocator hook.
 */
struct sp__unzstd {
	struct sp__mem mem;
	ZSTD_DCtx *dctx;
	/* The last call stopped with decoded bytes possibly still inside. */
	bool pending;
	/* The input so far ends inside a frame (ZSTD_decompressStream != 0). */
	bool mid_frame;
};

static void *zalloc(void *opaque, size_t size)
{
	const struct sp__mem *mem = opaque;
	size_t *p;

	/* zstd frees without a size, so keep it in front of the block. */
	p = sp__mem_alloc(mem, size + 16);
	if (!p)
		return NULL;
	p[0] = size + 16;
	return (char *)p + 16;
}

static void zfree(void *opaque, void *ptr)
{
	const struct sp__mem *mem = opaque;
	size_t *p;

	if (!ptr)
		return;
	p = (size_t *)(void *)((char *)ptr - 16);
	sp__mem_free(mem, p, p[0]);
}

int sp__unzstd_new(const struct sp__mem *mem, struct sp__unzstd **out)
{
	struct sp__unzstd *z = sp__mem_alloc(mem, sizeof(*z));
	ZSTD_customMem cm;

	if (!z)
		return -ENOMEM;
	z->mem = *mem;
	z->pending = false;
	z->mid_frame = false;
	cm.customAlloc = zalloc;
	cm.customFree = zfree;
	cm.opaque = &z->mem;
	z->dctx = ZSTD_createDCtx_advanced(cm);
	if (!z->dctx) {
		sp__mem_free(mem, z, sizeof(*z));
		return -ENOMEM;
	}
	*out = z;
	return 0;
}

void sp__unzstd_free(struct sp__unzstd *z)
{
	if (!z)
		return;
	ZSTD_freeDCtx(z->dctx);
	sp__mem_free(&z->mem, z, sizeof(*z));
}

void sp__unzstd_reset(struct sp__unzstd *z)
{
	ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
	z->pending = false;
	z->mid_frame = false;
}

bool sp__unzstd_mid_frame(const struct sp__unzstd *z)
{
	return z->mid_frame;
}

/*
 * One ZSTD_decompressStream call into @ob. Its result is 0 exactly when a
 * frame ended and all its output is flushed, so it tells whether the
 * input so far stops inside a frame: a cut-off last frame (a writer that
 * died, a file cut short) is not an error here, but readers report it.
 * A failed workspace allocation is memory, not data.
 */
static int step(struct sp__unzstd *z, ZSTD_outBuffer *ob, ZSTD_inBuffer *ib)
{
	size_t in_before = ib->pos;
	size_t ret = ZSTD_decompressStream(z->dctx, ob, ib);

	if (ZSTD_isError(ret))
		return ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation ?
			       -ENOMEM :
			       SP_EZSTD;
	/* A call without input or output says nothing new about frames. */
	if (ib->pos > in_before || ob->pos > 0)
		z->mid_frame = ret != 0;
	return 0;
}

int sp__unzstd_feed_some(struct sp__unzstd *z, const void *in, size_t len,
			 struct sp__vec *out, size_t want)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	size_t chunk = ZSTD_DStreamOutSize();

	/*
	 * zstd may hold decoded bytes internally after consuming all input;
	 * they are flushed by further calls, also with empty input. A call
	 * that leaves room in the output buffer has flushed everything.
	 */
	/*
	 * zstd fails after 16 calls in a row that make no progress, so an
	 * idle reader polling with no new input must not call it at all.
	 */
	if (len == 0 && !z->pending)
		return 0;
	z->pending = true;
	while (out->len < want) {
		ZSTD_outBuffer ob;
		int err;

		if (sp__vec_reserve(out, &z->mem, chunk))
			return -ENOMEM;
		ob.dst = (char *)out->data + out->len;
		ob.size = out->cap - out->len;
		ob.pos = 0;
		err = step(z, &ob, &ib);
		if (err)
			return err;
		out->len += ob.pos;
		if (ib.pos == ib.size && ob.pos < ob.size) {
			z->pending = false;
			break;
		}
	}
	return ib.pos > INT32_MAX ? INT32_MAX : (int)ib.pos;
}

int sp__unzstd_skip(struct sp__unzstd *z, const void *in, size_t len,
		    void *scratch, size_t cap, uint64_t want, uint64_t *skipped)
{
	ZSTD_inBuffer ib = { in, len, 0 };

	/* As in feed_some: an idle call must not reach zstd at all. */
	if (len == 0 && !z->pending)
		return 0;
	z->pending = true;
	while (*skipped < want) {
		ZSTD_outBuffer ob = { scratch, cap, 0 };
		int err = step(z, &ob, &ib);

		if (err)
			return err;
		*skipped += ob.pos;
		if (ib.pos == ib.size && ob.pos < ob.size) {
			z->pending = false;
			break;
		}
	}
	return ib.pos > INT32_MAX ? INT32_MAX : (int)ib.pos;
}

int sp__unzstd_feed(struct sp__unzstd *z, const void *in, size_t len,
		    struct sp__vec *out)
{
	const char *p = in;

	/* feed_some reports progress as an int: go in bounded slices. */
	while (len > 0) {
		size_t slice = len > (1u << 30) ? (1u << 30) : len;
		int n = sp__unzstd_feed_some(z, p, slice, out, SIZE_MAX);

		if (n < 0)
			return n;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sp__unzstd_all(const struct sp__mem *mem, const void *in, size_t len,
		   struct sp__vec *out, bool *cut)
{
	struct sp__unzstd *z;
	int err = sp__unzstd_new(mem, &z);

	if (err)
		return err;
	err = sp__unzstd_feed(z, in, len, out);
	if (cut)
		*cut = z->mid_frame;
	sp__unzstd_free(z);
	return err;
}
