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
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%r10, 56(%rsp)
	movl	%r11d, 64(%rsp)
	movl	%r11d, %edi
	movq	%rsp, %rsi
	call	rs_call_filter
	testq	%rax, %rax
	jnz	1f
	/* a call to record: the vector registers too, around C code that may use them */
	subq	$128, %rsp
	movdqa	%xmm0, 0(%rsp)
	movdqa	%xmm1, 16(%rsp)
	movdqa	%xmm2, 32(%rsp)
	movdqa	%xmm3, 48(%rsp)
	movdqa	%xmm4, 64(%rsp)
	movdqa	%xmm5, 80(%rsp)
	movdqa	%xmm6, 96(%rsp)
	movdqa	%xmm7, 112(%rsp)
	movl	192(%rsp), %edi
	leaq	128(%rsp), %rsi
	call	rs_call_hit
	movdqa	0(%rsp), %xmm0
	movdqa	16(%rsp), %xmm1
	movdqa	32(%rsp), %xmm2
	movdqa	48(%rsp), %xmm3
	movdqa	64(%rsp), %xmm4
	movdqa	80(%rsp), %xmm5
	movdqa	96(%rsp), %xmm6
	movdqa	112(%rsp), %xmm7
	addq	$128, %rsp
1:
	movq	%rax, %r11
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	48(%rsp), %rax
	movq	56(%rsp), %r10
	leave
	.cfi_def_cfa %rsp, 8
	jmp	*%r11
	.cfi_endproc
	.size	rs_call_common, . - rs_call_common

	.section .note.GNU-stack, "", @progbits
