/* SPDX-License-Identifier: MIT */
/* Decodes the DWARF expressions of CFI rules into table operations. */
#include <errno.h>

#include <dwarf.h>

#include "cfi_rows.h"

/*
 * The table stores an expression as libdw's Dwarf_Op fields (atom,
 * number, number2; cfi_expr.c evaluates them), so the decoder gives each
 * operation the operands libdw gave it for CFI (no Dwarf handle):
 * constants and LEB128s widened to 64 bits, signed ones sign-extended,
 * DW_OP_addr of the ELF's address size. Operations that need a CU or
 * carry a block (call_ref, implicit_pointer/value, entry_value, and
 * const_type, whose number2 libdw made a host pointer) do not decode.
 */

/* Operand shapes. */
enum shape {
	BAD,
	NONE,
	U8,
	S8,
	U16,
	S16,
	U32,
	S32,
	U64,
	ULEB,
	SLEB,
	ULEB_SLEB,
	ULEB_ULEB,
	U8_ULEB,
	ADDR,
};

static enum shape shape_of(uint8_t atom)
{
	if (atom >= DW_OP_lit0 && atom <= DW_OP_reg31)
		return NONE;
	if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31)
		return SLEB;
	switch (atom) {
	case DW_OP_addr:
		return ADDR;
	case DW_OP_deref:
	case DW_OP_dup:
	case DW_OP_drop:
	case DW_OP_over:
	case DW_OP_swap:
	case DW_OP_rot:
	case DW_OP_xderef:
	case DW_OP_abs:
	case DW_OP_and:
	case DW_OP_div:
	case DW_OP_minus:
	case DW_OP_mod:
	case DW_OP_mul:
	case DW_OP_neg:
	case DW_OP_not:
	case DW_OP_or:
	case DW_OP_plus:
	case DW_OP_shl:
	case DW_OP_shr:
	case DW_OP_shra:
	case DW_OP_xor:
	case DW_OP_eq:
	case DW_OP_ge:
	case DW_OP_gt:
	case DW_OP_le:
	case DW_OP_lt:
	case DW_OP_ne:
	case DW_OP_nop:
	case DW_OP_push_object_address:
	case DW_OP_call_frame_cfa:
	case DW_OP_form_tls_address:
	case DW_OP_GNU_push_tls_address:
	case DW_OP_stack_value:
		return NONE;
	case DW_OP_const1u:
	case DW_OP_pick:
	case DW_OP_deref_size:
	case DW_OP_xderef_size:
		return U8;
	case DW_OP_const1s:
		return S8;
	case DW_OP_const2u:
		return U16;
	case DW_OP_const2s:
	case DW_OP_skip:
	case DW_OP_bra:
	case DW_OP_call2:
		return S16;
	case DW_OP_const4u:
		return U32;
	case DW_OP_const4s:
	case DW_OP_call4:
	case DW_OP_GNU_parameter_ref:
		return S32;
	case DW_OP_const8u:
	case DW_OP_const8s:
		return U64;
	case DW_OP_constu:
	case DW_OP_plus_uconst:
	case DW_OP_regx:
	case DW_OP_piece:
	case DW_OP_convert:
	case DW_OP_GNU_convert:
	case DW_OP_reinterpret:
	case DW_OP_GNU_reinterpret:
	case DW_OP_addrx:
	case DW_OP_GNU_addr_index:
	case DW_OP_constx:
	case DW_OP_GNU_const_index:
		return ULEB;
	case DW_OP_consts:
	case DW_OP_fbreg:
		return SLEB;
	case DW_OP_bregx:
		return ULEB_SLEB;
	case DW_OP_bit_piece:
	case DW_OP_regval_type:
	case DW_OP_GNU_regval_type:
		return ULEB_ULEB;
	case DW_OP_deref_type:
	case DW_OP_GNU_deref_type:
	case DW_OP_xderef_type:
		return U8_ULEB;
	default:
		return BAD;
	}
}

static uint64_t sext(uint64_t v, unsigned bytes)
{
	unsigned shift = 64 - 8 * bytes;

	return (uint64_t)((int64_t)(v << shift) >> shift);
}

static int operands(struct sp__cfi_rd *rd, enum shape shape,
		    struct sp__cfi_op *op)
{
	static const uint8_t width[] = {
		[U8] = 1,  [S8] = 1,  [U16] = 2, [S16] = 2,
		[U32] = 4, [S32] = 4, [U64] = 8
	};
	int64_t s;

	switch (shape) {
	case NONE:
		return 0;
	case U8:
	case U16:
	case U32:
	case U64:
		return sp__cfi_rd_fixed(rd, width[shape], &op->number);
	case S8:
	case S16:
	case S32:
		if (sp__cfi_rd_fixed(rd, width[shape], &op->number))
			return -1;
		op->number = sext(op->number, width[shape]);
		return 0;
	case ADDR:
		return sp__cfi_rd_fixed(rd, rd->src->addr_size, &op->number);
	case ULEB:
		return sp__cfi_rd_uleb(rd, &op->number);
	case SLEB:
		if (sp__cfi_rd_sleb(rd, &s))
			return -1;
		op->number = (uint64_t)s;
		return 0;
	case ULEB_SLEB:
		if (sp__cfi_rd_uleb(rd, &op->number) || rd->pos >= rd->end ||
		    sp__cfi_rd_sleb(rd, &s))
			return -1;
		op->number2 = (uint64_t)s;
		return 0;
	case ULEB_ULEB:
		if (sp__cfi_rd_uleb(rd, &op->number) || rd->pos >= rd->end)
			return -1;
		return sp__cfi_rd_uleb(rd, &op->number2);
	case U8_ULEB:
		if (rd->end - rd->pos < 2)
			return -1;
		sp__cfi_rd_fixed(rd, 1, &op->number);
		return sp__cfi_rd_uleb(rd, &op->number2);
	default:
		return -1;
	}
}

int sp__cfi_ops_decode(const struct sp__cfi_src *src, size_t off, size_t len,
		       bool cfap, bool valuep, struct sp__cfi_op *ops,
		       size_t max)
{
	struct sp__cfi_rd rd = { src, off, off + len };
	size_t n = 0;

	if (len == 0)
		return 0;
	if (off > src->size || len > src->size - off)
		return -1;
	if (cfap) {
		if (n == max)
			return -E2BIG;
		ops[n++] = (struct sp__cfi_op){ .atom = DW_OP_call_frame_cfa };
	}
	while (rd.pos < rd.end) {
		struct sp__cfi_op op = { 0 };
		uint64_t atom;

		sp__cfi_rd_fixed(&rd, 1, &atom);
		op.atom = (uint8_t)atom;
		if (operands(&rd, shape_of(op.atom), &op))
			return -1;
		if (n == max)
			return -E2BIG;
		ops[n++] = op;
	}
	if (valuep) {
		if (n == max)
			return -E2BIG;
		ops[n++] = (struct sp__cfi_op){ .atom = DW_OP_stack_value };
	}
	return (int)n;
}
