/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The object table's lookup index, for the capture path only.
 *
 * Readers bracket their lookups with rs_objtab_begin() / rs_objtab_end():
 *
 *	struct rs_objtab_view v;
 *	do {
 *		rs_objtab_begin(&v);
 *		... rs_objtab_find(&v, addr, &r) for each address ...
 *	} while (!rs_objtab_end(&v) && ++tries < RS_LATCH_TRIES);
 *
 * Results read between begin and end are valid only if end returns true.
 * The steps are labelled as in the essay at the top of objtab.c.
 */
#ifndef RELSTACK_OBJTAB_LOCAL_H
#define RELSTACK_OBJTAB_LOCAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture/objtab.h"
#include "unwind-arch.h"

#define RS_LATCH_TRIES 8

struct rs_index_range {
	_Atomic uintptr_t start;
	_Atomic uintptr_t end;
	_Atomic uintptr_t bias;
	_Atomic uintptr_t restorer; /* the object's signal-return trampoline, or 0 */
	_Atomic uintptr_t cfi; /* its compiled CFI table, or 0 */
	_Atomic uint64_t slot_flags; /* slot in the low 32 bits, RELSTACK_OBJECT_* above */
};

/* A power of two at least RS_OBJTAB_SLOTS: the search below is branch-free. */
#define RS_INDEX_MAX 1024u

/*
 * starts[] holds the sorted range starts, padded with UINTPTR_MAX up to
 * 1 << span_log2 entries, in an array of its own so that the search
 * touches as few cache lines as possible; r[] holds the rest.
 */
struct rs_index {
	_Atomic uint64_t epoch;
	_Atomic uint32_t n;
	_Atomic uint32_t span_log2; /* span = 1 << span_log2 */
	_Atomic uintptr_t starts[RS_INDEX_MAX];
	struct rs_index_range r[RS_INDEX_MAX];
};

struct rs_latch {
	_Atomic uint64_t seq;
	struct rs_index copy[2];
};

RS_HIDDEN extern struct rs_latch rs_latch;

/* One indexed range of code: [start, end), belonging to @slot. */
struct rs_index_entry {
	uintptr_t start;
	uintptr_t end;
	uintptr_t bias;
	uintptr_t restorer;              /* its signal-return trampoline, or 0 */
	const struct rs_cfi_table *cfi;  /* its compiled CFI, or NULL */
	uint32_t slot;
	uint32_t flags; /* RELSTACK_OBJECT_* of the slot */
};

/*
 * A private index, for a walk over a snapshot (unwind-local.h,
 * RS_WALK_SNAPSHOT): another process's objects.  Sorts @e in place.
 * Returns 0, -E2BIG past RS_INDEX_MAX ranges, -EINVAL for ranges that
 * overlap.  Not for an index readers may be using.
 */
RS_HIDDEN int rs_objtab_index_build(struct rs_latch *latch, struct rs_index_entry *e, unsigned n, uint64_t epoch);

RS_HIDDEN void rs_objtab_count_unknown(uint64_t n);
RS_HIDDEN void rs_objtab_count_busy(void);

struct rs_objtab_view {
	const struct rs_latch *latch;
	uint64_t seq;
	const struct rs_index *ix;
	uint32_t n, span_log2;
	/* the last range found: runs of addresses in one object skip the search */
	uintptr_t start, end, bias, restorer;
	const struct rs_cfi_table *cfi;
	uint64_t slot_flags;
};

static inline void rs_objtab_begin_on(struct rs_objtab_view *v, const struct rs_latch *latch)
{
	/* 1: pairs with C in publish_index() */
	v->latch = latch;
	v->seq = atomic_load_explicit(&latch->seq, memory_order_acquire);
	v->ix = &latch->copy[v->seq & 1];
	v->n = atomic_load_explicit(&v->ix->n, memory_order_relaxed);
	v->span_log2 = atomic_load_explicit(&v->ix->span_log2, memory_order_relaxed);
	v->start = v->end = v->bias = v->restorer = 0;
	v->cfi = NULL;
	v->slot_flags = 0;
}

static inline void rs_objtab_begin(struct rs_objtab_view *v)
{
	rs_objtab_begin_on(v, &rs_latch);
}

/* 3: pairs with the fence after A in publish_index() */
static inline bool rs_objtab_end(const struct rs_objtab_view *v)
{
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&v->latch->seq, memory_order_relaxed) == v->seq;
}

static inline uint64_t rs_objtab_view_epoch(const struct rs_objtab_view *v)
{
	return atomic_load_explicit(&v->ix->epoch, memory_order_relaxed);
}

/*
 * 2: find the range holding @addr.  Returns false for an address in no
 * indexed object.  On success v->bias and v->slot_flags describe it.
 */
