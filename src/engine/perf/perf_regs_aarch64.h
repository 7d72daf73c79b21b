/* SPDX-License-Identifier: MIT */
/* perf's AArch64 user registers (asm/perf_regs.h): the mask we sample. */
#ifndef SP_ENGINE_PERF_REGS_AARCH64_H
#define SP_ENGINE_PERF_REGS_AARCH64_H

/* X0-X28, X29, LR, SP, PC: perf indices 0-32, as in DWARF. */
#define SP__PERF_REGS_MASK 0x1ffffffffull
#define SP__PERF_REGS_ARCH SP_ARCH_AARCH64
#define SP__PERF_REGS_N 33

#endif /* SP_ENGINE_PERF_REGS_AARCH64_H */
