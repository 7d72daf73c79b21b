/* SPDX-License-Identifier: MIT */
/* Load bias from a mapping and the PT_LOAD table; checked svma <-> offset. */
#include <elf.h>
#include <errno.h>

#include "image_internal.h"

/*
 * A mapping maps file offsets linearly: avma(o) = map_start + (o - map_offset).
 * A PT_LOAD maps them linearly too: svma(o) = p_vaddr + (o - p_offset).
 * So any segment that really backs the mapping gives the same
 *
 *   bias = avma - svma = map_start - svma(map_offset)
 *
 * where svma(map_offset) may lie below p_vaddr: the loader maps whole
 * pages, so a segment's first page starts at page_down(p_offset), which
 * lands on page_down(p_vaddr) (p_vaddr and p_offset are congruent modulo
 * the page size for every segment the kernel can map).
 *
 * A segment "claims" the mapping when map_offset lies in its page-rounded
 * file range [page_down(p_offset), page_up(p_offset + p_filesz)): the
 * page-rounded tail is accepted, and so is a coarse mapping that spans
 * further segments (only the one at its start offset is asked). Every
 * claimant votes its bias (research/stackpulse-features.md §1.5, 0.2.0,
 * 0.5.0, 0.7.0):
 *
 *   all votes agree                  -> that bias
 *   disagree, executable ones agree  -> the executable bias (a shared
 *                                      boundary page keeps its code tail)
 *   otherwise                        -> -ENOENT (ambiguous shared page)
 *
 * Segments with no file bytes, non-congruent offsets, or ranges that wrap
 * never vote, and a vote whose svma would exceed map_start or whose
 * module-relative range would wrap is dropped: an unresolved bias is
 * reported, never a wrapped one.
 */

struct mapping {
	uint64_t start;
	uint64_t len;
	uint64_t offset;
	uint64_t page;
};

struct vote {
	unsigned n;
	bool agree;
	uint64_t bias;
	unsigned nexec;
	bool exec_agree;
	uint64_t exec_bias;
};

static uint64_t page_down(uint64_t x, uint64_t page)
{
	return x & ~(page - 1);
}

/* The page-rounded end of the segment's file bytes, or false on wrap. */
static bool file_end_up(const struct sp__image_load *l, uint64_t page,
			uint64_t *end)
{
	if (__builtin_add_overflow(l->offset, l->filesz, end) ||
	    __builtin_add_overflow(*end, page - 1, end))
		return false;
	*end = page_down(*end, page);
	return true;
}

static bool segment_usable(const struct sp__image_load *l, uint64_t page)
{
	uint64_t end;

	if (l->filesz == 0 || l->memsz < l->filesz)
		return false;
	if (__builtin_add_overflow(l->vaddr, l->memsz, &end))
		return false;
	if (!file_end_up(l, page, &end))
		return false;
	return (l->vaddr & (page - 1)) == (l->offset & (page - 1));
}

/* svma of file offset @off through segment @l; false if it wraps. */
static bool svma_at(const struct sp__image_load *l, uint64_t off,
		    uint64_t *svma)
{
	if (off >= l->offset)
		return !__builtin_add_overflow(l->vaddr, off - l->offset, svma);
	return !__builtin_sub_overflow(l->vaddr, l->offset - off, svma);
}

static bool claims(const struct sp__image_load *l, const struct mapping *m,
		   bool overlap)
{
	uint64_t head = page_down(l->offset, m->page), tail, map_last;

	file_end_up(l, m->page, &tail); /* segment_usable checked the wrap */
	if (!overlap)
		return head <= m->offset && m->offset < tail;
	/* [offset, offset + len) intersects [head, tail); len >= 1. */
	if (__builtin_add_overflow(m->offset, m->len - 1, &map_last))
		map_last = UINT64_MAX;
	return head <= map_last && m->offset < tail;
}

static void vote_add(struct vote *v, uint64_t bias, bool exec)
{
	if (v->n++ == 0)
		v->bias = bias;
	else if (bias != v->bias)
		v->agree = false;
	if (!exec)
		return;
	if (v->nexec++ == 0)
		v->exec_bias = bias;
	else if (bias != v->exec_bias)
		v->exec_agree = false;
}

static void collect(const struct sp__image *img, const struct mapping *m,
		    bool overlap, struct vote *v)
{
	const struct sp__image_load *l;
	uint64_t svma, last;
	size_t i;

	for (i = 0; i < img->nloads; i++) {
		l = &img->loads[i];
		if (!segment_usable(l, m->page) || !claims(l, m, overlap))
			continue;
		if (!svma_at(l, m->offset, &svma) || svma > m->start ||
		    __builtin_add_overflow(svma, m->len - 1, &last))
			continue;
		vote_add(v, m->start - svma, l->flags & PF_X);
	}
}

static int verdict(const struct vote *v, uint64_t *bias)
{
	if (v->n == 0)
		return -ENOENT;
	if (v->agree) {
		*bias = v->bias;
		return 0;
	}
	if (v->nexec > 0 && v->exec_agree) {
		*bias = v->exec_bias;
		return 0;
	}
	return -ENOENT;
}

int sp__image_bias(const struct sp__image *img, uint64_t map_start,
		   uint64_t map_end, uint64_t map_offset, uint64_t page_size,
		   uint64_t *bias)
{
	struct mapping m = { map_start, map_end - map_start, map_offset,
			     page_size };
	struct vote v = { .agree = true, .exec_agree = true };

	if (page_size == 0 || (page_size & (page_size - 1)) != 0)
		return -EINVAL;
	if (map_end <= map_start)
		return -ENOENT;
	collect(img, &m, false, &v);
	/* Nothing at the start offset: a mapping that begins before its
	 * segments (a coarse or hand-made mapping) still correlates. */
	if (v.n == 0)
		collect(img, &m, true, &v);
	return verdict(&v, bias);
}

int sp__image_offset_to_svma(const struct sp__image *img, uint64_t offset,
			     uint64_t *svma)
{
	const struct sp__image_load *l;
	size_t i;

	for (i = 0; i < img->nloads; i++) {
		l = &img->loads[i];
		if (offset < l->offset || offset - l->offset >= l->filesz)
			continue;
		if (svma_at(l, offset, svma))
			return 0;
	}
	return -ERANGE;
}

int sp__image_svma_to_offset(const struct sp__image *img, uint64_t svma,
			     uint64_t *offset)
{
	const struct sp__image_load *l;
	size_t i;

	/* Only file-backed bytes have an offset: not the .bss past filesz. */
	for (i = 0; i < img->nloads; i++) {
		l = &img->loads[i];
		if (svma < l->vaddr || svma - l->vaddr >= l->filesz)
			continue;
		if (!__builtin_add_overflow(l->offset, svma - l->vaddr, offset))
			return 0;
	}
	return -ERANGE;
}
