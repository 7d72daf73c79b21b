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
 *   +-- rules[]         packed rule sets, deduplicated: libc's 28k rows
 *   |                   use under 400 distinct ones
 *   +-- extras[]        full rule sets (signal frames, register and value
 *   |                   rules, unusual offsets), indexed by rules.extra
 *   +-- exprs[], ops[]  DWARF expressions (PLT, __restore_rt), deduplicated
 *
 *   row:   | pc u32 | rules u32 |
 *
 * A rule set (struct sp__cfi_rules) is the architecture's: its register
 * file's shape of an ordinary frame, packed (arch/<arch>_regs.h), or
 * SP__ROW_EXTRA and the index of a full rule set in extras[]. Every
 * architecture's starts with | cfa_off i32 | cfa_reg u8 | flags u8 |,
 * the fields the generic code reads, and has an @extra index. On x86-64
 * 16 bytes: CFA = reg + off, RA and RBP at CFA-relative slots, RBX and
 * R12-R15 at CFA - 8n. That is the shape of every function compiled by
 * GCC or Clang, so over 99.9% of rows in libc, libstdc++ and python are
 * simple (research/feasibility.md §3); only trampolines and hand-written
 * assembly need extras.
 *
 * Everything that knows a register lives under arch/: the packed rule
 * set, which registers a row tracks, the step; meson picks the files of
 * the host architecture (SP__ARCH_REGS_H, SP__ARCH_STEP_H and
 * arch/<arch>.c, arch/<arch>_cfi.c). This file and the rest of src/unwind
 * name no register.
 */

#define SP__CFA_EXPR 0xfe /* cfa_off is an index into exprs[] */
#define SP__CFA_NONE 0xff /* no CFI covers this range */

#define SP__RULES_NONE 0 /* rules[0]: the gap rule set, cfa_reg NONE */

/* Rule set flags (the frame pointer is RBP, X29). */
#define SP__ROW_RA_UNDEF 0x01 /* outermost frame (e.g. _start) */
#define SP__ROW_FP_UNDEF 0x02
#define SP__ROW_FP_SAVED 0x04 /* saved at the rule set's FP slot */
#define SP__ROW_SIGNAL 0x08   /* signal trampoline: caller pc is exact */
#define SP__ROW_EXTRA 0x10    /* register rules are extras[extra] */

#include SP__ARCH_REGS_H

struct sp__cfi_row {
	uint32_t pc;	/* offset from table base */
	uint32_t rules; /* index into rules[] */
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

/* Rules for every register; @mask has a bit for each non-SAME rule. */
struct sp__cfi_extra {
	uint64_t mask;
	struct sp__cfi_rule rule[SP__ARCH_NREGS];
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
 * step_rules.c: what every architecture's step does alike. sp__step_fail
 * fills @fail and returns -1; sp__step_add_off is base + off, false on
 * overflow; sp__step_read_at reads the slot at CFA + off (fails with
 * @fallback). A callee-saved register's slot (step_rules.c):
 * sp__step_read_saved reads the slot at @addr: 0, SP__SLOT_RESTORED when
 * it lies below the copy (popped already: the register keeps its value,
 * @out is left alone) or -1 past the copy's end; sp__step_read_fp_at
 * reads the frame pointer's slot at CFA + off the same way but fails the
 * step past the end (the frame-pointer fallback would only find older
 * bytes there). sp__step_rule_value is the value of a generic rule: 0,
 * SP__SLOT_RESTORED, SP__RULE_UNKNOWN (register unknown) or -1 (fail).
 */
#define SP__SLOT_RESTORED 1
#define SP__RULE_UNKNOWN 2

int sp__step_fail(struct sp__step_fail *fail, enum sp_sample_error error,
		  enum sp_unwind_fallback fallback);
/* Inline: every CFI step computes its CFA with it. */
static inline bool sp__step_add_off(uint64_t base, int64_t off, uint64_t *out)
{
	uint64_t r = base + (uint64_t)off;

	if ((off >= 0 && r < base) || (off < 0 && r > base))
		return false;
	*out = r;
	return true;
}
int sp__step_read_at(const struct sp__stack *stack, uint64_t cfa, int64_t off,
		     uint64_t *out, struct sp__step_fail *fail,
		     enum sp_unwind_fallback fallback);
int sp__step_read_saved(const struct sp__stack *stack, uint64_t addr,
			uint64_t *out);
int sp__step_read_fp_at(const struct sp__stack *stack, uint64_t cfa,
			int64_t off, uint64_t *out, struct sp__step_fail *fail);
int sp__step_rule_value(const struct sp__cfi_table *table,
			const struct sp__cfi_rule *rule,
			const struct sp__stack *stack,
			const struct sp_regs *cur, uint64_t cfa, uint64_t *out);

/*
 * cfi_build.c, for arch/<arch>_cfi.c: whether a rule's CFA offset is a
 * whole number of 8-byte slots that fits an int8_t; and the packed saves
 * field (sp__cfi_saved_reg(k), SP__SAVE_BITS each) of @x, false when a
 * saved register is not at CFA - 8n for n in 1..SP__SAVE_MAX.
 */
bool sp__cfi_small_off(const struct sp__cfi_rule *rule);
bool sp__cfi_pack_saves(const struct sp__cfi_extra *x, uint64_t *saves);

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

/*
 * arch/<arch>_cfi.c: what the table builder asks of the architecture.
 * sp__arch_tracked_regs: the registers an ordinary (non-signal) row
 * records, the return address column first; a signal row records all
 * SP__ARCH_NREGS. sp__arch_rule_default: the rule of @reg when the CFI
 * leaves it undefined (libdw reports unspecified registers so), in place.
 * sp__arch_pack: packs the full rules @x into @row's simple form (flags
 * besides SP__ROW_SIGNAL clear on entry); false when they do not fit.
 */
extern const uint8_t sp__arch_tracked_regs[];
extern const size_t sp__arch_ntracked;
void sp__arch_rule_default(unsigned reg, struct sp__cfi_rule *rule);
bool sp__arch_pack(const struct sp__cfi_extra *x, struct sp__cfi_rules *row);

/*
 * Code the architecture describes itself where the ELF's CFI has no
 * rows (AArch64 PLT stubs, which ld emits without CFI): [start, end)
 * unwinds with @rules (a simple rule set). They never overlap an FDE in
 * a linked file; where they would, the row that starts first runs to
 * its end. sp__arch_synth appends them to @out (struct sp__cfi_synth, svma
 * order) and returns 0 or -ENOMEM. Caller holds the image lock.
 */
struct sp__cfi_synth {
	uint64_t start, end;
	struct sp__cfi_rules rules;
};

int sp__arch_synth(const struct sp__mem *mem, Elf *elf, struct sp__vec *out);

#include SP__ARCH_STEP_H

#endif /* SP_UNWIND_INTERNAL_H */
