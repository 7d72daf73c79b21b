/* SPDX-License-Identifier: MIT */
/* Reads the CIEs and FDEs of an .eh_frame or .debug_frame section. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "cfi_rows.h"

/*
 * One pass over the section's entries, in offset order, as libdw's
 * dwarf_next_cfi reads them:
 *
 *   entry: | length u32 (0xffffffff: u64 follows) | id | body ... |
 *   CIE:   id 0 (.eh_frame) or ~0 (.debug_frame); version 1, 3 or 4;
 *          augmentation string; [eh: a pointer]; code and data
 *          alignment; return address column; ["z": sized augmentation
 *          data: L lsda encoding, R FDE pointer encoding, P personality,
 *          S signal frame]; initial instructions
 *   FDE:   id = the CIE's offset (.debug_frame) or the distance back to it
 *          (.eh_frame); initial location and range in the CIE's encoding;
 *          [augmentation data]; instructions
 *
 * A zero length ends the section; a length past the end, a bad version
 * or a truncated field skips the rest (entries are read at most once, in
 * increasing offsets, so a hostile section cannot loop). FDEs name a CIE
 * seen earlier or later; an FDE whose CIE does not parse, whose location
 * does not decode or whose range is empty is dropped, as libdw drops it.
 * The FDEs are then sorted by start; of several with the same start the
 * first in the section stays.
 */

/* ---- readers ----------------------------------------------------------- */

int sp__cfi_rd_uleb_slow(struct sp__cfi_rd *rd, uint64_t *out)
{
	const uint8_t *d = rd->src->data;
	uint64_t v = 0;
	unsigned shift = 0;

	while (rd->pos < rd->end) {
		uint8_t b = d[rd->pos++];

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
		if (shift >= 70) /* libdw reads at most 10 bytes */
			return -1;
	}
	return -1;
}

int sp__cfi_rd_sleb(struct sp__cfi_rd *rd, int64_t *out)
{
	const uint8_t *d = rd->src->data;
	uint64_t v = 0;
	unsigned shift = 0;

	while (rd->pos < rd->end) {
		uint8_t b = d[rd->pos++];

		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if ((b & 0x40) && shift < 64)
				v |= ~(uint64_t)0 << shift;
			*out = (int64_t)v;
			return 0;
		}
		if (shift >= 63) /* libdw reads at most 9 bytes */
			return -1;
	}
	return -1;
}

int sp__cfi_rd_fixed(struct sp__cfi_rd *rd, unsigned n, uint64_t *out)
{
	const uint8_t *p = rd->src->data + rd->pos;
	uint64_t v = 0;
	unsigned i;

	if (rd->end - rd->pos < n)
		return -1;
	for (i = 0; i < n; i++) {
		unsigned k = rd->src->swap ? n - 1 - i : i;

		v |= (uint64_t)p[k] << (8 * i);
	}
	rd->pos += n;
	*out = v;
	return 0;
}

/* libdw's encoded_value_size, its uleb128 quirk included. */
static size_t enc_size(const struct sp__cfi_src *src, uint8_t enc, size_t pos)
{
	size_t p;

	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x07) {
	case DW_EH_PE_udata2:
		return 2;
	case DW_EH_PE_udata4:
		return 4;
	case DW_EH_PE_udata8:
		return 8;
	case DW_EH_PE_absptr:
		return src->addr_size;
	case DW_EH_PE_uleb128:
		for (p = pos; p < src->size;)
			if (src->data[p++] & 0x80)
				return p - pos;
		return 0;
	default:
		return 0;
	}
}

/*
 * A DW_EH_PE_* value: the application (pcrel against the section's svma;
 * textrel, datarel and funcrel bases are 0 in libdw; aligned) and format
 * bits, and an indirection through the section itself.
 */
