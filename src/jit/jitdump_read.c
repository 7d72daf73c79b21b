/* SPDX-License-Identifier: MIT */
/* Incremental, bounded reading of jitdump files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "file_open.h"
#include "jitdump_read.h"

/*
 * The reader keeps the bytes read but not yet parsed in one buffer:
 *
 *   file:  [header][rec][rec][rec][re|c ...not written yet
 *                             ^off      ^off + len (what read() gave)
 *   buf:                      [re ]      a partial record, kept
 *
 * A poll appends up to one chunk at a time, parses every complete record
 * from the front, then moves the partial tail to the front. The buffer
 * grows only to hold one record bigger than a chunk, so it never exceeds
 * SP__JITDUMP_RECORD_MAX + CHUNK.
 */
#define CHUNK (256u << 10)

struct parse_state {
	struct sp__jitdump_header hdr;
	bool have_header;
	struct sp__jitdump_stats *st;
};

struct sp__jitdump_reader {
	struct sp__mem mem;
	int fd;
	uint64_t off; /* file offset of buf[0] */
	uint64_t max_bytes;
	uint8_t *buf;
	size_t cap;
	size_t len;
	struct parse_state ps;
	struct sp__jitdump_stats st;
};

static void count(struct sp__jitdump_stats *st, uint32_t id)
{
	st->records++;
	switch (id) {
	case SP__JITDUMP_CODE_LOAD:
		st->loads++;
		break;
	case SP__JITDUMP_CODE_MOVE:
		st->moves++;
		break;
	case SP__JITDUMP_DEBUG_INFO:
		st->debug++;
		break;
	case SP__JITDUMP_CODE_CLOSE:
		st->closes++;
		break;
	case SP__JITDUMP_UNWINDING_INFO:
		st->unwind++;
		break;
	default:
		st->unknown++;
		break;
	}
}

/*
 * Parses complete records of b[0..n) and stores how many bytes they
 * took. Returns records delivered, a sticky parse error or the
 * callback's. A cut-off record ends the pass without error.
 */
static int parse_bytes(struct parse_state *ps, const uint8_t *b, size_t n,
		       sp__jitdump_cb cb, void *ctx, size_t *used)
{
	struct sp__jitdump_record rec;
	size_t pos = 0;
	int delivered = 0, r;

	*used = 0;
	if (!ps->have_header) {
		r = sp__jitdump_parse_header(b, n, &ps->hdr);
		if (r == SP_ETRUNCATED)
			return 0;
		if (r < 0)
			return r;
		ps->have_header = true;
		ps->st->bytes += (uint64_t)r;
		pos = (size_t)r;
	}
	while (pos < n) {
		r = sp__jitdump_parse_record(&ps->hdr, b + pos, n - pos, &rec);
		if (r == SP_ETRUNCATED)
			break;
		if (r < 0) {
			*used = pos;
			return r;
		}
		count(ps->st, rec.id);
		ps->st->bytes += (uint64_t)r;
		pos += (size_t)r;
		if (cb) {
			int err = cb(ctx, &ps->hdr, &rec);

			if (err < 0) {
				*used = pos;
				return err;
			}
		}
		if (delivered < INT32_MAX)
			delivered++;
	}
	*used = pos;
	return delivered;
}

int sp__jitdump_parse_buffer(const void *buf, size_t len, sp__jitdump_cb cb,
			     void *ctx, struct sp__jitdump_stats *st)
{
	struct parse_state ps = { .st = st };
	size_t used;
	int r;

	memset(st, 0, sizeof(*st));
	r = parse_bytes(&ps, buf, len, cb, ctx, &used);
	if (r >= 0 && !ps.have_header && len)
		r = SP_ETRUNCATED; /* not even a header */
	st->partial = len - used;
	if (r < 0)
		st->err = r;
	return r;
}

/* ---- files -------------------------------------------------------------- */

/* Root, the target's owner, or (target gone) ourselves may own the file. */
static int check_owner(const struct stat *st, int32_t pid)
{
	char proc[32];
	struct stat ps;

	if (st->st_uid == 0 || pid <= 0)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (stat(proc, &ps) == 0)
		return st->st_uid == ps.st_uid ? 0 : -EPERM;
	return st->st_uid == geteuid() ? 0 : -EPERM;
}

int sp__jitdump_reader_open(const struct sp__mem *mem, const char *path,
			    int32_t pid, uint64_t max_bytes,
			    struct sp__jitdump_reader **out)
{
	struct sp__jitdump_reader *r;
	struct stat st;
	int fd, err;

