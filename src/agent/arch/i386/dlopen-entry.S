/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dlopen() as the agent exports it, i386: rs_dlopen_route(file, caller)
 * names the function to go on to, as on x86-64
 * (src/agent/arch/x86_64/dlopen-entry.S), and this entry jumps there with
 * the caller's stack as it was.  dlopen's arguments are on the stack, so
 * only the scratch registers are touched (%eax carries the target).
 */
	.text
	.globl	dlopen
	.type	dlopen, @function
	.balign	16
dlopen:
	.cfi_startproc
	endbr32
	pushl	%ebp
	.cfi_def_cfa_offset 8
	.cfi_offset %ebp, -8
	movl	%esp, %ebp
	.cfi_def_cfa_register %ebp
	subl	$24, %esp
	movl	8(%ebp), %eax
	movl	%eax, 0(%esp)
	movl	4(%ebp), %eax
	movl	%eax, 4(%esp)
	call	rs_dlopen_route
	leave
	.cfi_def_cfa %esp, 4
	jmp	*%eax
	.cfi_endproc
	.size	dlopen, . - dlopen

	.section .note.GNU-stack, "", @progbits
