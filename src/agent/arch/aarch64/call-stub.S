/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The --call interposer's entry points, aarch64 version of
 * arch/x86_64/call-stub.S: a binding (GOT slot) of the function points at
 * stub K, 16 bytes apart from rs_call_stubs.  Stub K puts K in w17 (IP1:
 * scratch between a call and its callee, the PLT entry's own register)
 * and branches to rs_call_common, which saves the integer argument
 * registers x0-x7 and x8 (the indirect result address), calls
 * rs_call_filter(K, saved) - built not to touch vector registers - and,
 * for a call to record, saves q0-q7 too around rs_call_hit(K, saved).
 * Both return the function's address; rs_call_common puts every register
 * back, x30 (the caller's return address) included, and branches to the
 * function through x16: the function returns straight to the caller, its
 * return value untouched, with no prototype needed.
 * rs_call_common keeps a frame record (and says so in its CFI), so a
 * stack captured in rs_call_hit walks through it to the caller.  Each
 * stub starts with `bti c` (a hint: a no-op without BTI), since the PLT
 * reaches it by an indirect branch.
 */
	.text
	.globl	rs_call_stubs
	.hidden	rs_call_stubs
	.type	rs_call_stubs, %function
	.balign	16
rs_call_stubs:
	.set	k, 0
	.rept	16
	.balign	16
	.cfi_startproc
	hint	#34
	mov	w17, #k
	b	rs_call_common
	.cfi_endproc
	.set	k, k + 1
	.endr
	.size	rs_call_stubs, . - rs_call_stubs

/* The frame: the record at 0, x0-x8 at 16..80 (the array rs_call_*() read), K at 88. */
	.type	rs_call_common, %function
	.balign	16
rs_call_common:
	.cfi_startproc
	stp	x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset 29, -96
	.cfi_offset 30, -88
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	stp	x2, x3, [sp, #32]
	stp	x4, x5, [sp, #48]
	stp	x6, x7, [sp, #64]
	stp	x8, x17, [sp, #80]
	mov	w0, w17
	add	x1, sp, #16
	bl	rs_call_filter
	cbnz	x0, 1f
	/* a call to record: the vector registers too, around C code that may use them */
	sub	sp, sp, #128
	stp	q0, q1, [sp, #0]
	stp	q2, q3, [sp, #32]
	stp	q4, q5, [sp, #64]
	stp	q6, q7, [sp, #96]
	ldr	w0, [x29, #88]
	add	x1, x29, #16
	bl	rs_call_hit
	ldp	q0, q1, [sp, #0]
	ldp	q2, q3, [sp, #32]
	ldp	q4, q5, [sp, #64]
	ldp	q6, q7, [sp, #96]
	add	sp, sp, #128
1:
	mov	x16, x0
	ldp	x0, x1, [sp, #16]
	ldp	x2, x3, [sp, #32]
	ldp	x4, x5, [sp, #48]
	ldp	x6, x7, [sp, #64]
	ldr	x8, [sp, #80]
	ldp	x29, x30, [sp], #96
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	br	x16
	.cfi_endproc
	.size	rs_call_common, . - rs_call_common

	.section .note.GNU-stack, "", %progbits