int sp__cfi_rd_encoded(struct sp__cfi_rd *rd, uint8_t enc, uint64_t *out)
{
	const struct sp__cfi_src *src = rd->src;
	uint64_t base = 0, v;
	int64_t s;
	int err;

	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_textrel:
	case DW_EH_PE_datarel:
	case DW_EH_PE_funcrel:
		break;
	case DW_EH_PE_pcrel:
		base = src->vaddr + rd->pos;
		break;
	case DW_EH_PE_aligned: {
		size_t size = enc_size(src, enc, rd->pos), align;

		if (size == 0)
			return -1;
		align = (size_t)((src->vaddr + rd->pos) & (size - 1));
		if (align && size - align > rd->end - rd->pos)
			return -1;
		if (align)
			rd->pos += size - align;
		break;
	}
	default:
		return -1;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_udata2:
		err = sp__cfi_rd_fixed(rd, 2, &v);
		break;
	case DW_EH_PE_sdata2:
		err = sp__cfi_rd_fixed(rd, 2, &v);
		v = (uint64_t)(int64_t)(int16_t)v;
		break;
	case DW_EH_PE_udata4:
		err = sp__cfi_rd_fixed(rd, 4, &v);
		break;
	case DW_EH_PE_sdata4:
		err = sp__cfi_rd_fixed(rd, 4, &v);
		v = (uint64_t)(int64_t)(int32_t)v;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		err = sp__cfi_rd_fixed(rd, 8, &v);
		break;
	case DW_EH_PE_absptr:
		err = sp__cfi_rd_fixed(rd, src->addr_size, &v);
		break;
	case DW_EH_PE_uleb128:
		err = sp__cfi_rd_uleb(rd, &v);
		break;
	case DW_EH_PE_sleb128:
		err = sp__cfi_rd_sleb(rd, &s);
		v = (uint64_t)s;
		break;
	default:
		return -1;
	}
	if (err)
		return -1;
	v += base;
	if (enc & DW_EH_PE_indirect) {
		struct sp__cfi_rd at = { src, 0, src->size };

		if (v < src->vaddr || src->size < src->addr_size ||
		    v - src->vaddr > src->size - src->addr_size)
			return -1;
		at.pos = (size_t)(v - src->vaddr);
		if (sp__cfi_rd_fixed(&at, src->addr_size, &v))
			return -1;
	}
	*out = v;
	return 0;
}

/* ---- entries ------------------------------------------------------------ */

struct entry {
	uint64_t id;	  /* canonical: ~0 for a CIE, else the CIE's offset */
	size_t body, end; /* after the id; end of the entry */
	size_t next;
};

#define CIE_ID ~(uint64_t)0

/* One entry at @off: 0, 1 at the end (or a terminator), -1 malformed. */
static int read_entry(const struct sp__cfi_src *src, size_t off,
		      struct entry *e)
{
	struct sp__cfi_rd rd = { src, off, src->size };
	uint64_t len, id;
	unsigned osize = 4;
	size_t idpos;

	if (off >= src->size || src->size - off <= 4)
		return 1;
	sp__cfi_rd_fixed(&rd, 4, &len);
	if (len == 0xffffffffu) {
		osize = 8;
		if (sp__cfi_rd_fixed(&rd, 8, &len))
			return -1;
	}
	if (len == 0)
		return 1;
	if (len > src->size - rd.pos || len < osize + 1)
		return -1;
	e->end = rd.pos + (size_t)len;
	e->next = e->end;
	idpos = rd.pos;
	rd.end = e->end;
	sp__cfi_rd_fixed(&rd, osize, &id);
	if (!src->eh && osize == 4 && id == 0xffffffffu)
		id = CIE_ID;
	if (src->eh) {
		if (id == 0)
			id = CIE_ID;
		else if (id > idpos || idpos <= osize)
			return -1;
		else
			id = idpos - id;
	}
	e->id = id;
	e->body = rd.pos;
	return 0;
}

