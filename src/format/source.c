/* SPDX-License-Identifier: MIT */
/* Bounded reading window over a spool file, shared by Replay and Tail. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "opts.h"
#include "source.h"
#include "varint.h"

/*
 * See source.h for the picture. The window is a vec of bytes whose
 * capacity only grows (to one chunk plus the largest record seen), so a
 * reader that keeps dropping what it consumed reads a file of any size in
 * constant memory. Compressed input is read in chunks of SP_SOURCE_IN
 * bytes and fed to the decoder until the window holds what was asked for;
 * input the decoder did not take yet stays in @in for the next fill.
 */
#define SP_SOURCE_IN (64u * 1024u)

/* The longest record: a module record (tag, ten varints, flag) + path. */
#define SP_SOURCE_RECORD_MAX (1u + 10u * 10u + 1u + SP_SPOOL_PATH_MAX)

/* pread, or a copy out of a memory source; short at the end. */
static int read_at(const struct sp__source *src, void *buf, size_t len,
		   uint64_t off)
{
	ssize_t n;

	if (src->fd < 0) {
		if (off >= src->file_size)
			return 0;
		if (len > src->file_size - off)
			len = (size_t)(src->file_size - off);
		memcpy(buf, src->data + off, len);
		return (int)len;
	}
	do {
		n = pread(src->fd, buf, len, (off_t)off);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (int)n;
}

static void source_init(struct sp__source *src, const struct sp__mem *mem)
{
	memset(src, 0, sizeof(*src));
	src->mem = *mem;
	src->fd = -1;
	src->limit = UINT64_MAX;
	sp__vec_init(&src->win, 1);
}

/* Reads the magic and sets up decompression for a zstd stream. */
static int source_start(struct sp__source *src)
{
	uint8_t magic[4];
	int n = read_at(src, magic, sizeof(magic), 0);
	int err;

	if (n < 0)
		return n;
	src->zstd = sp__is_zstd(magic, (size_t)n);
	if (!src->zstd)
		return 0;
	err = sp__unzstd_new(&src->mem, &src->z);
	if (!err)
		src->in = sp__mem_alloc(&src->mem, SP_SOURCE_IN);
	if (!err && !src->in)
		err = -ENOMEM;
	return err;
}

int sp__source_open_memory(struct sp__source *src, const struct sp__mem *mem,
			   const void *data, size_t len)
{
	int err;

	source_init(src, mem);
	src->data = data;
	src->file_size = len;
	err = source_start(src);
	if (err)
		sp__source_close(src);
	return err;
}

int sp__source_open(struct sp__source *src, const struct sp__mem *mem,
		    const char *path, bool writable)
{
	struct stat st;
	int err;

	source_init(src, mem);
	src->fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC |
				     O_NONBLOCK | O_NOCTTY);
	if (src->fd < 0)
		return -errno;
	err = fstat(src->fd, &st) < 0 ? -errno : 0;
	if (!err && !S_ISREG(st.st_mode))
		err = -EINVAL;
	if (!err)
		err = sp__source_stat(src);
	if (!err)
		err = source_start(src);
	if (err)
		sp__source_close(src);
	return err;
}

void sp__source_close(struct sp__source *src)
{
	if (src->fd >= 0)
		close(src->fd);
	src->fd = -1;
	sp__unzstd_free(src->z);
	src->z = NULL;
	sp__mem_free(&src->mem, src->in, SP_SOURCE_IN);
	src->in = NULL;
	sp__vec_fini(&src->win, &src->mem);
}

int sp__source_stat(struct sp__source *src)
{
	struct stat st;

	if (src->fd < 0)
		return 0; /* a buffer does not change */
	if (fstat(src->fd, &st) < 0)
		return -errno;
	src->file_size = (uint64_t)st.st_size;
	return 0;
}

void sp__source_rewind(struct sp__source *src)
{
	src->win.len = 0;
	src->win_off = 0;
	src->file_pos = 0;
	src->in_len = src->in_pos = 0;
	src->fed = 0;
	src->z_pending = false;
	src->probed = 0;
	src->probing = false;
	src->shrunk = false;
	if (src->z)
		sp__unzstd_reset(src->z);
}