static RS_ALWAYS_INLINE bool rs_objtab_find(struct rs_objtab_view *v, uintptr_t addr)
{
	const struct rs_index *ix = v->ix;
	const struct rs_index_range *r;
	const _Atomic uintptr_t *base = ix->starts;
	uint32_t pos;

	if (addr - v->start < v->end - v->start)
		return true;
	/*
	 * Branch-free binary search: random addresses make every branch of an
	 * ordinary search a coin toss, and a mispredicted branch costs more
	 * than the whole search.  Unrolled by the index's size (one jump,
	 * always the same one): each step is a load, a compare and a
	 * conditional move.  Finds the last start <= addr.  A torn span_log2
	 * above 10 searches nothing; the seq check rejects the result.
	 */
#define RS_FIND_STEP(half) \
	base = atomic_load_explicit(&base[half], memory_order_relaxed) <= addr ? base + (half) : base
	switch (v->span_log2) {
	case 10: RS_FIND_STEP(512); __attribute__((fallthrough));
	case 9: RS_FIND_STEP(256); __attribute__((fallthrough));
	case 8: RS_FIND_STEP(128); __attribute__((fallthrough));
	case 7: RS_FIND_STEP(64); __attribute__((fallthrough));
	case 6: RS_FIND_STEP(32); __attribute__((fallthrough));
	case 5: RS_FIND_STEP(16); __attribute__((fallthrough));
	case 4: RS_FIND_STEP(8); __attribute__((fallthrough));
	case 3: RS_FIND_STEP(4); __attribute__((fallthrough));
	case 2: RS_FIND_STEP(2); __attribute__((fallthrough));
	case 1: RS_FIND_STEP(1); __attribute__((fallthrough));
	default: break;
	}
#undef RS_FIND_STEP
	pos = (uint32_t)(base - ix->starts);
	if (rs_unlikely(pos >= v->n || pos >= RS_INDEX_MAX))
		return false; /* empty index, or a torn read the seq check rejects */
	r = &ix->r[pos];
	v->start = atomic_load_explicit(&r->start, memory_order_relaxed);
	v->end = atomic_load_explicit(&r->end, memory_order_relaxed);
	if (addr - v->start >= v->end - v->start) {
		v->start = v->end = 0;
		return false;
	}
	v->bias = atomic_load_explicit(&r->bias, memory_order_relaxed);
	v->restorer = atomic_load_explicit(&r->restorer, memory_order_relaxed);
	v->cfi = (const struct rs_cfi_table *)atomic_load_explicit(&r->cfi, memory_order_relaxed);
	v->slot_flags = atomic_load_explicit(&r->slot_flags, memory_order_relaxed);
	return true;
}

/* Is @addr, found in the view's range, one of that object's signal-return trampolines? */
static inline bool rs_objtab_view_is_restorer(const struct rs_objtab_view *v, uintptr_t addr)
{
	return v->restorer && rs_arch_restorer_kind(addr, v->restorer) >= 0;
}

static inline uint32_t rs_objtab_view_slot(const struct rs_objtab_view *v)
{
	return (uint32_t)v->slot_flags;
}

static inline uint32_t rs_objtab_view_flags(const struct rs_objtab_view *v)
{
	return (uint32_t)(v->slot_flags >> 32);
}

/*
 * The native entry word for an address inside the view's current range.
 * The layout is the one relstack_format_native() describes; the capture
 * side may use it as constants, decoders never do.
 */
#if UINTPTR_MAX == UINT64_MAX
#define RS_NATIVE_FLAG (1ull << 63)
#define RS_NATIVE_INDEX_SHIFT 53
#define RS_NATIVE_OFFSET_MASK ((1ull << 53) - 1)
#define RS_NATIVE_MAIN_MASK ((1ull << 63) - 1)
#define RS_NATIVE_END (~0ull)
#define RS_NATIVE_UNKNOWN (~0ull - 1)
#define RS_NATIVE_SIGNAL (~0ull - 2)
#else
#define RS_NATIVE_FLAG (1ull << 31)
#define RS_NATIVE_INDEX_SHIFT 24
#define RS_NATIVE_OFFSET_MASK ((1ull << 24) - 1)
#define RS_NATIVE_MAIN_MASK ((1ull << 31) - 1)
#define RS_NATIVE_END 0xffffffffull
#define RS_NATIVE_UNKNOWN 0xfffffffeull
#define RS_NATIVE_SIGNAL 0xfffffffdull
#endif

static inline uint64_t rs_objtab_view_word(const struct rs_objtab_view *v, uintptr_t addr)
{
	uint64_t off = (uint64_t)(addr - v->bias);
	uint32_t slot = rs_objtab_view_slot(v);

	if (rs_unlikely(rs_objtab_view_flags(v) & RS_OBJECT_CHANGING))
		return RS_NATIVE_UNKNOWN; /* the range may hold another object already */
	if (slot == 0)
		return rs_likely(off <= RS_NATIVE_MAIN_MASK) ? off : RS_NATIVE_UNKNOWN;
	if (rs_unlikely(off > RS_NATIVE_OFFSET_MASK))
		return RS_NATIVE_UNKNOWN;
	return RS_NATIVE_FLAG | (uint64_t)slot << RS_NATIVE_INDEX_SHIFT | off;
}

#endif
