/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * relstack/unwind.h - capture a stack, with a verdict.
 *
 * The unwinder walks frame pointers from the calling function, or from an
 * interrupted context (a signal handler's ucontext_t), and each object's
 * call-frame information (compiled into a table when the object is
 * loaded) where frame pointers are not kept, and returns entry
 * words plus a verdict: reliable (reasons == 0), or the set of reasons it
 * is not.  A reliable trace reached the thread's outermost frame with
 * every frame checked, and its last word is the END marker.
 *
 * Every read of stack memory lies inside the thread's known stack ranges
 * (its stack, and its alternate signal stack), so a corrupt frame-pointer
 * chain never faults.  A thread's ranges are learned ahead of time, never
 * in the capture path: at library load for the thread that loads it
 * (normally the main thread), and by relstack_thread_register() for every
 * other thread.  docs/unwinder.md is the full contract.
 */
#ifndef RELSTACK_UNWIND_H
#define RELSTACK_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include <relstack/entry.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reasons a trace is not reliable: bits of relstack_verdict.reasons. */
#define RELSTACK_UNRELIABLE_OUTSIDE_STACK  (1u << 0) /* a frame pointer left the known stack ranges */
#define RELSTACK_UNRELIABLE_MISALIGNED     (1u << 1) /* a frame pointer not aligned to a word */
#define RELSTACK_UNRELIABLE_NOT_INCREASING (1u << 2) /* the chain went down the stack, or stood still */
#define RELSTACK_UNRELIABLE_UNKNOWN_TEXT   (1u << 3) /* a return address in no known object's text */
#define RELSTACK_UNRELIABLE_SIGNAL_FRAME   (1u << 4) /* crossed a signal frame at an instruction no CFI row describes */
#define RELSTACK_UNRELIABLE_ASYNC_START    (1u << 5) /* started (ucontext) at an instruction no CFI row describes */
#define RELSTACK_UNRELIABLE_TRUNCATED      (1u << 6) /* the words array was too small */
#define RELSTACK_UNRELIABLE_NO_FP_OBJECT   (1u << 7) /* a frame without frame pointer nor usable CFI row */
#define RELSTACK_UNRELIABLE_END_UNPROVEN   (1u << 8) /* the walk stopped at no frame proven to be the thread's first */
#define RELSTACK_UNRELIABLE_OBJECTS_CHANGING (1u << 9) /* a frame in an object being loaded or unloaded */
#define RELSTACK_UNRELIABLE_FP_MISMATCH    (1u << 10) /* with RELSTACK_CAPTURE_CHECK: frame pointer and CFI disagree */
#define RELSTACK_UNRELIABLE_INTERRUPT_FRAME (1u << 11) /* kernel stacks: an interrupt or exception entry was crossed */
#define RELSTACK_UNRELIABLE_KERNEL_REFUSED (1u << 12) /* kernel stacks: the kernel's reliable unwinder refused the stack */
#define RELSTACK_UNRELIABLE_UNCHECKED      (1u << 13) /* kernel stacks: the kernel recorded it without checking it */
#define RELSTACK_UNRELIABLE_ALL            0x3fffu

struct relstack_verdict {
	uint32_t reasons; /* RELSTACK_UNRELIABLE_* bits; 0 = reliable */
	uint32_t frames;  /* code addresses written (markers not counted) */
	uint64_t epoch;   /* object-table epoch the entry words are valid for */
};

/* Flags for relstack_capture() and relstack_capture_context(). */
#define RELSTACK_CAPTURE_ABSOLUTE 0x1u /* words are absolute addresses, not entry words */
/*
 * The stack checker: every frame found by frame pointer whose function's
 * object has a CFI table is also found by that table, and the two must
 * agree on where the function's frame is; where they do not, RELSTACK_UNRELIABLE_FP_MISMATCH.  It finds code
 * that breaks the frame-pointer discipline (hand-written assembly that
 * uses %rbp without saving it).  Costs a CFI row per such frame: for a
 * sampler that checks now and then, not for every capture.
 */
#define RELSTACK_CAPTURE_CHECK 0x2u

/*
 * Capture the calling thread's stack into @words (at most @cap words).
 * The first word is the return address into the caller of
 * relstack_capture(), after @skip frames are dropped (skipped frames are
 * still checked: the verdict covers the whole stack).
 *
 * Words are native entry words (relstack_format_native()), or absolute
 * return addresses with RELSTACK_CAPTURE_ABSOLUTE; in both forms the
 * SIGNAL marker word stands where a signal frame was crossed (the next
 * word is the interrupted pc) and a reliable trace ends with the END
 * marker word.  Return addresses are stored as they are on the stack: the
 * instruction after the call.
 *
 * @v (may be NULL) receives the verdict.  Returns the number of words
 * written, END included, or -EINVAL for unknown flags or a NULL @words
 * with a non-zero @cap.  Async-signal-safe.
 */
RELSTACK_API int relstack_capture(uint64_t *words, size_t cap, unsigned skip, unsigned flags,
				  struct relstack_verdict *v);

/*
 * Capture the stack of the context @ucontext (a ucontext_t, as passed to
 * an SA_SIGINFO signal handler) was interrupted in.  The first word is
 * the interrupted pc itself.  The CFI row of that very instruction says
 * whether the interrupted function had set up its frame (a prologue, an
 * epilogue, a leaf without a frame), so its caller is found and proven;
 * where no row describes the instruction, its frame pointer is followed
 * and the verdict has RELSTACK_UNRELIABLE_ASYNC_START (the caller can be
 * missing).  Same words and returns as relstack_capture().
 * Async-signal-safe.
 */
RELSTACK_API int relstack_capture_context(const void *ucontext, uint64_t *words, size_t cap,
					  unsigned flags, struct relstack_verdict *v);

/*
 * The stable short name of one RELSTACK_UNRELIABLE_* bit: "outside-stack",
 * "misaligned", "not-increasing", "unknown-text", "signal-frame",
 * "async-start", "truncated", "no-fp-object", "end-unproven",
 * "objects-changing", "fp-mismatch", "interrupt-frame", "kernel-refused",
 * "unchecked".  NULL for anything that is
 * not exactly one defined bit.
 */
RELSTACK_API const char *relstack_reason_string(uint32_t reason_bit);

/*
 * Learn the calling thread's stack range and alternate signal stack now,
 * for captures on this thread (signal handlers included).  Call it once
 * per thread before its first capture, and again after changing the
 * thread's alternate signal stack.  Not async-signal-safe.  Returns 0 or
 * -errno.
 */
RELSTACK_API int relstack_thread_register(void);

#ifdef __cplusplus
}
#endif
#endif
