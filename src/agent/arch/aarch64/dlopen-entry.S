/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dlopen() as the agent exports it, aarch64 version of
 * arch/x86_64/dlopen-entry.S: rs_dlopen_route(file, caller) names the
 * function to go on to - the C library's dlopen, or the agent's
 * rs_dlopen_wrapped() - and this entry branches there with every register,
 * x30 included, and the caller's stack as they were, so the C library
 * still sees the program's caller (agent.c says why that matters).
 */
	.text
	.globl	dlopen
	.type	dlopen, %function
	.balign	16
dlopen:
	.cfi_startproc
	hint	#34
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	mov	x1, x30
	bl	rs_dlopen_route
	mov	x16, x0
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	br	x16
	.cfi_endproc
	.size	dlopen, . - dlopen

	.section .note.GNU-stack, "", %progbits