/* The augmentation letters after 'z' as dwarf_next_cfi skips them. */
static int skip_aug(const struct sp__cfi_src *src, const char *ap,
		    struct sp__cfi_rd *rd)
{
	for (; *ap; ap++) {
		uint64_t enc;

		if (*ap == 'S')
			continue;
		if (*ap != 'L' && *ap != 'R' && *ap != 'P')
			break;
		if (sp__cfi_rd_fixed(rd, 1, &enc))
			return -1;
		if (*ap == 'P') {
			size_t n = enc_size(src, (uint8_t)enc, rd->pos);

			if (n > rd->end - rd->pos)
				return -1;
			rd->pos += n;
		}
	}
	return 0;
}

/* The letters as libdw's intern_new_cie reads them from the data. */
static int grok_aug(const struct sp__cfi_src *src, const char *ap,
		    struct sp__cfi_rd *rd, struct sp__cfi_cie *cie)
{
	uint64_t b;

	for (; *ap; ap++) {
		switch (*ap) {
		case 'z':
			cie->sized_aug = true;
			continue;
		case 'S':
			cie->signal = true;
			continue;
		case 'L':
			if (sp__cfi_rd_fixed(rd, 1, &b))
				return -1;
			if (!cie->sized_aug)
				cie->fde_aug_size +=
					enc_size(src, (uint8_t)b, rd->pos);
			continue;
		case 'R':
			if (sp__cfi_rd_fixed(rd, 1, &b))
				return -1;
			cie->fde_enc = (uint8_t)b;
			continue;
		case 'P': {
			size_t n;

			if (sp__cfi_rd_fixed(rd, 1, &b))
				return -1;
			n = enc_size(src, (uint8_t)b, rd->pos);
			if (n > rd->end - rd->pos)
				return -1;
			rd->pos += n;
			continue;
		}
		default:
			if (cie->sized_aug)
				continue;
		}
		break;
	}
	return 0;
}

static int parse_cie(const struct sp__cfi_src *src, size_t off,
		     const struct entry *e, struct sp__cfi_cie *cie)
{
	struct sp__cfi_rd rd = { src, e->body, e->end };
	const char *aug;
	const uint8_t *nul;
	uint64_t version, v, aug_size = 0;
	size_t aug_data;

	memset(cie, 0, sizeof(*cie));
	cie->offset = off;
	if (sp__cfi_rd_fixed(&rd, 1, &version) ||
	    (version != 1 && version != 3 && version != 4))
		return -1;
	aug = (const char *)src->data + rd.pos;
	nul = memchr(aug, 0, rd.end - rd.pos);
	if (!nul)
		return -1;
	rd.pos = (size_t)(nul - src->data) + 1;
	if (version >= 4) {
		uint64_t asize, ssize;

		if (sp__cfi_rd_fixed(&rd, 1, &asize) ||
		    sp__cfi_rd_fixed(&rd, 1, &ssize) ||
		    asize != src->addr_size || ssize != 0)
			return -1;
	}
	if (aug[0] == 'e' && aug[1] == 'h') {
		aug += 2;
		if (src->addr_size > rd.end - rd.pos)
			return -1;
		rd.pos += src->addr_size;
	}
	if (sp__cfi_rd_uleb(&rd, &cie->code_align) ||
	    sp__cfi_rd_sleb(&rd, &cie->data_align))
		return -1;
	if (version >= 3 ? sp__cfi_rd_uleb(&rd, &v) :
			   sp__cfi_rd_fixed(&rd, 1, &v))
		return -1;
	aug_data = rd.pos;
	if (*aug == 'z') {
		if (sp__cfi_rd_uleb(&rd, &aug_size) ||
		    aug_size > rd.end - rd.pos)
			return -1;
		aug_data = rd.pos;
		if (skip_aug(src, aug + 1, &rd) || rd.pos > aug_data + aug_size)
			return -1;
		rd.pos = aug_data + (size_t)aug_size;
	}
	cie->insn = rd.pos;
	cie->insn_end = e->end;
	/* The letters again, now for their meaning, from the data's start. */
	cie->fde_enc = DW_EH_PE_absptr;
	rd.pos = aug_data;
	if (grok_aug(src, aug, &rd, cie))
		return -1;
	if ((cie->fde_enc & 0x0f) == DW_EH_PE_absptr)
		cie->fde_enc |= src->addr_size == 8 ? DW_EH_PE_udata8 :
						      DW_EH_PE_udata4;
	return 0;
}

