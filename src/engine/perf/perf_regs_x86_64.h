/* SPDX-License-Identifier: MIT */
/* perf's x86-64 user registers (asm/perf_regs.h): the mask we sample. */
#ifndef SP_ENGINE_PERF_REGS_X86_64_H
#define SP_ENGINE_PERF_REGS_X86_64_H

/* AX..IP, then R8-R15: every GPR, without FLAGS, CS, SS and DS..GS. */
#define SP__PERF_REGS_MASK 0xff0fffull
#define SP__PERF_REGS_ARCH SP_ARCH_X86_64
#define SP__PERF_REGS_N 24

#endif /* SP_ENGINE_PERF_REGS_X86_64_H */
