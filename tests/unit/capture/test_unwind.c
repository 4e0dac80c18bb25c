// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The unwinder's verdict on crafted stacks: each reason from a stack built
 * to have exactly that defect, the end-of-stack rule, and thousands of
 * random stack images walked between guard pages.
 *
 * The fake stack is a mapping with inaccessible pages on both sides: a
 * read outside the ranges the walk was given faults the test.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/objtab.h"
#include "cfi-test.h"
#include "capture/objtab-local.h"
#include "capture/unwind-local.h"
#include "relstack/relstack.h"
#include "unwind-lib.h"

#define STACK_WORDS 2048

static uintptr_t *stk;     /* STACK_WORDS words, guard pages around */
static size_t map_len;
static unsigned char *map;

__attribute__((noinline)) static int text_in_test(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* Addresses of known kinds. */
/* return addresses [fp_text(), fp_text() + 32) whose calls are under frame-record rows: followed by frame records */
static uintptr_t fp_text(void) { return record_ra_run((uintptr_t)&text_in_test, 32); }
static uintptr_t nofp_text(void) { return (uintptr_t)&rs_unwind_nofp_call + 1; }
/* code that keeps frame pointers in an object whose CFI the walk never reads (an interrupted pc there is followed by its frame pointer) */
static uintptr_t lib_fp_text(void) { return (uintptr_t)&rs_unwind_fp_inner + 1; }
/*
 * the program's own outermost frame: _start's CFI leaves the return address
 * undefined (from its first instruction on x86-64, after a landing pad on
 * aarch64)
 */
extern char _start[];
static uintptr_t outer_text(void) { return cfi_ra_of_kind(cfi_of_addr((uintptr_t)_start), ROW_OUTERMOST); }
/* An instruction of librs_unwind_fp.so that no CFI row describes (padding after a function). */
static uintptr_t lib_gap_text(void) { return cfi_ra_of_kind(cfi_of_addr(lib_fp_text()), ROW_GAP) - 1; }
#define UNKNOWN_TEXT_ADDR ((uintptr_t)0x10000)

/* A case's premise about the machine: where it does not hold, the case says why and is skipped. */
#define PREMISE(cond, why)                                          \
	do {                                                        \
		if (!(cond)) {                                      \
			print_message("not testable here: %s\n", why); \
			skip();                                     \
		}                                                   \
	} while (0)
#define NO_CRT_RESTORER                                                                             \
	"the C library has no signal-return trampoline of its own (the kernel's is the vDSO's; " \
	"arch/aarch64/test_sigframe.c crosses this CPU's signal frames)"
/* Where the premise holds, fp_text() must find return addresses the record map proves: the cases fail if not. */
#define NO_RECORD_ROWS                                                                                 \
	"this CPU's GCC keeps the CFA on the stack pointer in functions with frame records " \
	"(RS_ARCH_FP_BY_SAVE): no row is a frame-record row (rs_cfi_row_is_record()), so no crafted " \
	"frame record is followed as one"
#define CRAFTED_X86                                                                            \
	"the stack is crafted for frame records that top their frames and x86 prologues " \
	"(test_unwind_chain.c walks this CPU's real ones)"

static uintptr_t slot(size_t i) { return (uintptr_t)&stk[i]; }

/* Half a word: a frame pointer this far off a slot is misaligned. */
#define MISALIGN (sizeof(uintptr_t) / 2)

static void frame(size_t i, uintptr_t next, uintptr_t ra)
{
	stk[i] = next;
	stk[i + 1] = ra;
}

static void fake_walk(struct rs_walk *w, uintptr_t fp)
{
	memset(w, 0, sizeof(*w));
	w->fp = fp;
	w->sp = slot(0);
	w->stack.lo = slot(0);
	w->stack.hi = slot(STACK_WORDS);
}

static uint64_t word_of(uintptr_t addr)
{
	uint64_t w;

	relstack_encode(&addr, &w, 1, 0, NULL);
	return w;
}

static int setup(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t body = STACK_WORDS * sizeof(uintptr_t);

	map_len = body + 2 * (size_t)page;
	map = mmap(NULL, map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return -1;
	if (mprotect(map + page, body, PROT_READ | PROT_WRITE))
		return -1;
	stk = (uintptr_t *)(void *)(map + page);
	if (relstack_objtab__refresh() < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	munmap(map, map_len);
	return 0;
}

static int clear_stack(void **state)
{
	memset(stk, 0, STACK_WORDS * sizeof(uintptr_t));
	return 0;
}

static void reliable_chain_ends_with_end_word(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, slot(10), fp_text());
	frame(10, slot(30), fp_text() + 1);
	frame(30, 0, outer_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 4);
	assert_int_equal(v.frames, 3);
	assert_true(words[0] == word_of(fp_text()));
	assert_true(words[1] == word_of(fp_text() + 1));
	assert_true(words[2] == word_of(outer_text()));
	assert_true(words[3] == RS_NATIVE_END);
}

static void absolute_words_are_the_return_addresses(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, slot(10), fp_text());
	frame(10, 0, outer_text());
	fake_walk(&w, slot(4));
	w.flags = RELSTACK_CAPTURE_ABSOLUTE;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 3);
	assert_true(words[0] == fp_text());
	assert_true(words[1] == outer_text());
	assert_true(words[2] == RS_NATIVE_END);
	/* and the relative words map back to them */
	assert_true(relstack_word_address(word_of(fp_text() + 5)) == fp_text() + 5);
}