void sp__source_drop(struct sp__source *src, uint64_t upto)
{
	size_t n = (size_t)(upto - src->win_off);

	if (upto <= src->win_off)
		return;
	if (n > src->win.len)
		n = src->win.len;
	memmove(src->win.data, (uint8_t *)src->win.data + n, src->win.len - n);
	src->win.len -= n;
	src->win_off += n;
}

/* Plain file: pread straight into the window's spare capacity. */
static int fill_plain(struct sp__source *src, size_t target)
{
	size_t before = src->win.len;

	while (src->win.len < target && src->file_pos < src->file_size) {
		uint64_t left = src->file_size - src->file_pos;
		size_t room = src->win.cap - src->win.len;
		int n;

		if (room > left)
			room = (size_t)left;
		if (room > INT32_MAX)
			room = INT32_MAX;
		n = read_at(src, (uint8_t *)src->win.data + src->win.len, room,
			    src->file_pos);
		if (n < 0)
			return n;
		if (n == 0) {
			/* Shorter than fstat said: cut while read. */
			src->shrunk = true;
			break;
		}
		src->win.len += (size_t)n;
		src->file_pos += (size_t)n;
	}
	return src->win.len > before;
}

/* zstd: reads the next compressed piece into @in once it is used up. */
static int read_in(struct sp__source *src)
{
	uint64_t left = src->file_size - src->file_pos;
	int n;

	if (src->file_pos >= src->file_size)
		return 0;
	n = read_at(src, src->in,
		    left < SP_SOURCE_IN ? (size_t)left : SP_SOURCE_IN,
		    src->file_pos);
	if (n < 0)
		return n;
	if (n == 0)
		src->shrunk = true; /* shorter than fstat said */
	src->in_len = (size_t)n;
	src->in_pos = 0;
	src->file_pos += (size_t)n;
	return n;
}

/*
 * zstd: whether there is input to feed (1), nothing now (0), or an error.
 * Empty input only serves to flush output zstd still holds; zstd fails
 * repeated calls that bring neither input nor output (a Tail polling an
 * idle file), so without pending output there is nothing to feed.
 */
static int zstd_input(struct sp__source *src)
{
	int n;

	if (src->in_pos < src->in_len)
		return 1;
	n = read_in(src);
	if (n < 0)
		return n;
	return n > 0 || src->z_pending;
}

/* zstd: feed buffered or newly read compressed bytes until @target. */
static int fill_zstd(struct sp__source *src, size_t target)
{
	size_t before = src->win.len;
	int n;

	while (src->win.len < target) {
		n = zstd_input(src);
		if (n <= 0)
			return n < 0 ? n : src->win.len > before;
		n = sp__unzstd_feed_some(src->z, src->in + src->in_pos,
					 src->in_len - src->in_pos, &src->win,
					 target);
		if (n < 0)
			return n;
		src->in_pos += (size_t)n;
		src->fed += (size_t)n;
		/* feed_some returns early only when the output is full. */
		src->z_pending = src->win.len >= target;
	}
	return src->win.len > before;
}

int sp__source_fill(struct sp__source *src, size_t want)
{
	size_t target = want > SP_SOURCE_CHUNK ? want : SP_SOURCE_CHUNK;

	if (src->win_off + src->win.len >= src->limit || src->probing)
		return 0;
	if (src->win.cap < target &&
	    sp__vec_reserve(&src->win, &src->mem, target - src->win.len))
		return -ENOMEM;
	if (src->zstd)
		return fill_zstd(src, target);
	/* A plain fill tops up the whole capacity: fewer, larger reads. */
	return fill_plain(src, src->win.cap);
}

int sp__source_seek(struct sp__source *src, uint64_t off)
{
	int err;

	/*
	 * Bytes before @off stay in the window until the next refill drops
	 * them: Replay seeks to every sample run, and most runs start a few
	 * bytes after the previous one ended.
	 */
	while (off > src->win_off + src->win.len) {
		if (!src->zstd) {
			src->win.len = 0;
			src->win_off = src->file_pos = off;
			return 0;
		}
		sp__source_drop(src, src->win_off + src->win.len);
		err = sp__source_fill(src, SP_SOURCE_CHUNK);
		if (err <= 0)
			return err ? err : SP_ECORRUPT;
	}
	return 0;
}

