/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * x86-64 side of the frame-pointer unwinder.
 *
 * What the generic walker (unwind.c) needs to know about a CPU, and
 * nothing else: where a frame record is and what it holds, how to
 * recognise the kernel's signal-return trampoline, and where a signal
 * frame keeps the interrupted registers.  Another architecture provides
 * the same names in src/capture/arch/<cpu>/unwind-arch.h.
 *
 * Frame record (System V ABI with -fno-omit-frame-pointer):
 *
 *	fp + 8:  return address into the caller
 *	fp + 0:  the caller's frame pointer  <- %rbp
 *
 * Signal frame (struct rt_sigframe, arch/x86/include/asm/sigframe.h): the
 * kernel enters the handler with %rsp pointing at pretcode, the return
 * address that leads to the restorer; the ucontext follows it.  The
 * handler's prologue pushes %rbp just below, so from the handler's frame
 * record the ucontext is at fp + 16.
 */
#ifndef RELSTACK_ARCH_UNWIND_H
#define RELSTACK_ARCH_UNWIND_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

/* Bytes of a frame record: the saved frame pointer, then the return address. */
#define RS_ARCH_FRAME_SIZE 16u
#define RS_ARCH_FRAME_NEXT 0 /* word index of the caller's frame pointer */
#define RS_ARCH_FRAME_RA 1   /* word index of the return address */

/* The frame pointer register of CFI (DWARF register number). */
#define RS_ARCH_DWARF_FP 6 /* %rbp */

/* The frame record of the function this is expanded in. */
#define rs_arch_frame_address() ((uintptr_t)__builtin_frame_address(0))

/*
 * glibc's __restore_rt (sysdeps/unix/sysv/linux/x86_64/libc_sigaction.c):
 *	48 c7 c0 0f 00 00 00	mov $__NR_rt_sigreturn(15), %rax
 *	0f 05			syscall
 * The caller guarantees RS_ARCH_SIGRETURN_LEN readable bytes at @pc.
 */
#define RS_ARCH_SIGRETURN_LEN 9u

static inline bool rs_arch_is_sigreturn(const unsigned char *pc)
{
	uint64_t w;

	memcpy(&w, pc, sizeof(w));
	return w == 0x0f0000000fc0c748ull && pc[8] == 0x05;
}

/* The ucontext of a signal frame, given the frame record of its handler. */
static inline uintptr_t rs_arch_sigframe_context(uintptr_t handler_fp)
{
	return handler_fp + 16;
}

/* Bytes of a ucontext_t the walker reads: up to the end of the general registers. */
#define RS_ARCH_CONTEXT_READ_SIZE (offsetof(ucontext_t, uc_mcontext) + sizeof(gregset_t))

/* What the walker takes from an interrupted context. */
struct rs_arch_context {
	uintptr_t pc, sp, fp;
	uintptr_t alt_lo, alt_hi; /* the alternate signal stack the kernel reports; 0, 0 if none */
};

/* The caller guarantees RS_ARCH_CONTEXT_READ_SIZE readable bytes at @uc. */
static inline void rs_arch_context_read(const void *uc, struct rs_arch_context *c)
{
	const ucontext_t *u = uc;

	c->pc = (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
	c->sp = (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
	c->fp = (uintptr_t)u->uc_mcontext.gregs[REG_RBP];
	/* setup_rt_frame() saves the thread's sigaltstack settings in uc_stack */
	if (!(u->uc_stack.ss_flags & SS_DISABLE) && u->uc_stack.ss_size) {
		c->alt_lo = (uintptr_t)u->uc_stack.ss_sp;
		c->alt_hi = c->alt_lo + u->uc_stack.ss_size;
		if (c->alt_hi < c->alt_lo)
			c->alt_lo = c->alt_hi = 0;
	} else {
		c->alt_lo = c->alt_hi = 0;
	}
}

#endif
