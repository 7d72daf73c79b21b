/* SPDX-License-Identifier: MIT */
/* Exporters: a streaming gzip writer (zlib) in front of a sink. */

/*
 * zlib's free hook gets no size, while struct sp__xmem (like the public
 * sp_allocator) needs one, so every zlib block carries its size in a
 * 16-byte header (keeps zlib's alignment assumptions).
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "xgzip.h"

#define XGZIP_BLOCK (64 * 1024)
#define XGZIP_HDR 16
/* windowBits 15 + 16 selects the gzip wrapper instead of zlib's. */
#define XGZIP_WBITS (15 + 16)

static voidpf zalloc_hook(voidpf opaque, uInt items, uInt size)
{
	const struct sp__xmem *mem = opaque;
	size_t n = (size_t)items * size;
	unsigned char *p;

	if (size && n / size != items)
		return Z_NULL;
	p = sp__xmem_alloc(mem, n + XGZIP_HDR);
	if (!p)
		return Z_NULL;
	memcpy(p, &n, sizeof(n));
	return p + XGZIP_HDR;
}

static void zfree_hook(voidpf opaque, voidpf ptr)
{
	unsigned char *p = (unsigned char *)ptr - XGZIP_HDR;
	size_t n;

	memcpy(&n, p, sizeof(n));
	sp__xmem_free(opaque, p, n + XGZIP_HDR);
}

int sp__xgzip_init(struct sp__xgzip *gz, const struct sp__xmem *mem,
		   struct sp_sink *sink, int level)
{
	memset(gz, 0, sizeof(*gz));
	if (level < 1 || level > 9)
		return -EINVAL;
	gz->mem = mem;
	gz->sink = sink;
	gz->block = sp__xmem_alloc(mem, XGZIP_BLOCK);
	if (!gz->block)
		return -ENOMEM;
	gz->zs.zalloc = zalloc_hook;
	gz->zs.zfree = zfree_hook;
	gz->zs.opaque = (voidpf)(uintptr_t)mem; /* read-only use */
	if (deflateInit2(&gz->zs, level, Z_DEFLATED, XGZIP_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		sp__xgzip_fini(gz);
		return -ENOMEM;
	}
	gz->live = 1;
	gz->zs.next_out = gz->block;
	gz->zs.avail_out = XGZIP_BLOCK;
	return 0;
}

/* Writes the filled part of the block to the sink and rewinds it. */
static int drain(struct sp__xgzip *gz)
{
	size_t n = XGZIP_BLOCK - gz->zs.avail_out;
	int err;

	if (n) {
		err = sp_sink_write(gz->sink, gz->block, n);
		if (err < 0)
			return err;
	}
	gz->zs.next_out = gz->block;
	gz->zs.avail_out = XGZIP_BLOCK;
	return 0;
}

/* Runs deflate with @flush until zlib has consumed all input. */
static int pump(struct sp__xgzip *gz, int flush)
{
	int zerr;

	for (;;) {
		zerr = deflate(&gz->zs, flush);
		if (zerr == Z_STREAM_ERROR)
			return -EIO;
		if (gz->zs.avail_out == 0 || zerr == Z_STREAM_END) {
			int err = drain(gz);

			if (err < 0)
				return err;
		}
		if (zerr == Z_STREAM_END)
			return 0;
		if (flush == Z_NO_FLUSH && gz->zs.avail_in == 0)
			return 0;
	}
}

int sp__xgzip_write(void *ctx, const void *buf, size_t len)
{
	struct sp__xgzip *gz = ctx;
	const unsigned char *p = buf;

	while (!gz->err && len) {
		uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;

		gz->zs.next_in = (Bytef *)(uintptr_t)p;
		gz->zs.avail_in = chunk;
		gz->err = pump(gz, Z_NO_FLUSH);
		p += chunk;
		len -= chunk;
	}
	return gz->err;
}

int sp__xgzip_finish(struct sp__xgzip *gz)
{
	if (gz->err)
		return gz->err;
	gz->zs.next_in = Z_NULL;
	gz->zs.avail_in = 0;
	gz->err = pump(gz, Z_FINISH);
	return gz->err; /* sp_export() flushes the sink */
}

void sp__xgzip_fini(struct sp__xgzip *gz)
{
	if (gz->live)
		deflateEnd(&gz->zs);
	gz->live = 0;
	if (gz->block)
		sp__xmem_free(gz->mem, gz->block, XGZIP_BLOCK);
	gz->block = NULL;
}
