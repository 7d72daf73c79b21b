/* SPDX-License-Identifier: MIT */
/* The CFI rows of one .eh_frame or .debug_frame section, without libdw. */
#ifndef SP_UNWIND_CFI_ROWS_H
#define SP_UNWIND_CFI_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "unwind_internal.h"
#include "vec.h"

/*
 * cfi_parse.c reads a section's CIEs and FDEs once (struct sp__cfi_src);
 * cfi_exec.c runs an FDE's instructions forward, row by row, and answers
 * "the rules at pc" the way libdw's dwarf_cfi_addrframe did (the table
 * builder's previous source, kept as the tests' oracle): the state after
 * every instruction before the first location advance past pc, the row
 * ending at that advance (or at the FDE's end). Register rules are kept
 * in libdw's form (rule kind and a value: an offset, a register, or the
 * section offset of an expression block) so cfi_build.c turns them into
 * the same table entries.
 *
 * Rows come out in increasing pc order per FDE without re-running the
 * program: the cursor keeps the state and the instruction position, and
 * only a query below the cursor restarts the FDE. Every length, LEB128,
 * encoding and augmentation is bounds-checked; the remember_state stack
 * is bounded (SP__CFI_STACK); a register number libdw would refuse makes
 * the rest of the FDE fail, as it did there.
 */

#define SP__CFI_STACK 16

enum sp__cfi_reg_rule {
	SP__CFI_R_UNSPEC = 0,
	SP__CFI_R_UNDEF,
	SP__CFI_R_SAME,
	SP__CFI_R_OFFSET,
	SP__CFI_R_VAL_OFFSET,
	SP__CFI_R_REGISTER,
	SP__CFI_R_EXPR,	    /* value: section offset of the block's length */
	SP__CFI_R_VAL_EXPR, /* same */
};

enum sp__cfi_cfa_rule {
	SP__CFI_CFA_UNDEF = 0,
	SP__CFI_CFA_OFFSET,
	SP__CFI_CFA_EXPR,
	SP__CFI_CFA_INVALID,
};

struct sp__cfi_reg {
	int64_t value; /* libdw keeps 61 bits, sign-extended */
	uint8_t rule;  /* enum sp__cfi_reg_rule */
};

struct sp__cfi_state {
	uint64_t cfa_reg, cfa_off; /* OFFSET; EXPR: block offset, length */
	uint8_t cfa_rule;	   /* enum sp__cfi_cfa_rule */
	struct sp__cfi_reg reg[SP__ARCH_NREGS];
};

struct sp__cfi_cie {
	uint64_t offset; /* of the entry in the section */
	uint64_t code_align;
	int64_t data_align;
	size_t insn, insn_end; /* initial instructions, section offsets */
	size_t fde_aug_size;
	uint8_t fde_enc;
	bool sized_aug, signal;
	int8_t init;	/* 0 not run yet, 1 ok, -1 failed */
	uint32_t state; /* index into sp__cfi_src.states once run */
};

struct sp__cfi_fde {
	uint64_t start, end;
	size_t insn, insn_end;
	uint32_t cie;
	uint32_t order; /* position in the section: first wins a tie */
};

/* Where the cursor of a source stands (cfi_exec.c). */
struct sp__cfi_cursor {
	size_t fde; /* index into fdes, or SIZE_MAX */
	size_t pos; /* next instruction, section offset */
	uint64_t loc, max;
	int status; /* 0 running, 1 program ended, -1 failed */
	unsigned depth;
	struct sp__cfi_state st;
	struct sp__cfi_state stack[SP__CFI_STACK];
};

struct sp__cfi_src {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr; /* DW_EH_PE_pcrel base: sh_addr (.eh_frame) or 0 */
	bool eh, swap;
	uint8_t addr_size;
	uint16_t machine;
	struct sp__vec cies;   /* struct sp__cfi_cie, by offset */
	struct sp__vec fdes;   /* struct sp__cfi_fde, by start, unique */
	struct sp__vec states; /* struct sp__cfi_state: CIE initial states */
	size_t hint;
	struct sp__cfi_cursor cur;
};

/*
 * Reads every entry of @data (@size bytes at svma @vaddr; @eh selects
 * the .eh_frame dialect) of an ELF of @machine, class @addr_size (4 or 8)
 * and byte order (@swap: not the host's). Entries that do not parse are
 * skipped, as are FDEs of an unknown CIE or an empty range.
 * Returns 0 or -ENOMEM.
 */
int sp__cfi_src_open(struct sp__cfi_src *src, const struct sp__mem *mem,
		     const uint8_t *data, size_t size, uint64_t vaddr, bool eh,
		     bool swap, uint8_t addr_size, uint16_t machine);
void sp__cfi_src_close(struct sp__cfi_src *src, const struct sp__mem *mem);

/*
 * Sorts @keys, and @vals along (may be NULL), stably. 0 or -ENOMEM
 * (nothing moved).
 */
int sp__cfi_sort_keys(const struct sp__mem *mem, uint64_t *keys, uint32_t *vals,
		      size_t n);

/* Readers shared by the parser and the interpreter (cfi_parse.c). */
struct sp__cfi_rd {
	const struct sp__cfi_src *src;
	size_t pos, end; /* section offsets */
};

int sp__cfi_rd_uleb_slow(struct sp__cfi_rd *rd, uint64_t *out);
/* Inline: most CFA operands are one-byte LEB128s. */
static inline int sp__cfi_rd_uleb(struct sp__cfi_rd *rd, uint64_t *out)
{
	if (rd->pos < rd->end && rd->src->data[rd->pos] < 0x80) {
		*out = rd->src->data[rd->pos++];
		return 0;
	}
	return sp__cfi_rd_uleb_slow(rd, out);
}
int sp__cfi_rd_sleb(struct sp__cfi_rd *rd, int64_t *out);
int sp__cfi_rd_fixed(struct sp__cfi_rd *rd, unsigned n, uint64_t *out);
int sp__cfi_rd_encoded(struct sp__cfi_rd *rd, uint8_t enc, uint64_t *out);

/*
 * The row covering @pc: 0 with *@st (valid until the next call on @src),
 * its end in *@end and the CIE's signal flag in *@signalp; 1 when no FDE
 * covers @pc or its program fails before reaching it; -ENOMEM.
 */
int sp__cfi_src_row(struct sp__cfi_src *src, const struct sp__mem *mem,
		    uint64_t pc, const struct sp__cfi_state **st, uint64_t *end,
		    bool *signalp);

/*
 * Decodes the DWARF expression block [@off, @off + @len) of @src as libdw
 * did (its Dwarf_Op fields): a DW_OP_call_frame_cfa first when @cfap, a
 * DW_OP_stack_value last when @valuep. At most @max ops. Returns the
 * number of ops, 0 for an empty block, -1 when it does not decode,
 * -E2BIG past @max.
 */
int sp__cfi_ops_decode(const struct sp__cfi_src *src, size_t off, size_t len,
		       bool cfap, bool valuep, struct sp__cfi_op *ops,
		       size_t max);

#endif /* SP_UNWIND_CFI_ROWS_H */
