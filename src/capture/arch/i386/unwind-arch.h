/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * i386 side of the frame-pointer unwinder: the names the generic walker
 * (unwind.c) asks for, as src/capture/arch/x86_64/unwind-arch.h describes
 * them.
 *
 * Frame record (System V i386 ABI with -fno-omit-frame-pointer):
 *
 *	fp + 4:  return address into the caller
 *	fp + 0:  the caller's frame pointer  <- %ebp
 *
 * Signal frames (arch/x86/include/asm/sigframe.h, the native i386 ones):
 * the kernel enters the handler with %esp at pretcode, the return address
 * that leads to the restorer, so the handler's CFA (fp + 8) is just above
 * it.  Two kinds, by the restorer glibc registers (SA_RESTORER):
 *
 *   kind 0, rt_sigreturn (SA_SIGINFO handlers, glibc's __restore_rt):
 *	struct rt_sigframe { pretcode; sig; pinfo; puc; siginfo_t info; ucontext_t uc; ... }
 *	the ucontext at CFA + 12 + sizeof(siginfo_t)
 *   kind 1, sigreturn (other handlers, glibc's __restore, which pops sig):
 *	struct sigframe { pretcode; sig; struct sigcontext sc; ... }
 *	the sigcontext at CFA + 4; its first 19 words are the registers in
 *	the order of a ucontext's gregs (REG_GS .. REG_SS), but there is no
 *	uc_stack: such a frame names no alternate signal stack.
 *
 * The trampolines come in two layouts, and glibc uses either:
 *
 *   the vDSO's (arch/x86/entry/vdso/vdso32/sigreturn.S), which glibc
 *   lets the kernel use by not setting SA_RESTORER:
 *	58 b8 77 00 00 00 cd 80	pop %eax; mov $__NR_sigreturn(119), %eax; int $0x80	<- __kernel_sigreturn
 *	... (padding to 16)
 *	b8 ad 00 00 00 cd 80	mov $__NR_rt_sigreturn(173), %eax; int $0x80		<- __kernel_rt_sigreturn, + 16
 *   glibc's own (sysdeps/unix/sysv/linux/i386/libc_sigaction.c), for a
 *   restorer set explicitly, with no signal CIE to find them by:
 *	b8 ad 00 00 00 cd 80 90	mov $173, %eax; int $0x80; nop			<- __restore_rt
 *	58 b8 77 00 00 00 cd 80	pop %eax; mov $119, %eax; int $0x80		<- __restore, + 8
 *
 * An object's restorer (objtab.h) is the first trampoline's address, with
 * bit 0 set for the vDSO's layout (trampolines found at odd addresses are
 * not taken): rs_arch_restorer_kind() tells the two return addresses of a
 * layout apart from it, and no other address is a trampoline.  Both
 * layouts are found by their bytes, the vDSO's in its signal FDE too.
 */
#ifndef RELSTACK_ARCH_UNWIND_H
#define RELSTACK_ARCH_UNWIND_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "capture/ucontext-stack.h"

/* Bytes of a frame record: the saved frame pointer, then the return address. */
#define RS_ARCH_FRAME_SIZE 8u
#define RS_ARCH_FRAME_NEXT 0 /* word index of the caller's frame pointer */
#define RS_ARCH_FRAME_RA 1   /* word index of the return address */

/* The record tops its frame: the CFA is the record + RS_ARCH_FRAME_SIZE. */
#define RS_ARCH_RECORD_TOPS_FRAME 1
/* A function's CFI moves the CFA to %ebp where it keeps a frame record: rows can prove records (cfi.h). */
#define RS_ARCH_FP_BY_SAVE 0
/* The return address column is no register: a return address is always on the stack. */
#define RS_ARCH_RA_IN_REGISTER 0
/* GNU as writes no .sframe for i386: 0, an SFrame ABI identifier no section has. */
#define RS_ARCH_SFRAME_ABI 0

/* Registers of CFI (DWARF register numbers of the i386 psABI). */
/* Bytes below the stack pointer a function may use without moving it (its red zone): none on i386. */
#define RS_ARCH_RED_ZONE 0u

#define RS_ARCH_DWARF_FP 5 /* %ebp */
#define RS_ARCH_DWARF_SP 4 /* %esp */
#define RS_ARCH_DWARF_RA 8 /* %eip, the return address column */

/* The frame record of the function this is expanded in. */
#define rs_arch_frame_address() ((uintptr_t)__builtin_frame_address(0))

/* A return address read from memory, as the walk looks it up: i386 signs none. */
static inline uintptr_t rs_arch_strip_ra(uintptr_t ra)
{
	return ra;
}

/* The caller guarantees RS_ARCH_SIGRETURN_LEN readable bytes at @pc. */
#define RS_ARCH_SIGRETURN_LEN 23u

static inline bool rs_arch_rt_sigreturn_at(const unsigned char *pc)
{
	static const unsigned char rt[7] = { 0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80 };

	return memcmp(pc, rt, sizeof(rt)) == 0;
}

static inline bool rs_arch_sigreturn_at(const unsigned char *pc)
{
	static const unsigned char nrt[8] = { 0x58, 0xb8, 0x77, 0x00, 0x00, 0x00, 0xcd, 0x80 };

	return memcmp(pc, nrt, sizeof(nrt)) == 0;
}

/* The object's restorer if a layout of trampolines starts at @pc, else 0. */
static inline uintptr_t rs_arch_restorer_at(const unsigned char *pc)
{
	if ((uintptr_t)pc & 1)
		return 0;
	if (rs_arch_rt_sigreturn_at(pc) && rs_arch_sigreturn_at(pc + 8))
		return (uintptr_t)pc; /* glibc's */
	if (rs_arch_sigreturn_at(pc) && rs_arch_rt_sigreturn_at(pc + 16))
		return (uintptr_t)pc | 1; /* the vDSO's */
	return 0;
}

/* The kind of signal frame @ra returns through (0: rt_sigreturn, 1: sigreturn), -1 for none. */
static inline int rs_arch_restorer_kind(uintptr_t ra, uintptr_t restorer)
{
	uintptr_t base = restorer & ~(uintptr_t)1;

	if (restorer & 1)
		return ra == base ? 1 : ra == base + 16 ? 0 : -1;
	return ra == base ? 0 : ra == base + 8 ? 1 : -1;
}

/*
 * The CFA of a signal handler whose frame record is at @fp (@next the frame
 * pointer it saved, which i386 does not need): the record tops the frame.
 */
static inline uintptr_t rs_arch_handler_cfa(uintptr_t fp, uintptr_t next)
{
	(void)next;
	return fp + RS_ARCH_FRAME_SIZE;
}

/* Where a signal frame of @kind keeps the interrupted context, given its handler's CFA. */
static inline uintptr_t rs_arch_sigframe_context(uintptr_t handler_cfa, int kind)
{
	return kind == 0 ? handler_cfa + 12 + sizeof(siginfo_t) : handler_cfa + 4;
}

/*
 * Trampolines anywhere in [text_start, text_end), for an object whose CFI
 * marks none (the C library).  A false match costs nothing a verdict
 * relies on: a frame that returns to it is a signal frame crossed, never
 * reliable unless the context found there is proven by CFI.
 */
static inline uintptr_t rs_arch_find_restorer(uintptr_t text_start, uintptr_t text_end)
{
	static const unsigned char rt[7] = { 0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80 };
	const unsigned char *p = (const unsigned char *)text_start, *end = (const unsigned char *)text_end;

	while (end - p >= (ptrdiff_t)sizeof(rt) && (p = memmem(p, (size_t)(end - p), rt, sizeof(rt)))) {
		/* rt_sigreturn first (glibc's), or 16 bytes after sigreturn (the vDSO's) */
		if (end - p >= 16 && rs_arch_restorer_at(p))
			return rs_arch_restorer_at(p);
		if (p - (const unsigned char *)text_start >= 16 && rs_arch_restorer_at(p - 16))
			return rs_arch_restorer_at(p - 16);
		p++;
	}
	return 0;
}

/*
 * The fast walk's inner loop, in C: the contract of the x86-64 version
 * (src/capture/arch/x86_64/unwind-arch.h), one frame at a time.
 */
__attribute__((always_inline)) static inline bool
rs_arch_fast_frames(uintptr_t *fp_io, uintptr_t *lo_out, uint64_t **out_io, uintptr_t *acc_io,
		    uintptr_t *r_out, const uintptr_t *start, const uintptr_t *span, const uint64_t *wdelta,
		    const unsigned char *map, uintptr_t top)
{
	const uintptr_t s = *start, n = *span;
	const uint64_t wd = *wdelta;
	uintptr_t fp = *fp_io, acc = *acc_io, x, next, lo = 0;
	uint64_t *out = *out_io;
	bool window;

	for (;;) {
		x = ((const uintptr_t *)fp)[RS_ARCH_FRAME_RA] - s;
		if (x >= n || !(map[x / 8] >> (x % 8) & 1)) {
			window = false; /* out of the range, or not proven by the record map */
			break;
		}
		*out++ = x + wd;
		next = ((const uintptr_t *)fp)[RS_ARCH_FRAME_NEXT];
		acc |= next;
		lo = fp + RS_ARCH_FRAME_SIZE;
		if (next < lo || next > top) {
			x = next;
			window = true;
			break;
		}
		fp = next;
	}
	*fp_io = fp;
	*lo_out = lo;
	*out_io = out;
	*acc_io = acc;
	*r_out = x;
	return window;
}

/* Bytes of a saved context the walker reads: a ucontext_t up to the end of its general registers. */
#define RS_ARCH_CONTEXT_READ_SIZE (offsetof(ucontext_t, uc_mcontext) + sizeof(gregset_t))

/* What the walker takes from an interrupted context. */
struct rs_arch_context {
	uintptr_t pc, sp, fp;
	uintptr_t lr; /* no link register: 0 */
	uintptr_t alt_lo, alt_hi; /* the alternate signal stack the kernel reports; 0, 0 if none */
};

static inline void rs_arch_gregs_read(const greg_t *g, struct rs_arch_context *c)
{
	c->pc = (uintptr_t)g[REG_EIP];
	c->sp = (uintptr_t)g[REG_ESP];
	c->fp = (uintptr_t)g[REG_EBP];
	c->lr = 0;
}

_Static_assert(offsetof(struct sigcontext, eip) == REG_EIP * sizeof(greg_t) &&
		       offsetof(struct sigcontext, esp) == REG_ESP * sizeof(greg_t) &&
		       offsetof(struct sigcontext, ebp) == REG_EBP * sizeof(greg_t),
	       "a sigcontext holds the registers in the order of a gregset_t");

/* The caller guarantees RS_ARCH_CONTEXT_READ_SIZE readable bytes at @uc. */
static inline void rs_arch_context_read(const void *uc, struct rs_arch_context *c)
{
	const ucontext_t *u = uc;

	rs_arch_gregs_read(u->uc_mcontext.gregs, c);
	rs_ucontext_alt_stack(u, &c->alt_lo, &c->alt_hi);
}

/* The context a signal frame of @kind keeps at @p (RS_ARCH_CONTEXT_READ_SIZE readable bytes). */
static inline void rs_arch_sigframe_read(const void *p, int kind, struct rs_arch_context *c)
{
	if (kind == 0) {
		rs_arch_context_read(p, c);
		return;
	}
	/* a struct sigcontext: the registers of a gregset_t, in its order */
	rs_arch_gregs_read(p, c);
	c->alt_lo = c->alt_hi = 0;
}

/* A signal frame of @kind at @p needs no check beyond its bounds: its place is fixed. */
static inline bool rs_arch_sigframe_ok(const void *p, int kind)
{
	(void)p;
	(void)kind;
	return true;
}

/* The inverse, for tests and snapshots that build a context: pc, sp and fp into @uc. */
static inline void rs_arch_context_set(void *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp)
{
	ucontext_t *u = uc;

	u->uc_mcontext.gregs[REG_EIP] = (greg_t)pc;
	u->uc_mcontext.gregs[REG_ESP] = (greg_t)sp;
	u->uc_mcontext.gregs[REG_EBP] = (greg_t)fp;
}

#endif
