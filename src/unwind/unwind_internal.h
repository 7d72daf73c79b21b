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
 *   +-- rows[]          8 bytes each, sorted by pc, contiguous: a row
 *   |                   runs to the next row's pc and names its rule set;
 *   |                   a gap without CFI uses rule set 0 (SP__RULES_NONE)
 *   +-- page_first[]    per (pc >> page_shift): the row covering the
 *   |                   page's first byte, so a lookup scans a few rows
 *   +-- rules[]         16-byte rule sets, deduplicated: libc's 28k rows
 *   |                   use under 400 distinct ones
 *   +-- extras[]        full rule sets (signal frames, register and value
 *   |                   rules, unusual offsets), indexed by rules.extra
 *   +-- exprs[], ops[]  DWARF expressions (PLT, __restore_rt), deduplicated
 *
 *   row:   | pc u32 | rules u32 |
 *   rules: | cfa_off i32 | cfa_reg u8 | flags u8 | ra i8 | rbp i8 |
 *          | saves u32 (RBX, R12..R15: 6 bits each) | extra u32 |
 *
 * A simple rule set (no SP__ROW_EXTRA) says: CFA = reg + cfa_off (or
 * expression number cfa_off when cfa_reg == SP__CFA_EXPR); RA saved at
 * CFA + 8 * ra or undefined (outermost frame); RBP same, undefined or
 * saved at CFA + 8 * rbp; RBX and R12-R15 saved at CFA - 8 * n for their
 * 6-bit field n of saves, or unchanged when n is 0. That is the shape of
 * every function compiled by GCC or Clang, so over 99.9% of rows in libc,
 * libstdc++ and python are simple (research/feasibility.md §3); only
 * trampolines and hand-written assembly need extras.
 */

#define SP__CFA_EXPR 0xfe /* cfa_off is an index into exprs[] */
#define SP__CFA_NONE 0xff /* no CFI covers this range */

#define SP__RULES_NONE 0 /* rules[0]: the gap rule set, cfa_reg NONE */

/* Rule set flags. */
#define SP__ROW_RA_UNDEF 0x01 /* outermost frame (e.g. _start) */
#define SP__ROW_RBP_UNDEF 0x02
#define SP__ROW_RBP_SAVED 0x04 /* RBP saved at CFA + 8 * rbp */
#define SP__ROW_SIGNAL 0x08    /* signal trampoline: caller pc is exact */
#define SP__ROW_EXTRA 0x10     /* register rules are extras[extra] */

/* saves: field k (bits 6k..6k+5) is the slot of sp__cfi_saved_reg(k). */
#define SP__SAVE_BITS 6
#define SP__SAVE_MAX 63
#define SP__SAVE_NREGS 5

/* RBX, R12, R13, R14, R15 in DWARF numbering. */
static inline unsigned sp__cfi_saved_reg(unsigned k)
{
	return k == 0 ? 3 : 11 + k;
}

struct sp__cfi_row {
	uint32_t pc;	/* offset from table base */
	uint32_t rules; /* index into rules[] */
};

struct sp__cfi_rules {
	int32_t cfa_off;
	uint8_t cfa_reg;
	uint8_t flags;
	int8_t ra; /* 8-byte units from the CFA */
	int8_t rbp;
	uint32_t saves;
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
	struct sp__cfi_rules *rules;
	size_t nrules;
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

/*
 * Builds page_first[] for the rows of @table (sorted by pc, the first at
 * pc 0, the last a SP__RULES_NONE row at pc == span). Returns 0 or
 * -ENOMEM.
 */
int sp__cfi_table_index(struct sp__cfi_table *table);

/* Index of the row covering table offset @off < span (cfi_table.c). */
size_t sp__cfi_table_search(const struct sp__cfi_table *table, uint64_t off,
			    size_t lo, size_t hi);

/*
 * The rule set index (into rules[]) of table offset @off < span. Inline:
 * it runs once per unwound frame. page_first[p] is the row that covers
 * the page's first byte, so the answer lies between it and the next
 * page's; libc has about two rows per page, so a short forward scan
 * usually ends it and long pages fall back to a binary search.
 */
static inline uint32_t sp__cfi_table_rules_at(const struct sp__cfi_table *table,
					      uint64_t off)
{
	const struct sp__cfi_row *rows = table->rows;
	size_t i, hi;

	i = table->page_first[off >> table->page_shift];
	hi = table->page_first[(off >> table->page_shift) + 1];
	if (hi - i > 4)
		i = sp__cfi_table_search(table, off, i, hi);
	/* rows[hi].pc <= the next page's start; rows[nrows - 1].pc == span. */
	while (i < hi && rows[i + 1].pc <= off)
		i++;
	return rows[i].rules;
}

/* The rule set covering @svma, or NULL (outside the table or in a gap). */
static inline const struct sp__cfi_rules *
sp__cfi_table_find(const struct sp__cfi_table *table, uint64_t svma)
{
	uint64_t off = svma - table->base;
	uint32_t rules;

	if (svma < table->base || off >= table->span)
		return NULL;
	rules = sp__cfi_table_rules_at(table, off);
	return rules == SP__RULES_NONE ? NULL : &table->rules[rules];
}

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
 * sp__arch_step_cfi: applies rule set @row to @cur, giving the caller's
 * registers in @next; returns 0, SP__STEP_END or -1 with @fail filled.
 * sp__arch_step_simple (arch/<arch>_step.h, inline): the common case of
 * sp__arch_step_cfi, in place.
 * sp__arch_step_fp: the frame-pointer step, same returns.
 */
int sp__arch_check_regs(const struct sp_regs *regs,
			enum sp_sample_error *error);
int sp__arch_step_cfi(const struct sp__cfi_table *table,
		      const struct sp__cfi_rules *row,
		      const struct sp__stack *stack, const struct sp_regs *cur,
		      struct sp_regs *next, struct sp__step_fail *fail);
int sp__arch_step_fp(const struct sp__stack *stack, const struct sp_regs *cur,
		     struct sp_regs *next, struct sp__step_fail *fail);

#include "arch/x86_64_step.h"

#endif /* SP_UNWIND_INTERNAL_H */
