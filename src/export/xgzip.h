/* SPDX-License-Identifier: MIT */
/* Exporters: a streaming gzip writer (zlib) in front of a sink. */
#ifndef SP_EXPORT_XGZIP_H
#define SP_EXPORT_XGZIP_H

/*
 * The Firefox Profiler and pprof formats are gzip files. struct sp__xgzip
 * deflates whatever it is given in constant memory (zlib's window plus one
 * 64 KiB output block) and writes full blocks to the sink, so an export
 * never holds its whole output. zlib allocates through the exporter's
 * allocator (struct sp__xmem), never through malloc.
 */

#include <stddef.h>

#include <zlib.h>

#include "export_internal.h"

struct sp__xgzip {
	z_stream zs;
	const struct sp__xmem *mem;
	struct sp_sink *sink;
	unsigned char *block;
	int err;  /* sticky: first failure */
	int live; /* deflateInit2 succeeded */
};

/* zlib's default trade-off, and its fastest level (see sp__xgzip_init). */
#define SP__XGZIP_DEFAULT 6
#define SP__XGZIP_FAST 1

/*
 * Starts a gzip stream into @sink (borrowed), compressed at zlib @level
 * (1..9). Any level makes a valid gzip file for every reader; level 1
 * deflates a large JSON profile about three times faster than level 6 for
 * output about a third larger. Returns 0, -EINVAL or -ENOMEM.
 */
int sp__xgzip_init(struct sp__xgzip *gz, const struct sp__xmem *mem,
		   struct sp_sink *sink, int level);
/*
 * Compresses @len bytes (the signature of struct sp__xout's emit hook).
 * Returns 0 or the sticky error.
 */
int sp__xgzip_write(void *gz, const void *buf, size_t len);
/* Ends the stream and writes the trailer (the sink is not flushed). */
int sp__xgzip_finish(struct sp__xgzip *gz);
/* Releases zlib state; safe after a failed init and after finish. */
void sp__xgzip_fini(struct sp__xgzip *gz);

#endif /* SP_EXPORT_XGZIP_H */
