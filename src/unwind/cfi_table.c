/* SPDX-License-Identifier: MIT */
/* Compact CFI tables: the page index, the row lookup, freeing. */
#include <errno.h>

#include "unwind_internal.h"

/*
 * The lookup is the hottest path of the unwinder after the stack reads,
 * so it avoids a binary search over the whole table: page_first[p] is the
 * first row whose pc is at or above p << page_shift, and the row covering
 * an address is either in its page or the last row of an earlier page:
 *
 *   pc offsets:   0    0x1000   0x2000   0x3000
 *   pages:        | p0   | p1     | p2     |
 *   rows:         r0 r1 r2     r3 r4 r5 ...
 *   page_first:   0    3        3 ...
 *
 * Code has a row every 48 bytes or so (libc: 28k rows over 1.3 MiB), so
 * the page size is picked for about two rows per page: libc gets 128-byte
 * pages, a 43 KiB index (1.5 bytes per row) and a lookup is two index
 * loads plus a scan of a couple of rows, instead of 15 dependent probes.
 */

static unsigned pick_page_shift(uint64_t span, size_t nrows)
{
	unsigned shift = 4;
	uint64_t limit = (uint64_t)nrows / 2 + 64;

	while (shift < 40 && (span >> shift) + 1 > limit)
		shift++;
	return shift;
}

int sp__cfi_table_index(struct sp__cfi_table *table)
{
	uint64_t npages;
	size_t i, p;

	table->page_shift = pick_page_shift(table->span, table->nrows);
	npages = (table->span >> table->page_shift) + 1;
	table->page_first = sp__mem_calloc(&table->mem, (size_t)npages + 1,
					   sizeof(uint32_t));
	if (!table->page_first)
		return -ENOMEM;
	table->npages = (size_t)npages;
	i = 0;
	for (p = 0; p <= table->npages; p++) {
		uint64_t page_pc = (uint64_t)p << table->page_shift;

		while (i < table->nrows && table->rows[i].pc < page_pc)
			i++;
		table->page_first[p] = (uint32_t)i;
	}
	table->bytes += (table->npages + 1) * sizeof(uint32_t);
	return 0;
}

const struct sp__cfi_row *sp__cfi_table_find(const struct sp__cfi_table *table,
					     uint64_t svma)
{
	const struct sp__cfi_row *rows = table->rows;
	uint64_t off, page;
	size_t lo, hi;

	if (svma < table->base || svma - table->base >= table->span)
		return NULL;
	off = svma - table->base;
	page = off >> table->page_shift;
	lo = table->page_first[page];
	hi = table->page_first[page + 1];
	/* The covering row may start in an earlier page. */
	if (lo > 0)
		lo--;
	if (lo >= hi || rows[lo].pc > off)
		return NULL;
	/* Invariant: rows[lo].pc <= off, and every row at or past hi is > off. */
	while (hi - lo > 8) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= off)
			lo = mid;
		else
			hi = mid;
	}
	/* A short forward scan beats dependent binary-search loads. */
	while (lo + 1 < hi && rows[lo + 1].pc <= off)
		lo++;
	if (rows[lo].cfa_reg == SP__CFA_NONE)
		return NULL;
	return &rows[lo];
}

void sp__cfi_table_free(struct sp__cfi_table *table)
{
	struct sp__mem mem;

	if (!table)
		return;
	mem = table->mem;
	sp__mem_free(&mem, table->rows, table->nrows * sizeof(*table->rows));
	sp__mem_free(&mem, table->page_first,
		     (table->npages + 1) * sizeof(uint32_t));
	sp__mem_free(&mem, table->extras,
		     table->nextras * sizeof(*table->extras));
	sp__mem_free(&mem, table->exprs, table->nexprs * sizeof(*table->exprs));
	sp__mem_free(&mem, table->ops, table->nops * sizeof(*table->ops));
	sp__mem_free(&mem, table, sizeof(*table));
}
