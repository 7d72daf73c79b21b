/* SPDX-License-Identifier: MIT */
/* Internal interfaces of src/unwind: compact CFI tables, expressions, step. */
#ifndef SP_UNWIND_INTERNAL_H
#define SP_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <libelf.h>
#include <stackpulse/error.h>
#include <stackpulse/unwind.h>

#include "image.h"
#include "mem.h"
#include "vec.h"

/*
 * A CFI table is built once per ELF image (cfi_build.c, libdw under the
 * image lock) and then only read (cfi_table.c), by any number of threads:
 *
 *   struct sp__cfi_table
 *   +-- base, span      rows cover svma [base, base + span)
 *   +-- rows[]          16 bytes each, sorted by pc, contiguous: a row
 *   |                   runs to the next row's pc; a gap without CFI is a
 *   |                   row with cfa_reg == SP__CFA_NONE
 *   +-- page_first[]    first row index per (pc >> page_shift): a lookup
 *   |                   binary-searches only the rows of one page
 *   +-- extras[]        full rule sets (signal frames, saved RBX/R12-R15,
 *   |                   unusual offsets), deduplicated, indexed by row.extra
 *   +-- exprs[], ops[]  DWARF expressions (PLT, __restore_rt), deduplicated
 *
 *   row: | pc u32 | cfa_off i32 | cfa_reg u8 | flags u8 | ra i8 | rbp i8 |
 *        | extra u32 |
 *
 * A simple row (no SP__ROW_EXTRA) says: CFA = reg + cfa_off (or expression
 * number cfa_off when cfa_reg == SP__CFA_EXPR); RA saved at CFA + 8 * ra
 * or undefined (outermost frame); RBP same, undefined or saved at CFA + 8 *
 * rbp; every other callee-saved register keeps its value. Over 98% of rows
 * in libc, libstdc++ and python are simple (research/feasibility.md §3).
 */

#define SP__CFA_EXPR 0xfe /* cfa_off is an index into exprs[] */
#define SP__CFA_NONE 0xff /* no CFI covers this range */

/* Row flags. */
#define SP__ROW_RA_UNDEF 0x01 /* outermost frame (e.g. _start) */
#define SP__ROW_RBP_UNDEF 0x02
#define SP__ROW_RBP_SAVED 0x04 /* RBP saved at CFA + 8 * rbp */
#define SP__ROW_SIGNAL 0x08    /* signal trampoline: caller pc is exact */
#define SP__ROW_EXTRA 0x10     /* register rules are extras[extra] */

struct sp__cfi_row {
	uint32_t pc; /* offset from table base */
	int32_t cfa_off;
	uint8_t cfa_reg;
	uint8_t flags;
	int8_t ra; /* 8-byte units from the CFA */
	int8_t rbp;
	uint32_t extra;
};

enum sp__rule_kind {
	SP__RULE_SAME = 0,     /* keeps the callee's value */
	SP__RULE_UNDEF = 1,    /* unknown (RA: outermost frame) */
	SP__RULE_AT_CFA = 2,   /* saved at CFA + off */
	SP__RULE_VAL_CFA = 3,  /* value is CFA + off */
	SP__RULE_REG = 4,      /* value of register reg */
	SP__RULE_AT_EXPR = 5,  /* saved at address exprs[off] */
	SP__RULE_VAL_EXPR = 6, /* value is exprs[off] */
};

struct sp__cfi_rule {
	int32_t off;
	uint8_t kind; /* enum sp__rule_kind */
	uint8_t reg;
	uint16_t pad;
};

/* Rules for registers 0..16; @mask has a bit for each non-SAME rule. */
struct sp__cfi_extra {
	uint32_t mask;
	struct sp__cfi_rule rule[SP_X86_64_NREGS];
};

/* A DWARF operation as libdw decodes it (Dwarf_Op without the offset). */
struct sp__cfi_op {
	uint64_t number;
	uint64_t number2;
	uint8_t atom;
	uint8_t pad[7];
};

struct sp__cfi_expr {
	uint32_t first; /* index into ops[] */
	uint32_t nops;
};

struct sp__cfi_table {
	uint64_t base;
	uint64_t span;
	struct sp__cfi_row *rows;
	size_t nrows;
	uint32_t *page_first; /* npages + 1 entries */
	size_t npages;
	unsigned page_shift;
	struct sp__cfi_extra *extras;
	size_t nextras;
	struct sp__cfi_expr *exprs;
	size_t nexprs;
	struct sp__cfi_op *ops;
	size_t nops;
	size_t bytes; /* memory held by the table */
	struct sp__mem mem;
};

