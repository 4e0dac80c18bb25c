// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Address -> entry word, on the capture path.
 *
 * Async-signal-safe unless the caller asks for a re-scan: reads only the
 * object table's latch (objtab-local.h), writes only the caller's array
 * and relaxed counters.  A run of addresses in one object costs one range
 * check each; any other address costs a binary search over the loaded
 * objects' text ranges.
 */
#include <errno.h>

#include "capture/objtab-local.h"

static size_t encode_once(const uintptr_t *addrs, uint64_t *words, size_t n, uint64_t *epoch,
			  size_t *misses, bool *ok)
{
	struct rs_objtab_view v;
	size_t hits = 0;
	unsigned tries = 0;

	do {
		hits = 0;
		*misses = 0;
		rs_objtab_begin(&v);
		for (size_t i = 0; i < n; i++) {
			if (rs_likely(rs_objtab_find(&v, addrs[i]))) {
				words[i] = rs_objtab_view_word(&v, addrs[i]);
				hits += words[i] != RS_NATIVE_UNKNOWN;
			} else {
				words[i] = RS_NATIVE_UNKNOWN;
				(*misses)++;
			}
		}
		if (rs_objtab_end(&v)) {
			*ok = true;
			if (epoch)
				*epoch = rs_objtab_view_epoch(&v);
			return hits;
		}
	} while (++tries < RS_LATCH_TRIES);
	/* The table changed under us every time: never return a guess. */
	rs_objtab_count_busy();
	for (size_t i = 0; i < n; i++)
		words[i] = RS_NATIVE_UNKNOWN;
	*ok = false;
	*misses = n;
	if (epoch)
		*epoch = 0;
	return 0;
}

size_t relstack_encode(const uintptr_t *addrs, uint64_t *words, size_t n, unsigned flags, uint64_t *epoch)
{
	size_t misses, hits;
	bool ok;

	hits = encode_once(addrs, words, n, epoch, &misses, &ok);
	if (misses && (flags & RELSTACK_ENCODE_RESCAN)) {
		int saved = errno;

		if (rs_objtab_scan(false) > 0)
			hits = encode_once(addrs, words, n, epoch, &misses, &ok);
		errno = saved;
	}
	if (misses)
		rs_objtab_count_unknown(misses);
	return hits;
}

bool rs_objtab_lookup(uintptr_t addr, struct rs_lookup *out)
{
	struct rs_objtab_view v;

	for (unsigned tries = 0; tries < RS_LATCH_TRIES; tries++) {
		bool found;

		rs_objtab_begin(&v);
		found = rs_objtab_find(&v, addr);
		out->found = found;
		out->slot = rs_objtab_view_slot(&v);
		out->flags = rs_objtab_view_flags(&v);
		out->bias = v.bias;
		out->start = v.start;
		out->end = v.end;
		out->epoch = rs_objtab_view_epoch(&v);
		if (rs_objtab_end(&v)) {
			if (!found)
				out->slot = out->flags = 0;
			return found;
		}
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
		for (uint32_t i = 0; i < v.n && i < RS_OBJTAB_SLOTS; i++) {
			const struct rs_index_range *r = &v.ix->r[i];
			uintptr_t a;

			if ((uint32_t)atomic_load_explicit(&r->slot_flags, memory_order_relaxed) != slot)
				continue;
			a = atomic_load_explicit(&r->bias, memory_order_relaxed) + (uintptr_t)off;
			if (a - atomic_load_explicit(&r->start, memory_order_relaxed) <
			    atomic_load_explicit(&r->end, memory_order_relaxed) -
				    atomic_load_explicit(&r->start, memory_order_relaxed))
				addr = a;
			break;
		}
		if (rs_objtab_end(&v))
			return addr;
	}
	return 0;
}
