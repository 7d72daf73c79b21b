/* SPDX-License-Identifier: MIT */
/* Compact CFI tables: the page index, the row search, freeing. */
#include <errno.h>

#include "unwind_internal.h"

/*
 * The lookup (sp__cfi_table_find, inline in unwind_internal.h) is the
 * hottest path of the unwinder after the stack reads, so it avoids a
 * binary search over the whole table: page_first[p] is the row covering
 * the first byte of page p, and the row covering an address lies between
 * its page's entry and the next page's:
 *
 *   pc offsets:   0    0x80     0x100    0x180
 *   pages:        | p0   | p1     | p2     |
 *   rows:         r0 r1 r2     r3 r4 r5 ...
 *   page_first:   0    2        2        5
 *
 * Code has a row every 48 bytes or so (libc: 28k rows over 1.3 MiB), so
 * the page size is picked for about two rows per page: libc gets 128-byte
 * pages and a 43 KiB index (1.5 bytes per row); a lookup is two index
 * loads and a scan of a couple of 8-byte rows, one cache line, instead of
 * 15 dependent probes.
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

		/* The last row starting at or before the page's first byte. */
		while (i + 1 < table->nrows && table->rows[i + 1].pc <= page_pc)
			i++;
		table->page_first[p] = (uint32_t)i;
	}
	table->bytes += (table->npages + 1) * sizeof(uint32_t);
	return 0;
}

/*
 * The last row in [lo, hi] starting at or before @off, for long pages:
 * rows[lo].pc <= off holds on entry and is kept, so the result is exact.
 */
size_t sp__cfi_table_search(const struct sp__cfi_table *table, uint64_t off,
			    size_t lo, size_t hi)
{
	const struct sp__cfi_row *rows = table->rows;
	size_t n = hi - lo + 1;

	/* Branch-free halving: the comparison becomes a conditional move. */
	while (n > 1) {
		size_t half = n / 2;

		lo = rows[lo + half].pc <= off ? lo + half : lo;
		n -= half;
	}
	return lo;
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
	sp__mem_free(&mem, table->rules, table->nrules * sizeof(*table->rules));
	sp__mem_free(&mem, table->extras,
		     table->nextras * sizeof(*table->extras));
	sp__mem_free(&mem, table->exprs, table->nexprs * sizeof(*table->exprs));
	sp__mem_free(&mem, table->ops, table->nops * sizeof(*table->ops));
	sp__mem_free(&mem, table, sizeof(*table));
}
