/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tail_caller() for unwind_gdb_target.c: a tail call, its frame never on the stack. */
	.text
	.globl	tail_caller
	.type	tail_caller, @function
tail_caller:
	.cfi_startproc
	jmp	tail_callee
	.cfi_endproc
	.size	tail_caller, .-tail_caller

	.section .note.GNU-stack, "", @progbits
