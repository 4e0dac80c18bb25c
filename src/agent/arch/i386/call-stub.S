/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The --call interposer's entry points, i386: the protocol of the x86-64
 * stubs (src/agent/arch/x86_64/call-stub.S), with the arguments where the
 * i386 System V ABI passes them, on the stack.  Stub K puts K in %eax
 * (scratch at a call, and no exported C function takes an argument in
 * it) and jumps to rs_call_common, which copies the first six argument
 * words, zero-extended, into the uint64_t array rs_call_*() read,
 * calls rs_call_filter(K, saved) and, for a call to record, rs_call_hit(K,
 * saved).  Both return the function's address; %ecx and %edx are put back
 * and the stub jumps to the function with the caller's stack as it was.
 * Floating-point arguments are on the stack too: no vector register needs
 * saving.  rs_call_common keeps a frame record (and says so in its CFI).
 *
 * Frame, from %esp after the prologue (16-byte aligned at the calls):
 *	0, 4	the two arguments of the call
 *	16..80	saved[8]: the argument words 0..5, then two zero words
 *	80	K	84 %ecx	  88 %edx
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
	endbr32
	movl	$k, %eax
	jmp	rs_call_common
	.cfi_endproc
	.set	k, k + 1
	.endr
	.size	rs_call_stubs, . - rs_call_stubs

	.type	rs_call_common, @function
	.balign	16
rs_call_common:
	.cfi_startproc
	pushl	%ebp
	.cfi_def_cfa_offset 8
	.cfi_offset %ebp, -8
	movl	%esp, %ebp
	.cfi_def_cfa_register %ebp
	subl	$104, %esp
	movl	%eax, 80(%esp)
	movl	%ecx, 84(%esp)
	movl	%edx, 88(%esp)
	.irp	i, 0, 1, 2, 3, 4, 5
	movl	8+\i*4(%ebp), %ecx
	movl	%ecx, 16+\i*8(%esp)
	movl	$0, 20+\i*8(%esp)
	.endr
	movl	$0, 64(%esp)
	movl	$0, 68(%esp)
	movl	$0, 72(%esp)
	movl	$0, 76(%esp)
	movl	%eax, 0(%esp)
	leal	16(%esp), %ecx
	movl	%ecx, 4(%esp)
	call	rs_call_filter
	testl	%eax, %eax
	jnz	1f
	/* a call to record (a callee owns its argument words: set again) */
	movl	80(%esp), %eax
	movl	%eax, 0(%esp)
	leal	16(%esp), %ecx
	movl	%ecx, 4(%esp)
	call	rs_call_hit
1:
	movl	84(%esp), %ecx
	movl	88(%esp), %edx
	leave
	.cfi_def_cfa %esp, 4
	jmp	*%eax
	.cfi_endproc
	.size	rs_call_common, . - rs_call_common

	.section .note.GNU-stack, "", @progbits
