/* SPDX-License-Identifier: MIT */
/* Fuzz target: kallsyms / System.map parsing, full vs sparse, lookups. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "ksyms_internal.h"

/*
 * The input is kallsyms text. It is parsed in full, then sparsely for a
 * PC set taken from the full table (each start and end, one on either
 * side of a start, one below an end) plus hashed addresses, then as a
 * System.map with the same PCs. Invariants:
 *   - the full table is sorted with unique starts and every range ends
 *     at or before the next start (so lookups are unambiguous);
 *   - sparse loading answers every requested PC exactly as the full
 *     table does (same name, module and offset), whether the input was
 *     sorted or not;
 *   - every allocation is returned; an injected allocation failure gives
 *     -ENOMEM and nothing else.
 */
#define MAX_PCS 256

static void check_table(const struct sp__ksyms *ks)
{
	size_t i;

	for (i = 0; i < ks->n; i++) {
		FUZZ_CHECK(ks->syms[i].name && ks->syms[i].name[0]);
		FUZZ_CHECK(ks->syms[i].end >= ks->syms[i].addr);
		if (i + 1 < ks->n) {
			FUZZ_CHECK(ks->syms[i].addr < ks->syms[i + 1].addr);
			FUZZ_CHECK(ks->syms[i].end <= ks->syms[i + 1].addr);
		}
	}
}

static size_t pick_pcs(const struct sp__ksyms *ks, uint64_t h, uint64_t *pcs)
{
	const struct sp__ksym *s;
	size_t n = 0, i;

	for (i = 0; i < ks->n && n + 5 <= MAX_PCS - 8; i += 1 + (h & 3)) {
		s = &ks->syms[i];
		pcs[n++] = s->addr;
		pcs[n++] = s->addr + 1;
		pcs[n++] = s->addr - 1;
		pcs[n++] = s->end;
		pcs[n++] = s->end - 1;
	}
	for (i = 0; i < 8; i++)
		pcs[n++] = h =
			h * 6364136223846793005ull + 1442695040888963407ull;
	return n;
}

static void same_answers(const struct sp__ksyms *full,
			 const struct sp__ksyms *sparse, const uint64_t *pcs,
			 size_t n)
{
	struct sp_resolved_frame a, b;
	size_t i;
	int ra, rb;

	for (i = 0; i < n; i++) {
		ra = sp__ksyms_lookup(full, pcs[i], &a);
		rb = sp__ksyms_lookup(sparse, pcs[i], &b);
		FUZZ_CHECK(ra == rb);
		if (!ra)
			continue;
		FUZZ_CHECK(strcmp(a.name, b.name) == 0);
		FUZZ_CHECK(strcmp(a.module, b.module) == 0);
		FUZZ_CHECK(a.offset == b.offset);
		FUZZ_CHECK(a.kind == SP_RESOLVED_KERNEL);
	}
}

static void run_sparse(const struct sp__mem *mem, const char *text, size_t size,
		       const struct sp__ksyms *full, const uint64_t *pcs,
		       size_t n, bool may_fail)
{
	struct sp__ksyms *sparse = NULL;
	uint64_t slide = 0;
	int err;

	err = sp__ksyms_parse(mem, text, size, pcs, n, &sparse);
	FUZZ_CHECK(err == 0 || (err == -ENOMEM && may_fail));
	if (err == 0) {
		check_table(sparse);
		FUZZ_CHECK(sparse->n <= n);
		if (full)
			same_answers(full, sparse, pcs, n);
		sp__ksyms_free(sparse);
	}
	err = sp__system_map_parse(mem, text, size, pcs, n, &slide, &sparse);
	FUZZ_CHECK(err == 0 || (err == -ENOMEM && may_fail));
	if (err == 0) {
		check_table(sparse);
		sp__ksyms_free(sparse);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size), pcs[MAX_PCS];
	const char *text = (const char *)data;
	struct sp__ksyms *full = NULL;
	struct fuzz_alloc fa;
	struct sp__mem mem;
	size_t n = 0;
	int err;

	/* One input in eight fails one of the first allocations. */
	fuzz_alloc_init(&fa, (h & 7) == 0 ? 1 + (h >> 3) % 6 : 0);
	sp__mem_init(&mem, &fa.hook);
	err = sp__ksyms_parse(&mem, text, size, NULL, 0, &full);
	FUZZ_CHECK(err == 0 || (err == -ENOMEM && fa.failed));
	if (err == 0) {
		check_table(full);
		n = pick_pcs(full, h, pcs);
	}
	run_sparse(&mem, text, size, fa.failed ? NULL : full, pcs, n,
		   fa.fail_at != 0);
	sp__ksyms_free(full);
	FUZZ_CHECK(fa.outstanding == 0);
	return 0;
}
