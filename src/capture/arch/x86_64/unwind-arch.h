/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * x86-64 side of the frame-pointer unwinder.
 *
 * What the generic walker (unwind.c) needs to know about a CPU, and
 * nothing else: where a frame record is and what it holds, how to
 * recognise the kernel's signal-return trampoline, where a signal frame
 * keeps the interrupted registers, and the fast walk's inner loop
 * (rs_arch_fast_frames(), which may be plain C elsewhere).  Another
 * architecture provides the same names in
 * src/capture/arch/<cpu>/unwind-arch.h.
 *
 * Frame record (System V ABI with -fno-omit-frame-pointer):
 *
 *	fp + 8:  return address into the caller
 *	fp + 0:  the caller's frame pointer  <- %rbp
 *
 * Signal frame (struct rt_sigframe, arch/x86/include/asm/sigframe.h): the
 * kernel enters the handler with %rsp pointing at pretcode, the return
 * address that leads to the restorer; the ucontext follows it, at the
 * handler's CFA (fp + 16 from its frame record).
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

/* The record tops its frame: the CFA is the record + RS_ARCH_FRAME_SIZE. */
#define RS_ARCH_RECORD_TOPS_FRAME 1
/* A function's CFI moves the CFA to %rbp where it keeps a frame record: rows can prove records (cfi.h). */
#define RS_ARCH_FP_BY_SAVE 0
/* The return address column is no register: a return address is always on the stack. */
#define RS_ARCH_RA_IN_REGISTER 0

/* The SFrame ABI/arch identifier of this CPU's .sframe sections (x86-64 little-endian). */
#define RS_ARCH_SFRAME_ABI 3

/* Bytes below the stack pointer a function may use without moving it (its red zone): the System V ABI: 128 bytes below %rsp that signal delivery leaves alone. */
#define RS_ARCH_RED_ZONE 128u

/* Registers of CFI (DWARF register numbers). */
#define RS_ARCH_DWARF_FP 6  /* %rbp */
#define RS_ARCH_DWARF_SP 7  /* %rsp */
#define RS_ARCH_DWARF_RA 16 /* the return address column */

/* The frame record of the function this is expanded in. */
#define rs_arch_frame_address() ((uintptr_t)__builtin_frame_address(0))

/* A return address read from memory, as the walk looks it up: x86-64 signs none. */
static inline uintptr_t rs_arch_strip_ra(uintptr_t ra)
{
	return ra;
}

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

/*
 * The object's restorer (objtab.h) if its trampolines start at @pc, else
 * 0: an arch-defined value, here the trampoline's address.
 */
static inline uintptr_t rs_arch_restorer_at(const unsigned char *pc)
{
	return rs_arch_is_sigreturn(pc) ? (uintptr_t)pc : 0;
}

/*
 * The fast walk's inner loop (unwind.c, walk_fast()): frames whose return
 * address lies in [*start, *start + *span) and is proven by the record
 * map @map (cfi.h: bit ra - start set: the row of the call is a
 * frame-record row, so the caller's frame record is the frame pointer
 * this record saved), each written as ra - *start + *wdelta, for as long
 * as the frame pointers stay in the window.  *fp is a frame the caller
 * checked (inside the window, its record readable).  Per frame: x = ra -
 * start is the range check, bit x of the map the proof, and x + wdelta
 * the word; the next frame pointer must lie in [fp + 16, top], and is
 * OR-ed into *acc for an alignment check after the loop.
 *
 * Returns false when a return address left the range or is not proven:
 * the frame at *fp, whose return address is *r + *start, was not
 * written.  Returns true when a frame pointer left the window: *r is it,
 * *fp the last frame written, *lo = *fp + 16.  *out is past the last word
 * written either way.  The caller bounds top so that the frames in the
 * window fit in the array.
 *
 * In assembly because compilers fold x + wdelta back into ra + delta and
 * keep both ra and x alive, a copy per frame.  Unrolled four times, the
 * frame pointer alternating between two registers (the other one holds x
 * and then the next frame pointer), so that no register is copied, and
 * the chain from one frame pointer to the next is one load
 * (bench/capture.sh prints the instructions a frame costs as
 * capture_relstack_d32_d128_ir_frame).  The range and the deltas are
 * memory operands (the thread's cache): they take no register.  The carry
 * flag tells the exits apart: bt leaves the proof in it.
 */

/* One frame: fp in FP, its ra - start (in the range, proven) in X; then the roles swap. */
#define RS_ARCH_FAST_FRAME(FP, X, off, window_exit) \
	"	add	%[wdelta], %[" X "]\n" \
	"	mov	%[" X "], " off "(%[out])\n" \
	"	mov	(%[" FP "]), %[" X "]\n" \
	"	or	%[" X "], %[acc]\n" \
	"	lea	16(%[" FP "]), %[lo]\n" \
	"	cmp	%[lo], %[" X "]\n" \
	"	jb	" window_exit "\n" \
	"	cmp	%[top], %[" X "]\n" \
	"	ja	" window_exit "\n" \
	"	mov	8(%[" X "]), %[" FP "]\n" \
	"	sub	%[start], %[" FP "]\n" \
	"	cmp	%[span], %[" FP "]\n"

/* The proof of the frame whose ra - start is in X: CF = its map bit; clear: to @exit (CF clear). */
#define RS_ARCH_FAST_PROOF(X, exit) \
	"	bt	%[" X "], (%[map])\n" \
	"	jnc	" exit "\n"

