/* SPDX-License-Identifier: MIT */
/* Fuzz target: JIT trampoline templates and tiled tables from target memory. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "jit_table.h"
#include "unwind_internal.h"

/*
 * The input is code bytes as the recorder reads them from a process it
 * samples: hostile. It is decoded as a template, tiled over itself as the
 * unwinder is asked to accept it (raw, and repeated so that tiled inputs
 * are common), and the tables are probed at every offset. Invariants:
 *   - a decoded template lies inside the input, starts with a row at 0,
 *     rows strictly increase, and every CFA is RSP or RBP plus 8..1016;
 *   - a table exists only for input that really is one template tiled:
 *     changing a covered byte of any copy but the first makes it fail;
 *   - every row it has is one of the template's rule sets;
 *   - allocations are all returned; an injected failure is -ENOMEM only.
 */
#define TILED_MAX 4096

static void check_template(const struct sp__jit_template *t, size_t size)
{
	size_t i;

	FUZZ_CHECK(t->len > 0 && t->len <= size && t->len <= SP__JIT_TPL_MAX);
	FUZZ_CHECK(t->nrows > 0 && t->rows[0].off == 0);
	for (i = 0; i < t->nrows; i++) {
		const struct sp__jit_row *r = &t->rows[i];

		FUZZ_CHECK(r->off < t->len);
		FUZZ_CHECK(i == 0 || r->off > t->rows[i - 1].off);
		FUZZ_CHECK(r->cfa_reg == SP_X86_64_RSP ||
			   r->cfa_reg == SP_X86_64_RBP);
		FUZZ_CHECK(r->cfa_off >= 8 && r->cfa_off <= 1016);
	}
}

static void probe(const struct sp__cfi_table *t, size_t len)
{
	size_t off;

	FUZZ_CHECK(t->span <= len);
	for (off = 0; off < len + 2; off++) {
		const struct sp__cfi_rules *r = sp__cfi_table_find(t, off);

		if (!r)
			continue;
		FUZZ_CHECK(off < t->span);
		FUZZ_CHECK(r->cfa_reg == SP_X86_64_RSP ||
			   r->cfa_reg == SP_X86_64_RBP);
		FUZZ_CHECK(r->ra == -1 && !(r->flags & SP__ROW_EXTRA));
	}
}

static void tiled(const struct sp__mem *mem, const struct fuzz_alloc *fa,
		  uint8_t *code, size_t len, uint64_t h)
{
	struct sp__cfi_table *t = NULL;
	int err = sp__jit_tiled_table(mem, code, len, &t);
	size_t at;

	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -E2BIG ||
		   (err == -ENOMEM && fa->failed));
	if (err)
		return;
	probe(t, len);
	/* A flipped byte inside a covered copy: no longer tiled. */
	at = (size_t)(h % t->span);
	if (sp__cfi_table_find(t, at)) {
		struct sp__cfi_table *t2 = NULL;

		code[at] ^= 0x5a;
		err = sp__jit_tiled_table(mem, code, len, &t2);
		code[at] ^= 0x5a;
		/* Past the first copy (< 256 bytes): that copy differs now. */
		FUZZ_CHECK(err != 0 || at < SP__JIT_TPL_MAX);
		sp__cfi_table_free(t2);
	}
	sp__cfi_table_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size);
	struct sp__jit_template tpl;
	struct fuzz_alloc fa;
	struct sp__mem mem;
	uint8_t *copy = fuzz_dup(data, size), *rep;
	size_t i, n;

	fuzz_alloc_init(&fa, (h & 7) == 0 ? 1 + (h >> 3) % 4 : 0);
	sp__mem_init(&mem, &fa.hook);
	if (sp__arch_jit_decode(copy, size, &tpl) == 0)
		check_template(&tpl, size);
	tiled(&mem, &fa, copy, size, h);
	if (size && size <= 256) {
		n = TILED_MAX / size * size;
		rep = malloc(n);
		FUZZ_CHECK(rep != NULL);
		for (i = 0; i < n; i += size)
			memcpy(rep + i, data, size);
		tiled(&mem, &fa, rep, n, h);
		free(rep);
	}
	free(copy);
	FUZZ_CHECK(fa.outstanding == 0);
	return 0;
}
