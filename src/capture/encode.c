// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Address -> entry word, on the capture path.
 *
 * Async-signal-safe unless the caller asks for a re-scan: reads only the
 * object table's latch (objtab-local.h), writes only the caller's array
 * and relaxed counters.  A run of addresses in one object costs one range
 * check each; any other address costs a branch-free binary search over the
 * loaded objects' text ranges.
 */
#include <errno.h>

#include "capture/objtab-local.h"

/*
 * One pass over the addresses under one latch read.  Returns the number of
 * addresses in no object, or SIZE_MAX when the table changed under the
 * pass (the words are then garbage and must be redone).
 */
static RS_ALWAYS_INLINE size_t encode_pass(const uintptr_t *addrs, uint64_t *words,
								size_t n, uint64_t *epoch)
{
	struct rs_objtab_view v;
	size_t misses = 0;
	uint64_t e;

	rs_objtab_begin(&v);
	for (size_t i = 0; i < n; i++) {
		if (rs_likely(rs_objtab_find(&v, addrs[i]))) {
			words[i] = rs_objtab_view_word(&v, addrs[i]);
			misses += words[i] == RS_NATIVE_UNKNOWN; /* offset too large for the word */
		} else {
			words[i] = RS_NATIVE_UNKNOWN;
			misses++;
		}
	}
	/* the epoch too is read before end: after it, the writer may be rewriting this copy */
	e = rs_objtab_view_epoch(&v);
	if (rs_unlikely(!rs_objtab_end(&v)))
		return SIZE_MAX;
	if (epoch)
		*epoch = e;
	return misses;
}

static size_t encode_retry(const uintptr_t *addrs, uint64_t *words, size_t n, uint64_t *epoch)
{
	for (unsigned tries = 1; tries < RS_LATCH_TRIES; tries++) {
		size_t misses = encode_pass(addrs, words, n, epoch);

		if (misses != SIZE_MAX)
			return misses;
	}
	/* The table changed under us every time: never return a guess. */
	rs_objtab_count_busy();
	for (size_t i = 0; i < n; i++)
		words[i] = RS_NATIVE_UNKNOWN;
	if (epoch)
		*epoch = 0;
	return n;
}

/* Misses, a table that changed under the pass, re-scans: off the fast path. */
static __attribute__((noinline, cold)) size_t encode_slow(const uintptr_t *addrs, uint64_t *words, size_t n,
							   unsigned flags, uint64_t *epoch, size_t misses)
{
	if (misses == SIZE_MAX)
		misses = encode_retry(addrs, words, n, epoch);
	if (misses && (flags & RELSTACK_ENCODE_RESCAN)) {
		int saved = errno;

		if (rs_objtab_scan(false) > 0)
			misses = encode_retry(addrs, words, n, epoch);
		errno = saved;
	}
	if (misses)
		rs_objtab_count_unknown(misses);
	return n - misses;
}

size_t relstack_encode(const uintptr_t *addrs, uint64_t *words, size_t n, unsigned flags, uint64_t *epoch)
{
	/* One address is common enough (a single pc) to get a copy of its own, without the loop. */
	size_t misses = n == 1 ? encode_pass(addrs, words, 1, epoch) : encode_pass(addrs, words, n, epoch);

	if (rs_likely(misses == 0))
		return n;
	return encode_slow(addrs, words, n, flags, epoch, misses);
}

bool rs_objtab_lookup(uintptr_t addr, struct rs_lookup *out)
{
	struct rs_objtab_view v;

	for (unsigned tries = 0; tries < RS_LATCH_TRIES; tries++) {
		bool found;

		rs_objtab_begin(&v);
		found = rs_objtab_find(&v, addr);
		out->found = found;
		out->slot = found ? rs_objtab_view_slot(&v) : 0;
		out->flags = found ? rs_objtab_view_flags(&v) : 0;
		out->bias = v.bias;
		out->restorer = found ? v.restorer : 0;
		out->cfi = found ? v.cfi : NULL;
		out->start = v.start;
		out->end = v.end;
		out->epoch = rs_objtab_view_epoch(&v);
		if (rs_objtab_end(&v))
			return found;
	}
	rs_objtab_count_busy();
	out->found = false;
	return false;
}

uintptr_t relstack_word_address(uint64_t word)
{
	struct rs_objtab_view v;
	uint32_t slot;
	uint64_t off;

	if ((word & RS_NATIVE_FLAG) == 0) {
		slot = 0;
		off = word;
	} else {
		slot = (uint32_t)((word & ~RS_NATIVE_FLAG) >> RS_NATIVE_INDEX_SHIFT);
		off = word & RS_NATIVE_OFFSET_MASK;
	}
	for (unsigned tries = 0; tries < RS_LATCH_TRIES; tries++) {
		uintptr_t addr = 0;

		rs_objtab_begin(&v);
		for (uint32_t i = 0; i < v.n && i < RS_INDEX_MAX; i++) {
			const struct rs_index_range *r = &v.ix->r[i];
			uintptr_t a, lo, hi;

			if ((uint32_t)atomic_load_explicit(&r->slot_flags, memory_order_relaxed) != slot)
				continue;
			a = atomic_load_explicit(&r->bias, memory_order_relaxed) + (uintptr_t)off;
			lo = atomic_load_explicit(&r->start, memory_order_relaxed);
			hi = atomic_load_explicit(&r->end, memory_order_relaxed);
			if (a - lo < hi - lo)
				addr = a;
			break;
		}
		if (rs_objtab_end(&v))
			return addr;
	}
	return 0;
}
