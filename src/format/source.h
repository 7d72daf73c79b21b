/* SPDX-License-Identifier: MIT */
/* A bounded window over the decoded bytes of a spool file (plain or zstd). */
#ifndef SP_FORMAT_SOURCE_H
#define SP_FORMAT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/spool.h>

#include "format_internal.h"
#include "mem.h"
#include "vec.h"

/*
 * Replay and Tail never hold a whole spool in memory. They decode through
 * a window of the *decoded* stream (the plain file, or what zstd produced
 * from the compressed file):
 *
 *   stream  0 ............ win_off ============ win_off+win.len ....... end
 *                                  |  window   |
 *   file    0 ............................................ file_pos ... file_size
 *                                  (plain: file_pos == win_off + win.len)
 *
 * The owner drops bytes it has consumed (sp__source_drop) and asks for
 * more (sp__source_fill); bytes are read with pread() for plain files and
 * fed through sp__unzstd_feed_some() for compressed ones, so the window is
 * bounded by SP_SOURCE_CHUNK plus the largest single record. @file_size is
 * what the owner last learnt from fstat (Tail refreshes it on every poll);
 * nothing past it is read. @limit caps the stream (Replay iteration stops
 * at the end of the last complete record found at open).
 */
#define SP_SOURCE_CHUNK (256u * 1024u)

struct sp__source {
	struct sp__mem mem;
	int fd;		     /* -1: reading @data instead (a caller's buffer) */
	const uint8_t *data; /* the "file" of a memory source */
	bool zstd;
	uint64_t file_size;
	uint64_t file_pos; /* next file byte to read */
	uint64_t limit;	   /* stream bytes past this are never needed */
	struct sp__unzstd *z;
	uint8_t *in; /* zstd: compressed bytes read, not yet fed */
	size_t in_len;
	size_t in_pos;
	uint64_t fed;	    /* zstd: compressed bytes consumed by the decoder */
	bool z_pending;	    /* zstd may hold output not yet in the window */
	struct sp__vec win; /* uint8_t: stream [win_off, win_off + win.len) */
	uint64_t win_off;
	/*
	 * zstd: stream bytes decoded past the window end and dropped while
	 * learning whether an oversized module path at the window's start
	 * fits in the stream. Once @probing, the window never grows again:
	 * nothing after that record is ever decoded.
	 */
	uint64_t probed;
	bool probing;
	bool shrunk; /* a read found the file shorter than fstat said */
};

/*
 * Opens @path (O_RDONLY, or O_RDWR when @writable; O_NONBLOCK, so a FIFO
 * never blocks the open), learns its size and whether it is
 * zstd-compressed. Returns 0, -errno, -EINVAL (not a regular file),
 * -ENOMEM. Bytes are read with pread(2), never mapped: a file cut short
 * while it is read ends early instead of raising SIGBUS.
 */
int sp__source_open(struct sp__source *src, const struct sp__mem *mem,
		    const char *path, bool writable);
/* The same over @len bytes at @data (borrowed until close). */
int sp__source_open_memory(struct sp__source *src, const struct sp__mem *mem,
			   const void *data, size_t len);
void sp__source_close(struct sp__source *src);

/* Re-reads the file size into @file_size. Returns 0 or -errno. */
int sp__source_stat(struct sp__source *src);

/* Goes back to stream offset 0 (restarts the zstd decoder). */
void sp__source_rewind(struct sp__source *src);

/* Forgets window bytes before stream offset @upto (<= window end). */
void sp__source_drop(struct sp__source *src, uint64_t upto);

/*
 * Appends stream bytes until the window holds at least @want bytes (and
 * at least one chunk's worth when more is available). Returns 1 if the
 * window grew, 0 if nothing more is available now, or a negative code
 * (-errno, SP_EZSTD, -ENOMEM).
 */
int sp__source_fill(struct sp__source *src, size_t want);

/*
 * Makes sure stream offset @off (>= win_off) is inside the window or at
 * its end, where the next fill continues. Plain files simply read from
 * there; zstd decodes and discards the gap.
 * Returns 0 or a negative code; SP_ECORRUPT if the stream ends before @off.
 */
int sp__source_seek(struct sp__source *src, uint64_t off);

/*
 * The record at stream offset @rec (inside the window) was reported cut
 * off at the window end. Drops the bytes before it and tries to extend
 * the window so that it may complete. A module record whose path claims
 * more bytes than the plain file holds is cut off without reading further
 * (SPULSE3 §11 L1), and nothing is allocated for the claim. A path
 * longer than SP_SPOOL_PATH_MAX never enters the window: plain files know
 * what follows (cursor.more), zstd input is decoded ahead and counted
 * (probed) until the claim is covered (corrupt) or the input ends (cut
 * off), in constant memory.
 * Returns 1 if the window grew or more is known (decode again), 0 if the
 * record cannot be completed from what the file holds now, or a negative
 * code.
 */
int sp__source_extend(struct sp__source *src, uint64_t rec);

/*
 * Whether the input was cut: it ends inside a zstd frame (the file was
 * cut, or is still being written, in the middle of its last frame), or a
 * read found the file shorter than fstat said (cut while read). Records
 * may then be missing even if the decoded stream ends at a record
 * boundary. Meaningful once the whole file was read.
 */
bool sp__source_cut(const struct sp__source *src);

/* A cursor over the window, positioned at stream offset @at. */
static inline void sp__source_cursor(const struct sp__source *src, uint64_t at,
				     uint64_t last_ns, struct sp__cursor *cur)
{
	uint64_t end = src->win_off + src->win.len;
	uint64_t more = src->zstd ? src->probed :
				    src->file_size - src->file_pos;

	if (src->file_pos > src->file_size)
		more = 0;
	if (end >= src->limit) {
		end = src->limit;
		more = 0;
	} else if (more > src->limit - end) {
		more = src->limit - end;
	}
	cur->more = more;
	cur->buf = src->win.data;
	cur->len = (size_t)(end - src->win_off);
	cur->pos = (size_t)(at - src->win_off);
	cur->offset = src->win_off;
	cur->last_ns = last_ns;
}

/*
 * Parses the header at the start of the stream. A cut-off header is
 * corruption for every reader (§3). Returns the header length or
 * SP_ECORRUPT / a read error.
 */
int sp__source_header(struct sp__source *src, struct sp_spool *spool,
		      struct sp_diag *diag);

/*
 * Copies the caller's options into @out, honouring opts->size: fields
 * beyond it read as zero, unknown non-zero trailing bytes are rejected.
 * Returns 0 or -EINVAL.
 */
int sp__reader_opts_load(const struct sp_reader_opts *opts,
			 struct sp_reader_opts *out);

#endif /* SP_FORMAT_SOURCE_H */
