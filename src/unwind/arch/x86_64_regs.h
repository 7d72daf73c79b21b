/* SPDX-License-Identifier: MIT */
/* x86-64 registers of the unwinder: numbering, masks, packed rule sets. */
#ifndef SP_UNWIND_ARCH_X86_64_REGS_H
#define SP_UNWIND_ARCH_X86_64_REGS_H

/*
 * Included by unwind_internal.h (meson names it in SP__ARCH_REGS_H)
 * before the table types. Registers are in DWARF numbering (enum
 * sp_x86_64_reg of the public header); the return address column is RIP.
 */

#define SP__ARCH SP_ARCH_X86_64
#define SP__ARCH_NREGS SP_X86_64_NREGS
#define SP__ARCH_PC SP_X86_64_RIP
#define SP__ARCH_SP SP_X86_64_RSP
#define SP__ARCH_FP SP_X86_64_RBP

/* The names the x86-64 step has for the frame-pointer flags. */
#define SP__ROW_RBP_UNDEF SP__ROW_FP_UNDEF
#define SP__ROW_RBP_SAVED SP__ROW_FP_SAVED

/* saves: field k (bits 6k..6k+5) is the slot of sp__cfi_saved_reg(k). */
#define SP__SAVE_BITS 6
#define SP__SAVE_MAX 63
#define SP__SAVE_NREGS 5

/* RBX, R12, R13, R14, R15 in DWARF numbering. */
static inline unsigned sp__cfi_saved_reg(unsigned k)
{
	return k == 0 ? 3 : 11 + k;
}

/*
 * A rule set, 16 bytes:
 *
 *   | cfa_off i32 | cfa_reg u8 | flags u8 | ra i8 | rbp i8 |
 *   | saves u32 (RBX, R12..R15: 6 bits each) | extra u32 |
 *
 * A simple rule set (no SP__ROW_EXTRA) says: CFA = reg + cfa_off (or
 * expression number cfa_off when cfa_reg == SP__CFA_EXPR); RA saved at
 * CFA + 8 * ra or undefined (outermost frame); RBP same, undefined or
 * saved at CFA + 8 * rbp; RBX and R12-R15 saved at CFA - 8 * n for their
 * 6-bit field n of saves, or unchanged when n is 0 (arch/x86_64_cfi.c
 * packs them).
 */
struct sp__cfi_rules {
	int32_t cfa_off;
	uint8_t cfa_reg;
	uint8_t flags;
	int8_t ra; /* 8-byte units from the CFA */
	int8_t rbp;
	uint32_t saves;
	uint32_t extra;
};

#endif /* SP_UNWIND_ARCH_X86_64_REGS_H */
