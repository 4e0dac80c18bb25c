/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The frame-pointer walker and the per-thread stack ranges: internal
 * interface (unwind.c, stack.c, fpcheck.c and the tests).
 */
#ifndef RELSTACK_UNWIND_LOCAL_H
#define RELSTACK_UNWIND_LOCAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture/cfi.h"
#include "relstack/unwind.h"
#include "relstack-local.h"

/* Architecture code, replaced by path: src/capture/arch/<cpu>/, chosen by the build. */
#include "unwind-arch.h"

/* [lo, hi): a range of stack memory that may be read. */
struct rs_stack_range {
	uintptr_t lo, hi;
};

/*
 * The per-thread cache of stack ranges, written only by the thread itself
 * (relstack_thread_register(), the load-time registration), read by its
 * captures, signal handlers included.  valid is cleared while the fields
 * change: a signal handler that interrupts the update sees an unknown
 * stack, never half a range.
 */
struct rs_thread_stack {
	_Atomic int valid;
	struct rs_stack_range stack; /* the thread's stack */
	struct rs_stack_range alt;   /* its alternate signal stack; 0, 0 if none */
};

/* Bounds of a cached tail: longer ones take the general walk every time. */
#define RS_TAIL_WORDS 3
#define RS_TAIL_SLOTS 3

/*
 * What this thread's last walks learned, valid while the object table's
 * latch sequence is still seq (the same sequence means the same copy of
 * the index): the last fast range (unwind.c), the last range its lookups
 * found, and the tail of the thread's stack.  Written and
 * read only by the thread itself, signal handlers included: see
 * fast_cache_load() and fast_cache_store() for the protocol.  The fields
 * the fast walk (walk_fast()) reads come first.
 */
struct rs_fast_cache {
	_Atomic uint64_t gen; /* odd while a store is in progress */
	uint64_t seq;
	/*
	 * seq when the fast walk may use this cache (span != 0 and
	 * exit_ra != 0), UINT64_MAX (a sequence the latch never reaches)
	 * otherwise.
	 */
	uint64_t fast_seq;
	uintptr_t start, span;
	/*
	 * The record map of the fast range's object (cfi.h), from the bit of
	 * start - 1 on: a return address ra in the range is proven to leave
	 * its caller's frame record at the frame pointer when bit ra - start
	 * of fmap is set (bytes, least significant bit first).
	 */
	const unsigned char *fmap;
	/*
	 * ra - start + wdelta[abs] is ra's word: wdelta[0] = start + delta,
	 * where delta folds a relative word's bias, slot and flag (unwind.c,
	 * struct fast_range); wdelta[1] = start, for absolute words.
	 */
	uint64_t wdelta[2];
	/*
	 * The tail of a reliable walk (unwind.c, struct tail): a frame
	 * record whose return address exit_ra (exit_off from start) left the
	 * fast range was followed by CFI to the end of the stack, reading
	 * the stack slots at slot_off[] from the record (its saved frame
	 * pointer among them if the tail used it; all of it within tail_top
	 * bytes) and finding slot_val[] there (slots it did not need repeat
	 * the record's return address); its words were
	 * tail_word[abs][0 .. tail_n).
	 */
	uintptr_t exit_ra;
	uintptr_t exit_off;
	/*
	 * Non-zero: the tail is pinned (unwind.c, struct tail) and holds only
	 * at the frame record at this address.
	 */
	uintptr_t exit_fp;
	uintptr_t tail_top;
	uint32_t tail_n;
	uint64_t tail_word[2][RS_TAIL_WORDS];
	uintptr_t slot_off[RS_TAIL_SLOTS], slot_val[RS_TAIL_SLOTS];
	/*
	 * A return address a walk skipped in an object that keeps frame
	 * pointers, not a signal trampoline: a skipped frame there adds no
	 * reason (the caller of relstack_capture() in another object, for
	 * a caller that skips itself).  0: none.
	 */
	uintptr_t pass_ra;
	uint64_t epoch; /* the object-table epoch of seq's index */
	/* the last range the slow path's lookup found (a struct rs_objtab_view's) */
	uintptr_t vstart, vend, vbias, vrestorer;
	const struct rs_cfi_table *vcfi;
	uint64_t vslot_flags;
	_Atomic int busy; /* a store is in progress: a nested one skips */
};

