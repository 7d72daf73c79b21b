/* SPDX-License-Identifier: MIT */
/* AArch64 registers of the unwinder: numbering, masks, packed rule sets. */
#ifndef SP_UNWIND_ARCH_AARCH64_REGS_H
#define SP_UNWIND_ARCH_AARCH64_REGS_H

/*
 * Included by unwind_internal.h (meson names it in SP__ARCH_REGS_H)
 * before the table types. Registers are in DWARF numbering (enum
 * sp_aarch64_reg of the public header): X0-X30, SP, PC. The return
 * address column of CFI is X30, the link register: a rule set's RA is
 * the rule of X30, and the caller's pc is that value, with the pointer
 * authentication code stripped (sp__a64_strip).
 */

#define SP__ARCH SP_ARCH_AARCH64
#define SP__ARCH_NREGS SP_AARCH64_NREGS
#define SP__ARCH_PC SP_AARCH64_PC
#define SP__ARCH_SP SP_AARCH64_SP
#define SP__ARCH_FP SP_AARCH64_X29
#define SP__A64_LR SP_AARCH64_X30

/*
 * Rule set flag of AArch64 only: the return address is still in the
 * link register (the CIE's X30 rule, same value: a leaf, a prologue
 * before it saves X30, a PLT stub).
 */
#define SP__ROW_RA_LR 0x20

/* saves: field k (bits 6k..6k+5) is the slot of sp__cfi_saved_reg(k). */
#define SP__SAVE_BITS 6
#define SP__SAVE_MAX 63
#define SP__SAVE_NREGS 10

/* X19-X28, the callee-saved registers besides X29 and X30. */
static inline unsigned sp__cfi_saved_reg(unsigned k)
{
	return 19 + k;
}

/*
 * Return addresses keep only the bits of a user address: a pointer
 * authentication code (-mbranch-protection=standard, PAC) lives in the
 * bits above the virtual address size. Linux gives user space 48 bits
 * (52 only to a mapping placed there on request), so bits 63..48 go.
 */
#define SP__A64_VA_MASK ((1ull << 48) - 1)

static inline uint64_t sp__a64_strip(uint64_t ra)
{
	return ra & SP__A64_VA_MASK;
}

/*
 * A rule set, 24 bytes:
 *
 *   | cfa_off i32 | cfa_reg u8 | flags u8 | ra i8 | fp i8 |
 *   | saves u64 (X19..X28: 6 bits each) | extra u32 | pad u32 (0) |
 *
 * A simple rule set (no SP__ROW_EXTRA) says: CFA = reg + cfa_off (or
 * expression number cfa_off); X30 (the return address) saved at CFA +
 * 8 * ra, still in X30 (SP__ROW_RA_LR) or undefined (outermost frame);
 * X29 unchanged, undefined or saved at CFA + 8 * fp; X19-X28 saved at
 * CFA - 8 * n for their 6-bit field n of saves, or unchanged when n is 0
 * (arch/aarch64_cfi.c packs them). GCC keeps callee-saved registers up
 * to 32 slots below the CFA in Debian's libc, so 6 bits fit them all.
 */
struct sp__cfi_rules {
	int32_t cfa_off;
	uint8_t cfa_reg;
	uint8_t flags;
	int8_t ra; /* 8-byte units from the CFA */
	int8_t fp;
	uint64_t saves;
	uint32_t extra;
	uint32_t pad;
};

#endif /* SP_UNWIND_ARCH_AARCH64_REGS_H */
