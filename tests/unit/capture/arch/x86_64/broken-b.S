/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * broken_b(fn) for test_unwind_check.c: saves %rbp as any callee-saved
 * register and points it at two words of its own making - a saved frame
 * pointer of 0 and the program's outermost return address (_start + 1) -
 * then calls fn.  Its CFI is honest.
 */
	.text
	.globl	broken_b
	.type	broken_b, @function
broken_b:
	.cfi_startproc
	push	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -16
	sub	$16, %rsp
	.cfi_adjust_cfa_offset 16
	mov	%rsp, %rbp		/* not a frame record: two words of its own */
	movq	$0, (%rsp)
	lea	_start(%rip), %rax
	add	$1, %rax
	mov	%rax, 8(%rsp)
	call	*%rdi
	add	$16, %rsp
	.cfi_adjust_cfa_offset -16
	pop	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size	broken_b, . - broken_b

	.section .note.GNU-stack, "", @progbits
