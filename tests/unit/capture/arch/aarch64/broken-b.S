/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * broken_b(fn) for test_unwind_check.c, aarch64: saves x29 and x30 as a
 * callee-saved pair and points x29 at two words of its own making above
 * them (a saved frame pointer of 0 and the program's outermost return
 * address, _start + 8: past _start's first instruction, a landing pad
 * that comes before its CFI marks the end), then calls fn.  Its CFI is honest: the record it
 * describes is at the bottom of the frame, not where x29 points.
 */
	.text
	.globl	broken_b
	.type	broken_b, %function
broken_b:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	add	x29, sp, #16		/* not a frame record: two words of its own */
	str	xzr, [sp, #16]
	adrp	x1, _start
	add	x1, x1, :lo12:_start
	add	x1, x1, #8
	str	x1, [sp, #24]
	blr	x0
	ldp	x29, x30, [sp], #32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	broken_b, .-broken_b

	.section .note.GNU-stack, "", %progbits
