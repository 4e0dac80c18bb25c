/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The --call interposer's entry points, one per called function: a
 * binding (GOT slot) of the function points at stub K, 16 bytes apart
 * from rs_call_stubs.  Stub K puts K in %r11 (scratch at a call, never an
 * argument) and jumps to rs_call_common, which saves the integer argument
 * registers (and %rax, the vector count of a variadic call, and %r10),
 * calls rs_call_filter(K, saved) - built not to touch vector registers -
 * and, for a call to record, saves %xmm0-7 too around rs_call_hit(K,
 * saved).  Both return the function's address; the stub puts every
 * register back and jumps to the function with the caller's stack as it was:
 * the function returns straight to the caller, its return value untouched,
 * with no prototype needed.
 * rs_call_common keeps a frame record (and says so in its CFI), so a
 * stack captured in rs_call_hit walks through it to the caller.
 */
/* The integer argument registers, %rax and %r10, at 0..56(%rsp): the array rs_call_*() read. */
	.macro	SAVE_GPRS
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%r10, 56(%rsp)
	.endm
	.macro	RESTORE_GPRS
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	48(%rsp), %rax
	movq	56(%rsp), %r10
	.endm

	.text
	.globl	rs_call_stubs
	.hidden	rs_call_stubs
	.type	rs_call_stubs, @function
	.balign	16
rs_call_stubs:
	.set	k, 0
	.rept	16
	.balign	16
	.cfi_startproc
	endbr64
	movl	$k, %r11d
	jmp	rs_call_common
	.cfi_endproc
	.set	k, k + 1
	.endr
	.size	rs_call_stubs, . - rs_call_stubs

	.type	rs_call_common, @function
	.balign	16
rs_call_common:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$80, %rsp
	SAVE_GPRS
	movl	%r11d, 64(%rsp)
	movl	%r11d, %edi
	movq	%rsp, %rsi
	call	rs_call_filter
	testq	%rax, %rax
	jnz	1f
	/* a call to record: the vector registers too, around C code that may use them */
	subq	$128, %rsp
	.irp	i, 0, 1, 2, 3, 4, 5, 6, 7
	movdqa	%xmm\i, \i*16(%rsp)
	.endr
	movl	192(%rsp), %edi
	leaq	128(%rsp), %rsi
	call	rs_call_hit
	.irp	i, 0, 1, 2, 3, 4, 5, 6, 7
	movdqa	\i*16(%rsp), %xmm\i
	.endr
	addq	$128, %rsp
1:
	movq	%rax, %r11
	RESTORE_GPRS
	leave
	.cfi_def_cfa %rsp, 8
	jmp	*%r11
	.cfi_endproc
	.size	rs_call_common, . - rs_call_common

	.section .note.GNU-stack, "", @progbits
