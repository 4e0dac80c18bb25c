/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rs_test_restorer, a signal-return trampoline of the test's own, laid out
 * as the vDSO's __kernel_rt_sigreturn: a signal CIE ('S') whose FDE starts
 * one instruction early (an unwinder looks up a return address - 1), then
 * mov x8, #__NR_rt_sigreturn; svc #0.  test_sigframe.c hands it to the
 * kernel as SA_RESTORER, so that the handler returns through an object
 * the object table knows even where no vDSO is mapped (qemu-user).
 */
	.text
	.balign	16
	.cfi_startproc
	.cfi_signal_frame
	nop
	.globl	rs_test_restorer
	.type	rs_test_restorer, %function
rs_test_restorer:
	mov	x8, #139
	svc	#0
	.cfi_endproc
	.size	rs_test_restorer, . - rs_test_restorer

	.section .note.GNU-stack, "", %progbits
