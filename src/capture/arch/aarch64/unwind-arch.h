/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * aarch64 side of the frame-pointer unwinder: the same names as
 * src/capture/arch/x86_64/unwind-arch.h, for the AAPCS64.
 *
 * Frame record (AAPCS64 6.2.3; GCC keeps one in every non-leaf function
 * unless told -fomit-frame-pointer):
 *
 *	x29 + 8:  x30, the return address into the caller
 *	x29 + 0:  the caller's x29
 *
 * Unlike x86-64's, the record sits at the bottom of its function's frame
 * (`stp x29, x30, [sp, #-N]!; mov x29, sp`), so the CFA is x29 + N, with
 * N the function's: only its CFI row knows (RS_ARCH_RECORD_TOPS_FRAME).
 * And the CFA stays on the stack pointer (the prologue's CFI saves x29
 * and x30 but never moves the CFA to x29), so no row says where x29
 * points: no row is a frame-record row (cfi.h, rs_cfi_row_is_record()),
 * and frames are walked by their CFI (RS_ARCH_FP_BY_SAVE).
 *
 * Return addresses may carry a pointer-authentication code in their upper
 * bits (code built with -mbranch-protection=pac-ret signs x30 before
 * saving it): every return address the walk reads from memory is
 * stripped (rs_arch_strip_ra()) before it is looked up.
 *
 * A leaf function keeps no frame record: its return address stays in x30.
 * Its CFI row says so (the return-address column, x30, has no saved
 * rule: RS_ARCH_RA_IN_REGISTER), and the walk then takes x30 from the
 * interrupted context (struct rs_arch_context's lr) - only for an
 * interrupted instruction, whose registers are known.
 *
 * Signal frame (arch/arm64/kernel/signal.c, get_sigframe() and
 * setup_return()): below the interrupted stack the kernel writes
 *
 *	struct rt_sigframe { siginfo_t info; struct ucontext uc; }  <- handler's sp
 *	struct frame_record { x29, x30 of the interrupted code }     <- handler's x29
 *
 * the record immediately after the ucontext when the saved state fits
 * the ucontext's reserved area (it always does without SVE or SME state
 * larger than 4 KiB), and enters the handler with x29 pointing at the
 * record and x30 at the signal-return trampoline, the vDSO's
 * __kernel_rt_sigreturn (or the SA_RESTORER the C library gives).  So
 * the handler's own frame record holds {&record, trampoline}: the
 * handler's CFA is the record's address - sizeof(struct rt_sigframe)
 * (rs_arch_handler_cfa()), the ucontext at CFA + sizeof(siginfo_t),
 * checked by the record agreeing with the ucontext's x29 and x30
 * (rs_arch_sigframe_ok()).
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
#define RS_ARCH_FRAME_SIZE 16u
#define RS_ARCH_FRAME_NEXT 0 /* word index of the caller's frame pointer */
#define RS_ARCH_FRAME_RA 1   /* word index of the return address */

/* The record is at the bottom of its frame: CFA = record + N, N per function. */
#define RS_ARCH_RECORD_TOPS_FRAME 0
/* A frame record shows in CFI only as x29 saved, the CFA on sp: no row proves a record (tests' premise). */
#define RS_ARCH_FP_BY_SAVE 1
/* The return address column is a register (x30): unsaved, it is still there. */
#define RS_ARCH_RA_IN_REGISTER 1

/* The SFrame ABI/arch identifier of this CPU's .sframe sections (aarch64 little-endian). */
#define RS_ARCH_SFRAME_ABI 2

/* Registers of CFI (DWARF register numbers, AADWARF64). */
/* Bytes below the stack pointer a function may use without moving it (its red zone): none on Linux arm64. */
#define RS_ARCH_RED_ZONE 0u

#define RS_ARCH_DWARF_FP 29 /* x29 */
#define RS_ARCH_DWARF_SP 31 /* sp */
#define RS_ARCH_DWARF_RA 30 /* x30, the return address column */

/* The frame record of the function this is expanded in. */
#define rs_arch_frame_address() ((uintptr_t)__builtin_frame_address(0))

/*
 * User addresses are below 2^48 (the kernel gives a 52-bit address only to
 * a mapping that asks for one); a pointer-authentication code lives above.
 */
#define RS_ARCH_VA_BITS 48
#define RS_ARCH_RA_MASK ((UINT64_C(1) << RS_ARCH_VA_BITS) - 1)

/* A return address read from memory, without its authentication code. */
static inline uintptr_t rs_arch_strip_ra(uintptr_t ra)
{
	return ra & RS_ARCH_RA_MASK;
}

/*
 * The signal-return trampoline, the same two instructions in the vDSO's
 * __kernel_rt_sigreturn (arch/arm64/kernel/vdso/sigreturn.S), in glibc's and
 * musl's restorers:
 *	d2801168	mov	x8, #__NR_rt_sigreturn (139)
 *	d4000001	svc	#0
 * The caller guarantees RS_ARCH_SIGRETURN_LEN readable bytes at @pc.
 */
#define RS_ARCH_SIGRETURN_LEN 8u

static inline bool rs_arch_is_sigreturn(const unsigned char *pc)
{
	uint64_t w;

	memcpy(&w, pc, sizeof(w));
	return w == 0xd4000001d2801168ull;
}

/*
 * The fast walk's inner loop (contract: x86_64/unwind-arch.h), in C: the
 * compiler keeps ra - start and the word apart here, and a load pair
 * reads the record.
 */