static void frame_pointer_beyond_the_stack_is_outside_stack(void **state)
{
	static uintptr_t elsewhere[4];
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, (uintptr_t)elsewhere, fp_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(n, 1);
	/* a frame record straddling the top of the range is outside too */
	frame(4, slot(STACK_WORDS - 1), fp_text());
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(n, 1);
	/* and so is a first frame below the walk's stack pointer */
	fake_walk(&w, slot(4));
	w.sp = slot(8);
	w.stack.lo = slot(8);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(n, 0);
}

static void misaligned_frame_pointer_is_misaligned(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, slot(10) + 3, fp_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_MISALIGNED);
	assert_int_equal(n, 1);
}

static void misaligned_frame_pointer_after_a_run_in_one_object_is_misaligned(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	/* several frames in one object first: the walk's fast path, then a bad one */
	frame(4, slot(10), fp_text());
	frame(10, slot(16), fp_text() + 1);
	frame(16, slot(22), fp_text() + 2);
	frame(22, slot(30) + MISALIGN, fp_text() + 3);
	/* the misaligned record reads as a perfect last frame: next 0, ra in the same object */
	{
		uintptr_t zero = 0, ra = fp_text() + 4;

		memcpy((char *)&stk[30] + MISALIGN, &zero, sizeof(zero));
		memcpy((char *)&stk[30] + MISALIGN + sizeof(zero), &ra, sizeof(ra));
	}
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	n = rs_unwind_walk(&w, words, 16, &v); /* again, with this object's range cached */
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_MISALIGNED);
	assert_int_equal(n, 4);
	assert_true(words[3] == word_of(fp_text() + 3));
}

static void frames_far_apart_fill_the_array_exactly(void **state)
{
	uint64_t words[8];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	/* 7 frames 200 words apart, then END: exactly 8 words */
	for (size_t i = 0; i < 7; i++)
		frame(4 + 200 * i, i < 6 ? slot(4 + 200 * (i + 1)) : 0, i < 6 ? fp_text() + i : outer_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 8, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 8);
	for (size_t i = 0; i < 7; i++)
		assert_true(words[i] == word_of(i < 6 ? fp_text() + i : outer_text()));
	assert_true(words[7] == RS_NATIVE_END);
	/* one word less: truncated, with every frame that fits */
	n = rs_unwind_walk(&w, words, 7, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_TRUNCATED);
	assert_int_equal(n, 7);
	assert_true(words[6] == word_of(outer_text()));
}

static void chain_going_down_the_stack_is_not_increasing(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(10, slot(4), fp_text());
	frame(4, slot(20), fp_text());
	fake_walk(&w, slot(10));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_NOT_INCREASING);
	assert_int_equal(n, 1);
	/* a frame that names itself */
	frame(10, slot(10), fp_text());
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_NOT_INCREASING);
	assert_int_equal(n, 1);
	/* overlapping records: the next one starts inside this one */
	frame(10, slot(11), fp_text());
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_NOT_INCREASING);
}

static void return_address_in_no_object_is_unknown_text(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	/*
	 * Where a record sits at the bottom of its frame (not RS_ARCH_RECORD_TOPS_FRAME),
	 * the CFA of the frame after it is the unknown code's to say: that frame is
	 * not proven either.
	 */
	const uint32_t reasons = RELSTACK_UNRELIABLE_UNKNOWN_TEXT |
				 (RS_ARCH_RECORD_TOPS_FRAME ? 0 : RELSTACK_UNRELIABLE_NO_FP_OBJECT);

	frame(4, slot(10), UNKNOWN_TEXT_ADDR);
	frame(10, 0, outer_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, reasons);
	/* the walk goes on past the unknown frame, and writes no END */
	assert_int_equal(n, 2);
	assert_true(words[0] == RS_NATIVE_UNKNOWN);
	assert_true(words[1] == word_of(outer_text()));
	/* absolute output keeps the address itself */
	w.flags = RELSTACK_CAPTURE_ABSOLUTE;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, reasons);
	assert_true(words[0] == UNKNOWN_TEXT_ADDR);
	/* unless it would read as a marker (none can once stripped of authentication bits) */
	if (rs_arch_strip_ra(~(uintptr_t)0) != ~(uintptr_t)0)
		return;
	frame(4, slot(10), ~(uintptr_t)0);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(n, 2);
	assert_true(words[0] == RS_NATIVE_UNKNOWN);
}

