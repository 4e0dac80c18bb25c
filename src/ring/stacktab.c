// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The stack table: each distinct relative stack of a run written once,
 * and records that name it instead of carrying its words.
 *
 *   table:  [ head | 4096 ] [ index: buckets x u64 ] [ arena: entries, 16-byte aligned ]
 *   slot:   0 empty, or (hash >> 32) << 32 | (entry offset / 16 + 1)
 *   entry:  [ tag | sum | nwords | units ] [ words, zero-padded to 16 ]
 *   record: kind 5, nwords = the depth, then (entry offset / 16, entry sum)
 *
 * Entries are written once and never moved, changed or reused in the
 * run: a table that fills up stays full, and the stacks that find no room
 * are written inline (counted in the head's `full`).  So an entry offset
 * names one stack for the whole run, and an old record, overwritten or
 * not, can never pick up a newer stack.  The run start clears the table
 * with the rest of the run area.
 *
 * Inserting, from any thread or signal handler, many at once, each step
 * a store or one atomic instruction (no lock, no wait, no system call):
 *
 *   S1  hash: NH of the words under the run's record key (ring.h).  For
 *       8-byte words it is also the NH of the entry's bytes, so the
 *       entry's checksum costs no second pass.
 *   S2  probe from bucket hash & mask, at most RS_STACK_PROBES slots, each
 *       loaded with acquire (pairs with the release CAS of S5): a slot
 *       whose hash bits match, naming an entry with the same words, is a
 *       hit; an empty slot ends the probe, the stack is not there.
 *   S3  reserve: fetch_add on head->used; bytes beyond the arena mean full.
 *   S4  write the entry: words, padding, head, and its sum last.
 *   S5  publish: CAS the empty slot from S2 to the entry (release: whoever
 *       loads the slot sees all of S4).  A writer that loses the CAS to
 *       another inserting the same stack uses that one's entry; its own
 *       stays in the arena, named by no slot and no record, and readers
 *       never look at it.  A loser to another stack goes on probing with
 *       its entry.  So the index holds one entry per stack: writers of one
 *       stack probe the same slots in the same order, and a slot changes
 *       once.
 *
 * Only then does the record (ring-write.c, A..D) name the entry, in the
 * same thread: a record never names an entry whose S4 has not completed,
 * in the file as in memory (stores of a killed process are in the page
 * cache in program order; the release orderings keep that order).  A
 * writer killed in S3..S5 leaves arena bytes no record names.  The record
 * also carries the entry's sum, and its own checksum covers it: a reader
 * resolves a record only to the entry whose sum and depth it names.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "ring/ring.h"

_Static_assert(sizeof(struct rs_stack_head) == 64, "stack table head is 64 bytes");
_Static_assert(offsetof(struct rs_stack_head, full) == 8, "stack table full at 8");
_Static_assert(sizeof(struct rs_stack_entry) == 16, "stack table entry head is 16 bytes");
_Static_assert(offsetof(struct rs_stack_entry, sum) == 8 && offsetof(struct rs_stack_entry, nwords) == 12 &&
	       offsetof(struct rs_stack_entry, units) == 14, "stack table entry: sum at 8, nwords at 12, units at 14");
_Static_assert(sizeof(struct rs_stack_entry) + RS_MAX_WORDS * 8 <= RS_MAX_RECORD,
	       "the record checksum's key covers the largest entry");
_Static_assert(RS_STACK_REF_SIZE == 8, "a reference is 8 bytes");

void rs_stacktab_attach(struct rs_stacktab *t, unsigned char *mem, uint64_t ring_size)
{
	struct rs_stack_geo g = rs_stack_geo(ring_size);

	t->head = (struct rs_stack_head *)mem;
	t->index = (_Atomic uint64_t *)(mem + g.index_off);
	t->arena = mem + g.arena_off;
	t->arena_size = g.arena_size;
	t->mask = g.buckets - 1;
}

/* S1: NH of the words as 16-byte blocks from an entry's byte 16 (key word 4b for block b). */
static inline rs_nh_acc words_nh(const uint32_t *key, const uint64_t *w, size_t n)
{
	rs_nh_acc acc = rs_nh_zero(), acc2 = rs_nh_zero();
	size_t i;

	/* two blocks a turn, into two sums: half the loop's own instructions, no chain through one sum */
	for (i = 0; i + 4 <= n; i += 4) {
		acc = rs_nh_block(acc, rs_nh_load(w + i), key + 2 * i);
		acc2 = rs_nh_block(acc2, rs_nh_load(w + i + 2), key + 2 * i + 4);
	}
	acc = rs_nh_add(acc, acc2);
	if (i + 2 <= n) {
		acc = rs_nh_block(acc, rs_nh_load(w + i), key + 2 * i);
		i += 2;
	}
	if (n & 1)
		acc = rs_nh_block(acc, rs_nh_make(w[n - 1], 0), key + 2 * (n - 1));
	return acc;
}

static inline size_t entry_len(size_t n, unsigned ws)
{
	return (sizeof(struct rs_stack_entry) + n * ws + 15) & ~(size_t)15;
}

/* Does the entry at @e hold the words @w[0..n)? */
static inline bool entry_same(const struct rs_stack_entry *e, const uint64_t *w, size_t n, unsigned ws)
{
	const unsigned char *d = (const unsigned char *)(e + 1);

	if (e->nwords != n)
		return false;
	if (ws == 8)
		return memcmp(d, w, n * 8) == 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t x;

		memcpy(&x, d + 4 * i, 4);
		if (x != (uint32_t)w[i])
			return false;
	}
	return true;
}