/*
 * Builds the table of @elf from .eh_frame and .debug_frame. The caller
 * holds the image lock (libelf/libdw are not thread-safe); every libdw
 * handle is released before returning. An ELF without CFI gives a table
 * with no rows.
 * Returns 0, SP_ECORRUPT, -ENOMEM, -E2BIG (code spans more than 4 GiB).
 */
int sp__cfi_table_build(const struct sp__mem *mem, Elf *elf,
			struct sp__cfi_table **out);
void sp__cfi_table_free(struct sp__cfi_table *table);

/*
 * cfi_fde.c: the CFI sections of @elf (NULL when absent), and the svma of
 * every FDE start in one of them appended to @starts (uint64_t); @bytes
 * grows by the section size. Caller holds the image lock. 0 or -ENOMEM.
 */
int sp__cfi_find_sections(Elf *elf, Elf_Scn **eh, Elf_Scn **debug);
int sp__cfi_fde_starts(const struct sp__mem *mem, Elf *elf, Elf_Scn *scn,
		       bool eh, struct sp__vec *starts, size_t *bytes);
/* Sorts and deduplicates FDE starts. */
void sp__cfi_sort_starts(struct sp__vec *starts);

/* The row covering @svma, or NULL (outside the table or in a gap). */
const struct sp__cfi_row *sp__cfi_table_find(const struct sp__cfi_table *table,
					     uint64_t svma);

/*
 * Builds page_first[] for the rows of @table (sorted by pc, the last one a
 * SP__CFA_NONE row at pc == span). Returns 0 or -ENOMEM.
 */
int sp__cfi_table_index(struct sp__cfi_table *table);

/* The copied stack bytes [addr, addr + len). */
struct sp__stack {
	const uint8_t *data;
	size_t len;
	uint64_t addr;
};

/*
 * Reads 8 bytes at @addr from the copy. Returns 0 or -1 (outside). The
 * stack holds the target's native byte order, which is the host's: the
 * unwinder runs on the machine it samples.
 */
static inline int sp__stack_read(const struct sp__stack *stack, uint64_t addr,
				 uint64_t *out)
{
	uint64_t off = addr - stack->addr;

	if (addr < stack->addr || stack->len < 8 || off > stack->len - 8)
		return -1;
	memcpy(out, stack->data + off, 8);
	return 0;
}

/*
 * Evaluates expression @expr of @table with the registers @regs of the
 * frame being unwound. When @cfa_valid, @cfa is what DW_OP_call_frame_cfa
 * pushes. A trailing DW_OP_stack_value is ignored (the caller knows from
 * the rule whether the result is a value or an address). Memory reads
 * come only from @stack. Bounded: at most 64 operations, 16 stack slots.
 * Returns 0, -ERANGE (a read outside the stack copy), -EINVAL (anything
 * else: unknown op, missing register, underflow, division by zero).
 */
int sp__cfi_expr_eval(const struct sp__cfi_table *table, uint32_t expr,
		      const struct sp_regs *regs, const struct sp__stack *stack,
		      bool cfa_valid, uint64_t cfa, uint64_t *out);

/*
 * Result of one unwind step: 0 = stepped, SP__STEP_END = complete stack
 * (outermost frame), or a failure that names the sample error kind and,
 * for CFI steps, the fallback reason to count if frame pointers succeed.
 */
#define SP__STEP_END 1

struct sp__step_fail {
	enum sp_sample_error error;
	enum sp_unwind_fallback fallback;
};

/*
 * arch/<arch>.c: registers and the step.
 * sp__arch_check_regs: 0 or the error kind (+1) that rejects the sample.
 * sp__arch_step_cfi: applies @row to @cur, giving the caller's registers
 * in @next; returns 0, SP__STEP_END or -1 with @fail filled.
 * sp__arch_step_fp: the frame-pointer step, same returns.
 */
int sp__arch_check_regs(const struct sp_regs *regs,
			enum sp_sample_error *error);
uint64_t sp__arch_pc(const struct sp_regs *regs);
uint64_t sp__arch_sp(const struct sp_regs *regs);
int sp__arch_step_cfi(const struct sp__cfi_table *table,
		      const struct sp__cfi_row *row,
		      const struct sp__stack *stack, const struct sp_regs *cur,
		      struct sp_regs *next, struct sp__step_fail *fail);
int sp__arch_step_fp(const struct sp__stack *stack, const struct sp_regs *cur,
		     struct sp_regs *next, struct sp__step_fail *fail);

#endif /* SP_UNWIND_INTERNAL_H */