static void the_restorer_is_found_in_the_c_runtime(void **state)
{
	uintptr_t r = crt_restorer();
	struct rs_lookup l;

	PREMISE(crt_restorer(), NO_CRT_RESTORER);
	/* published with the C runtime's range, its bytes the trampoline's */
	assert_true(r != 0);
	assert_true(rs_arch_restorer_at((const unsigned char *)(r & ~(uintptr_t)1)) == r); /* bit 0 may name a layout */
	assert_true(rs_objtab_lookup(r, &l));
	assert_int_equal(l.restorer, r);
	assert_true(rs_objtab_lookup((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"), &l));
	assert_true(r >= l.start && r < l.end);
	/* and with no other object's */
	assert_true(rs_objtab_lookup(fp_text(), &l));
	assert_int_equal(l.restorer, 0);
}

/* The word index of the ucontext of a signal frame (rt_sigreturn) whose handler's CFA is word @cfa. */
static size_t context_index(size_t cfa)
{
	return (rs_arch_sigframe_context(slot(cfa), 0) - slot(0)) / sizeof(uintptr_t);
}

/* Words from a handler's frame record to the end of its signal frame's ucontext. */
static size_t signal_frame_words(void)
{
	return context_index(RS_ARCH_FRAME_SIZE / sizeof(uintptr_t)) + sizeof(ucontext_t) / sizeof(uintptr_t);
}

/* A handler frame at @hf whose return address is the restorer, its ucontext in the signal frame above. */
static ucontext_t *signal_frame(size_t hf, uintptr_t pc, uintptr_t sp, uintptr_t fp)
{
	ucontext_t *uc = (ucontext_t *)(void *)&stk[context_index(hf + RS_ARCH_FRAME_SIZE / sizeof(uintptr_t))];

	frame(hf, 0x5a5a, crt_rt_restorer());
	memset(uc, 0, sizeof(*uc));
	rs_arch_context_set(uc, pc, sp, fp);
	return uc;
}

static void restorer_return_address_is_a_signal_frame_crossed(void **state)
{
	size_t above = 8 + signal_frame_words() + 8;
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(crt_restorer(), NO_CRT_RESTORER);
	/* interrupted at an instruction no CFI row describes: its frame pointer is followed, unproven */
	assert_true(cfi_ra_of_kind(cfi_of_addr(lib_fp_text()), ROW_GAP) != 0); /* the library has such an instruction */
	frame(4, slot(8), fp_text());
	signal_frame(8, lib_gap_text(), slot(above), slot(above + 4));
	frame(above + 4, 0, outer_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_SIGNAL_FRAME);
	assert_int_equal(n, 4);
	assert_int_equal(v.frames, 3);
	assert_true(words[0] == word_of(fp_text()));
	assert_true(words[1] == RS_NATIVE_SIGNAL);
	assert_true(words[2] == word_of(lib_gap_text())); /* the interrupted pc */
	assert_true(words[3] == word_of(outer_text()));
}

static void signal_frame_whose_interrupted_instruction_has_a_row_is_crossed_reliably(void **state)
{
	size_t above = 8 + signal_frame_words() + 8;
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(crt_restorer(), NO_CRT_RESTORER);
	/*
	 * Interrupted just after rs_unwind_fp_inner's push %rbp, before its
	 * mov %rsp,%rbp: the frame pointer is still the caller's, so
	 * following it would lose the caller.  The row of that instruction
	 * (CFA = sp + 16, the return address at CFA - 8, the caller's frame
	 * pointer at CFA - 16) finds it: the trace is complete.
	 */
	frame(4, slot(8), fp_text());
	signal_frame(8, lib_fp_text(), slot(above), 0x7777);
	stk[above] = slot(above + 4);       /* the pushed frame pointer */
	stk[above + 1] = fp_text() + 2;     /* the return address into the caller */
	frame(above + 4, 0, outer_text());  /* the caller's frame record */
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 6);
	assert_int_equal(v.frames, 4);
	assert_true(words[1] == RS_NATIVE_SIGNAL);
	assert_true(words[2] == word_of(lib_fp_text()));
	assert_true(words[3] == word_of(fp_text() + 2));
	assert_true(words[4] == word_of(outer_text()));
	assert_true(words[5] == RS_NATIVE_END);
}

static void signal_frame_on_the_alternate_stack_continues_on_the_thread_stack(void **state)
{
	size_t half = STACK_WORDS / 2;
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(crt_restorer(), NO_CRT_RESTORER);
	/* alternate stack: the upper half; thread stack: the lower half */
	frame(half + 4, slot(half + 8), fp_text());
	signal_frame(half + 8, lib_gap_text(), slot(100), slot(104));
	frame(104, slot(120), fp_text() + 4);
	frame(120, 0, outer_text());
	fake_walk(&w, slot(half + 4));
	w.sp = slot(half);
	w.stack.hi = slot(half);
	w.alt.lo = slot(half);
	w.alt.hi = slot(STACK_WORDS);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_SIGNAL_FRAME);
	assert_int_equal(n, 5);
	assert_true(words[4] == word_of(outer_text()));
	/* the interrupted stack pointer in neither range: stop there */
	signal_frame(half + 8, lib_gap_text(), UNKNOWN_TEXT_ADDR, slot(104));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_SIGNAL_FRAME | RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(n, 3);
}

static void interrupted_pc_no_row_describes_is_an_asynchronous_start(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, slot(10), fp_text() + 1);
	frame(10, 0, outer_text());
	fake_walk(&w, slot(4));
	w.pc = lib_gap_text();
	w.reasons = RELSTACK_UNRELIABLE_ASYNC_START; /* what relstack_capture_context() starts with */
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_ASYNC_START);
	assert_int_equal(n, 3);
	assert_true(words[0] == word_of(lib_gap_text()));
}

