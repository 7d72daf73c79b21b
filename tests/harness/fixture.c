/* SPDX-License-Identifier: MIT */
/* Pipeline fixtures: raw perf records of a real run, replayable without perf. */

/*
 * The writer appends to a byte vector the caller saves; the reader walks
 * a buffer the caller loaded (or mapped). All integers are read with
 * memcpy, so the buffer needs no alignment.
 */
#include <errno.h>
#include <string.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "fixture.h"

static const char magic[8] = { 'S', 'P', 'F', 'I', 'X', '1', 0, '\n' };

static int put(struct sp__vec *out, const struct sp__mem *mem, const void *p,
	       size_t n)
{
	if (sp__vec_reserve(out, mem, n))
		return -ENOMEM;
	memcpy((char *)out->data + out->len, p, n);
	out->len += n;
	return 0;
}

static int put_entry(struct sp__vec *out, const struct sp__mem *mem,
		     uint32_t kind, const void *a, size_t alen, const void *b,
		     size_t blen)
{
	static const char zero[8];
	uint32_t h[2] = { kind, (uint32_t)(alen + blen) };
	size_t pad = (8 - (alen + blen) % 8) % 8;

	if (alen + blen > UINT32_MAX)
		return -EINVAL;
	if (put(out, mem, h, sizeof(h)) || put(out, mem, a, alen) ||
	    (blen && put(out, mem, b, blen)) || put(out, mem, zero, pad))
		return -ENOMEM;
	return 0;
}

int sp__fixture_put_header(struct sp__vec *out, const struct sp__mem *mem,
			   const struct sp__fixture_hdr *h)
{
	unsigned char b[SP__FIX_HEADER];
	uint32_t version = 1, zero = 0;

	memcpy(b, magic, 8);
	memcpy(b + 8, &version, 4);
	memcpy(b + 12, &h->nrings, 4);
	memcpy(b + 16, &h->sample_type, 8);
	memcpy(b + 24, &h->stack_size, 4);
	memcpy(b + 28, &zero, 4);
	return put(out, mem, b, sizeof(b));
}

int sp__fixture_put_proc(struct sp__vec *out, const struct sp__mem *mem,
			 int32_t pid, uint64_t starttime)
{
	unsigned char b[16] = { 0 };

	memcpy(b, &pid, 4);
	memcpy(b + 8, &starttime, 8);
	return put_entry(out, mem, SP__FIX_PROC, b, sizeof(b), NULL, 0);
}

int sp__fixture_put_module(struct sp__vec *out, const struct sp__mem *mem,
			   int32_t pid, const struct sp__map_desc *m)
{
	unsigned char b[56];
	uint32_t plen = (uint32_t)m->path_len;

	if (m->path_len > 4096)
		return -EINVAL;
	memcpy(b, &pid, 4);
	memcpy(b + 4, &plen, 4);
	memcpy(b + 8, &m->start, 8);
	memcpy(b + 16, &m->end, 8);
	memcpy(b + 24, &m->offset, 8);
	memcpy(b + 32, &m->inode, 8);
	memcpy(b + 40, &m->inode_generation, 8);
	memcpy(b + 48, &m->dev_major, 4);
	memcpy(b + 52, &m->dev_minor, 4);
	return put_entry(out, mem, SP__FIX_MODULE, b, sizeof(b), m->path,
			 m->path_len);
}

int sp__fixture_put_record_late(struct sp__vec *out, const struct sp__mem *mem,
				uint32_t ring, uint32_t late, const void *rec,
				size_t len)
{
	uint32_t b[2] = { ring, late };

	return put_entry(out, mem, SP__FIX_RECORD, b, sizeof(b), rec, len);
}

int sp__fixture_put_record(struct sp__vec *out, const struct sp__mem *mem,
			   uint32_t ring, const void *rec, size_t len)
{
	return sp__fixture_put_record_late(out, mem, ring, 0, rec, len);
}

int sp__fixture_header(const void *data, size_t size, struct sp__fixture_hdr *h,
		       size_t *off)
{
	const unsigned char *p = data;
	uint32_t version, reserved;

	if (size < SP__FIX_HEADER || memcmp(p, magic, 8))
		return SP_ECORRUPT;
	memcpy(&version, p + 8, 4);
	memcpy(&h->nrings, p + 12, 4);
	memcpy(&h->sample_type, p + 16, 8);
	memcpy(&h->stack_size, p + 24, 4);
	memcpy(&reserved, p + 28, 4);
	if (version != 1 || reserved || h->nrings == 0 || h->nrings > 4096)
		return SP_ECORRUPT;
	*off = SP__FIX_HEADER;
	return 0;
}

static int parse_module(const unsigned char *p, uint32_t len,
			struct sp__fix_entry *e)
{
	uint32_t plen;

	if (len < 56)
		return SP_ECORRUPT;
	memcpy(&e->pid, p, 4);
	memcpy(&plen, p + 4, 4);
	if (plen != len - 56 || plen == 0 || plen > 4096)
		return SP_ECORRUPT;
	memcpy(&e->map.start, p + 8, 8);
	memcpy(&e->map.end, p + 16, 8);
	memcpy(&e->map.offset, p + 24, 8);
	memcpy(&e->map.inode, p + 32, 8);
	memcpy(&e->map.inode_generation, p + 40, 8);
	memcpy(&e->map.dev_major, p + 48, 4);
	memcpy(&e->map.dev_minor, p + 52, 4);
	e->map.path = (const char *)p + 56;
	e->map.path_len = plen;
	return e->pid > 0 && e->map.end > e->map.start ? 1 : SP_ECORRUPT;
}

static int parse_record(const unsigned char *p, uint32_t len, uint32_t nrings,
			struct sp__fix_entry *e)
{
	struct perf_event_header h;

	if (len < 8 + sizeof(h))
		return SP_ECORRUPT;
	memcpy(&e->ring, p, 4);
	memcpy(&e->late, p + 4, 4);
	memcpy(&h, p + 8, sizeof(h));
	if (e->ring >= nrings || h.size != len - 8 || (h.size & 7))
		return SP_ECORRUPT;
	e->record = p + 8;
	e->record_len = h.size;
	return 1;
}

int sp__fixture_next(const void *data, size_t size, uint32_t nrings,
		     size_t *off, struct sp__fix_entry *e)
{
	const unsigned char *p = data;
	uint32_t kind, len;
	size_t padded;

	if (*off == size)
		return 0;
	if (*off > size || size - *off < 8)
		return SP_ECORRUPT;
	memcpy(&kind, p + *off, 4);
	memcpy(&len, p + *off + 4, 4);
	padded = ((size_t)len + 7) & ~(size_t)7;
	if (padded > size - *off - 8)
		return SP_ECORRUPT;
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	p += *off + 8;
	*off += 8 + padded;
	switch (kind) {
	case SP__FIX_PROC:
		if (len != 16)
			return SP_ECORRUPT;
		memcpy(&e->pid, p, 4);
		memcpy(&e->starttime, p + 8, 8);
		return e->pid > 0 ? 1 : SP_ECORRUPT;
	case SP__FIX_MODULE:
		return parse_module(p, len, e);
	case SP__FIX_RECORD:
		return parse_record(p, len, nrings, e);
	default:
		return SP_ECORRUPT;
	}
}