/* The record's reference to the entry of slot value @s. */
static inline uint64_t slot_ref(const struct rs_stacktab *t, uint64_t s)
{
	uint64_t unit = (s & 0xffffffffu) - 1;

	return (uint64_t)((const struct rs_stack_entry *)(t->arena + unit * 16))->sum << 32 | unit;
}

/* S3, S4: a new entry for the words; its offset, or UINT64_MAX when the arena is full. */
static uint64_t entry_put(struct rs_ring *r, const uint64_t *w, size_t n, rs_nh_acc acc)
{
	struct rs_stacktab *t = &r->stacks;
	size_t len = entry_len(n, r->word_size);
	uint64_t off;
	struct rs_stack_entry *e;
	unsigned char *d;
	uint32_t head_word = (uint32_t)n | (uint32_t)(len / 16) << 16;

	/* a full arena stays full: its counter is not pushed on by every later stack */
	if (atomic_load_explicit((_Atomic uint64_t *)&t->head->used, memory_order_relaxed) + len > t->arena_size)
		return UINT64_MAX;
	off = atomic_fetch_add_explicit((_Atomic uint64_t *)&t->head->used, len, memory_order_relaxed);
	if (off + len > t->arena_size)
		return UINT64_MAX;
	RS_KILL_POINT("stack-reserved");
	e = (struct rs_stack_entry *)(t->arena + off);
	d = (unsigned char *)(e + 1);
	rs_nh_store(t->arena + off + len - 16, rs_nh_zero()); /* the padding */
	if (r->word_size == 8) {
		memcpy(d, w, n * 8);
	} else {
		for (size_t i = 0; i < n; i++) {
			uint32_t x = (uint32_t)w[i];

			memcpy(d + 4 * i, &x, 4);
		}
	}
	e->tag = RS_STACK_TAG | off;
	e->nwords = (uint16_t)n;
	e->units = (uint16_t)(len / 16);
	RS_KILL_POINT("stack-written");
	/* the words' NH is the entry's when words are 8 bytes; 4-byte words are summed from the arena */
	e->sum = r->word_size == 8 ? rs_rec_sum_final(r->seed, e->tag, head_word, acc)
				   : rs_rec_sum(r->seed, r->key, e->tag, e, len);
	return off;
}

uint64_t rs_stacktab_ref(struct rs_ring *r, const uint64_t *words, size_t n)
{
	struct rs_stacktab *t = &r->stacks;
	rs_nh_acc acc;
	uint64_t hash, tag, mine = 0, off = UINT64_MAX;

	if (!t->head || n == 0 || n > RS_MAX_WORDS)
		return 0;
	/* S1 */
	acc = words_nh(r->key, words, n);
	hash = rs_mix64(rs_nh_fold(acc) ^ n);
	tag = hash >> 32 << 32;
	/* S2 .. S5 */
	for (uint64_t k = 0; k < RS_STACK_PROBES; k++) {
		_Atomic uint64_t *slot = &t->index[(hash + k) & t->mask];
		/* pairs with the release CAS below (S5), of this writer or another */
		uint64_t s = atomic_load_explicit(slot, memory_order_acquire);

		while (s == 0) {
			if (off == UINT64_MAX) {
				off = entry_put(r, words, n, acc);
				if (off == UINT64_MAX)
					goto full;
				mine = tag | (off / 16 + 1);
			}
			/* S5: release, pairs with the acquire loads of S2 */
			if (atomic_compare_exchange_strong_explicit(slot, &s, mine, memory_order_release,
								    memory_order_acquire)) {
				RS_KILL_POINT("stack-published");
				return slot_ref(t, mine);
			}
		}
		if ((s & ~0xffffffffull) == tag &&
		    entry_same((const struct rs_stack_entry *)(t->arena + ((s & 0xffffffffu) - 1) * 16), words, n,
			       r->word_size))
			return slot_ref(t, s);
	}
full:
	atomic_fetch_add_explicit((_Atomic uint64_t *)&t->head->full, 1, memory_order_relaxed);
	return 0;
}