	/* Not bounded at open: the reader stops at @max_bytes (-EFBIG). */
	fd = sp__file_open_data(path, SP__FILE_NOFOLLOW, 0, &st);
	if (fd == -ELOOP || fd == -EINVAL)
		return -EPERM; /* a symlink, not a regular file */
	if (fd < 0)
		return fd;
	err = check_owner(&st, pid);
	r = err ? NULL : sp__mem_calloc(mem, 1, sizeof(*r));
	if (!err && !r)
		err = -ENOMEM;
	if (err) {
		close(fd);
		return err;
	}
	r->mem = *mem;
	r->fd = fd;
	r->max_bytes = max_bytes ? max_bytes : SP__JITDUMP_FILE_MAX;
	r->ps.st = &r->st;
	*out = r;
	return 0;
}

void sp__jitdump_reader_free(struct sp__jitdump_reader *r)
{
	if (!r)
		return;
	close(r->fd);
	sp__mem_free(&r->mem, r->buf, r->cap);
	sp__mem_free(&r->mem, r, sizeof(*r));
}

/* Room for @want bytes in the buffer (a whole record, at most). */
static int reserve(struct sp__jitdump_reader *r, size_t want)
{
	size_t cap = r->cap ? r->cap : CHUNK;
	void *p;

	while (cap < want)
		cap *= 2;
	if (cap == r->cap)
		return 0;
	p = sp__mem_realloc(&r->mem, r->buf, r->cap, cap);
	if (!p)
		return -ENOMEM;
	r->buf = p;
	r->cap = cap;
	return 0;
}

/* How many bytes the front record needs in all (0: unknown yet). */
static size_t front_need(const struct sp__jitdump_reader *r)
{
	uint32_t size;

	if (!r->ps.have_header || r->len < 8)
		return 0;
	memcpy(&size, r->buf + 4, sizeof(size));
	if (r->ps.hdr.swapped)
		size = __builtin_bswap32(size);
	return size <= SP__JITDUMP_RECORD_MAX ? size : 0;
}

/* Appends one read() of new bytes; returns bytes read, 0 at EOF, -errno. */
static ssize_t fill(struct sp__jitdump_reader *r, uint64_t room)
{
	size_t want = CHUNK, need = front_need(r);
	ssize_t got;

	if (need > r->len && need - r->len > want)
		want = need - r->len;
	if (want > room)
		want = (size_t)room;
	if (reserve(r, r->len + want))
		return -ENOMEM;
	do
		got = pread(r->fd, r->buf + r->len, want,
			    (off_t)(r->off + r->len));
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	r->len += (size_t)got;
	return got;
}

/* A file shorter than what was read was truncated and rewritten. */
static int check_shrunk(const struct sp__jitdump_reader *r)
{
	struct stat st;

	if (fstat(r->fd, &st) < 0)
		return -errno;
	return (uint64_t)st.st_size < r->off + r->len ? SP_ESHRANK : 0;
}

static int poll_once(struct sp__jitdump_reader *r, sp__jitdump_cb cb, void *ctx,
		     uint64_t *left, int *delivered)
{
	uint64_t room = r->max_bytes - (r->off + r->len);
	size_t used;
	ssize_t got;
	int n;

	if (room == 0)
		return -EFBIG;
	got = fill(r, room < *left ? room : *left);
	if (got <= 0)
		return (int)got;
	*left -= (uint64_t)got;
	n = parse_bytes(&r->ps, r->buf, r->len, cb, ctx, &used);
	memmove(r->buf, r->buf + used, r->len - used);
	r->off += used;
	r->len -= used;
	if (n < 0)
		return n;
	*delivered += n;
	return 1;
}

int sp__jitdump_reader_poll(struct sp__jitdump_reader *r, uint64_t budget,
			    sp__jitdump_cb cb, void *ctx)
{
	uint64_t left = budget ? budget : UINT64_MAX;
	int delivered = 0, err;

	if (r->st.err)
		return r->st.err;
	err = check_shrunk(r);
	while (!err && left > 0) {
		err = poll_once(r, cb, ctx, &left, &delivered);
		if (err == 1)
			err = 0;
		else if (err == 0)
			break; /* end of what was written so far */
	}
	r->st.partial = r->len;
	/* A callback's error (-ENOMEM) may pass; the file's do not. */
	if (err == SP_ECORRUPT || err == SP_ESHRANK || err == -EOPNOTSUPP ||
	    err == -EFBIG)
		r->st.err = err;
	return err ? err : delivered;
}

const struct sp__jitdump_header *
sp__jitdump_reader_header(const struct sp__jitdump_reader *r)
{
	return r->ps.have_header ? &r->ps.hdr : NULL;
}

const struct sp__jitdump_stats *
sp__jitdump_reader_stats(const struct sp__jitdump_reader *r)
{
	return &r->st;
}
