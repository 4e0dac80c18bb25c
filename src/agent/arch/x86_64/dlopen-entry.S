/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dlopen() as the agent exports it: rs_dlopen_route(file, caller) names
 * the function to go on to - the C library's dlopen, or the agent's
 * rs_dlopen_wrapped() - and this entry jumps there with every register
 * and the caller's stack as they were, so the C library still sees the
 * program's caller (agent.c says why that matters).
 */
	.text
	.globl	dlopen
	.type	dlopen, @function
	.balign	16
dlopen:
	.cfi_startproc
	endbr64
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	pushq	%rdi
	pushq	%rsi
	movq	8(%rbp), %rsi
	call	rs_dlopen_route
	movq	%rax, %r11
	popq	%rsi
	popq	%rdi
	leave
	.cfi_def_cfa %rsp, 8
	jmp	*%r11
	.cfi_endproc
	.size	dlopen, . - dlopen

	.section .note.GNU-stack, "", @progbits