/*
 * The stream bytes a module record at @p (with @avail bytes visible)
 * claims, or 0 when its head is not complete yet or it is not a module.
 * Only module records can outgrow a chunk: every other record is at most
 * 1 + 3 * 10 bytes.
 */
static uint64_t claimed_size(const uint8_t *p, size_t avail)
{
	size_t pos = 1, n;
	uint64_t v = 0;
	int i;

	if (avail == 0 || p[0] != SP_TAG_MODULE)
		return 0;
	for (i = 0; i < 10; i++) {
		if (i == 9) {
			if (pos >= avail)
				return 0;
			pos++; /* is_kernel flag */
		}
		if (sp__varint_get(p + pos, avail - pos, &v, &n) !=
		    SP_VARINT_OK)
			return 0;
		pos += n;
	}
	return v > UINT64_MAX - pos ? UINT64_MAX : pos + v;
}

/*
 * zstd, a path longer than SP_SPOOL_PATH_MAX at the window start: decode
 * on into the window's spare room without keeping anything, until the
 * claim's @need bytes are counted or the input ends (see source.h).
 */
static int probe_zstd(struct sp__source *src, uint64_t need)
{
	uint64_t before = src->probed, want = need - src->win.len;
	int n;

	if (src->win.cap - src->win.len < SP_SOURCE_IN &&
	    sp__vec_reserve(&src->win, &src->mem, SP_SOURCE_IN))
		return -ENOMEM;
	src->probing = true;
	while (src->probed < want) {
		n = zstd_input(src);
		if (n <= 0)
			return n < 0 ? n : src->probed > before;
		n = sp__unzstd_skip(src->z, src->in + src->in_pos,
				    src->in_len - src->in_pos,
				    (uint8_t *)src->win.data + src->win.len,
				    src->win.cap - src->win.len, want,
				    &src->probed);
		if (n < 0)
			return n;
		src->in_pos += (size_t)n;
		src->fed += (size_t)n;
		src->z_pending = src->probed >= want;
	}
	return src->probed > before;
}

int sp__source_extend(struct sp__source *src, uint64_t rec)
{
	uint64_t need;
	size_t want;

	sp__source_drop(src, rec);
	need = claimed_size(src->win.data, src->win.len);
	if (need > SP_SOURCE_RECORD_MAX) {
		/* Plain input: cursor.more already told the decoder. */
		return src->zstd ? probe_zstd(src, need) : 0;
	}
	/* §11 L1: a path longer than the rest of the file is a cut-off tail. */
	if (!src->zstd && need > src->file_size - rec)
		return 0;
	/*
	 * Plain files may grow the window to the claim, which the check
	 * above bounded by the file size. zstd output has no known end, so
	 * the window grows only by what the decoder actually produces.
	 */
	want = src->win.len + 1;
	if (!src->zstd && need > want)
		want = (size_t)need;
	return sp__source_fill(src, want);
}

bool sp__source_cut(const struct sp__source *src)
{
	if (src->shrunk)
		return true;
	return src->zstd && src->file_pos >= src->file_size &&
	       src->in_pos == src->in_len && sp__unzstd_mid_frame(src->z);
}

int sp__source_header(struct sp__source *src, struct sp_spool *spool,
		      struct sp_diag *diag)
{
	int err = sp__source_fill(src, SP_SOURCE_CHUNK);

	if (err < 0)
		return err;
	err = sp__spool_header(src->win.data, src->win.len, &spool->start_us,
			       &spool->interval_us, diag);
	if (err == SP_ETRUNCATED) {
		/* §3: the header is not covered by tail recovery. */
		if (diag) {
			diag->offset = 0;
			snprintf(diag->message, sizeof(diag->message),
				 "spool header is incomplete");
		}
		return SP_ECORRUPT;
	}
	return err;
}

int sp__reader_opts_load(const struct sp_reader_opts *opts,
			 struct sp_reader_opts *out)
{
	int err = sp__opts_load(opts, opts ? opts->size : 0, out, sizeof(*out));

	if (err)
		return err;
	if (out->flags & ~SP_READER_OWNS_FILE)
		return -EINVAL;
	out->size = sizeof(*out);
	return 0;
}
