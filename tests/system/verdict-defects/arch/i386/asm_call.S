/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * i386.  asm_call(f) calls f() with no frame record and no CFI: the
 * frame record above f's is its caller's, and nothing describes its own
 * frame.  asm_call_fp(f) keeps a frame record and says so in its CFI:
 * the control.  Both keep the stack 16-byte aligned at the call, as the
 * ABI wants.
 */
	.text

	.globl	asm_call
	.type	asm_call, @function
asm_call:
	push	%ebx
	sub	$8, %esp
	call	*16(%esp)
	add	$8, %esp
	pop	%ebx
	ret
	.size	asm_call, .-asm_call

	.globl	asm_call_fp
	.type	asm_call_fp, @function
asm_call_fp:
	.cfi_startproc
	push	%ebp
	.cfi_def_cfa_offset 8
	.cfi_offset %ebp, -8
	mov	%esp, %ebp
	.cfi_def_cfa_register %ebp
	sub	$8, %esp
	call	*8(%ebp)
	mov	%ebp, %esp
	pop	%ebp
	.cfi_def_cfa %esp, 4
	ret
	.cfi_endproc
	.size	asm_call_fp, .-asm_call_fp

	.section .note.GNU-stack,"",@progbits