static void interrupted_pc_after_its_push_is_proven_by_its_row(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(RS_ARCH_RECORD_TOPS_FRAME, CRAFTED_X86);
	/* rs_unwind_fp_inner after push %rbp: the pushed frame pointer at sp, the return address above */
	stk[4] = slot(10);
	stk[5] = fp_text() + 1;
	frame(10, 0, outer_text());
	fake_walk(&w, slot(10));
	w.sp = slot(4);
	w.pc = lib_fp_text();
	w.reasons = RELSTACK_UNRELIABLE_ASYNC_START;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 4);
	assert_true(words[0] == word_of(lib_fp_text()));
	assert_true(words[1] == word_of(fp_text() + 1));
	assert_true(words[2] == word_of(outer_text()));
	assert_true(words[3] == RS_NATIVE_END);
	/* a return address the row finds outside any object: unknown text, no end */
	stk[5] = UNKNOWN_TEXT_ADDR;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_true(v.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	assert_true(words[n - 1] != RS_NATIVE_END);
}

static void interrupted_function_before_its_prologue_keeps_its_caller(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(RS_ARCH_RECORD_TOPS_FRAME, CRAFTED_X86);
	/*
	 * Interrupted at text_in_test's first instruction: no frame record of
	 * its own yet, its return address at the stack pointer.  The CFI row
	 * of that instruction finds it, and proves it; the frame pointer (the
	 * caller's) would have skipped the caller.
	 */
	stk[4] = fp_text() + 2; /* the return address into the caller */
	frame(10, 0, outer_text());
	fake_walk(&w, slot(10));
	w.sp = slot(4);
	w.pc = (uintptr_t)&text_in_test;
	w.reasons = RELSTACK_UNRELIABLE_ASYNC_START;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 4);
	assert_true(words[0] == word_of((uintptr_t)&text_in_test));
	assert_true(words[1] == word_of(fp_text() + 2));
	assert_true(words[2] == word_of(outer_text()));
	assert_true(words[3] == RS_NATIVE_END);
}

static void context_capture_at_a_pc_no_row_describes_says_asynchronous_start(void **state)
{
	uint64_t words[64];
	struct relstack_verdict v;
	ucontext_t uc;
	int n;

	/* a real context of this thread, whose stack is registered */
	assert_int_equal(relstack_thread_register(), 0);
	assert_int_equal(getcontext(&uc), 0);
	{
		struct rs_arch_context c;

		rs_arch_context_read(&uc, &c);
		rs_arch_context_set(&uc, lib_gap_text(), c.sp, c.fp);
	}
	n = relstack_capture_context(&uc, words, 64, 0, &v);
	assert_true(n >= 1);
	assert_true(words[0] == word_of(lib_gap_text()));
	assert_true(v.reasons & RELSTACK_UNRELIABLE_ASYNC_START);
}

static void full_array_is_truncated(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, slot(10), fp_text());
	frame(10, slot(30), fp_text() + 1);
	frame(30, 0, outer_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 2, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_TRUNCATED);
	assert_int_equal(n, 2);
	/* every frame fits but END does not: still truncated */
	n = rs_unwind_walk(&w, words, 3, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_TRUNCATED);
	assert_int_equal(n, 3);
	assert_true(words[2] != RS_NATIVE_END);
	n = rs_unwind_walk(&w, words, 0, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_TRUNCATED);
	assert_int_equal(n, 0);
}

static void skipped_frames_are_checked_but_not_written(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	frame(4, slot(10), UNKNOWN_TEXT_ADDR);
	frame(10, slot(30), fp_text() + 1);
	frame(30, 0, outer_text());
	fake_walk(&w, slot(4));
	w.skip = 1;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(n, 2);
	assert_true(words[0] == word_of(fp_text() + 1));
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
}

static void frame_in_object_without_frame_pointers_is_followed_by_its_cfi(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	struct rs_lookup l;
	size_t n;

	PREMISE(RS_ARCH_RECORD_TOPS_FRAME, CRAFTED_X86);
	assert_true(rs_objtab_lookup(nofp_text(), &l));
	assert_true(l.flags & RELSTACK_OBJECT_NO_FP);
	assert_non_null(l.cfi);
	/*
	 * The return address is rs_unwind_nofp_call's first instruction plus
	 * one: its row is the entry row (CFA = sp + 8), the next return
	 * address just above the frame record, whatever %rbp held.
	 */
	frame(4, 0, nofp_text());
	stk[6] = outer_text();
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 3);
	assert_true(words[0] == word_of(nofp_text()));
	assert_true(words[1] == word_of(outer_text()));
	assert_true(words[2] == RS_NATIVE_END);
	/* a return address there in no object: unknown text, no end */
	stk[6] = UNKNOWN_TEXT_ADDR;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_true(v.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	assert_true(words[n - 1] != RS_NATIVE_END);
}