static const struct sp__cfi_cie *find_cie(const struct sp__vec *cies,
					  uint64_t offset, uint32_t *index)
{
	const struct sp__cfi_cie *c = cies->data;
	size_t lo = 0, hi = cies->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c[mid].offset == offset) {
			*index = (uint32_t)mid;
			return &c[mid];
		}
		if (c[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct sp__fde_pending {
	uint64_t cie_off;
	size_t body, end;
	uint32_t order;
};

/* An FDE's range and instructions; 0, or -1 to drop it. */
static int decode_fde(const struct sp__cfi_src *src,
		      const struct sp__fde_pending *p, struct sp__cfi_fde *fde)
{
	struct sp__cfi_rd rd = { src, p->body, p->end };
	const struct sp__cfi_cie *cie;
	uint64_t range, len;

	cie = find_cie(&src->cies, p->cie_off, &fde->cie);
	if (!cie)
		return -1;
	if (sp__cfi_rd_encoded(&rd, cie->fde_enc, &fde->start) ||
	    sp__cfi_rd_encoded(&rd, cie->fde_enc & 0x0f, &range))
		return -1;
	fde->end = fde->start + range;
	if (fde->start >= fde->end)
		return -1;
	if (cie->sized_aug) {
		if (sp__cfi_rd_uleb(&rd, &len) || len > rd.end - rd.pos)
			return -1;
		rd.pos += (size_t)len;
	} else {
		if (cie->fde_aug_size > rd.end - rd.pos)
			return -1;
		rd.pos += cie->fde_aug_size;
	}
	fde->insn = rd.pos;
	fde->insn_end = rd.end;
	fde->order = p->order;
	return 0;
}

/*
 * Sorts @n keys (and their @vals, when not NULL) by an LSD radix sort, a
 * byte a pass, skipping bytes all keys share: stable, so equal keys keep
 * their order. glibc's qsort took 12 of libc's 46 million instructions.
 */
int sp__cfi_sort_keys(const struct sp__mem *mem, uint64_t *keys, uint32_t *vals,
		      size_t n)
{
	uint64_t *tk, *k = keys, diff = 0;
	uint32_t *tv = NULL, *v = vals;
	size_t i, count[256], bytes = n * (sizeof(*tk) + sizeof(*tv));
	unsigned shift;

	for (i = 1; i < n; i++)
		diff |= keys[i] ^ keys[0];
	for (i = 1; i < n && keys[i - 1] <= keys[i]; i++)
		;
	if (i >= n)
		return 0;
	tk = sp__mem_alloc(mem, bytes);
	if (!tk)
		return -ENOMEM;
	tv = (uint32_t *)(void *)(tk + n);
	for (shift = 0; shift < 64; shift += 8) {
		uint64_t *ok = k == keys ? tk : keys;
		uint32_t *ov = k == keys ? tv : vals;
		size_t sum = 0, c;

		if (!((diff >> shift) & 0xff))
			continue;
		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(k[i] >> shift) & 0xff]++;
		for (i = 0; i < 256; i++) {
			c = count[i];
			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++) {
			size_t at = count[(k[i] >> shift) & 0xff]++;

			ok[at] = k[i];
			if (vals)
				ov[at] = v[i];
		}
		k = ok;
		v = ov;
	}
	if (k != keys) {
		memcpy(keys, k, n * sizeof(*k));
		if (vals)
			memcpy(vals, v, n * sizeof(*v));
	}
	sp__mem_free(mem, tk, bytes);
	return 0;
}

/* Sorts the FDEs by start, section order among equal starts. */
static int sort_fdes(struct sp__cfi_src *src, const struct sp__mem *mem)
{
	struct sp__cfi_fde *f = src->fdes.data, *copy;
	size_t i, n = src->fdes.len, bytes;
	uint64_t *keys;
	uint32_t *idx;
	int err;

	for (i = 1; i < n && f[i - 1].start < f[i].start; i++)
		;
	if (i >= n) /* linkers mostly emit them in order */
		return 0;
	bytes = n * (sizeof(*keys) + sizeof(*idx) + sizeof(*copy));
	keys = sp__mem_alloc(mem, bytes);
	if (!keys)
		return -ENOMEM;
	copy = (struct sp__cfi_fde *)(void *)(keys + n);
	idx = (uint32_t *)(void *)(copy + n);
	for (i = 0; i < n; i++) {
		keys[i] = f[i].start;
		idx[i] = (uint32_t)i;
	}
	memcpy(copy, f, n * sizeof(*f));
	err = sp__cfi_sort_keys(mem, keys, idx, n);
	for (i = 0; !err && i < n; i++)
		f[i] = copy[idx[i]];
	sp__mem_free(mem, keys, bytes);
	return err;
}

static int scan(struct sp__cfi_src *src, const struct sp__mem *mem,
		struct sp__vec *pending)
{
	size_t off = 0;
	uint32_t order = 0;
	struct entry e;
	int err;

	while (read_entry(src, off, &e) == 0) {
		if (e.id == CIE_ID) {
			struct sp__cfi_cie cie;

			if (parse_cie(src, off, &e, &cie) == 0) {
				err = sp__vec_push(&src->cies, mem, &cie);
				if (err)
					return err;
			}
		} else {
			struct sp__fde_pending p = { e.id, e.body, e.end,
						     order++ };

			err = sp__vec_push(pending, mem, &p);
			if (err)
				return err;
		}
		off = e.next;
	}
	return 0;
}

int sp__cfi_src_open(struct sp__cfi_src *src, const struct sp__mem *mem,
		     const uint8_t *data, size_t size, uint64_t vaddr, bool eh,
		     bool swap, uint8_t addr_size, uint16_t machine)
{
	const struct sp__fde_pending *p;
	struct sp__vec pending;
	struct sp__cfi_fde *f;
	size_t i, n = 0;
	int err;

	memset(src, 0, sizeof(*src));
	src->data = data;
	src->size = size;
	src->vaddr = vaddr;
	src->eh = eh;
	src->swap = swap;
	src->addr_size = addr_size;
	src->machine = machine;
	src->cur.fde = SIZE_MAX;
	sp__vec_init(&src->cies, sizeof(struct sp__cfi_cie));
	sp__vec_init(&src->fdes, sizeof(struct sp__cfi_fde));
	sp__vec_init(&src->states, sizeof(struct sp__cfi_state));
	sp__vec_init(&pending, sizeof(struct sp__fde_pending));
	/* Most entries are FDEs of 20-60 bytes. */
	err = sp__vec_reserve(&pending, mem, size / 32 + 1);
	if (!err)
		err = scan(src, mem, &pending);
	if (!err)
		err = sp__vec_reserve(&src->fdes, mem, pending.len);
	p = pending.data;
	for (i = 0; !err && i < pending.len; i++) {
		struct sp__cfi_fde fde;

		if (decode_fde(src, &p[i], &fde) == 0)
			sp__vec_push(&src->fdes, mem, &fde); /* reserved */
	}
	sp__vec_fini(&pending, mem);
	if (err)
		return err;
	err = sort_fdes(src, mem);
	if (err)
		return err;
	f = src->fdes.data;
	for (i = 0; i < src->fdes.len; i++)
		if (n == 0 || f[n - 1].start != f[i].start)
			f[n++] = f[i];
	src->fdes.len = n;
	return 0;
}

void sp__cfi_src_close(struct sp__cfi_src *src, const struct sp__mem *mem)
{
	sp__vec_fini(&src->cies, mem);
	sp__vec_fini(&src->fdes, mem);
	sp__vec_fini(&src->states, mem);
}
