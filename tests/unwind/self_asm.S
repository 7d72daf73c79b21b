/* SPDX-License-Identifier: MIT */
/* Register capture and a frame whose CFA is RBX + 16, for the self-unwind tests. */

/*
 * sp_test_capture(struct sp_regs *out) stores the caller's registers as
 * they are at the return address: RIP = return address, RSP = RSP after
 * the return, and the callee-saved RBX, RBP, R12-R15 (DWARF numbering,
 * 8 bytes per register).
 *
 * sp_test_cfa_rbx(void (*fn)(void *), void *arg) calls fn(arg) with its
 * CFA defined through RBX (as ld.so's _dl_runtime_resolve does) and RSP
 * moved away, so an unwinder that assumes RSP/RBP-based CFAs fails.
 *
 * sp_test_clobber_rbx(void (*fn)(void *), void *arg) saves RBX, puts a
 * garbage value in it and calls fn(arg): below it, RBX is not the value
 * an sp_test_cfa_rbx frame above needs, which only this frame's save
 * slot holds (the unwinder defers applying such saves).
 */
	.text
	.globl	sp_test_capture
	.type	sp_test_capture, @function
sp_test_capture:
	.cfi_startproc
	movq	%rbx, 24(%rdi)
	movq	%rbp, 48(%rdi)
	leaq	8(%rsp), %rax
	movq	%rax, 56(%rdi)
	movq	%r12, 96(%rdi)
	movq	%r13, 104(%rdi)
	movq	%r14, 112(%rdi)
	movq	%r15, 120(%rdi)
	movq	(%rsp), %rax
	movq	%rax, 128(%rdi)
	ret
	.cfi_endproc
	.size	sp_test_capture, .-sp_test_capture

	.globl	sp_test_cfa_rbx
	.type	sp_test_cfa_rbx, @function
sp_test_cfa_rbx:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	movq	%rsp, %rbx
	.cfi_def_cfa_register rbx
	subq	$200, %rsp
	andq	$-16, %rsp
	movq	%rdi, %rax
	movq	%rsi, %rdi
	call	*%rax
	movq	%rbx, %rsp
	.cfi_def_cfa_register rsp
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	ret
	.cfi_endproc
	.size	sp_test_cfa_rbx, .-sp_test_cfa_rbx

	.globl	sp_test_clobber_rbx
	.type	sp_test_clobber_rbx, @function
sp_test_clobber_rbx:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	movabsq	$0x5a5a5a5a5a5a5a5a, %rbx
	movq	%rdi, %rax
	movq	%rsi, %rdi
	call	*%rax
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	ret
	.cfi_endproc
	.size	sp_test_clobber_rbx, .-sp_test_clobber_rbx

	.section .note.GNU-stack,"",@progbits
