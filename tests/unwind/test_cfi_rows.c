/* SPDX-License-Identifier: MIT */
/* The CFI section parser and interpreter on crafted sections. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>

#include "cfi_rows.h"
#include "check.h"

/*
 * The crafted inputs of tests/corpus/cfi_parse (make_cfi_parse_seeds.py:
 * | flags u8 | vaddr u64 | .eh_frame bytes |), read as sections: the
 * valid one's first rows (the CIE's CFA = RSP + 8 with RA at CFA - 8,
 * then CFA + 16 and RBP saved at CFA - 16), and what the broken ones must
 * give: no FDE from a truncated CIE or an FDE naming an FDE as its CIE;
 * the first of two FDEs with the same start, no row past a nested FDE;
 * a failed row for remember_state past the bounded stack and for a
 * register number libdw refused.
 */

static struct sp__mem mem;
static uint8_t *buf;

static void open_seed(const char *name, struct sp__cfi_src *src)
{
	char path[4096];
	FILE *f;
	size_t len;
	uint64_t vaddr = 0;
	int i;

	snprintf(path, sizeof(path), "%s/tests/corpus/cfi_parse/%s",
		 SP_SRC_ROOT, name);
	f = fopen(path, "rb");
	CHECK(f != NULL);
	free(buf);
	buf = malloc(1 << 16);
	CHECK(buf != NULL);
	len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	CHECK(len > 9);
	for (i = 0; i < 8; i++)
		vaddr |= (uint64_t)buf[1 + i] << (8 * i);
	CHECK_OK(sp__cfi_src_open(src, &mem, buf + 9, len - 9, vaddr,
				  buf[0] & 1, false, 8, EM_X86_64));
}

static int row(struct sp__cfi_src *src, uint64_t pc,
	       const struct sp__cfi_state **st, uint64_t *end)
{
	bool signalp;

	return sp__cfi_src_row(src, &mem, pc, st, end, &signalp);
}

int main(void)
{
	const struct sp__cfi_state *st;
	struct sp__cfi_src src;
	uint64_t end;

	sp__mem_init(&mem, NULL);

	open_seed("valid", &src);
	CHECK_EQ(src.fdes.len, 2);
	CHECK_EQ_INT(row(&src, 0x2000, &st, &end), 0);
	CHECK_EQ(end, 0x2001);
	CHECK_EQ(st->cfa_rule, SP__CFI_CFA_OFFSET);
	CHECK_EQ(st->cfa_reg, 7);
	CHECK_EQ(st->cfa_off, 8);
	CHECK_EQ(st->reg[16].rule, SP__CFI_R_OFFSET);
	CHECK_EQ_INT(st->reg[16].value, -8);
	CHECK_EQ_INT(row(&src, 0x2001, &st, &end), 0);
	CHECK_EQ(end, 0x2003);
	CHECK_EQ(st->cfa_off, 16);
	CHECK_EQ(st->reg[6].rule, SP__CFI_R_OFFSET);
	CHECK_EQ_INT(st->reg[6].value, -16);
	/* Backwards: the cursor restarts and gives the first row again. */
	CHECK_EQ_INT(row(&src, 0x2000, &st, &end), 0);
	CHECK_EQ(st->cfa_off, 8);
	CHECK_EQ_INT(row(&src, 0x1fff, &st, &end), 1);
	sp__cfi_src_close(&src, &mem);

	open_seed("truncated_cie", &src);
	CHECK_EQ(src.cies.len, 0);
	CHECK_EQ(src.fdes.len, 0);
	sp__cfi_src_close(&src, &mem);

	open_seed("cyclic_fde", &src);
	CHECK_EQ(src.cies.len, 1);
	CHECK_EQ(src.fdes.len, 0);
	sp__cfi_src_close(&src, &mem);

	open_seed("duplicate_fdes", &src);
	CHECK_EQ(src.fdes.len, 2);
	CHECK_EQ_INT(row(&src, 0x2000, &st, &end), 0);
	CHECK_EQ(end, 0x2008); /* the first FDE's advance, not the second's */
	CHECK_EQ_INT(row(&src, 0x2030, &st, &end), 1);
	sp__cfi_src_close(&src, &mem);

	open_seed("remember_overflow", &src);
	CHECK_EQ_INT(row(&src, 0x2000, &st, &end), 1);
	sp__cfi_src_close(&src, &mem);

	open_seed("huge_register", &src);
	CHECK_EQ_INT(row(&src, 0x2000, &st, &end), 1);
	sp__cfi_src_close(&src, &mem);

	open_seed("advance_in_cie", &src);
	CHECK_EQ_INT(row(&src, 0x2000, &st, &end), 1);
	sp__cfi_src_close(&src, &mem);

	free(buf);
	return T_EXIT_PASS;
}