/*
 * CFI rows this thread's walks looked up last (unwind.c, row_at()), by
 * the index sequence they were found under: a row of a pc under one
 * sequence is the row of the table that sequence's index lists, so it
 * stands for as long as the sequence does.  A handler on the thread may
 * interrupt a store: gen is odd meanwhile, and a load that sees gen move
 * uses nothing.
 */
#define RS_ROW_MEMO 4

struct rs_row_memo {
	_Atomic uint64_t gen;
	_Atomic int busy; /* a store is in progress: a nested one skips */
	struct {
		uintptr_t pc;
		uint64_t seq;
		int err;
		struct rs_cfi_row row;
	} e[RS_ROW_MEMO];
};

/*
 * The calling thread's caches, in initial-exec TLS: %fs-relative accesses,
 * one thread-pointer offset for all (defined in stack.c).
 */
struct rs_thread_cache {
	struct rs_thread_stack stack;
	struct rs_fast_cache fast;
	struct rs_row_memo rows;
};
RS_HIDDEN extern __thread struct rs_thread_cache rs_tls __attribute__((tls_model("initial-exec")));

/* Copy the calling thread's cache; false when its stack is unknown. */
RS_HIDDEN bool rs_thread_stack_get(struct rs_thread_stack *out);

/* One walk: where it starts, what it may read, and what it found. */
struct rs_walk {
	/* in */
	uintptr_t fp;                /* first frame record */
	/*
	 * Without pc: a return address into the function whose frame record
	 * fp is, 0 if unknown (needed only where a record does not top its
	 * frame: its CFA comes from that function's row)
	 */
	uintptr_t fp_pc;
	uintptr_t sp;                /* lowest readable address of the starting stack */
	uintptr_t pc;                /* != 0: emitted first (an interrupted pc), before fp's frames */
	uintptr_t lr;                /* with pc: its link register (a leaf's return address), 0 if unknown */
	struct rs_stack_range stack; /* the thread's stack */
	struct rs_stack_range alt;   /* its alternate signal stack, or 0, 0 */
	uint32_t reasons;            /* reasons known before the walk (ASYNC_START) */
	unsigned skip;               /* frames to drop from the front */
	unsigned flags;              /* RELSTACK_CAPTURE_*, RS_WALK_COMPLETE, RS_WALK_SNAPSHOT */
	/*
	 * With RS_WALK_SNAPSHOT: the stack is a copy, the word at stack address
	 * a read at a + delta (the ranges, pc, fp and sp are the stack's own
	 * addresses); the objects are those of @latch's index (NULL: this
	 * process's).
	 */
	intptr_t delta;
	const struct rs_latch *latch;
};

/*
 * A walk flag for tests: the general walk only (no fast walk), and the
 * thread's cache of tails left as it is.
 */
#define RS_WALK_COMPLETE 0x80000000u

/*
 * A walk over a snapshot (struct rs_walk, delta and latch): another
 * thread's or process's stack copied here.  The general walk only, and
 * no cache of this thread is read or written (their words and rows are
 * of this thread's stacks and this process's index).
 */
#define RS_WALK_SNAPSHOT 0x40000000u

/*
 * Walk, check and encode.  Reads only inside w->stack and w->alt (from
 * w->sp up on the starting stack), async-signal-safe.  Returns the words
 * written.
 */
RS_HIDDEN size_t rs_unwind_walk(struct rs_walk *w, uint64_t *words, size_t cap,
				struct relstack_verdict *v);

#endif
