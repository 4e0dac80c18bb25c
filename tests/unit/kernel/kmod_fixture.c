// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A kernel module's code for tests, laid out exactly: .text with
 * kfix_mod_a (4 bytes) and kfix_mod_b (13 bytes at 4), .text.unlikely
 * with kfix_mod_cold (8 bytes at 0).  Bytes, not instructions: it is
 * only read.
 */
__asm__(".text\n"
	".globl kfix_mod_a\n.type kfix_mod_a, %function\nkfix_mod_a:\n.fill 4, 1, 0\n.size kfix_mod_a, 4\n"
	".globl kfix_mod_b\n.type kfix_mod_b, %function\nkfix_mod_b:\n.fill 13, 1, 0\n.size kfix_mod_b, 13\n"
	".section .text.unlikely, \"ax\", %progbits\n"
	".globl kfix_mod_cold\n.type kfix_mod_cold, %function\nkfix_mod_cold:\n.fill 8, 1, 0\n.size kfix_mod_cold, 8\n"
	".section .note.GNU-stack, \"\", %progbits\n");