static void objects_built_with_frame_pointers_are_not_marked(void **state)
{
	struct rs_lookup l;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	assert_true(rs_objtab_lookup(fp_text(), &l));
	assert_false(l.flags & RELSTACK_OBJECT_NO_FP);
	assert_true(rs_objtab_lookup((uintptr_t)&relstack_capture, &l));
	assert_false(l.flags & RELSTACK_OBJECT_NO_FP);
}

static void zero_frame_pointer_ends_the_stack_only_after_the_outermost_frame(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(!RS_ARCH_FP_BY_SAVE, NO_RECORD_ROWS);
	/* a return address whose CFI leaves the return address undefined: proven */
	frame(4, slot(10), fp_text());
	frame(10, 0, outer_text());
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 3);
	assert_true(words[2] == RS_NATIVE_END);
	/* any other function whose frame pointer is 0 (code that uses it as a register): not proven */
	frame(10, 0, fp_text() + 1);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_END_UNPROVEN);
	assert_int_equal(n, 2);
	assert_true(words[1] == word_of(fp_text() + 1));
	/* nor a first frame pointer of 0: no return address was read */
	fake_walk(&w, 0);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_END_UNPROVEN);
	assert_int_equal(n, 0);
}

static void c_runtime_frames_are_followed_by_their_cfi_to_the_end(void **state)
{
	const struct rs_cfi_table *o = crt_cfi();
	uintptr_t entry = cfi_ra_of_kind(o, ROW_ENTRY), outer = cfi_ra_of_kind(o, ROW_OUTERMOST);
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	struct rs_lookup l;
	size_t n;

	PREMISE(RS_ARCH_RECORD_TOPS_FRAME, CRAFTED_X86);
	assert_non_null(o);
	assert_true(entry && outer);
	assert_true(rs_objtab_lookup(entry, &l));
	/*
	 * fp_text's frame returns into the C runtime at a function's entry
	 * row (CFA = sp + 8, sp = the frame record + 16), whose return address
	 * is at the CFA - 8: the C runtime's outermost frame.
	 */
	frame(4, slot(10), fp_text());
	frame(10, 0x7777, entry);
	stk[12] = outer;
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 4);
	assert_true(words[1] == word_of(entry));
	assert_true(words[2] == word_of(outer));
	assert_true(words[3] == RS_NATIVE_END);
	/* the outermost frame directly after a frame record */
	frame(10, 0x7777, outer);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 3);
	/* back to a frame-pointer function: its frame record is where the frame pointer (unchanged) points */
	frame(10, slot(30), entry);
	stk[12] = fp_text() + 3;
	frame(30, 0, outer_text());
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 5);
	assert_true(words[2] == word_of(fp_text() + 3));
	assert_true(words[3] == word_of(outer_text()));
	/* the return address the CFI names is garbage: unknown text, and no end */
	stk[12] = UNKNOWN_TEXT_ADDR;
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_true(v.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	assert_true(words[n - 1] != RS_NATIVE_END);
}

static void c_runtime_frames_the_cfi_cannot_follow_are_no_fp_object(void **state)
{
	const struct rs_cfi_table *o = crt_cfi();
	uintptr_t odd = cfi_ra_of_kind(o, ROW_UNSUPPORTED), entry = cfi_ra_of_kind(o, ROW_ENTRY);
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	PREMISE(RS_ARCH_RECORD_TOPS_FRAME, CRAFTED_X86);
	if (!odd)
		skip(); /* a C runtime whose CFI has no expression rules */
	frame(4, slot(10), fp_text());
	frame(10, 0, odd);
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_true(v.reasons & RELSTACK_UNRELIABLE_NO_FP_OBJECT);
	assert_true(n >= 2 && words[n - 1] != RS_NATIVE_END);
	/* a CFA beyond the stack's top: outside the stack, nothing read there */
	frame(STACK_WORDS - 2, 0, entry);
	fake_walk(&w, slot(STACK_WORDS - 2));
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(n, 1);
}

