/* SPDX-License-Identifier: MIT */
/* Fuzz target: the CFI section parser and CFA interpreter, then a table. */
#include <elf.h>

#include "cfi_rows.h"
#include "fuzz.h"
#include "unwind_internal.h"
#include "unwind_jit.h"

/*
 * Input: | flags u8 | vaddr u64 LE | section bytes |. Flags: bit 0 the
 * .eh_frame dialect (else .debug_frame), bit 1 the other byte order,
 * bit 2 ELFCLASS32 addresses, bit 3 an AArch64 ELF (else x86-64).
 * The section is parsed (cfi_parse.c), then every FDE is walked row by
 * row from its start as the table builder walks it, and a few pcs from
 * the input hash are asked out of order (the cursor restarts); every
 * row must end past its pc, and each rule's expression is decoded.
 * Finally .eh_frame inputs build a whole table through
 * sp__cfi_table_from_eh_frame, which also runs the builder's walk,
 * interning and assembly. Nothing may crash, hang, leak or read outside
 * the section (an exact-size heap copy).
 */

#define MAX_QUERIES 4096

static void decode_rules(const struct sp__cfi_src *src,
			 const struct sp__cfi_state *st)
{
	struct sp__cfi_op ops[64];
	struct sp__cfi_rd rd = { src, 0, src->size };
	uint64_t len;
	size_t r;
	int n;

	if (st->cfa_rule == SP__CFI_CFA_EXPR) {
		FUZZ_CHECK(st->cfa_reg <= src->size &&
			   st->cfa_off <= src->size - st->cfa_reg);
		n = sp__cfi_ops_decode(src, (size_t)st->cfa_reg,
				       (size_t)st->cfa_off, false, false, ops,
				       64);
		FUZZ_CHECK(n <= 64);
	}
	for (r = 0; r < SP__ARCH_NREGS; r++) {
		const struct sp__cfi_reg *reg = &st->reg[r];

		FUZZ_CHECK(reg->rule <= SP__CFI_R_VAL_EXPR);
		if (reg->rule != SP__CFI_R_EXPR &&
		    reg->rule != SP__CFI_R_VAL_EXPR)
			continue;
		rd.pos = (size_t)reg->value;
		FUZZ_CHECK(rd.pos < src->size);
		if (sp__cfi_rd_uleb(&rd, &len))
			continue;
		FUZZ_CHECK(len <= src->size - rd.pos);
		n = sp__cfi_ops_decode(src, rd.pos, (size_t)len, true,
				       reg->rule == SP__CFI_R_VAL_EXPR, ops,
				       64);
		FUZZ_CHECK(n <= 64);
	}
}

/* Rows of @pc; 0 when one was found. */
static int ask(struct sp__cfi_src *src, const struct sp__mem *mem, uint64_t pc,
	       uint64_t *end)
{
	const struct sp__cfi_state *st;
	bool signalp;
	int err = sp__cfi_src_row(src, mem, pc, &st, end, &signalp);

	FUZZ_CHECK(err == 0 || err == 1);
	if (err)
		return 1;
	FUZZ_CHECK(*end > pc);
	decode_rules(src, st);
	return 0;
}

static void walk(struct sp__cfi_src *src, const struct sp__mem *mem, uint64_t h)
{
	const struct sp__cfi_fde *f = src->fdes.data;
	size_t i, queries = 0;
	uint64_t pc, end;

	for (i = 0; i < src->fdes.len; i++) {
		FUZZ_CHECK(f[i].start < f[i].end);
		FUZZ_CHECK(i == 0 || f[i - 1].start < f[i].start);
		pc = f[i].start;
		while (pc < f[i].end && queries++ < MAX_QUERIES &&
		       ask(src, mem, pc, &end) == 0)
			pc = end;
	}
	for (i = 0; i < 16 && src->fdes.len; i++) {
		const struct sp__cfi_fde *r = &f[(h >> i) % src->fdes.len];

		ask(src, mem, r->start + (h >> (2 * i)) % (r->end - r->start),
		    &end);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp__cfi_table *t = NULL;
	struct sp__cfi_src src;
	struct fuzz_alloc a;
	struct sp__mem mem;
	uint64_t vaddr = 0;
	uint8_t flags, *sec;
	size_t i, len;

	if (size < 9)
		return 0;
	flags = data[0];
	for (i = 0; i < 8; i++)
		vaddr |= (uint64_t)data[1 + i] << (8 * i);
	len = size - 9;
	fuzz_alloc_init(&a, 0);
	sp__mem_init(&mem, &a.hook);
	sec = fuzz_dup(data + 9, len);
	if (sp__cfi_src_open(&src, &mem, sec, len, vaddr, flags & 1,
			     (flags & 2) != 0, flags & 4 ? 4 : 8,
			     flags & 8 ? EM_AARCH64 : EM_X86_64) == 0)
		walk(&src, &mem, fuzz_hash(data, size));
	sp__cfi_src_close(&src, &mem);
	if ((flags & 1) && len &&
	    sp__cfi_table_from_eh_frame(&mem, sec, len, vaddr & ~0xfffull,
					&t) == 0)
		sp__cfi_table_free(t);
	FUZZ_CHECK(a.outstanding == 0);
	free(sec);
	return 0;
}
