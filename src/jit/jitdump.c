/* SPDX-License-Identifier: MIT */
/* The jitdump parser: header and records, validated before any use. */
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>

#include "jitdump.h"

/*
 * Fixed parts of the record bodies (after the 16-byte prefix):
 *   CODE_LOAD 40, CODE_MOVE 48, DEBUG_INFO 16, UNWINDING_INFO 24.
 * A debug entry is at least 17 bytes (addr, line, discrim, an empty file
 * name's NUL), which bounds nr_entry by the record size before the
 * entries are walked.
 */
#define LOAD_FIXED 40
#define MOVE_FIXED 48
#define DEBUG_FIXED 16
#define UNWIND_FIXED 24
#define ENTRY_MIN 17

/* Only bit 0 (architecture timestamps) is defined (perf 6.1). */
#define KNOWN_FLAGS SP__JITDUMP_FLAG_ARCH_TIMESTAMP

static uint32_t rd32(const uint8_t *p, bool swapped)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return swapped ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const uint8_t *p, bool swapped)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return swapped ? __builtin_bswap64(v) : v;
}

int sp__jitdump_parse_header(const void *buf, size_t len,
			     struct sp__jitdump_header *out)
{
	const uint8_t *p = buf;
	uint32_t magic;
	bool sw;

	if (len < 4)
		return SP_ETRUNCATED;
	memcpy(&magic, p, sizeof(magic));
	if (magic != SP__JITDUMP_MAGIC && magic != SP__JITDUMP_MAGIC_SWAPPED)
		return SP_ECORRUPT;
	if (len < SP__JITDUMP_HEADER_SIZE)
		return SP_ETRUNCATED;
	sw = magic == SP__JITDUMP_MAGIC_SWAPPED;
	out->swapped = sw;
	out->version = rd32(p + 4, sw);
	out->size = rd32(p + 8, sw);
	out->elf_mach = rd32(p + 12, sw);
	out->pid = rd32(p + 20, sw);
	out->timestamp = rd64(p + 24, sw);
	out->flags = rd64(p + 32, sw);
	if (out->size < SP__JITDUMP_HEADER_SIZE ||
	    out->size > SP__JITDUMP_HEADER_MAX)
		return SP_ECORRUPT;
	if (out->version == 0 || out->version > SP__JITDUMP_VERSION ||
	    (out->flags & ~KNOWN_FLAGS))
		return -EOPNOTSUPP;
	if (len < out->size)
		return SP_ETRUNCATED;
	return (int)out->size;
}

/* The NUL-terminated string at b[0..n): its length, or -1 without NUL. */
static long str_len(const uint8_t *b, size_t n)
{
	const uint8_t *nul = memchr(b, 0, n);

	return nul ? (long)(nul - b) : -1;
}

static int parse_load(const struct sp__jitdump_header *h, const uint8_t *b,
		      size_t n, struct sp__jitdump_load *l)
{
	long name_len;

	if (n < LOAD_FIXED)
		return SP_ECORRUPT;
	l->pid = rd32(b, h->swapped);
	l->tid = rd32(b + 4, h->swapped);
	l->vma = rd64(b + 8, h->swapped);
	l->code_addr = rd64(b + 16, h->swapped);
	l->code_size = rd64(b + 24, h->swapped);
	l->code_index = rd64(b + 32, h->swapped);
	name_len = str_len(b + LOAD_FIXED, n - LOAD_FIXED);
	if (name_len < 0)
		return SP_ECORRUPT;
	l->name = (const char *)(b + LOAD_FIXED);
	l->name_len = (size_t)name_len;
	l->code = b + LOAD_FIXED + (size_t)name_len + 1;
	/* The code bytes follow the name; writers may pad after them. */
	if (l->code_size > n - LOAD_FIXED - (size_t)name_len - 1 ||
	    l->code_addr + l->code_size < l->code_addr)
		return SP_ECORRUPT;
	return 0;
}

static int parse_move(const struct sp__jitdump_header *h, const uint8_t *b,
		      size_t n, struct sp__jitdump_move *m)
{
	if (n < MOVE_FIXED)
		return SP_ECORRUPT;
	m->pid = rd32(b, h->swapped);
	m->tid = rd32(b + 4, h->swapped);
	m->vma = rd64(b + 8, h->swapped);
	m->old_addr = rd64(b + 16, h->swapped);
	m->new_addr = rd64(b + 24, h->swapped);
	m->code_size = rd64(b + 32, h->swapped);
	m->code_index = rd64(b + 40, h->swapped);
	if (m->new_addr + m->code_size < m->new_addr)
		return SP_ECORRUPT;
	return 0;
}

