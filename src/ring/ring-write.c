// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The ring writer: any thread, signal handlers included, many at once.
 *
 * Positions
 * ---------
 * Every byte ever reserved in a write area (below) has a 64-bit logical
 * position, starting at the run's base (generation << 40) and never reused
 * in the area.  The byte of logical position p lives at the area's
 * data[(p - base) & mask]; the area's `head` is its next free position.  A record's head stores the record's
 * own position, so bytes left over from an older lap, or from an older run
 * in the same area, never pass for a record at a newer position.
 *
 * Write areas
 * -----------
 * The ring is cut into `areas` equal write areas (a power of two: the
 * CPUs the machine can have, fewer for a small ring), each a ring of its
 * own with its own `head`, chunk states and `overwritten` counter, all
 * positions of every area counted from the run's base.  A writer takes its
 * chunks from the area of the CPU it runs on, found in the restartable
 * sequences area the C library registers (__rseq_offset: one load), so
 * the writers of two CPUs share no line of the file: not a head, not an
 * owner word, not the ring's lines a lap later.  The CPU is only a
 * placement: a writer migrated or preempted inside a record finishes it in
 * the chunk it holds, which the owner protocol below keeps its own, so no
 * rseq critical section (and no abort) is needed.  The reader reads each
 * area as a ring and merges them by time.  In stop mode a full area sends
 * the writer on to the next area, so the run stops when every area is full.
 *
 * Chunks
 * ------
 * Each area is cut into chunks of RS_CHUNK bytes, and its `head` only ever
 * moves by whole chunks.  A thread reserves a chunk with one fetch_add and fills
 * it with its own records; when the next record does not fit it closes the
 * chunk with a PAD record and reserves another.  Threads therefore share
 * one atomic per chunk, not per record, and never write the same cache line
 * as another thread's current record.  A record never crosses a chunk, so
 * never the end of the ring.
 *
 *      head ----------------------------------------------.
 *                                                         v
 *   | chunk T1: r r r PAD | chunk T2: r r r ..... | chunk T1: r r ... |
 *     ^ oldest, overwritten next (overwrite mode)
 *
 * Writing one record (the steps the reader in reader.c relies on)
 * ----------------------------------------------------------------
 *   A  reserve: bump the thread's cursor inside its chunk, or fetch_add a
 *      new chunk on `head` (in overwrite mode, with E and G below).
 *   B  commit = 0 with kind, flags and units (one relaxed 8-byte store),
 *      then pos = p (release): anyone who sees the new pos sees commit ==
 *      0.  Pairs with the acquire load of pos in the reader.
 *   C  the body: time, tid, epoch, verdict, words, fields, zero padding,
 *      each byte stored once; the checksum (ring.h) is summed from the
 *      registers the bytes were stored from, so the copy and the sum are
 *      one pass, and only a tail of odd words, fields and padding is read
 *      back from the ring.
 *   D  commit = checksum of the record (release), never 0.  Pairs with
 *      the acquire load of commit in the reader: a reader that sees a
 *      non-zero commit sees all of C.
 *
 * A writer killed at any instant leaves one of: nothing at p (killed
 * before B: the reader finds no record head there and resynchronises),
 * pos = p and commit = 0 (killed in B..D: a partial record, skipped and
 * counted), or a committed record.  Stores of a killed process that
 * executed are in the shared page cache, in program order on x86-64 (TSO);
 * the release orderings make the compiler keep that order, and on weaker
 * CPUs make the hardware keep it too.  So torn writes are the commit
 * protocol's business, not the checksum's.  The checksum covers every byte
 * of the record anyway, not only its head, for what the protocol cannot
 * see: damage done to the file afterwards, and a reader that copies a live
 * file while a writer of the next lap overwrites a committed record under
 * it (the head copied before the overwrite, the body after).
 *
 * Overwrite mode: a chunk is reused one lap later, and a writer preempted
 * inside a record must not find another writer in its chunk when it
 * resumes.  Each chunk has an owner word (struct rs_chunk_state):
 *
 *      free --(reserve: CAS)--> open --(record done)--> parked
 *      parked --(owner's next record: CAS)--> open
 *      parked --(reserve, one lap later: CAS)--> open (the new owner's)
 *      open --(PAD, count published)--> free
 *
 *   E  chunk_reserve(): a chunk whose owner word is open (a writer is
 *      inside a record there) is skipped, at most RS_RESERVE_TRIES times
 *      in a row, then the record is lost; a parked or free one is taken by
 *      CAS (acquire: pairs with the release of F).
 *   F  after D, the owner parks its chunk (release store).
 *   G  before its next record the owner re-enters the chunk by CAS; if a
 *      reserver of a later lap won (E), the owner leaves the chunk to it
 *      and reserves a new one.  The two CAS in E and G decide who writes.
 *   H  after E's CAS, a reserver whose position is a lap behind `head`
 *      (held up after its fetch_add while the chunk was taken, filled and
 *      parked or freed in a later lap) puts the owner word back and skips
 *      the chunk: a parked or free owner word does not say which lap it
 *      belongs to, `head` does.
 *
 * G is one locked instruction per record, and it stays.  A plain load of
 * the owner word instead ("still parked and mine: write") leaves a window
 * between that load and the record's stores: a writer preempted there for
 * a lap of the ring, while E hands the chunk to a writer of the next lap,
 * resumes and overwrites that writer's committed records (they would be
 * counted as damaged, but they would be lost).  Closing the window needs
 * the owner's "I am inside" store ordered before its check of the owner
 * word (store then load: a full barrier, which costs what the CAS costs),
 * or a barrier forced on the other threads from E (membarrier(2): a
 * system call on the write path), or a bound on how long a writer can be
 * held up (there is none).  The owner's word is in a line of its own
 * (state_of()), so the CAS never waits for another CPU; the thread keeps
 * a pointer to it and the open and parked values of its lap, so G and F
 * are one instruction each.  What the CAS does cost is waiting for the
 * previous record's stores to drain; the time is read before it, so the
 * counter read overlaps that wait instead of following it.
 *
 * So two writers never write one chunk at once, and nobody waits.  A
 * writer also leaves its chunk when `head` has moved almost a lap past it
 * (a relaxed load: a stale value only delays that), since records written
 * there would already be outside the window a reader reads.
 * Stop mode: chunks are never reused; a chunk reserved beyond the end of
 * the ring is refused and the record counted in `lost`.
 *
 * Nothing here loops waiting for another writer, takes a lock, allocates
 * or makes a system call, with one exception: a thread's first record
 * reads its thread id with gettid(2) and keeps it in thread-local storage
 * (reset in a fork child).  relstack_recorder__thread_init() takes that
 * system call early for threads that must never make one.  Timestamps come
 * from the run clock (ring-clock.c): the CPU's counter when it can stand
 * for CLOCK_MONOTONIC (one read, rs_arch_ticks()), else
 * clock_gettime(CLOCK_MONOTONIC), which the vDSO answers without entering
 * the kernel.
 *
 * A signal handler that interrupts a record of its own thread (the
 * thread's `busy` flag is set) does not touch the thread's chunk: it takes
 * a chunk of its own for its one record.
 *
 * Retention: each new chunk notes the object table epoch of its first
 * record; when overwrite mode reuses chunk i of an area, the oldest chunk
 * the area still holds is i + 1, and its epoch the area's horizon; the
 * smallest horizon of all areas becomes this recorder's horizon in the
 * object table (rs_objtab_hold_update), so a slot an unread record may name
 * is not reused.  The table's word is stored only when that smallest
 * horizon changes (a load first): epochs change when objects load and
 * unload, not per chunk, so the shared line is read, not written.  Two
 * reusers racing may store a smaller horizon than the newest, never a
 * larger one (area horizons only grow): retention errs on keeping.  Records older than their chunk's first record (a writer
 * that captured, then stalled) are still safe: the reader checks every
 * word against the slot's load and unload epochs.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/rseq.h>
#include <time.h>
#include <unistd.h>

#include "capture/objtab.h"
#include "ring/ring.h"

struct rs_ring_tls {
	uint64_t serial;      /* ring the chunk belongs to, 0: none */
	struct rs_ring_area *area; /* the area it lies in */
	uint64_t start, cur, end;
	unsigned char *chunk; /* where start lives in the ring */
	_Atomic uint32_t *owner; /* the chunk's owner word (overwrite mode) */
	uint32_t open, parked; /* its values for this lap: OWNER_OPEN(lap), OWNER_PARKED(lap) */
	uint32_t count;       /* records committed in the chunk */
	uint32_t tid;
	volatile sig_atomic_t busy;
};

static __thread struct rs_ring_tls tls __attribute__((tls_model("initial-exec")));

static void atfork_child(void)
{
	memset(&tls, 0, sizeof(tls));
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

void rs_ring_init(struct rs_ring *r)
{
	static _Atomic uint64_t serials;

	pthread_once(&atfork_once, atfork_register);
	r->serial = atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
}

uint32_t rs_ring_test_areas;

uint32_t rs_ring_areas(uint64_t ring_size)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	uint32_t want = rs_ring_test_areas ? rs_ring_test_areas : cpus > 1 ? (uint32_t)cpus : 1, n = 1;

	while (n < want && n < RS_MAX_AREAS && ring_size / (2 * n) >= RS_MIN_AREA_CHUNKS * RS_CHUNK)
		n *= 2;
	return n;
}

/*
 * The CPU this thread runs on, as a placement hint: the kernel keeps it in
 * the thread's rseq area, which the C library registered; sched_getcpu()
 * (the vDSO) where there is none.
 */
static inline unsigned current_cpu(void)
{
	if (rs_likely(__rseq_size > 0)) {
		const struct rseq *rs = (const struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
		int32_t c = (int32_t)*(const volatile uint32_t *)&rs->cpu_id;

		if (rs_likely(c >= 0))
			return (unsigned)c;
	}
	{
		int c = sched_getcpu();

		return c < 0 ? 0u : (unsigned)c;
	}
}

uint32_t rs_ring_tid(void);
uint32_t rs_ring_tid(void)
{
	if (rs_unlikely(!tls.tid))
		tls.tid = (uint32_t)gettid();
	return tls.tid;
}


static inline void count_lost(struct rs_ring *r)
{
	atomic_fetch_add_explicit((_Atomic uint64_t *)&r->run->lost, 1, memory_order_relaxed);
}

static inline unsigned char *at(struct rs_ring *r, struct rs_ring_area *A, uint64_t p)
{
	return A->data + ((p - r->base) & r->mask);
}

static inline uint32_t chunk_index(struct rs_ring *r, uint64_t p)
{
	return (uint32_t)(((p - r->base) & r->mask) / RS_CHUNK);
}

/*
 * The state of chunk i of an area of n chunks lives at entry
 * (i % 8) * (n / 8) + i / 8 of the area's share: chunks reserved one after
 * the other (by different threads of one CPU, say) keep their owner words
 * in different cache lines.
 */
static inline struct rs_chunk_state *state_of(struct rs_ring *r, struct rs_ring_area *A, uint32_t i)
{
	return &A->chunks[(i % 8) * (r->nchunks / 8) + i / 8];
}

static inline _Atomic uint32_t *owner_of(struct rs_ring *r, struct rs_ring_area *A, uint64_t start)
{
	return (_Atomic uint32_t *)&state_of(r, A, chunk_index(r, start))->owner;
}

static inline uint32_t lap_of(struct rs_ring *r, uint64_t q)
{
	return (uint32_t)((q - r->base) >> r->size_shift);
}

#define OWNER_OPEN(lap) ((lap) << 1 | 1)    /* a writer is inside a record of this chunk */
#define OWNER_PARKED(lap) (((lap) + 1) << 1) /* the chunk's writer is between records */
#define OWNER_FREE 0u

/*
 * G: enter a chunk of this thread's for one record: parked -> open.  Fails if
 * a writer of a later lap took the chunk meanwhile.  The CAS pairs with the
 * CAS in chunk_reserve(): exactly one of them wins.
 */
static inline bool chunk_enter(struct rs_ring *r, struct rs_ring_area *A, uint64_t start)
{
	uint32_t lap = lap_of(r, start), expect = OWNER_PARKED(lap);

	return atomic_compare_exchange_strong_explicit(owner_of(r, A, start), &expect, OWNER_OPEN(lap),
						       memory_order_acquire, memory_order_relaxed);
}

/* With the chunk open: PAD to its end, publish its count, free it. */
static void chunk_finish(struct rs_ring *r, struct rs_ring_area *A, uint64_t cur, uint64_t end, uint64_t start,
			 uint32_t count)
{
	if (end > cur) {
		struct rs_rec_head *h = (struct rs_rec_head *)at(r, A, cur);

		atomic_store_explicit((_Atomic uint32_t *)&h->commit, 0, memory_order_relaxed);
		h->kind = RS_REC_PAD;
		h->flags = 0;
		h->units = (uint16_t)((end - cur) / 16);
		atomic_store_explicit((_Atomic uint64_t *)&h->pos, cur, memory_order_release);
		atomic_store_explicit((_Atomic uint32_t *)&h->commit,
				      rs_rec_sum(r->seed, r->key, cur, h, RS_REC_HEAD), memory_order_release);
	}
	if (count)
		atomic_store_explicit((_Atomic uint32_t *)&state_of(r, A, chunk_index(r, start))->count, count,
				      memory_order_relaxed);
	if (r->mode == RS_MODE_OVERWRITE)
		atomic_store_explicit(owner_of(r, A, start), OWNER_FREE, memory_order_release);
}

/* Close this thread's chunk, if it is still this thread's. */
static void chunk_close(struct rs_ring *r, struct rs_ring_area *A, uint64_t cur, uint64_t end, uint64_t start,
			uint32_t count)
{
	if (r->mode == RS_MODE_OVERWRITE && !chunk_enter(r, A, start))
		return;
	chunk_finish(r, A, cur, end, start, count);
}

/*
 * Area @A now holds nothing older than epoch @next: the recorder's horizon
 * is the smallest of the areas' (an area never written holds nothing:
 * UINT64_MAX).  Written only when it changes.
 */
static void horizon_move(struct rs_ring *r, struct rs_ring_area *A, uint64_t next)
{
	uint64_t low = UINT64_MAX;

	if (!next || next == atomic_load_explicit(&A->horizon, memory_order_relaxed))
		return;
	atomic_store_explicit(&A->horizon, next, memory_order_relaxed);
	for (uint32_t a = 0; a < r->areas; a++) {
		uint64_t h = atomic_load_explicit(&r->area[a].horizon, memory_order_relaxed);

		if (h < low)
			low = h;
	}
	if (low != atomic_load_explicit(&r->held, memory_order_relaxed)) {
		atomic_store_explicit(&r->held, low, memory_order_relaxed);
		rs_objtab_hold_update(r->holder, low);
	}
}

/*
 * A and E: a new chunk, returned open.  0 when stop mode is full, or when
 * RS_RESERVE_TRIES chunks in a row were busy.
 *
 * Overwrite mode: the chunk one lap behind may have a writer inside a
 * record right now (preempted there, say): its owner word is open, and
 * the chunk is skipped - its bytes stay that writer's - for the next one.
 * A parked or free chunk is taken with one CAS; the thread that parked it
 * finds out at its next chunk_enter() and moves on.  So no two writers
 * ever write one chunk at once, and no writer waits for another.
 */
#define RS_RESERVE_TRIES 4

/* Stop mode: a chunk of the CPU's area, or of the next area that has one left. */
static uint64_t chunk_reserve_stop(struct rs_ring *r, uint64_t epoch, struct rs_ring_area **area)
{
	unsigned first = current_cpu();

	for (uint32_t k = 0; k < r->areas; k++) {
		struct rs_ring_area *A = &r->area[(first + k) & (r->areas - 1)];
		uint64_t q;

		/* a full area's head is not moved further: it stays within a lap of its records */
		if (atomic_load_explicit(A->head, memory_order_relaxed) + RS_CHUNK > r->base + r->size)
			continue;
		q = atomic_fetch_add_explicit(A->head, RS_CHUNK, memory_order_relaxed);
		if (q + RS_CHUNK > r->base + r->size)
			continue;
		atomic_store_explicit(&A->chunk_epoch[chunk_index(r, q)], epoch, memory_order_relaxed);
		*area = A;
		return q;
	}
	return 0;
}

static uint64_t chunk_reserve(struct rs_ring *r, uint64_t epoch, struct rs_ring_area **area)
{
	struct rs_ring_area *A;

	if (r->mode == RS_MODE_STOP)
		return chunk_reserve_stop(r, epoch, area);
	A = &r->area[current_cpu() & (r->areas - 1)];
	for (unsigned tries = 0; tries < RS_RESERVE_TRIES; tries++) {
		uint64_t q = atomic_fetch_add_explicit(A->head, RS_CHUNK, memory_order_relaxed);
		uint32_t i = chunk_index(r, q), lap, prev;

		lap = lap_of(r, q);
		prev = atomic_load_explicit(owner_of(r, A, q), memory_order_relaxed);
		if (prev & 1)
			continue; /* a writer is inside: skip the chunk */
		/* pairs with the CAS of G and, acquire, with the release stores of F and chunk_finish() */
		if (!atomic_compare_exchange_strong_explicit(owner_of(r, A, q), &prev, OWNER_OPEN(lap),
							     memory_order_acquire, memory_order_relaxed))
			continue;
		/*
		 * H: a reserver held up between its fetch_add and the CAS may find the
		 * chunk already taken in a later lap, and parked or freed there: the
		 * CAS alone cannot tell, and the chunk's bytes are that lap's records.
		 * The later reserver's fetch_add came before the release store this
		 * CAS read, so `head` now shows it: q is a lap or more behind, give
		 * the owner word back untouched and skip the chunk (the same test as
		 * the lapped writer's in write_stage(); q is outside the window anyway).
		 */
		if (rs_unlikely(atomic_load_explicit(A->head, memory_order_relaxed) - q > r->size - RS_CHUNK)) {
			atomic_store_explicit(owner_of(r, A, q), prev, memory_order_release);
			continue;
		}
		if (lap) {
			uint32_t old = atomic_exchange_explicit((_Atomic uint32_t *)&state_of(r, A, i)->count, 0,
								memory_order_relaxed);

			if (old)
				atomic_fetch_add_explicit(A->overwritten, old, memory_order_relaxed);
			/* the oldest chunk the area still holds is the next one */
			if (r->holder >= 0)
				horizon_move(r, A, atomic_load_explicit(&A->chunk_epoch[(i + 1) % r->nchunks],
								 memory_order_relaxed));
		} else if (rs_unlikely(atomic_load_explicit(&A->horizon, memory_order_relaxed) == UINT64_MAX) &&
			   r->holder >= 0) {
			horizon_move(r, A, epoch); /* the area's first chunk */
		}
		atomic_store_explicit(&A->chunk_epoch[i], epoch, memory_order_relaxed);
		*area = A;
		return q;
	}
	return 0;
}

/* The record's time, in the run's clock. */
static inline uint64_t ring_time(const struct rs_ring *r)
{
	return rs_likely(r->clock == RS_CLOCK_TSC) ? rs_arch_ticks() : rs_clock_ns(CLOCK_MONOTONIC);
}

/* B, C, D at position p, at @d in the ring; stops early at @stage (test hook) when non-zero. */
static inline __attribute__((always_inline)) void record_put(struct rs_ring *r, unsigned char *d, uint64_t p,
								     size_t len, const struct rs_rec_in *in, uint32_t tid,
								     uint64_t time, unsigned stage)
{
	struct rs_rec_head *h = (struct rs_rec_head *)d;
	unsigned char *w = d + RS_REC_FIXED;
	/* a kind 5 record carries its 8-byte reference where the words would be, and the depth in nwords */
	bool ref = in->kind == RS_REC_STACK_REF;
	const uint64_t *words = ref ? &in->ref : in->words;
	unsigned ws = ref ? 8 : r->word_size;
	size_t nwords = ref ? 1 : in->nwords, wbytes = nwords * ws, done;
	uint32_t head_word = (uint32_t)in->kind | (uint32_t)(in->flags & 0xff) << 8 | (uint32_t)(len / 16) << 16;
	rs_nh_acc acc, b0, b1;

	/* B: commit = 0 with the head word, then pos; pairs with the reader's acquire load of pos */
	atomic_store_explicit((_Atomic uint64_t *)(d + 8), (uint64_t)head_word << 32, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint64_t *)&h->pos, p, memory_order_release);
	if (stage == 1)
		return;
	/* C: the body head (time, epoch | tid, reasons, event_id, nwords, fields_size, reserved 0) */
	b0 = rs_nh_make(time, in->epoch);
	b1 = rs_nh_make((uint64_t)tid | (uint64_t)in->reasons << 32,
			(uint64_t)in->event_id | (uint64_t)in->nwords << 16 | (uint64_t)in->fields_size << 32);
	rs_nh_store(d + RS_REC_HEAD, b0);
	rs_nh_store(d + RS_REC_HEAD + 16, b1);
	acc = rs_nh_block(rs_nh_block(rs_nh_zero(), b0, r->key), b1, r->key + 4);
	done = RS_REC_FIXED;
	if (ws == 8) {
		/* words two at a time: each 16 bytes loaded once, stored once, summed from the register */
		const unsigned char *src = (const unsigned char *)words;
		size_t pairs = nwords / 2;

		for (size_t i = 0; i < pairs; i++) {
			rs_nh_acc m = rs_nh_load(src + 16 * i);

			rs_nh_store(w + 16 * i, m);
			acc = rs_nh_block(acc, m, r->key + (RS_REC_FIXED - RS_REC_HEAD) / 4 + 4 * i);
		}
		done += 16 * pairs;
	}
	if (stage == 2)
		return;
	if (done < len) {
		/*
		 * The tail: an odd word or 4-byte words, then fields.  Padding is
		 * under 16 bytes, so zeroing the last block first zeroes all of it.
		 * Summed back from the ring.
		 */
		rs_nh_store(d + len - 16, rs_nh_zero());
		if (ws == 8) {
			if (nwords & 1)
				memcpy(w + (done - RS_REC_FIXED), &words[nwords - 1], 8);
		} else {
			for (size_t i = 0; i < nwords; i++) {
				uint32_t v = (uint32_t)words[i];

				memcpy(w + 4 * i, &v, 4);
			}
		}
		if (in->fields_size)
			memcpy(w + wbytes, in->fields, in->fields_size);
		acc = rs_nh_mem(acc, r->key, d, done, len);
	}
	/* D: pairs with the reader's acquire load of commit */
	atomic_store_explicit((_Atomic uint32_t *)&h->commit, rs_rec_sum_final(r->seed, p, head_word, acc),
			      memory_order_release);
}

/* A new chunk for this thread, open: the thread keeps where it lives and its owner word. */
static inline void tls_take(struct rs_ring *r, struct rs_ring_tls *t, struct rs_ring_area *A, uint64_t p)
{
	uint32_t lap = lap_of(r, p);

	t->serial = r->serial;
	t->area = A;
	t->start = p;
	t->end = p + RS_CHUNK;
	t->chunk = at(r, A, p);
	t->owner = owner_of(r, A, p);
	t->open = OWNER_OPEN(lap);
	t->parked = OWNER_PARKED(lap);
	t->count = 0;
}

/* Inlined into both callers: in rs_ring_write() the test hook's stage checks fold away. */
static inline __attribute__((always_inline)) int write_stage(struct rs_ring *r, const struct rs_rec_in *in,
							     unsigned stage)
{
	struct rs_ring_tls *t = &tls;
	/*
	 * The time first: the counter read then runs while the CAS of G waits
	 * for the previous record's stores to drain, instead of after it.
	 */
	uint64_t time = ring_time(r);
	struct rs_ring_area *A;
	size_t len;
	uint32_t tid;
	uint64_t p;

	if (rs_unlikely(in->nwords > RS_MAX_WORDS || in->fields_size > RS_MAX_FIELDS_SIZE)) {
		count_lost(r);
		return -E2BIG;
	}
	len = (RS_REC_FIXED + (in->kind == RS_REC_STACK_REF ? RS_STACK_REF_SIZE : in->nwords * r->word_size) +
	       in->fields_size + 15) & ~(size_t)15;
	tid = rs_unlikely(in->tid_given) ? in->tid : t->tid;
	if (rs_unlikely(!tid && !in->tid_given))
		tid = rs_ring_tid();

	if (rs_unlikely(t->busy)) {
		/* A signal handler interrupted this thread's own record: a chunk of its own. */
		uint64_t q = chunk_reserve(r, in->epoch, &A);

		if (!q) {
			count_lost(r);
			return -ENOSPC;
		}
		record_put(r, at(r, A, q), q, len, in, tid, time, stage);
		chunk_finish(r, A, q + len, q + RS_CHUNK, q, 1);
		return 0;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst); /* busy is set before the chunk is touched */

	if (rs_likely(t->serial == r->serial && t->cur + len <= t->end)) {
		if (r->mode == RS_MODE_OVERWRITE) {
			/* lapped?  pairs with nothing: a stale head only delays this check */
			uint64_t h = atomic_load_explicit(t->area->head, memory_order_relaxed);
			uint32_t expect = t->parked;

			/*
			 * G (chunk_enter() with the thread's cached owner word): about to
			 * leave the window, or taken over: move on (it stays parked, for
			 * others).  The CAS pairs with the CAS in chunk_reserve() (E):
			 * exactly one of them wins.
			 */
			if (rs_unlikely(h - t->start > r->size - RS_CHUNK ||
					!atomic_compare_exchange_strong_explicit(t->owner, &expect, t->open,
										 memory_order_acquire,
										 memory_order_relaxed))) {
				t->serial = 0;
				goto fresh;
			}
		}
		p = t->cur;
	} else {
		if (t->serial == r->serial)
			chunk_close(r, t->area, t->cur, t->end, t->start, t->count);
fresh:
		p = chunk_reserve(r, in->epoch, &A);
		if (!p) {
			t->serial = 0;
			atomic_signal_fence(memory_order_seq_cst);
			t->busy = 0;
			count_lost(r);
			return -ENOSPC;
		}
		tls_take(r, t, A, p);
	}
	t->cur = p + len;
	record_put(r, t->chunk + (p - t->start), p, len, in, tid, time, stage);
	/* F: open -> parked; release, pairs with the acquire of whoever takes the chunk next (E, G) */
	if (r->mode == RS_MODE_OVERWRITE)
		atomic_store_explicit(t->owner, t->parked, memory_order_release);
	t->count++;
	atomic_signal_fence(memory_order_seq_cst); /* the record is done before busy is cleared */
	t->busy = 0;
	return 0;
}

int rs_ring_write(struct rs_ring *r, const struct rs_rec_in *in)
{
	return write_stage(r, in, 0);
}

int rs_ring_write_partial(struct rs_ring *r, const struct rs_rec_in *in, unsigned stage)
{
	return write_stage(r, in, stage);
}
