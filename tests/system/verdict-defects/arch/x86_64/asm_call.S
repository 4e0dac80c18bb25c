/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * x86-64.  asm_call(f) calls f() with no frame record and no CFI: the
 * frame record above f's is its caller's, and nothing describes its own
 * frame.  asm_call_fp(f) keeps a frame record and says so in its CFI:
 * the control.
 */
	.text

	.globl	asm_call
	.type	asm_call, @function
asm_call:
	push	%rbx
	call	*%rdi
	pop	%rbx
	ret
	.size	asm_call, .-asm_call

	.globl	asm_call_fp
	.type	asm_call_fp, @function
asm_call_fp:
	.cfi_startproc
	push	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	call	*%rdi
	pop	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	asm_call_fp, .-asm_call_fp

	.section .note.GNU-stack,"",@progbits
