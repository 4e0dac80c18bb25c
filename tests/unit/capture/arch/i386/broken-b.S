/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * broken_b(fn) for test_unwind_check.c, i386: saves %ebp as any
 * callee-saved register and points it at two words of its own making - a
 * saved frame pointer of 0 and the program's outermost return address
 * (_start + 1) - then calls fn.  Its CFI is honest.
 */
	.text
	.globl	broken_b
	.type	broken_b, @function
broken_b:
	.cfi_startproc
	push	%ebp
	.cfi_adjust_cfa_offset 4
	.cfi_offset %ebp, -8
	sub	$8, %esp
	.cfi_adjust_cfa_offset 8
	mov	%esp, %ebp		/* not a frame record: two words of its own */
	movl	$0, (%esp)
	call	0f
0:	pop	%ecx
	addl	$_GLOBAL_OFFSET_TABLE_ + (. - 0b), %ecx
	leal	_start@GOTOFF(%ecx), %eax
	add	$1, %eax
	mov	%eax, 4(%esp)
	mov	16(%esp), %eax		/* fn, the first argument (CFA + 0) */
	call	*%eax
	add	$8, %esp
	.cfi_adjust_cfa_offset -8
	pop	%ebp
	.cfi_adjust_cfa_offset -4
	.cfi_restore %ebp
	ret
	.cfi_endproc
	.size	broken_b, . - broken_b

	.section .note.GNU-stack, "", @progbits
