/* SPDX-License-Identifier: MIT */
/* AArch64: register capture, a frame whose CFA is X19 + 32, a restorer. */

/*
 * The AArch64 twins of self_asm.S (see there); the CFA register and the
 * clobbered one are X19 instead of RBX.
 *
 * sp_test_capture(struct sp_regs *out) stores the caller's registers as
 * they are at the return address: PC = X30 = the return address, SP (a
 * leaf: the caller's), X19-X29 (DWARF numbering, 8 bytes per register).
 *
 * sp_test_sigreturn is a signal restorer with the CFI of the kernel's
 * vDSO __kernel_rt_sigreturn (arch/arm64/kernel/vdso/sigreturn.S): a
 * signal frame whose CFA is X29 and that names only X29 and X30, with a
 * nop before the entry so that the return address - 1 is inside.
 */
	.text
	.globl	sp_test_capture
	.type	sp_test_capture, %function
sp_test_capture:
	.cfi_startproc
	stp	x19, x20, [x0, #152]
	stp	x21, x22, [x0, #168]
	stp	x23, x24, [x0, #184]
	stp	x25, x26, [x0, #200]
	stp	x27, x28, [x0, #216]
	stp	x29, x30, [x0, #232]
	mov	x1, sp
	str	x1, [x0, #248]
	str	x30, [x0, #256]
	ret
	.cfi_endproc
	.size	sp_test_capture, .-sp_test_capture

	.globl	sp_test_cfa_rbx
	.type	sp_test_cfa_rbx, %function
sp_test_cfa_rbx:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	str	x19, [sp, #16]
	.cfi_offset 19, -16
	mov	x19, sp
	.cfi_def_cfa_register 19
	sub	x9, sp, #200
	and	x9, x9, #-16
	mov	sp, x9
	mov	x9, x0
	mov	x0, x1
	blr	x9
	mov	sp, x19
	.cfi_def_cfa_register sp
	ldr	x19, [sp, #16]
	.cfi_restore 19
	ldp	x29, x30, [sp], #32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	sp_test_cfa_rbx, .-sp_test_cfa_rbx

	.globl	sp_test_clobber_rbx
	.type	sp_test_clobber_rbx, %function
sp_test_clobber_rbx:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	str	x19, [sp, #16]
	.cfi_offset 19, -16
	movz	x19, #0x5a5a
	movk	x19, #0x5a5a, lsl #16
	movk	x19, #0x5a5a, lsl #32
	movk	x19, #0x5a5a, lsl #48
	mov	x9, x0
	mov	x0, x1
	blr	x9
	ldr	x19, [sp, #16]
	.cfi_restore 19
	ldp	x29, x30, [sp], #32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	sp_test_clobber_rbx, .-sp_test_clobber_rbx

	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa x29, 0
	.cfi_offset x29, 0 * 8
	.cfi_offset x30, 1 * 8
	nop
	.globl	sp_test_sigreturn
	.type	sp_test_sigreturn, %function
sp_test_sigreturn:
	mov	x8, #139	/* __NR_rt_sigreturn */
	svc	#0
	.cfi_endproc
	.size	sp_test_sigreturn, .-sp_test_sigreturn

	.section .note.GNU-stack,"",%progbits