__attribute__((always_inline)) static inline bool
rs_arch_fast_frames(uintptr_t *fp_io, uintptr_t *lo_out, uint64_t **out_io, uintptr_t *acc_io,
		    uintptr_t *r_out, const uintptr_t *start, const uintptr_t *span, const uint64_t *wdelta,
		    const unsigned char *map, uintptr_t top)
{
	uintptr_t a = *fp_io, acc = *acc_io, b, lo;
	uint64_t *out = *out_io;
	bool window;

	__asm__(
		"	mov	8(%[a]), %[b]\n"
		"	sub	%[start], %[b]\n"
		"	cmp	%[span], %[b]\n"
		"	jae	9f\n"			/* CF clear: the range */
		RS_ARCH_FAST_PROOF("b", "9f")
		"	jmp	1f\n"
		/* a return address left the range or is not proven: CF clear (out + 8k does not carry) */
		"21:	xchg	%[a], %[b]\n"
		"	add	$8, %[out]\n"
		"	jmp	9f\n"
		"22:	add	$16, %[out]\n"
		"	jmp	9f\n"
		"23:	xchg	%[a], %[b]\n"
		"	add	$24, %[out]\n"
		"	jmp	9f\n"
		"24:	add	$32, %[out]\n"
		"	jmp	9f\n"
		/* a frame pointer left the window: CF set */
		"31:	add	$8, %[out]\n"
		"	jmp	30f\n"
		"32:	xchg	%[a], %[b]\n"
		"	add	$16, %[out]\n"
		"	jmp	30f\n"
		"33:	add	$24, %[out]\n"
		"	jmp	30f\n"
		"34:	xchg	%[a], %[b]\n"
		"	add	$32, %[out]\n"
		"30:	stc\n"
		"	jmp	9f\n"
		"1:\n"
		RS_ARCH_FAST_FRAME("a", "b", "0", "31b")
		"	jae	21b\n"
		RS_ARCH_FAST_PROOF("a", "21b")
		RS_ARCH_FAST_FRAME("b", "a", "8", "32b")
		"	jae	22b\n"
		RS_ARCH_FAST_PROOF("b", "22b")
		RS_ARCH_FAST_FRAME("a", "b", "16", "33b")
		"	jae	23b\n"
		RS_ARCH_FAST_PROOF("a", "23b")
		RS_ARCH_FAST_FRAME("b", "a", "24", "34b")
		"	jae	24b\n"
		RS_ARCH_FAST_PROOF("b", "24b")
		"	add	$32, %[out]\n"
		"	jmp	1b\n"
		"9:\n"
		: [a] "+r"(a), [b] "=&r"(b), [lo] "=&r"(lo), [out] "+r"(out), [acc] "+r"(acc), "=@ccc"(window)
		: [start] "m"(*start), [span] "m"(*span), [wdelta] "m"(*wdelta), [map] "r"(map), [top] "r"(top)
		: "memory");
	*fp_io = a;
	*lo_out = lo;
	*out_io = out;
	*acc_io = acc;
	*r_out = b;
	return window;
}

/*
 * The kind of signal frame a return address @ra into an object with
 * @restorer (rs_arch_restorer_at()) returns through, or -1 when it is no
 * signal trampoline.  x86-64 has one kind, rt_sigreturn.
 */
static inline int rs_arch_restorer_kind(uintptr_t ra, uintptr_t restorer)
{
	return ra == restorer ? 0 : -1;
}

/*
 * The CFA of a signal handler whose frame record is at @fp (@next the frame
 * pointer it saved, which x86-64 does not need): the record tops the frame.
 */
static inline uintptr_t rs_arch_handler_cfa(uintptr_t fp, uintptr_t next)
{
	(void)next;
	return fp + RS_ARCH_FRAME_SIZE;
}

/* Where a signal frame of @kind keeps the interrupted context, given its handler's CFA. */
static inline uintptr_t rs_arch_sigframe_context(uintptr_t handler_cfa, int kind)
{
	return handler_cfa;
}

/* The restorers fpcheck.c finds without CFI: none, the C library's has its signal CIE. */
static inline uintptr_t rs_arch_find_restorer(uintptr_t text_start, uintptr_t text_end)
{
	return 0;
}

/* Bytes of a ucontext_t the walker reads: up to the end of the general registers. */
#define RS_ARCH_CONTEXT_READ_SIZE (offsetof(ucontext_t, uc_mcontext) + sizeof(gregset_t))

/* What the walker takes from an interrupted context. */
struct rs_arch_context {
	uintptr_t pc, sp, fp;
	uintptr_t lr; /* no link register: 0 */
	uintptr_t alt_lo, alt_hi; /* the alternate signal stack the kernel reports; 0, 0 if none */
};

/* The caller guarantees RS_ARCH_CONTEXT_READ_SIZE readable bytes at @uc. */
static inline void rs_arch_context_read(const void *uc, struct rs_arch_context *c)
{
	const ucontext_t *u = uc;

	c->pc = (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
	c->sp = (uintptr_t)u->uc_mcontext.gregs[REG_RSP];
	c->fp = (uintptr_t)u->uc_mcontext.gregs[REG_RBP];
	c->lr = 0;
	rs_ucontext_alt_stack(u, &c->alt_lo, &c->alt_hi);
}

/* The context a signal frame of @kind keeps at @p (RS_ARCH_CONTEXT_READ_SIZE readable bytes). */
static inline void rs_arch_sigframe_read(const void *p, int kind, struct rs_arch_context *c)
{
	rs_arch_context_read(p, c);
}

/* The inverse, for tests and snapshots that build a context: pc, sp and fp into @uc. */
static inline void rs_arch_context_set(void *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp)
{
	ucontext_t *u = uc;

	u->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
	u->uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
	u->uc_mcontext.gregs[REG_RBP] = (greg_t)fp;
}

/* A signal frame of @kind at @p needs no check beyond its bounds: its place is fixed. */
static inline bool rs_arch_sigframe_ok(const void *p, int kind)
{
	(void)p;
	(void)kind;
	return true;
}

#endif