/* Walks every entry once so that _next_line never meets a bad one. */
static int parse_debug(const struct sp__jitdump_header *h, const uint8_t *b,
		       size_t n, struct sp__jitdump_debug *d)
{
	size_t pos, i;
	long flen;

	if (n < DEBUG_FIXED)
		return SP_ECORRUPT;
	d->code_addr = rd64(b, h->swapped);
	d->count = rd64(b + 8, h->swapped);
	d->entries = b + DEBUG_FIXED;
	d->len = n - DEBUG_FIXED;
	if (d->count > d->len / ENTRY_MIN)
		return SP_ECORRUPT;
	for (i = 0, pos = 0; i < d->count; i++) {
		if (d->len - pos < ENTRY_MIN)
			return SP_ECORRUPT;
		flen = str_len(d->entries + pos + 16, d->len - pos - 16);
		if (flen < 0)
			return SP_ECORRUPT;
		pos += 16 + (size_t)flen + 1;
	}
	return 0;
}

static int parse_unwind(const struct sp__jitdump_header *h, const uint8_t *b,
			size_t n, struct sp__jitdump_unwind *u)
{
	uint64_t total, hdr;

	if (n < UNWIND_FIXED)
		return SP_ECORRUPT;
	total = rd64(b, h->swapped);
	hdr = rd64(b + 8, h->swapped);
	u->mapped_size = rd64(b + 16, h->swapped);
	if (total > n - UNWIND_FIXED || hdr > total)
		return SP_ECORRUPT;
	u->eh_frame = b + UNWIND_FIXED;
	u->eh_frame_len = (size_t)(total - hdr);
	u->hdr = u->eh_frame + u->eh_frame_len;
	u->hdr_len = (size_t)hdr;
	return 0;
}

int sp__jitdump_parse_record(const struct sp__jitdump_header *h,
			     const void *buf, size_t len,
			     struct sp__jitdump_record *out)
{
	const uint8_t *p = buf, *b;
	size_t n;
	int err = 0;

	if (len < SP__JITDUMP_PREFIX_SIZE)
		return SP_ETRUNCATED;
	out->id = rd32(p, h->swapped);
	out->size = rd32(p + 4, h->swapped);
	out->timestamp = rd64(p + 8, h->swapped);
	if (out->size < SP__JITDUMP_PREFIX_SIZE ||
	    out->size > SP__JITDUMP_RECORD_MAX)
		return SP_ECORRUPT;
	if (len < out->size)
		return SP_ETRUNCATED;
	b = p + SP__JITDUMP_PREFIX_SIZE;
	n = out->size - SP__JITDUMP_PREFIX_SIZE;
	switch (out->id) {
	case SP__JITDUMP_CODE_LOAD:
		err = parse_load(h, b, n, &out->u.load);
		break;
	case SP__JITDUMP_CODE_MOVE:
		err = parse_move(h, b, n, &out->u.move);
		break;
	case SP__JITDUMP_DEBUG_INFO:
		err = parse_debug(h, b, n, &out->u.debug);
		break;
	case SP__JITDUMP_UNWINDING_INFO:
		err = parse_unwind(h, b, n, &out->u.unwind);
		break;
	default: /* CODE_CLOSE and unknown ids: nothing to read */
		break;
	}
	return err ? err : (int)out->size;
}

int sp__jitdump_next_line(const struct sp__jitdump_header *h,
			  struct sp__jitdump_debug *d,
			  struct sp__jitdump_line *out)
{
	const uint8_t *e = d->entries;
	size_t flen;

	if (d->count == 0 || d->len < ENTRY_MIN)
		return 0;
	out->addr = rd64(e, h->swapped);
	out->line = (int32_t)rd32(e + 8, h->swapped);
	out->discrim = (int32_t)rd32(e + 12, h->swapped);
	out->file = (const char *)(e + 16);
	flen = strnlen(out->file, d->len - 16);
	out->file_len = flen;
	d->entries += 16 + flen + 1;
	d->len -= 16 + flen + 1;
	d->count--;
	return 1;
}