__attribute__((always_inline)) static inline bool
rs_arch_fast_frames(uintptr_t *fp_io, uintptr_t *lo_out, uint64_t **out_io, uintptr_t *acc_io,
		    uintptr_t *r_out, const uintptr_t *start, const uintptr_t *span, const uint64_t *wdelta,
		    const unsigned char *map, uintptr_t top)
{
	uintptr_t fp = *fp_io, acc = *acc_io, x, next, lo = *lo_out;
	const uintptr_t s = *start, n = *span;
	const uint64_t wd = *wdelta;
	uint64_t *out = *out_io;

	for (;;) {
		x = rs_arch_strip_ra(((const uintptr_t *)fp)[RS_ARCH_FRAME_RA]) - s;
		if (x >= n || !(map[x / 8] >> (x % 8) & 1)) {
			/* out of the range, or not proven by the record map */
			*fp_io = fp;
			*lo_out = lo;
			*out_io = out;
			*acc_io = acc;
			*r_out = x;
			return false;
		}
		*out++ = x + wd;
		next = ((const uintptr_t *)fp)[RS_ARCH_FRAME_NEXT];
		acc |= next;
		lo = fp + RS_ARCH_FRAME_SIZE;
		if (next < lo || next > top) {
			*fp_io = fp;
			*lo_out = lo;
			*out_io = out;
			*acc_io = acc;
			*r_out = next;
			return true;
		}
		fp = next;
	}
}

/* Bytes of the kernel's ucontext (glibc's ucontext_t is laid out the same). */
_Static_assert(sizeof(ucontext_t) == 4560, "arm64 struct ucontext");
_Static_assert(offsetof(ucontext_t, uc_mcontext) == 176, "arm64 uc_mcontext");

/*
 * The object's restorer (objtab.h) if its trampoline starts at @pc, else
 * 0: an arch-defined value, here the trampoline's address (found by
 * fpcheck.c through its object's signal CIE, as the vDSO's
 * __kernel_rt_sigreturn has).
 */
static inline uintptr_t rs_arch_restorer_at(const unsigned char *pc)
{
	return rs_arch_is_sigreturn(pc) ? (uintptr_t)pc : 0;
}

/*
 * The kind of signal frame a return address @ra into an object with
 * @restorer returns through, or -1 when it is no signal trampoline.
 * aarch64 has one kind, rt_sigreturn; the handler's x30 is the
 * trampoline's first instruction itself.
 */
static inline int rs_arch_restorer_kind(uintptr_t ra, uintptr_t restorer)
{
	return ra == restorer ? 0 : -1;
}

/*
 * The CFA of a signal handler whose frame record is at @fp, @next the
 * frame pointer it saved: the kernel's frame record, right after the
 * signal frame, which starts at the handler's CFA.
 */
static inline uintptr_t rs_arch_handler_cfa(uintptr_t fp, uintptr_t next)
{
	(void)fp;
	return next - sizeof(siginfo_t) - sizeof(ucontext_t);
}

/* Where a signal frame of @kind keeps the interrupted context, given its handler's CFA. */
static inline uintptr_t rs_arch_sigframe_context(uintptr_t handler_cfa, int kind)
{
	(void)kind;
	return handler_cfa + sizeof(siginfo_t);
}

/* The restorers fpcheck.c finds without CFI: none, the vDSO's has its signal CIE. */
static inline uintptr_t rs_arch_find_restorer(uintptr_t text_start, uintptr_t text_end)
{
	(void)text_start;
	(void)text_end;
	return 0;
}

/*
 * Bytes of a signal frame the walker reads from its ucontext on: the
 * ucontext and the kernel's frame record after it.
 */
#define RS_ARCH_CONTEXT_READ_SIZE (sizeof(ucontext_t) + RS_ARCH_FRAME_SIZE)

/* What the walker takes from an interrupted context. */
struct rs_arch_context {
	uintptr_t pc, sp, fp;
	uintptr_t lr; /* x30: a leaf's return address */
	uintptr_t alt_lo, alt_hi; /* the alternate signal stack the kernel reports; 0, 0 if none */
};

/* The caller guarantees sizeof(ucontext_t) readable bytes at @uc. */
static inline void rs_arch_context_read(const void *uc, struct rs_arch_context *c)
{
	const ucontext_t *u = uc;

	c->pc = (uintptr_t)u->uc_mcontext.pc;
	c->sp = (uintptr_t)u->uc_mcontext.sp;
	c->fp = (uintptr_t)u->uc_mcontext.regs[29];
	c->lr = rs_arch_strip_ra((uintptr_t)u->uc_mcontext.regs[30]);
	rs_ucontext_alt_stack(u, &c->alt_lo, &c->alt_hi);
}

/* The inverse, for tests and snapshots that build a context: pc, sp and fp into @uc. */
static inline void rs_arch_context_set(void *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp)
{
	ucontext_t *u = uc;

	u->uc_mcontext.pc = pc;
	u->uc_mcontext.sp = sp;
	u->uc_mcontext.regs[29] = fp;
}

/* The context a signal frame of @kind keeps at @p (RS_ARCH_CONTEXT_READ_SIZE readable bytes). */
static inline void rs_arch_sigframe_read(const void *p, int kind, struct rs_arch_context *c)
{
	(void)kind;
	rs_arch_context_read(p, c);
}

/*
 * Is the ucontext at @uc (RS_ARCH_CONTEXT_READ_SIZE readable bytes) the
 * one of a signal frame of @kind?  The kernel's frame record after it
 * holds the interrupted x29 and x30, as the ucontext does; a frame laid
 * out otherwise (SVE or SME state spilled past the ucontext) fails.
 */
static inline bool rs_arch_sigframe_ok(const void *uc, int kind)
{
	const ucontext_t *u = uc;

	(void)kind;
	uint64_t rec[2];

	memcpy(rec, (const char *)uc + sizeof(ucontext_t), sizeof(rec));
	return rec[0] == u->uc_mcontext.regs[29] && rec[1] == u->uc_mcontext.regs[30];
}

#endif