static void every_compiled_row_is_found_from_its_start_to_the_next_and_in_place(void **state)
{
	const struct rs_cfi_table *o = crt_cfi();
	struct rs_lookup l;
	uint32_t n;
	unsigned rows = 0;

	assert_non_null(o);
	/* the object table's own table of the C library: in place (it is never unloaded), no rows of its own */
	assert_true(rs_objtab_lookup((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"), &l));
	assert_non_null(l.cfi);
	assert_int_equal(rs_cfi_table_rows(l.cfi), 0);
	n = rs_cfi_table_rows(o);
	assert_true(n > 1000);
	for (uint32_t i = 0; i + 1 < n; i++) {
		uintptr_t a, b;
		struct rs_cfi_row r1, r2, r3;
		int e1 = rs_cfi_table_row(o, i, &a, &r1), e2, e3;

		assert_int_equal(rs_cfi_table_row(o, i + 1, &b, &r3) == -ERANGE, 0);
		assert_true(b > a);
		e2 = rs_cfi_row_at(o, a, &r2);
		e3 = rs_cfi_row_at(o, b - 1, &r3);
		assert_int_equal(e1, e2);
		assert_int_equal(e1, e3);
		assert_memory_equal(&r1, &r2, sizeof(r1));
		assert_memory_equal(&r1, &r3, sizeof(r1));
		/* the in-place table reads the same rows at both ends */
		assert_int_equal(rs_cfi_row_at(l.cfi, a, &r2), e1);
		assert_int_equal(rs_cfi_row_at(l.cfi, b - 1, &r3), e1);
		assert_memory_equal(&r1, &r2, sizeof(r1));
		assert_memory_equal(&r1, &r3, sizeof(r1));
		rows += !e1;
	}
	/* most of the C library is described, and nothing lies before the first row */
	assert_true(rows > n / 2);
	{
		uintptr_t first;
		struct rs_cfi_row r;

		assert_int_equal(rs_cfi_table_row(o, 0, &first, &r) == -ERANGE, 0);
		assert_int_equal(rs_cfi_row_at(o, first - 1, &r), -ENOENT);
	}
}

/*
 * A walk whose tail (the frames followed by CFI to the end) crossed a
 * signal frame after an earlier one: the frames past the second one
 * depend on its ucontext, so the tail must not be cached.  Otherwise a
 * later walk through the same frame record, with no signal frame before
 * it, would replay the tail without the SIGNAL marker and the interrupted
 * function, as reliable.
 */
static void a_tail_that_crossed_a_signal_frame_is_not_cached(void **state)
{
	const struct rs_cfi_table *o = crt_cfi();
	uintptr_t entry = cfi_ra_of_kind(o, ROW_ENTRY), outer = cfi_ra_of_kind(o, ROW_OUTERMOST);
	size_t uw = sizeof(ucontext_t) / sizeof(uintptr_t);
	size_t x = 8 + signal_frame_words() + 8; /* the interrupted stack pointer of the second signal */
	size_t f = x + 2;                        /* a frame record whose return address is into the C runtime (entry row) */
	size_t u1 = context_index(f + 3);        /* from the C runtime function's CFA: the first signal's ucontext */
	size_t z = u1 + uw + 8;                  /* the first signal's interrupted stack pointer */
	uint64_t words[32], ref[32];
	struct relstack_verdict v, rv;
	struct rs_walk w;
	size_t n, rn;
	ucontext_t *uc;

	PREMISE(crt_restorer(), NO_CRT_RESTORER);
	assert_true(entry && outer && z + 4 < STACK_WORDS);
	/* capture <- handler <- SIGNAL | f <- (C runtime) <- SIGNAL | interrupted at an entry row <- outermost */
	frame(4, slot(8), fp_text());
	signal_frame(8, lib_gap_text(), slot(x), slot(f));
	frame(f, 0x7777, entry);
	stk[f + 2] = crt_rt_restorer();
	uc = (ucontext_t *)(void *)&stk[u1];
	memset(uc, 0, sizeof(*uc));
	rs_arch_context_set(uc, entry - 1, slot(z), 0x7777);
	stk[z] = outer;
	fake_walk(&w, slot(4));
	n = rs_unwind_walk(&w, words, 32, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_SIGNAL_FRAME);
	/*
	 * The same frames from f on, reached without the second signal: by
	 * the fast walk, then the general one.  The first signal's
	 * interrupted instruction has a row: reliable, with its SIGNAL.
	 */
	for (int i = 0; i < 2; i++) {
		frame(4, slot(f), i ? record_ra_run(lib_fp_text(), 1) : fp_text());
		fake_walk(&w, slot(4));
		n = rs_unwind_walk(&w, words, 32, &v);
		w.flags = RS_WALK_COMPLETE;
		rn = rs_unwind_walk(&w, ref, 32, &rv);
		assert_int_equal(v.reasons, 0);
		assert_int_equal(rv.reasons, v.reasons);
		assert_int_equal(n, rn);
		assert_memory_equal(words, ref, n * sizeof(words[0]));
		assert_true(words[2] == RS_NATIVE_SIGNAL);
	}
}

static void unknown_stack_reads_nothing(void **state)
{
	uint64_t words[16];
	struct relstack_verdict v;
	struct rs_walk w;
	size_t n;

	frame(4, 0, fp_text());
	fake_walk(&w, slot(4));
	w.stack.lo = w.stack.hi = 0;
	w.sp = slot(4);
	n = rs_unwind_walk(&w, words, 16, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(n, 0);
}

static void reason_strings_are_stable_short_names(void **state)
{
	static const char *const names[] = {
		"outside-stack", "misaligned", "not-increasing", "unknown-text",
		"signal-frame", "async-start", "truncated", "no-fp-object",
		"end-unproven", "objects-changing", "fp-mismatch", "interrupt-frame",
		"kernel-refused", "unchecked",
	};

	for (unsigned i = 0; i < RS_ARRAY_SIZE(names); i++)
		assert_string_equal(relstack_reason_string(1u << i), names[i]);
	assert_int_equal(1u << RS_ARRAY_SIZE(names), RELSTACK_UNRELIABLE_ALL + 1);
	assert_null(relstack_reason_string(0));
	assert_null(relstack_reason_string(3));
	assert_null(relstack_reason_string(1u << RS_ARRAY_SIZE(names)));
}

static void bad_arguments_are_refused(void **state)
{
	uint64_t w[4];
	ucontext_t uc;

	assert_int_equal(relstack_capture(NULL, 4, 0, 0, NULL), -EINVAL);
	assert_int_equal(relstack_capture(w, 4, 0, 0x80, NULL), -EINVAL);
	assert_int_equal(relstack_capture_context(NULL, w, 4, 0, NULL), -EINVAL);
	memset(&uc, 0, sizeof(uc));
	assert_int_equal(relstack_capture_context(&uc, w, 4, 0x80, NULL), -EINVAL);
}

/* ---- random images ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Return addresses into the C runtime, with rows of each kind, and the program's outermost one. */
static uintptr_t crt_ra[4];

/* A plausible-looking or garbage word: what a stack holds. */
static uintptr_t random_word(void)
{
	switch (rnd() % 12) {
	case 0: return 0;
	case 1: return slot(rnd() % STACK_WORDS);                   /* aligned, in the image */
	case 2: return slot(rnd() % STACK_WORDS) + rnd() % 8;       /* maybe misaligned */
	case 3: return slot(0) - 64 + rnd() % 128;                  /* near the bottom edge */
	case 4: return slot(STACK_WORDS) - 64 + rnd() % 128;        /* near the top edge */
	case 5: return fp_text() + rnd() % 64;
	case 6: return rnd() % 2 ? nofp_text() : lib_gap_text() + 1; /* (its call in code no FDE covers) */
	case 7: return crt_ra[rnd() % RS_ARRAY_SIZE(crt_ra)];
	case 8: return crt_rt_restorer();
	case 9: return UNKNOWN_TEXT_ADDR + rnd() % 4096;
	case 10: return 1;
	default: return (uintptr_t)rnd();
	}
}

/* A million in the plain build; fewer where a sanitizer makes each one slow. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RANDOM_IMAGES 50000u
#else
#define RANDOM_IMAGES 1000000u
#endif

static void random_stack_images_never_fault_and_are_all_classified(void **state)
{
	uint64_t words[80];
	uint32_t seen = 0;
	unsigned reliable = 0;

	crt_ra[0] = cfi_ra_of_kind(crt_cfi(), ROW_ENTRY);
	crt_ra[1] = cfi_ra_of_kind(crt_cfi(), ROW_OUTERMOST);
	crt_ra[2] = cfi_ra_of_kind(crt_cfi(), ROW_SAVES_FP);
	crt_ra[3] = outer_text();

	for (unsigned iter = 0; iter < RANDOM_IMAGES; iter++) {
		struct relstack_verdict v;
		struct rs_walk w;
		size_t n, lo, hi, cap;

		for (size_t i = 0; i < STACK_WORDS; i++)
			stk[i] = random_word();
		/* every few images, lay a plausible chain over the garbage */
		if (iter % 3 == 0) {
			size_t i = rnd() % 64;

			while (i + 40 < STACK_WORDS && rnd() % 16) {
				size_t next = i + 2 + rnd() % 30;

				frame(i, slot(next), rnd() % 8 ? fp_text() : random_word());
				i = next;
			}
			frame(i, rnd() % 2 ? 0 : random_word(), rnd() % 2 ? outer_text() : fp_text());
		}
		lo = rnd() % (STACK_WORDS / 2);
		hi = lo + rnd() % (STACK_WORDS - lo + 1);
		memset(&w, 0, sizeof(w));
		w.stack.lo = slot(lo) + (rnd() % 4 == 0 ? rnd() % 8 : 0);
		w.stack.hi = slot(hi) - (rnd() % 4 == 0 ? rnd() % 8 : 0);
		if (rnd() % 2) {
			size_t alo = rnd() % STACK_WORDS, ahi = alo + rnd() % (STACK_WORDS - alo + 1);

			w.alt.lo = slot(alo);
			w.alt.hi = slot(ahi);
		}
		w.sp = rnd() % 8 ? w.stack.lo + (rnd() % 64) * 8 : random_word();
		w.fp = rnd() % 4 ? slot(rnd() % STACK_WORDS) : random_word();
		w.pc = rnd() % 4 ? 0 : random_word();
		if (w.pc && rnd() % 2)
			w.reasons = RELSTACK_UNRELIABLE_ASYNC_START; /* a context capture's start */
		w.skip = (unsigned)(rnd() % 3);
		w.flags = rnd() % 2 ? RELSTACK_CAPTURE_ABSOLUTE : 0;
		if (rnd() % 4 == 0)
			w.flags |= RELSTACK_CAPTURE_CHECK;
		cap = rnd() % 8 ? RS_ARRAY_SIZE(words) : rnd() % 4;

		n = rs_unwind_walk(&w, words, cap, &v);
		assert_true(n <= cap);
		assert_true(v.frames <= n);
		assert_false(v.reasons & ~RELSTACK_UNRELIABLE_ALL);
		if (v.reasons == 0) {
			/* reliable: ended at the outermost frame, with END */
			assert_true(n >= 1);
			assert_true(words[n - 1] == RS_NATIVE_END);
			reliable++;
		} else {
			assert_true(n == 0 || words[n - 1] != RS_NATIVE_END);
		}
		for (size_t i = 0; i + 1 < n; i++)
			assert_true(words[i] != RS_NATIVE_END);
		seen |= v.reasons;
	}
	/*
	 * every reason a stack image can show was reached (OBJECTS_CHANGING
	 * comes from the object table;
	 * FP_MISMATCH, which needs the checker and a frame whose row is on the
	 * stack pointer, comes now and then, and test_unwind_check.c tests it;
	 * INTERRUPT_FRAME, KERNEL_REFUSED and UNCHECKED are for kernel stacks
	 * only; SIGNAL_FRAME needs a trampoline in the C runtime, which
	 * aarch64's has not)
	 */
	assert_int_equal(seen | RELSTACK_UNRELIABLE_OBJECTS_CHANGING | RELSTACK_UNRELIABLE_FP_MISMATCH |
				 RELSTACK_UNRELIABLE_INTERRUPT_FRAME | RELSTACK_UNRELIABLE_KERNEL_REFUSED |
				 RELSTACK_UNRELIABLE_UNCHECKED | (crt_restorer() ? 0 : RELSTACK_UNRELIABLE_SIGNAL_FRAME),
			 RELSTACK_UNRELIABLE_ALL);
	assert_true(reliable > 0);
}

int main(void)
{
	if (getenv("RS_TEST_SEED")) /* another run of the random images, replayable */
		rng = strtoull(getenv("RS_TEST_SEED"), NULL, 0) | 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(reliable_chain_ends_with_end_word, clear_stack),
		cmocka_unit_test_setup(absolute_words_are_the_return_addresses, clear_stack),
		cmocka_unit_test_setup(frame_pointer_beyond_the_stack_is_outside_stack, clear_stack),
		cmocka_unit_test_setup(misaligned_frame_pointer_is_misaligned, clear_stack),
		cmocka_unit_test_setup(misaligned_frame_pointer_after_a_run_in_one_object_is_misaligned,
				       clear_stack),
		cmocka_unit_test_setup(frames_far_apart_fill_the_array_exactly, clear_stack),
		cmocka_unit_test_setup(chain_going_down_the_stack_is_not_increasing, clear_stack),
		cmocka_unit_test_setup(return_address_in_no_object_is_unknown_text, clear_stack),
		cmocka_unit_test(the_restorer_is_found_in_the_c_runtime),
		cmocka_unit_test_setup(restorer_return_address_is_a_signal_frame_crossed, clear_stack),
		cmocka_unit_test_setup(signal_frame_whose_interrupted_instruction_has_a_row_is_crossed_reliably, clear_stack),
		cmocka_unit_test_setup(signal_frame_on_the_alternate_stack_continues_on_the_thread_stack,
				       clear_stack),
		cmocka_unit_test_setup(interrupted_pc_no_row_describes_is_an_asynchronous_start, clear_stack),
		cmocka_unit_test_setup(interrupted_pc_after_its_push_is_proven_by_its_row, clear_stack),
		cmocka_unit_test_setup(interrupted_function_before_its_prologue_keeps_its_caller, clear_stack),
		cmocka_unit_test(context_capture_at_a_pc_no_row_describes_says_asynchronous_start),
		cmocka_unit_test_setup(full_array_is_truncated, clear_stack),
		cmocka_unit_test_setup(skipped_frames_are_checked_but_not_written, clear_stack),
		cmocka_unit_test_setup(frame_in_object_without_frame_pointers_is_followed_by_its_cfi, clear_stack),
		cmocka_unit_test(objects_built_with_frame_pointers_are_not_marked),
		cmocka_unit_test_setup(zero_frame_pointer_ends_the_stack_only_after_the_outermost_frame, clear_stack),
		cmocka_unit_test_setup(c_runtime_frames_are_followed_by_their_cfi_to_the_end, clear_stack),
		cmocka_unit_test_setup(c_runtime_frames_the_cfi_cannot_follow_are_no_fp_object, clear_stack),
		cmocka_unit_test(every_compiled_row_is_found_from_its_start_to_the_next_and_in_place),
		cmocka_unit_test_setup(a_tail_that_crossed_a_signal_frame_is_not_cached, clear_stack),
		cmocka_unit_test_setup(unknown_stack_reads_nothing, clear_stack),
		cmocka_unit_test(reason_strings_are_stable_short_names),
		cmocka_unit_test(bad_arguments_are_refused),
		cmocka_unit_test(random_stack_images_never_fault_and_are_all_classified),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
