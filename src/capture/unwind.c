// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The frame-pointer unwinder and its verdict.
 *
 * Owns the walk: from a frame record (or an interrupted context) up the
 * frame-pointer chain, checking each frame, writing entry words (or
 * absolute addresses), and deciding whether the trace is reliable.
 *
 * Invariants
 * ----------
 * - Reads.  The walker reads stack memory only inside a window [lo, hi):
 *   hi is the top of the thread's stack (or of its alternate signal stack)
 *   as learned ahead of time (stack.c); lo starts at the stack pointer of
 *   the walk's start and becomes fp + 16 after each frame, so every read
 *   is above the previous one and a chain can neither loop nor leave the
 *   window.  CFI rows read slots inside the same window.  Code is never
 *   read: a signal-return trampoline is known by its address, published
 *   with its object by the object table, its bytes checked when the
 *   object was scanned (fpcheck.c); so a garbage return address cannot
 *   make the walk touch a hole in an object's text.  CFI is read from
 *   the tables compiled when the object was scanned (cfi.h), published
 *   with it in the index: memory of the library's own that stays
 *   mapped, checked by the same latch sequence as the rest of the index.
 * - Verdict.  reasons == 0 only if every frame passed every check and the
 *   walk ended at the thread's outermost frame, proven by the CFI's
 *   undefined return address (docs/unwinder.md, "The end of the stack").
 *   Only then is END written.
 * - A failed check on the frame pointer (outside the window, misaligned,
 *   not increasing) ends the walk: nothing after it can be read safely.
 *   A return address in unknown text or in an object without frame
 *   pointers and without a CFI table is noted and the walk goes on, best
 *   effort.  A signal frame is crossed through the ucontext the kernel
 *   saved.
 *
 * Paths: walk_fast() does the whole walk when the stack is the common
 * one (every frame in one object that keeps frame pointers, then the
 * thread's tail seen before) from the thread's cache alone, in
 * registers; anything else hands over to walk_once(), which goes on from
 * where walk_fast() stopped, or starts again.  Both give the same words
 * and verdict for the same stack.
 *
 * Memory ordering: the object table is read through its latch
 * (objtab-local.h): begin, walk, end; if end fails the whole walk is
 * repeated (the stack has not changed: it is this thread's, or frozen
 * under the signal handler), at most RS_LATCH_TRIES times.  walk_fast()
 * checks the same sequence at its start and end, and reads the thread's
 * cache instead of the index.  The only state written is the calling
 * thread's own cache (fast_cache_store()).
 *
 * Async-signal-safe: no lock, no allocation, no system call, errno untouched.
 */
#include <errno.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/objtab-local.h"
#include "capture/unwind-local.h"

#define RS_W sizeof(uintptr_t)
#define rs_load(addr) (*(const uintptr_t *)(addr))
#define RS_WALK_ATTRS __attribute__((no_sanitize_address))

static const char *const reason_names[] = {
	"outside-stack", "misaligned", "not-increasing", "unknown-text",
	"signal-frame", "async-start", "truncated", "no-fp-object",
	"end-unproven", "objects-changing", "fp-mismatch", "interrupt-frame",
	"kernel-refused", "unchecked",
};

const char *relstack_reason_string(uint32_t bit)
{
	if (bit == 0 || (bit & (bit - 1)) || bit > (1u << (RS_ARRAY_SIZE(reason_names) - 1)))
		return NULL;
	return reason_names[__builtin_ctz(bit)];
}

static inline bool in_range(uintptr_t a, size_t n, const struct rs_stack_range *r)
{
	return a >= r->lo && a < r->hi && r->hi - a >= n;
}

/* The range holding @sp, preferring the thread's stack; NULL if neither. */
static inline const struct rs_stack_range *range_of(const struct rs_walk *w, uintptr_t sp)
{
	if (in_range(sp, 1, &w->stack))
		return &w->stack;
	if (in_range(sp, 1, &w->alt))
		return &w->alt;
	return NULL;
}


/*
 * The word for an address in no known text.  In absolute output the
 * address itself, unless it collides with a marker word (no code address
 * can; a garbage return address can).
 */
static inline uint64_t unknown_word(uintptr_t addr, bool relative)
{
	return relative || (uint64_t)addr >= RS_NATIVE_SIGNAL ? RS_NATIVE_UNKNOWN : (uint64_t)addr;
}

/*
 * The compiled CFI table of the object the view found last, NULL if it
 * has none or may be unmapped at any moment (its rows would describe
 * whatever is mapped there next no better than its frame pointers).
 */
static inline const struct rs_cfi_table *view_cfi(const struct rs_objtab_view *v)
{
	return rs_objtab_view_flags(v) & RS_OBJECT_CHANGING ? NULL : v->cfi;
}

/* The CFI table of the object holding @pc, NULL if none; @v's current range is kept. */
static inline const struct rs_cfi_table *cfi_of(const struct rs_objtab_view *v, uintptr_t pc)
{
	struct rs_objtab_view x = *v;

	return rs_objtab_find(&x, pc) ? view_cfi(&x) : NULL;
}

/*
 * The row of @co at @pc (a return address minus one, or an interrupted
 * instruction), through the thread's memo (struct rs_row_memo): the C
 * library's frames of a stack captured again and again (a callback, a
 * sampled loop) cost a compare instead of a search.
 *
 *   load:   L1  g = gen; odd: a store was interrupted, use nothing
 *           L2  the entry, if it is pc's under the view's sequence
 *           L3  gen != g: a handler stored in between, use nothing
 *   store:  S1  busy exchange 0 -> 1; if it was 1, give up (no nesting)
 *           S2  gen++ (odd); S3 the entry; S4 gen++ (even); busy = 0
 *
 * Only this thread and its handlers touch it: compiler fences order it.
 */
static inline int row_at(const struct rs_objtab_view *v, const struct rs_cfi_table *co, uintptr_t pc,
			 struct rs_cfi_row *row)
{
	struct rs_row_memo *m = &rs_tls.rows;
	unsigned i = (unsigned)((pc ^ pc >> 6) % RS_ROW_MEMO);
	/* L1: pairs with S4 */
	uint64_t g = atomic_load_explicit(&m->gen, memory_order_relaxed);
	int err;

	if (!(g & 1) && m->e[i].pc == pc && m->e[i].seq == v->seq) {
		atomic_signal_fence(memory_order_acquire);
		/* L2 */
		*row = m->e[i].row;
		err = m->e[i].err;
		atomic_signal_fence(memory_order_acquire);
		/* L3: pairs with S2 */
		if (atomic_load_explicit(&m->gen, memory_order_relaxed) == g)
			return err;
	}
	err = rs_cfi_row_at(co, pc, row);
	/* S1 */
	if (atomic_exchange_explicit(&m->busy, 1, memory_order_relaxed))
		return err;
	/* S2: pairs with L3 */
	atomic_fetch_add_explicit(&m->gen, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_release);
	/* S3 */
	m->e[i].pc = pc;
	m->e[i].seq = v->seq;
	m->e[i].err = err;
	m->e[i].row = *row;
	atomic_signal_fence(memory_order_release);
	/* S4: pairs with L1 */
	atomic_fetch_add_explicit(&m->gen, 1, memory_order_relaxed);
	atomic_store_explicit(&m->busy, 0, memory_order_relaxed);
	return err;
}

/* The word for a code address, with its text checks (the slow path). */
static inline uint64_t code_word(struct rs_objtab_view *v, uintptr_t addr, bool relative, uint32_t *reasons)
{
	if (rs_unlikely(!rs_objtab_find(v, addr))) {
		*reasons |= RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
		return unknown_word(addr, relative);
	}
	if (rs_unlikely(rs_objtab_view_flags(v) & RELSTACK_OBJECT_NO_FP) && !view_cfi(v))
		*reasons |= RELSTACK_UNRELIABLE_NO_FP_OBJECT; /* (in the others the walk follows the CFI) */
	if (rs_unlikely(rs_objtab_view_flags(v) & RS_OBJECT_CHANGING))
		*reasons |= RELSTACK_UNRELIABLE_OBJECTS_CHANGING; /* the word names no object */
	return relative ? rs_objtab_view_word(v, addr) : (uint64_t)addr;
}

/*
 * After code_word() found an interrupted pc: the CFI object to follow the
 * interrupted function by, NULL if its frame pointer is to be followed (or
 * the pc is in no object).  The row of the interrupted instruction itself
 * knows whether the function has set up its frame yet, so it is used
 * wherever it can be read, frame pointers or not: a leaf function, or one
 * stopped in its prologue or epilogue, keeps its caller.
 */
static inline const struct rs_cfi_table *interrupted_cfi(const struct rs_objtab_view *v, uintptr_t pc)
{
	if (pc - v->start >= v->end - v->start)
		return NULL;
	return view_cfi(v);
}

/*
 * The fast range: the last object with a record map that a proven frame
 * record's return address was found in, held in registers, for the common case of a frame
 * in an object whose CFI proves frame records and that holds no signal
 * trampoline.  A return address in [start, start + span) is proven when
 * its bit in the object's record map is set (map_proven()); it then
 * becomes the word ra + delta: for a relative word delta folds the load
 * bias, the slot index and the flag bit into one addition (checked once
 * per range: every offset in it fits the word); for absolute output delta
 * is 0.  span == 0: no fast range.
 */
struct fast_range {
	uintptr_t start, span;
	uint64_t delta;
	const unsigned char *map; /* the record map from the bit of start - 1 on (rs_fast_cache's fmap) */
};

_Static_assert(RS_CFI_MAP_SHIFT == 0, "the fast walk tests bit ra - start: a bit per byte");

/*
 * Does the record map prove the return address @x bytes into the fast
 * range @f (x < f->span): is the row of its call a frame-record row?
 */
static inline bool map_proven(const struct fast_range *f, uintptr_t x)
{
	return f->map[x / 8] >> (x % 8) & 1;
}

/*
 * Does @row, with its CFA at @cfa, keep the return address in a frame
 * record at @fp?  Where the record tops its frame (x86) the CFA must be
 * just above it; elsewhere (aarch64) the record sits where the row saves
 * the return address, anywhere in the frame.
 */
static inline bool row_record_at(const struct rs_cfi_row *row, uintptr_t cfa, uintptr_t fp)
{
	if (RS_ARCH_RECORD_TOPS_FRAME && cfa != fp + RS_ARCH_FRAME_SIZE)
		return false;
	return cfa + (uintptr_t)row->ra_off == fp + RS_ARCH_FRAME_RA * RS_W;
}

/*
 * Is the CFI row of the interrupted instruction @pc the one of a function
 * body with a frame record at its frame pointer @fp (the return address
 * and the caller's frame pointer in the record, the CFA on the frame
 * pointer where the record tops the frame), with @fp at or above the
 * stack pointer @sp?  Then following that row from the interrupted
 * registers reads and checks what following the frame record does, to the
 * same words and reasons, and walk_fast() may do it.
 */
static bool frame_pointer_row(const struct rs_cfi_table *o, uintptr_t pc, uintptr_t fp, uintptr_t sp)
{
	struct rs_cfi_row row;
	uintptr_t cfa;

	if (fp < sp || rs_cfi_row_at(o, pc, &row) || row.ra_rule != RS_CFI_OFFSET || row.fp_rule != RS_CFI_OFFSET ||
	    (RS_ARCH_RECORD_TOPS_FRAME && !row.cfa_on_fp))
		return false;
	cfa = (row.cfa_on_fp ? fp : sp) + (uintptr_t)row.cfa_off;
	return row_record_at(&row, cfa, fp) && cfa + (uintptr_t)row.fp_off == fp + RS_ARCH_FRAME_NEXT * RS_W;
}

/*
 * The CFA of the function whose frame record is at @fp, at @pc (an
 * interrupted instruction if @exact, else a return address into it): the
 * stack pointer of its caller.  Where the record tops the frame, just
 * above it; elsewhere where the function's CFI row saves the frame pointer
 * (the record) from the CFA.  False when that cannot be known (no row,
 * or a row without the record).
 */
static bool record_cfa(const struct rs_objtab_view *v, uintptr_t pc, bool exact, uintptr_t fp, uintptr_t *cfa)
{
	const struct rs_cfi_table *o;
	struct rs_cfi_row row;

	if (RS_ARCH_RECORD_TOPS_FRAME) {
		*cfa = fp + RS_ARCH_FRAME_SIZE;
		return true;
	}
	o = pc ? cfi_of(v, pc - !exact) : NULL;
	if (!o || rs_cfi_row_at(o, pc - !exact, &row) || row.ra_rule != RS_CFI_OFFSET || row.fp_rule != RS_CFI_OFFSET ||
	    row.ra_off - row.fp_off != (RS_ARCH_FRAME_RA - RS_ARCH_FRAME_NEXT) * (int64_t)RS_W)
		return false;
	*cfa = fp + RS_ARCH_FRAME_NEXT * RS_W - (uintptr_t)row.fp_off;
	return *cfa >= fp + RS_ARCH_FRAME_SIZE;
}

/*
 * The stack checker: does the frame record at @fp, which the frame-pointer
 * chain gives the function at @pc (an interrupted instruction if @exact,
 * else a return address into it), lie where that function's CFI puts its
 * frame?  The function's stack pointer at pc is @sp.  A CFA on the frame
 * pointer agrees by construction; one on the stack pointer (a function
 * without a frame pointer, or in its prologue or epilogue) must keep the
 * return address in the record (row_record_at()).  True where the CFI is
 * not read or has no usable row: the checker says only what it can see.
 */
static bool frame_matches_cfi(const struct rs_objtab_view *v, uintptr_t pc, bool exact, uintptr_t fp, uintptr_t sp)
{
	const struct rs_cfi_table *o = cfi_of(v, pc - !exact);
	struct rs_cfi_row row;

	if (!o || rs_cfi_row_at(o, pc - !exact, &row) || row.ra_rule != RS_CFI_OFFSET)
		return true;
	return row_record_at(&row, (row.cfa_on_fp ? fp : sp) + (uintptr_t)row.cfa_off, fp);
}

/*
 * The row of the call before the return address @ra, in @co, in *row;
 * returns as rs_cfi_row_at().  Where it is a frame-record row
 * (rs_cfi_row_is_record()), the frame pointer a frame record saved is the
 * caller's record: the one proof of a frame followed by its frame record
 * (docs/unwinder.md, "Every frame's proof").
 */
static inline int ra_row(const struct rs_objtab_view *v, const struct rs_cfi_table *co, uintptr_t ra, bool snap,
			 struct rs_cfi_row *row)
{
	return snap ? rs_cfi_row_at(co, ra - 1, row) : row_at(v, co, ra - 1, row);
}

/*
 * The end of a thread's stack, and the frames a walk reads through CFI
 * (functions in objects that keep no frame pointers, such as Debian's C
 * library): docs/unwinder.md, "The end of the stack".
 *
 * A return address whose CFI row has an undefined return-address rule is
 * the caller's last instruction of a thread: the ABI marks the outermost
 * frame so (glibc's _start, and the child side of clone and clone3), and
 * that is the only proof of an end the walk accepts.
 */
static bool is_outermost(const struct rs_objtab_view *v, uintptr_t ra)
{
	const struct rs_cfi_table *o = ra ? cfi_of(v, ra - 1) : NULL;
	struct rs_cfi_row row;

	return o && rs_cfi_row_at(o, ra - 1, &row) == 0 && row.ra_rule == RS_CFI_UNDEFINED;
}

/*
 * The tail of a walk: the frames from the first return address the walk
 * followed by CFI to the end of the stack, when no frame-pointer frame
 * came between and every CFA was on the stack pointer.  Each CFA, and
 * each slot a row reads, is then the frame record's address plus a
 * constant, so the tail's words are a function of the record's return
 * address and saved frame pointer and of what the slots at those offsets
 * hold: walk_fast() may write them again for a frame record anywhere
 * with all of those equal, and the slots inside the stack
 * (rs_fast_cache).
 */
struct tail {
	bool on;
	/*
	 * A CFA of the tail was a value it read (a saved frame pointer, among
	 * its slots): the tail holds only at this very frame record fp, where
	 * its slots are the same stack words.
	 */
	bool pinned;
	uint32_t reasons; /* the walk's reasons where the tail started: the tail adds none */
	uintptr_t fp, ra;
	unsigned n, slots;
	uintptr_t top; /* past the highest slot read, and the highest CFA, from fp */
	uint64_t word[2][RS_TAIL_WORDS];
	uintptr_t slot_off[RS_TAIL_SLOTS], slot_val[RS_TAIL_SLOTS];
};

static inline void tail_word(struct tail *t, const struct rs_objtab_view *v, uintptr_t pc)
{
	if (!t->on)
		return;
	if (t->n == RS_TAIL_WORDS) {
		t->on = false;
		return;
	}
	t->word[0][t->n] = rs_objtab_view_word(v, pc);
	t->word[1][t->n] = pc;
	t->n++;
}

/* Note a bound of the tail: past a slot read, or a CFA. */
static inline void tail_reach(struct tail *t, uintptr_t end)
{
	if (end - t->fp > t->top)
		t->top = end - t->fp;
}

/* @slot's word (read at slot + @d: struct rs_walk's delta), noted by the tail. */
static inline uintptr_t tail_load(struct tail *t, uintptr_t slot, intptr_t d)
{
	uintptr_t val = rs_load(slot + d);

	if (t->on) {
		if (t->slots == RS_TAIL_SLOTS) {
			t->on = false;
		} else {
			t->slot_off[t->slots] = slot - t->fp;
			t->slot_val[t->slots++] = val;
			tail_reach(t, slot + RS_W);
		}
	}
	return val;
}

/*
 * The general walk's use of the cached tail: the frame record at @fp, whose
 * return address @ra is in an object without frame pointers, starts the tail the
 * thread's cache holds (as walk_fast() checks it, with the same protocol
 * against a handler that changes the cache meanwhile).  Writes its words
 * and returns true; false, writing nothing, when the cache does not hold
 * this tail or the array has no room for all of it.
 */
RS_WALK_ATTRS static bool tail_from_cache(const struct rs_objtab_view *v, uintptr_t fp, uintptr_t ra, uintptr_t hi, bool relative,
			    uint64_t **out_io, const uint64_t *out_end)
{
	const struct rs_fast_cache *c = &rs_tls.fast;
	uint64_t g = atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed), w[RS_TAIL_WORDS];
	uintptr_t off[RS_TAIL_SLOTS], tt, efp;
	uint32_t tn;
	bool same = true;

	/* L1: pairs with S4 (an odd gen: a store under way) */
	if ((g & 1) || c->seq != v->seq || c->exit_ra != ra)
		return false;
	atomic_signal_fence(memory_order_acquire);
	/* L2 */
	for (unsigned i = 0; i < RS_TAIL_SLOTS; i++)
		off[i] = c->slot_off[i];
	tt = c->tail_top;
	tn = c->tail_n;
	efp = c->exit_fp;
	atomic_signal_fence(memory_order_acquire);
	/* L3 before the slots are read: offsets, tail_top and tail_n are one store's */
	if (atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed) != g || !tn || tt > hi - fp ||
	    (efp && efp != fp) || (size_t)(out_end - *out_io) < tn)
		return false;
	for (unsigned i = 0; i < RS_TAIL_SLOTS; i++)
		same &= rs_load(fp + off[i]) == c->slot_val[i];
	for (unsigned i = 0; i < RS_TAIL_WORDS; i++)
		w[i] = c->tail_word[!relative][i];
	atomic_signal_fence(memory_order_acquire);
	/* L3: pairs with S2 */
	if (!same || atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed) != g)
		return false;
	for (uint32_t i = 0; i < tn; i++)
		*(*out_io)++ = w[i];
	return true;
}

/* Is @t what the thread's cache already holds? */
static bool tail_cached(const struct tail *t, const struct rs_objtab_view *v)
{
	const struct rs_fast_cache *c = &rs_tls.fast;

	if (c->seq != v->seq || c->exit_ra != t->ra || c->exit_fp != (t->pinned ? t->fp : 0) || c->tail_n != t->n ||
	    c->tail_top != t->top)
		return false;
	for (unsigned i = 0; i < t->slots; i++)
		if (c->slot_off[i] != t->slot_off[i] || c->slot_val[i] != t->slot_val[i])
			return false;
	return true;
}

/*
 * The thread's cache (struct rs_fast_cache).  Only this thread touches it,
 * but a signal handler can interrupt a load or a store and run captures
 * of its own, so:
 *
 *   store:  S1  busy exchange 0 -> 1; if it was 1, an interrupted store is
 *               under way: give up (stores never nest)
 *           S2  gen++ (now odd)
 *           S3  write the fields
 *           S4  gen++ (even again); busy = 0
 *   load:   L1  g = gen; odd: a store was interrupted, use nothing
 *           L2  read the fields
 *           L3  gen != g: a handler stored in between, use nothing
 *
 * gen only grows, so L3 cannot be fooled by a store that put it back.
 * The compiler fences order the steps against a handler on this thread,
 * which is the only concurrency there is.
 */
static inline void fast_cache_load(struct fast_range *f, struct rs_objtab_view *v, bool relative, bool fast)
{
	/* L1: pairs with S4 */
	uint64_t g = atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed);
	struct fast_range nf;
	uintptr_t vs, ve, vb, vr;
	const struct rs_cfi_table *vc;
	uint64_t vf;

	if ((g & 1) || rs_tls.fast.seq != v->seq)
		return;
	atomic_signal_fence(memory_order_acquire);
	/* L2 */
	nf.start = rs_tls.fast.start;
	nf.span = rs_tls.fast.span;
	nf.delta = relative ? rs_tls.fast.wdelta[0] - nf.start : 0;
	nf.map = rs_tls.fast.fmap;
	vs = rs_tls.fast.vstart;
	ve = rs_tls.fast.vend;
	vb = rs_tls.fast.vbias;
	vr = rs_tls.fast.vrestorer;
	vc = rs_tls.fast.vcfi;
	vf = rs_tls.fast.vslot_flags;
	atomic_signal_fence(memory_order_acquire);
	/* L3: pairs with S2 */
	if (atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed) != g)
		return;
	if (fast)
		*f = nf;
	v->start = vs;
	v->end = ve;
	v->bias = vb;
	v->restorer = vr;
	v->cfi = vc;
	v->slot_flags = vf;
}

/*
 * Store the view's range, and the fast range @f (NULL: keep the cached one
 * if it is still valid), and the tail @t of a reliable walk, and @pass_ra,
 * a return address the walk skipped in an object that keeps frame
 * pointers (NULL, 0: keep the cached ones if they are still valid).
 */
static inline void fast_cache_store(const struct fast_range *f, const struct rs_objtab_view *v,
				    uint64_t delta, const struct tail *t, uintptr_t pass_ra)
{
	/* S1 */
	if (atomic_exchange_explicit(&rs_tls.fast.busy, 1, memory_order_relaxed))
		return;
	/* S2: pairs with L3 */
	atomic_fetch_add_explicit(&rs_tls.fast.gen, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_release);
	/* S3: fast_seq first, see walk_fast() */
	rs_tls.fast.fast_seq = UINT64_MAX;
	atomic_signal_fence(memory_order_release);
	if (rs_tls.fast.seq != v->seq) {
		/* made under another sequence */
		rs_tls.fast.span = 0;
		rs_tls.fast.exit_ra = 0;
		rs_tls.fast.pass_ra = 0;
	}
	if (f) {
		rs_tls.fast.start = f->start;
		rs_tls.fast.span = f->span;
		rs_tls.fast.fmap = f->map;
		rs_tls.fast.wdelta[0] = f->start + delta;
		rs_tls.fast.wdelta[1] = f->start;
	}
	if (t) {
		rs_tls.fast.exit_ra = t->ra;
		rs_tls.fast.exit_fp = t->pinned ? t->fp : 0;
		rs_tls.fast.tail_top = t->top;
		rs_tls.fast.tail_n = t->n;
		memcpy(rs_tls.fast.tail_word, t->word, sizeof(t->word));
		memcpy(rs_tls.fast.slot_off, t->slot_off, sizeof(t->slot_off));
		memcpy(rs_tls.fast.slot_val, t->slot_val, sizeof(t->slot_val));
	}
	if (pass_ra)
		rs_tls.fast.pass_ra = pass_ra;
	rs_tls.fast.seq = v->seq;
	rs_tls.fast.exit_off = rs_tls.fast.exit_ra - rs_tls.fast.start;
	rs_tls.fast.fast_seq = rs_tls.fast.span && rs_tls.fast.exit_ra ? v->seq : UINT64_MAX;
	rs_tls.fast.epoch = rs_objtab_view_epoch(v);
	rs_tls.fast.vstart = v->start;
	rs_tls.fast.vend = v->end;
	rs_tls.fast.vbias = v->bias;
	rs_tls.fast.vrestorer = v->restorer;
	rs_tls.fast.vcfi = v->cfi;
	rs_tls.fast.vslot_flags = v->slot_flags;
	atomic_signal_fence(memory_order_release);
	/* S4: pairs with L1 */
	atomic_fetch_add_explicit(&rs_tls.fast.gen, 1, memory_order_relaxed);
	atomic_store_explicit(&rs_tls.fast.busy, 0, memory_order_relaxed);
}

static inline void fast_range_set(struct fast_range *f, const struct rs_objtab_view *v, bool relative)
{
	uint32_t slot = rs_objtab_view_slot(v);
	uint64_t max_off = (uint64_t)(v->end - 1 - v->bias), bits;
	const struct rs_cfi_table *co = view_cfi(v);
	const uint64_t *map;
	uintptr_t origin, start, end;
	uint64_t delta;

	if (f->span && f->start - v->start < v->end - v->start)
		return; /* already this object's (the same range, made from the same index) */
	/*
	 * An object that cannot be one leaves the fast range as it is: its
	 * frames are proven by the map of the object they are in, whichever.
	 * One with a signal trampoline: every frame takes the slow path, which
	 * knows it.
	 */
	if ((rs_objtab_view_flags(v) & (RELSTACK_OBJECT_NO_FP | RS_OBJECT_CHANGING)) || v->restorer || !co)
		return;
	if (v->bias > v->start || max_off > (slot ? RS_NATIVE_OFFSET_MASK : RS_NATIVE_MAIN_MASK))
		return; /* some offsets would not fit a word: each frame takes the slow path */
	map = rs_cfi_table_record_map(co, &origin, &bits);
	if (!map || origin >= UINTPTR_MAX - 1 || bits > UINTPTR_MAX - origin - 1)
		return;
	/*
	 * The object's text that the map covers, ra - 1 in it, from a whole
	 * byte of the map on: then bit ra - start of the map from that byte
	 * is ra - 1's.
	 */
	start = v->start > origin + 1 ? v->start : origin + 1;
	start = origin + 1 + ((start - origin - 1 + 7) & ~(uintptr_t)7);
	end = origin + 1 + bits;
	if (end > v->end)
		end = v->end;
	if (start >= end)
		return;
	delta = (slot ? RS_NATIVE_FLAG | (uint64_t)slot << RS_NATIVE_INDEX_SHIFT : 0) - (uint64_t)v->bias;
	f->delta = relative ? delta : 0;
	f->start = start;
	f->span = end - start;
	f->map = (const unsigned char *)map + (start - origin - 1) / 8;
	fast_cache_store(f, v, delta, 0, 0);
}


/*
 * Frames whose return address lies in the fast range, as long as they
 * pass every check; returns the first frame pointer that needs the full
 * checks (or leaves the window).  *lo is the bottom of the window: the
 * last frame passed is at *lo - 16.
 *
 * Two checks are hoisted out of the loop.  Room in the array: frames are
 * at least 16 bytes apart, so a window cut to lo + 16 * (room - 1) holds
 * no more frames than there is room for.  Alignment: the frame pointers
 * are OR-ed together and checked after the loop; a misaligned one (its
 * reads stayed inside the window, so nothing faulted) sends everything
 * back to the first frame, which the caller then checks one at a time.
 */
static inline uintptr_t load_word(uintptr_t addr)
{
	uintptr_t v;

	__builtin_memcpy(&v, (const void *)addr, sizeof(v)); /* may be misaligned: see above */
	return v;
}

RS_WALK_ATTRS __attribute__((always_inline)) static inline uintptr_t
fast_frames(uintptr_t fp, uintptr_t *lo_io, uintptr_t top, uint64_t **out_io, uint64_t *out_end,
	    const struct fast_range *f)
{
	const uintptr_t start = f->start, span = f->span;
	const uint64_t delta = f->delta;
	uint64_t *out = *out_io, *const out0 = out;
	uintptr_t lo = *lo_io, ra, acc = 0, cut, room = (uintptr_t)(out_end - out);
	const uintptr_t fp0 = fp, lo0 = lo;

	if (!room)
		return fp;
	cut = (room - 1) * RS_ARCH_FRAME_SIZE;
	if (top >= lo && top - lo > cut)
		top = lo + cut;
	while (fp >= lo && fp <= top) {
		acc |= fp;
		ra = rs_arch_strip_ra(load_word(fp + RS_ARCH_FRAME_RA * RS_W));
		if (ra - start >= span || !map_proven(f, ra - start))
			break;
		*out++ = ra + delta;
		lo = fp + RS_ARCH_FRAME_SIZE;
		fp = load_word(fp + RS_ARCH_FRAME_NEXT * RS_W);
	}
	if (rs_unlikely(acc & (RS_W - 1))) {
		out = out0;
		lo = lo0;
		fp = fp0;
	}
	*out_io = out;
	*lo_io = lo;
	return fp;
}

/*
 * Where walk_fast() handed the walk over: walk_once() goes on from the
 * frame at fp, with the window's bottom at lo and n words written, if the
 * object table's sequence is still seq (the words were made from that
 * sequence's index); otherwise, or with n == 0, it starts again.
 */
struct walk_resume {
	uint64_t seq;
	uintptr_t fp, lo;
	size_t n;
	/*
	 * The return address into the function whose frame record fp is (the
	 * last one the fast walk wrote or skipped), 0 if it passed none: where
	 * a record does not top its frame, its CFA is found from that
	 * function's row (record_cfa()).
	 */
	uintptr_t owner;
};

/*
 * One pass of the walk under one latch view.  Stack memory is read only
 * at addresses the window checks passed: ASan's shadow for a stack it did
 * not allocate says nothing, so it is not consulted.
 *
 * The loop's fast path is a frame whose return address lies in the fast
 * range; everything else (another object, unknown text, an object
 * without frame pointers, the signal trampoline, skipped frames) takes
 * the slow path, which may then set the fast range.
 *
 * A return address in an object that keeps no frame pointers is
 * followed by its CFI table (cfi.h) instead of frame records: the caller resumes there with
 * the stack pointer just above the frame record and the frame pointer
 * the record saved; each row gives the CFA, the next return address and
 * the next frame pointer, until a return address lands in an object that
 * keeps frame pointers (the walk goes on from its frame record) or in
 * the outermost frame.  Every slot a row reads lies in the window, above
 * the previous CFA.
 *
 * @rs (may be NULL) is where walk_fast() stopped: after the interrupted
 * pc's word (which this pass writes again, the same) and the frames to
 * skip, frames of the fast range it read under @rs->seq, checked as the
 * loop below checks them, and no marker or reason of its own, so the loop
 * can take over from there.
 */
RS_WALK_ATTRS __attribute__((always_inline)) static inline size_t
walk_once(struct rs_walk *w, struct rs_objtab_view *v, uint64_t *words, size_t cap, uint32_t *reasons_out,
	  uint32_t *frames_out, const bool relative, const struct walk_resume *rs)
{
	uint64_t *out = words, *const out_end = words + cap;
	uint32_t reasons = w->reasons & ~RELSTACK_UNRELIABLE_ASYNC_START, markers = 0;
	/*
	 * The reason an interrupted pc gives (async-start, or signal-frame
	 * after a signal frame) unless the CFI row of the very instruction
	 * proves its frame: the compiled table says whether the function
	 * had set up its frame, saved its frame pointer or already torn the
	 * frame down, so the caller is found exactly (docs/unwinder.md).
	 */
	uint32_t pending = w->reasons & RELSTACK_UNRELIABLE_ASYNC_START;
	const struct rs_stack_range *r;
	uintptr_t fp = w->fp, lo = 0, hi, top, pass_ra = 0, ra_slot = 0, lo0;
	struct fast_range f = { 0, 0, 0, NULL };
	const bool resume = rs && rs->n && rs->seq == v->seq;
	unsigned skip = resume ? 0 : w->skip; /* walk_fast() wrote words only after skipping */
	bool end = false;
	struct tail t;
	/*
	 * The CFI walk's state (see the NO_FP branch below): the function at
	 * pc, in co, with its stack pointer sp and frame pointer cfp; exact:
	 * pc is an interrupted instruction, its word already written, not a
	 * return address.
	 */
	const struct rs_cfi_table *co = NULL;
	uintptr_t pc = 0, sp = 0, cfp = 0, lr = w->lr; /* lr: the interrupted pc's link register */
	bool cfp_known = false, cfp_is_next = false, exact = false;
	/*
	 * The stack checker (RELSTACK_CAPTURE_CHECK): owner_pc is the pc of
	 * the function whose frame record the walk reads next (owner_exact:
	 * an interrupted instruction, not a return address), 0 if unknown;
	 * its stack pointer at that pc is the window's bottom, lo.
	 */
	const bool check = w->flags & RELSTACK_CAPTURE_CHECK;
	/* a snapshot: reads at the copy, no cache of this thread's */
	const bool snap = w->flags & RS_WALK_SNAPSHOT;
	const intptr_t d = snap ? w->delta : 0;
	uintptr_t owner_pc = w->pc ? w->pc : w->fp_pc;
	bool owner_exact = w->pc != 0;
	/*
	 * The checker's stack pointer of that function, 0 if unknown: the
	 * window's bottom where a record tops its frame, else the CFA of the
	 * frame below (record_cfa()).
	 */
	uintptr_t check_sp = w->sp;
	uintptr_t uc; /* a signal frame's saved context (rs_arch_sigframe_context()) */
	int kind = 0; /* the kind of that signal frame (rs_arch_restorer_kind()) */
	bool skipped; /* the CFI walk's pc was skipped, not written */
	/* the row of the CFI walk's first pc, if the frame-record walk looked it up already (ra_err <= 0) */
	struct rs_cfi_row ra_rule_row;
	int ra_err = 1;

	t.on = false;
	/* the fast path writes every frame: skipping takes the slow one */
	if (!snap)
		fast_cache_load(&f, v, relative, !skip && !check);
	if (w->pc) {
		uint64_t word = code_word(v, w->pc, relative, &reasons);

		if (skip)
			skip--;
		else if (out == out_end)
			goto truncated;
		else
			*out++ = word;
	}
	r = range_of(w, w->sp);
	if (!r) {
		reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
		goto out;
	}
	lo = w->sp;
	hi = r->hi;
	top = hi - RS_ARCH_FRAME_SIZE;
	if (resume) {
		out = words + rs->n;
		fp = rs->fp;
		lo = rs->lo;
		if (rs->owner) {
			owner_pc = rs->owner;
			owner_exact = false;
		}
	}
	lo0 = resume && rs->n > (w->pc != 0) ? 0 : lo; /* a frame was read below lo: its ra is at lo - 8 */
	if (w->pc && !resume && (co = interrupted_cfi(v, w->pc))) {
		/* an interrupted function that keeps no frame pointer: its CFI, from its exact pc */
		pc = w->pc;
		sp = w->sp;
		cfp = w->fp;
		cfp_known = true;
		cfp_is_next = false;
		exact = true;
		goto cfi;
	}
	/* followed by its frame record: proven only where the row says the record is there */
	if (!w->pc || !(resume && (co = interrupted_cfi(v, w->pc)) && frame_pointer_row(co, w->pc, w->fp, w->sp)))
		reasons |= pending;
	pending = 0;

	for (;;) {
		uintptr_t next, ra;
		uint64_t word;

		/* fp in [lo, top]: inside the window, above the previous frame */
		if (rs_unlikely(fp < lo || fp > top)) {
			if (fp == 0) {
				/*
				 * The last return address read (from the last frame
				 * record, at lo - 8, or from the slot a CFI row
				 * named) must be in the outermost frame.
				 */
				uintptr_t at = ra_slot ? ra_slot : lo != lo0 ? lo - RS_W : 0;

				if (at && is_outermost(v, rs_arch_strip_ra(rs_load(at + d))))
					end = true;
				else
					reasons |= RELSTACK_UNRELIABLE_END_UNPROVEN;
			} else if (fp < lo && fp >= r->lo) {
				reasons |= RELSTACK_UNRELIABLE_NOT_INCREASING;
			} else {
				reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
			}
			break;
		}
		if (rs_unlikely(fp & (RS_W - 1))) {
			reasons |= RELSTACK_UNRELIABLE_MISALIGNED;
			break;
		}
		if (RS_ARCH_RECORD_TOPS_FRAME || !owner_pc)
			check_sp = lo;
		if (rs_unlikely(check) && owner_pc && check_sp && !frame_matches_cfi(v, owner_pc, owner_exact, fp, check_sp))
			reasons |= RELSTACK_UNRELIABLE_FP_MISMATCH;
		next = rs_load(fp + RS_ARCH_FRAME_NEXT * RS_W + d);
		ra = rs_arch_strip_ra(rs_load(fp + RS_ARCH_FRAME_RA * RS_W + d));
		ra_slot = 0;
		t.on = false; /* a frame record: whatever follows is no tail */

		if (rs_likely(ra - f.start < f.span && map_proven(&f, ra - f.start))) {
			if (rs_unlikely(out == out_end))
				goto truncated;
			*out++ = ra + f.delta;
			lo = fp + RS_ARCH_FRAME_SIZE;
			/* the fast path proper: frames in the same object, few registers live */
			fp = fast_frames(next, &lo, top, &out, out_end, &f);
			owner_pc = (uintptr_t)(out[-1] - f.delta); /* the last return address written */
			owner_exact = false;
			continue;
		}

		/* the slow path */
		if (rs_unlikely(!rs_objtab_find(v, ra))) {
			reasons |= RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
			word = unknown_word(ra, relative);
		} else if (rs_unlikely(rs_objtab_view_is_restorer(v, ra))) {
			/* A signal frame: continue in the context the kernel saved. */
			struct rs_arch_context c;
			const struct rs_stack_range *nr;

			kind = rs_arch_restorer_kind(ra, v->restorer);
			uc = rs_arch_sigframe_context(rs_arch_handler_cfa(fp, next), kind);
cross:
			pending = RELSTACK_UNRELIABLE_SIGNAL_FRAME;
			t.on = false; /* what follows depends on the ucontext, which no slot compares */
			if (out == out_end)
				goto truncated;
			*out++ = RS_NATIVE_SIGNAL;
			markers++;
			if (uc < lo || uc > hi || hi - uc < RS_ARCH_CONTEXT_READ_SIZE) {
				reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
				break;
			}
			if (!rs_arch_sigframe_ok((const void *)(uc + d), kind))
				break; /* not laid out as the walk knows: the signal frame ends it */
			rs_arch_sigframe_read((const void *)(uc + d), kind, &c);
			lr = c.lr;
			word = code_word(v, c.pc, relative, &reasons);
			if (skip)
				skip--;
			else if (out == out_end)
				goto truncated;
			else
				*out++ = word;
			nr = range_of(w, c.sp);
			if (!nr) {
				reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
				break;
			}
			if (nr == r && c.sp < uc + RS_ARCH_CONTEXT_READ_SIZE) {
				/* same stack: the interrupted frames lie above the signal frame */
				reasons |= RELSTACK_UNRELIABLE_NOT_INCREASING;
				break;
			}
			r = nr;
			lo = lo0 = check_sp = c.sp;
			hi = r->hi;
			top = hi - RS_ARCH_FRAME_SIZE;
			fp = c.fp;
			owner_pc = c.pc;
			owner_exact = true;
			if ((co = interrupted_cfi(v, c.pc))) {
				pc = c.pc;
				sp = c.sp;
				cfp = c.fp;
				cfp_known = true;
				cfp_is_next = false;
				exact = true;
				goto cfi;
			}
			reasons |= pending; /* its frame pointer, unproven */
			pending = 0;
			continue;
		} else if ((co = view_cfi(v)) && (ra_err = ra_row(v, co, ra, snap, &ra_rule_row)) == 0 &&
			   rs_cfi_row_is_record(&ra_rule_row)) {
			/* proven: the caller keeps its frame record where this one's saved frame pointer points */
			ra_err = 1;
			word = relative ? rs_objtab_view_word(v, ra) : (uint64_t)ra;
			if (!skip && !check && !snap)
				fast_range_set(&f, v, relative);
			else if (skip)
				pass_ra = ra; /* what walk_fast() may take for granted next time */
		} else if (!co) {
			/*
			 * Nothing proves the caller's frame: an object without CFI,
			 * or one that may be unmapped at any moment (its table with
			 * it).  Best effort: on with the frame pointer.
			 */
			reasons |= rs_objtab_view_flags(v) & RS_OBJECT_CHANGING ? RELSTACK_UNRELIABLE_OBJECTS_CHANGING
										: RELSTACK_UNRELIABLE_NO_FP_OBJECT;
			word = relative ? rs_objtab_view_word(v, ra) : (uint64_t)ra;
		} else {
			/*
			 * The caller is followed by its CFI: it resumes at ra, its
			 * stack pointer the CFA of the frame record's function (proven
			 * to keep that record: the record tops its frame, or its row
			 * says where), its frame pointer the one the record saved.
			 */
			pc = ra;
			if (!record_cfa(v, owner_pc, owner_exact, fp, &sp))
				sp = 0;
			cfp = next;
			cfp_known = cfp_is_next = true;
			exact = false;
			if (!sp) {
				ra_err = 1;
				reasons |= RELSTACK_UNRELIABLE_NO_FP_OBJECT;
				word = relative ? rs_objtab_view_word(v, ra) : (uint64_t)ra;
				goto write;
			}
			/* a cached tail reads its slots from the frame record */
			if (RS_ARCH_RECORD_TOPS_FRAME && !skip && !(w->flags & (RS_WALK_COMPLETE | RS_WALK_SNAPSHOT)) &&
			    tail_from_cache(v, fp, ra, hi, relative, &out, out_end)) {
				end = true;
				goto walk_end;
			}
			/*
			 * The arrays are filled as the tail grows: only what n and
			 * slots count is read.  A tail is a function of the record
			 * only where the record tops its frame: elsewhere the CFA
			 * depends on the function that made the record too.
			 */
			t.on = RS_ARCH_RECORD_TOPS_FRAME && !skip && !(w->flags & (RS_WALK_COMPLETE | RS_WALK_SNAPSHOT));
			t.reasons = reasons;
			t.fp = fp;
			t.ra = ra;
			t.pinned = false;
			t.n = t.slots = 0;
			t.top = RS_ARCH_FRAME_SIZE;
cfi:
			for (;;) {
				struct rs_cfi_row row;
				uintptr_t cfa, slot, floor;
				int err;

				skipped = false;
				if (!exact) {
					/* pc, a return address in co, found in the view */
					word = relative ? rs_objtab_view_word(v, pc) : (uint64_t)pc;
					if (skip)
						skip--, skipped = true;
					else if (out == out_end)
						goto truncated;
					else
						*out++ = word;
					tail_word(&t, v, pc);
				}
				if (!exact && cfp_known && pc - f.start < f.span && map_proven(&f, pc - f.start))
					break; /* a frame record the fast range's record map proves: on with the frame-record walk */
				/* a return address: the row of the call; an interrupted pc: its own */
				if (ra_err <= 0) { /* pc is the return address the frame-record walk looked up */
					err = ra_err;
					row = ra_rule_row;
					ra_err = 1;
				} else {
					err = snap ? rs_cfi_row_at(co, pc - !exact, &row) : row_at(v, co, pc - !exact, &row);
				}
				if (!err && !exact && cfp_known && rs_cfi_row_is_record(&row)) {
					/* the function keeps its frame record there: on with the frame-record walk, from cfp */
					if (!skipped && !check && !snap)
						fast_range_set(&f, v, relative);
					else if (skipped)
						pass_ra = pc;
					break;
				}
				/* a DRAP's row: the CFA and the caller's frame pointer found from the frame pointer, below */
				if (err == -ENOTSUP && row.cfa_deref)
					err = 0;
				/* the return address in its register (a leaf): known for an interrupted pc only */
				if (!err && row.ra_rule == RS_CFI_SAME && (!exact || !lr))
					err = -ENOTSUP;
				if (err) {
					if (!exact || (rs_objtab_view_flags(v) & RELSTACK_OBJECT_NO_FP))
						reasons |= RELSTACK_UNRELIABLE_NO_FP_OBJECT;
					reasons |= pending;
					pending = 0;
					break; /* best effort: on with the frame pointer */
				}
				pending = 0; /* an interrupted pc's frame: proven by its row */
				/*
				 * Where a saved register may be read from: at or above the
				 * stack pointer, and for an interrupted instruction in its
				 * red zone too (an epilogue that popped it already; nothing
				 * writes there, signal delivery included), inside the stack.
				 */
				floor = !exact ? sp : sp - r->lo > RS_ARCH_RED_ZONE ? sp - RS_ARCH_RED_ZONE : r->lo;
				exact = false;
				if (row.ra_rule == RS_CFI_UNDEFINED) {
					end = true;
					goto walk_end;
				}
				if (row.cfa_on_fp && !cfp_known) {
					reasons |= RELSTACK_UNRELIABLE_NO_FP_OBJECT;
					goto walk_end;
				}
				if (row.cfa_deref) {
					/*
					 * A stack realigned through a DRAP: the CFA is the word
					 * at cfp + cfa_off, inside this function's frame.  A value
					 * no tail slot compares: no tail through it.
					 */
					slot = cfp + (uintptr_t)row.cfa_off;
					t.on = false;
					if (slot < sp || slot > hi - RS_W || (slot & (RS_W - 1))) {
						reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
						goto walk_end;
					}
					cfa = rs_load(slot + d);
				} else {
					if (row.cfa_on_fp && t.on) {
						/* the CFA is a value: a slot of the tail (the record's, if it is next), which is pinned */
						if (cfp_is_next)
							tail_load(&t, t.fp + RS_ARCH_FRAME_NEXT * RS_W, d);
						t.pinned = true;
					}
					cfa = (row.cfa_on_fp ? cfp : sp) + (uintptr_t)row.cfa_off;
				}
				/*
				 * The caller's frame is above this one and inside the
				 * window; a leaf's (its return address in its register)
				 * may take no stack at all.
				 */
				if (cfa < sp + (row.ra_rule != RS_CFI_SAME) || cfa > hi) {
					reasons |= cfa <= sp && cfa >= r->lo ? RELSTACK_UNRELIABLE_NOT_INCREASING
									     : RELSTACK_UNRELIABLE_OUTSIDE_STACK;
					goto walk_end;
				}
				if (cfa & (RS_W - 1)) {
					reasons |= RELSTACK_UNRELIABLE_MISALIGNED;
					goto walk_end;
				}
				tail_reach(&t, cfa);
				if (row.ra_rule == RS_CFI_SAME) {
					ra_slot = 0;
					pc = lr;
				} else {
					slot = cfa + (uintptr_t)row.ra_off;
					if (slot < sp || slot > hi - RS_W) {
						reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
						goto walk_end;
					}
					ra_slot = slot;
					pc = rs_arch_strip_ra(tail_load(&t, slot, d));
				}
				if (row.cfa_deref) {
					/* the caller's frame pointer, saved where the frame pointer points (cfi.h) */
					if (cfp < sp || cfp > hi - RS_W || (cfp & (RS_W - 1))) {
						reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
						goto walk_end;
					}
					cfp = rs_load(cfp + d);
					cfp_known = true;
					cfp_is_next = false;
				} else if (row.fp_rule == RS_CFI_OFFSET) {
					slot = cfa + (uintptr_t)row.fp_off;
					if (slot < floor || slot > hi - RS_W) {
						reasons |= RELSTACK_UNRELIABLE_OUTSIDE_STACK;
						goto walk_end;
					}
					cfp = tail_load(&t, slot, d);
					cfp_known = true;
					cfp_is_next = false;
				} else if (row.fp_rule == RS_CFI_UNDEFINED) {
					cfp_known = false;
				}
				sp = cfa;
				/* what the caller is */
				if (rs_unlikely(!rs_objtab_find(v, pc))) {
					reasons |= RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
					word = unknown_word(pc, relative);
					t.on = false;
				} else if (rs_unlikely(rs_objtab_view_is_restorer(v, pc))) {
					/* the handler returns to the signal trampoline, its CFA the signal frame's */
					kind = rs_arch_restorer_kind(pc, v->restorer);
					uc = rs_arch_sigframe_context(sp, kind);
					goto cross;
				} else if ((co = view_cfi(v))) {
					/* the top of the loop: its row says how (a frame record, or its CFI) */
					continue;
				} else {
					/* nothing proves its frame (as in the frame-record walk): on with the frame pointer */
					reasons |= rs_objtab_view_flags(v) & RS_OBJECT_CHANGING ? RELSTACK_UNRELIABLE_OBJECTS_CHANGING
												: RELSTACK_UNRELIABLE_NO_FP_OBJECT;
					word = relative ? rs_objtab_view_word(v, pc) : (uint64_t)pc;
					t.on = false;
				}
				if (skip)
					skip--;
				else if (out == out_end)
					goto truncated;
				else
					*out++ = word;
				if (!cfp_known) {
					reasons |= RELSTACK_UNRELIABLE_NO_FP_OBJECT;
					goto walk_end;
				}
				break;
			}
			/*
			 * On from the frame pointer the last frame left, above its
			 * CFA.  If it is still the frame record's, the tail depends
			 * on it: a slot of its own.
			 */
			if (cfp_is_next && t.on)
				tail_load(&t, fp + RS_ARCH_FRAME_NEXT * RS_W, d);
			lo = check_sp = sp;
			fp = cfp;
			owner_pc = pc;
			owner_exact = false;
			continue;
		}
write:
		if (skip)
			skip--;
		else if (rs_unlikely(out == out_end))
			goto truncated;
		else
			*out++ = word;
		if (!RS_ARCH_RECORD_TOPS_FRAME && rs_unlikely(check) && !(owner_pc && record_cfa(v, owner_pc, owner_exact, fp, &check_sp)))
			check_sp = 0;
		lo = fp + RS_ARCH_FRAME_SIZE;
		fp = next;
		owner_pc = ra;
		owner_exact = false;
	}
walk_end:
	reasons |= pending;
	if (end && !reasons) {
		if (out == out_end)
			goto truncated;
		*out++ = RS_NATIVE_END;
		markers++;
	}
	goto out;
truncated:
	reasons |= RELSTACK_UNRELIABLE_TRUNCATED;
out:
	reasons |= pending;
	if (end && t.on && reasons == t.reasons) {
		/* slots not read: the frame record's own return address, which the fast walk has checked */
		for (; t.slots < RS_TAIL_SLOTS; t.slots++) {
			t.slot_off[t.slots] = RS_ARCH_FRAME_RA * RS_W;
			t.slot_val[t.slots] = t.ra;
		}
		t.on = !tail_cached(&t, v);
	} else {
		t.on = false;
	}
	if (v->end && !snap &&
	    (t.on || rs_tls.fast.vstart != v->start || rs_tls.fast.seq != v->seq ||
	     (pass_ra && rs_tls.fast.pass_ra != pass_ra)))
		fast_cache_store(NULL, v, 0, t.on ? &t : NULL, pass_ra);
	*reasons_out = reasons;
	*frames_out = (uint32_t)(out - words) - markers;
	return (size_t)(out - words);
}

/* The walk under the object table's latch: repeated while the table changes. */
RS_WALK_ATTRS __attribute__((always_inline)) static inline size_t
walk_latched(struct rs_walk *w, uint64_t *words, size_t cap, struct relstack_verdict *verdict, const bool relative,
	     const struct walk_resume *rs)
{
	struct rs_objtab_view v;
	uint32_t reasons = 0, frames = 0;
	unsigned tries = 0;
	size_t n;

	do {
		uint64_t epoch;

		rs_objtab_begin_on(&v, w->latch ? w->latch : &rs_latch);
		n = walk_once(w, &v, words, cap, &reasons, &frames, relative, tries ? NULL : rs);
		/* before end: after it, the writer may be rewriting this copy of the index */
		epoch = rs_objtab_view_epoch(&v);
		if (rs_likely(rs_objtab_end(&v))) {
			if (verdict) {
				verdict->reasons = reasons;
				verdict->frames = frames;
				verdict->epoch = epoch;
			}
			return n;
		}
	} while (++tries < RS_LATCH_TRIES);

	/* The table changed under every pass: no word may name a guess. */
	rs_objtab_count_busy();
	if (relative)
		for (size_t i = 0; i < n; i++)
			if (words[i] != RS_NATIVE_SIGNAL && words[i] != RS_NATIVE_END)
				words[i] = RS_NATIVE_UNKNOWN;
	if (n && words[n - 1] == RS_NATIVE_END)
		n--;
	if (verdict) {
		verdict->reasons = reasons | RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
		verdict->frames = frames;
		verdict->epoch = 0;
	}
	return n;
}

RS_WALK_ATTRS __attribute__((noinline)) static size_t
walk_relative(struct rs_walk *w, uint64_t *words, size_t cap, struct relstack_verdict *verdict,
	      const struct walk_resume *rs)
{
	return walk_latched(w, words, cap, verdict, true, rs);
}

RS_WALK_ATTRS __attribute__((noinline)) static size_t
walk_absolute(struct rs_walk *w, uint64_t *words, size_t cap, struct relstack_verdict *verdict,
	      const struct walk_resume *rs)
{
	return walk_latched(w, words, cap, verdict, false, rs);
}

/*
 * The fast walk: the whole walk, when it is the common one.  Every frame
 * but the tail has its return address in the thread's cached fast range;
 * the tail is the one a walk of this thread followed by CFI to the end of
 * the stack before (rs_fast_cache): the frame record where it started is
 * at the same place with the same return address and saved frame
 * pointer, and every stack slot the CFI rows read holds what it held.
 * Returns true with the words written (END included) in *n_out and the
 * verdict in *v (may be NULL).  Returns false with *rs saying where
 * walk_once() is to take over: at the frame that left the fast range, or
 * the frame pointer that left the window (or the room in the array); from
 * the start (n == 0) for a cache made under another sequence or changed
 * by a handler meanwhile, or a misaligned frame pointer.
 *
 * It takes the branches walk_once() takes on such a stack, from the same
 * cache, so the words and the verdict are the same: frames in the fast
 * range are checked and written as in fast_frames() (window cut to the
 * room in the array, alignment OR-ed and checked at the end), by
 * rs_arch_fast_frames(); the tail's words are a function of the frame
 * record and the slots it compares (struct tail), and of the index's
 * sequence, which is the cache's.  Skipped frames must be in the fast
 * range, or at the return address a walk skipped before (pass_ra).  The
 * index itself is not read.  The caller loaded @seq from the latch (1, as
 * rs_objtab_begin()), wrote @n0 words before (the interrupted pc's, found
 * in the index under @seq), with @reasons so far, and guarantees lo
 * inside the thread's stack, whose top is hi.
 */
RS_WALK_ATTRS __attribute__((always_inline)) static inline bool
walk_fast(uint64_t seq, uintptr_t fp, uintptr_t lo, uintptr_t hi, uint64_t *words, size_t n0, size_t cap,
	  unsigned skip, uint32_t reasons, const unsigned abs, struct relstack_verdict *v, size_t *n_out,
	  struct walk_resume *rs)
{
	uint64_t *out = words + n0, g, epoch;
	uintptr_t top = hi - RS_ARCH_FRAME_SIZE, lim, acc = fp, x, next, tt, o0, o1, o2, efp, owner = 0;
	uint32_t tn;

	/*
	 * L1: pairs with S4, as in fast_cache_load(), but an odd gen needs no
	 * test: a store under way has made fast_seq UINT64_MAX before it
	 * touches anything else (S3).  L2 is spread over the walk and L3 comes
	 * at its end: a walk made with fields a handler changed meanwhile is
	 * thrown away, and its reads stayed inside the window whatever the
	 * fields said.
	 */
	g = atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed);
	if (rs_unlikely(rs_tls.fast.fast_seq != seq))
		goto from_start;
	atomic_signal_fence(memory_order_acquire);

	/* L2 */
	if (rs_unlikely(cap - n0 <= RS_TAIL_WORDS || fp < lo || fp > top))
		goto from_start;
	/*
	 * Frames to skip: checked as walk_once() checks them (it takes its
	 * slow path for them, to the same verdict: no reason), not written.
	 */
	for (; skip; skip--) {
		const struct fast_range pf = { rs_tls.fast.start, rs_tls.fast.span, 0, rs_tls.fast.fmap };

		x = rs_arch_strip_ra(load_word(fp + RS_ARCH_FRAME_RA * RS_W));
		if ((x - pf.start >= pf.span || !map_proven(&pf, x - pf.start)) && (x != rs_tls.fast.pass_ra || !x))
			goto from_start;
		next = load_word(fp + RS_ARCH_FRAME_NEXT * RS_W);
		acc |= next;
		if (next < fp + RS_ARCH_FRAME_SIZE || next > top)
			goto from_start;
		fp = next;
		owner = x;
	}
	/*
	 * Frames are at least 16 bytes apart: cut so, the window holds no
	 * more frames than the array has room for with the tail and END
	 * after them.
	 */
	lim = fp + (cap - n0 - RS_TAIL_WORDS - 1) * RS_ARCH_FRAME_SIZE; /* a cap beyond memory wraps: the window only shrinks */
	if (lim < top)
		top = lim;
	if (rs_arch_fast_frames(&fp, &lo, &out, &acc, &x, &rs_tls.fast.start, &rs_tls.fast.span,
				&rs_tls.fast.wdelta[abs], rs_tls.fast.fmap, top)) {
		fp = x;
		goto hand_over;
	}
	/* the frame at fp left the fast range: does the cached tail start here? */
	lo = fp; /* walk_once() checks fp against lo only, and fp passed */
	if (rs_unlikely(x != rs_tls.fast.exit_off)) /* x = ra - start */
		goto hand_over;
	_Static_assert(RS_TAIL_SLOTS == 3, "the slots are compared one by one below");
	o0 = rs_tls.fast.slot_off[0];
	o1 = rs_tls.fast.slot_off[1];
	o2 = rs_tls.fast.slot_off[2];
	tt = rs_tls.fast.tail_top;
	efp = rs_tls.fast.exit_fp;
	atomic_signal_fence(memory_order_acquire);
	/*
	 * L3 before the slots are read: the offsets and tail_top are then
	 * one store's, which kept every slot within tail_top of the frame
	 * record.
	 */
	if (rs_unlikely(atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed) != g))
		goto from_start;
	if (rs_unlikely(tt > hi - fp || (efp && efp != fp))) /* a pinned tail: only at its own frame record */
		goto hand_over;
	if (rs_unlikely(((load_word(fp + o0) ^ rs_tls.fast.slot_val[0]) | (load_word(fp + o1) ^ rs_tls.fast.slot_val[1]) |
			 (load_word(fp + o2) ^ rs_tls.fast.slot_val[2])) != 0))
		goto hand_over;
	if (rs_unlikely(acc & (RS_W - 1)))
		goto from_start;
	for (unsigned i = 0; i < RS_TAIL_WORDS; i++) /* all of them: fewer instructions than tn of them */
		out[i] = rs_tls.fast.tail_word[abs][i];
	tn = rs_tls.fast.tail_n;
	epoch = rs_tls.fast.epoch;
	atomic_signal_fence(memory_order_acquire);
	/* L3: pairs with S2 */
	if (rs_unlikely(atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed) != g))
		goto from_start;
	if (!reasons)
		out[tn] = RS_NATIVE_END;
	/* 3: pairs with the fence after A in publish_index() (as rs_objtab_end()) */
	atomic_thread_fence(memory_order_acquire);
	if (rs_unlikely(atomic_load_explicit(&rs_latch.seq, memory_order_relaxed) != rs_tls.fast.fast_seq))
		goto from_start; /* (fast_seq == seq: L3 passed) */
	/* END only for a reliable trace */
	out += tn + !reasons;
	*n_out = (size_t)(out - words);
	if (v) {
		v->reasons = reasons;
		v->frames = (uint32_t)*n_out - !reasons;
		v->epoch = epoch;
	}
	return true;

hand_over:
	atomic_signal_fence(memory_order_acquire);
	/* L3, for the fast range the words were made with */
	if (rs_likely(!(acc & (RS_W - 1)) &&
		      atomic_load_explicit(&rs_tls.fast.gen, memory_order_relaxed) == g)) {
		rs->seq = rs_tls.fast.fast_seq; /* == seq: L3 passed */
		rs->fp = fp;
		rs->lo = lo;
		rs->n = (size_t)(out - words);
		/* the function whose record fp is: the last frame written, else the last skipped */
		rs->owner = out > words + n0 ? (uintptr_t)(out[-1] - rs_tls.fast.wdelta[abs]) + rs_tls.fast.start : owner;
		return false;
	}
from_start:
	*rs = (struct walk_resume){ 0, 0, 0, 0, 0 };
	return false;
}

size_t rs_unwind_walk(struct rs_walk *w, uint64_t *words, size_t cap, struct relstack_verdict *verdict)
{
	const unsigned abs = w->flags & RELSTACK_CAPTURE_ABSOLUTE;
	struct walk_resume rs, *rsp = NULL;
	uint32_t reasons = w->reasons;
	size_t n, n0 = 0;
	uint64_t seq;

	if (!(w->flags & (RS_WALK_COMPLETE | RS_WALK_SNAPSHOT | RELSTACK_CAPTURE_CHECK)) && in_range(w->sp, 1, &w->stack) &&
	    (!w->pc || (cap && !w->skip))) {
		if (w->pc) {
			/* the interrupted pc's word, as walk_once() finds it; walk_fast() checks seq at its end */
			struct rs_objtab_view pv;
			struct fast_range unused;
			const struct rs_cfi_table *ico;

			rs_objtab_begin(&pv);
			fast_cache_load(&unused, &pv, !abs, false);
			words[0] = code_word(&pv, w->pc, !abs, &reasons);
			n0 = 1;
			seq = pv.seq;
			ico = interrupted_cfi(&pv, w->pc);
			if (ico && !frame_pointer_row(ico, w->pc, w->fp, w->sp))
				goto general; /* walk_once() follows its CFI; walk_fast() never does */
			if (ico)
				reasons &= ~RELSTACK_UNRELIABLE_ASYNC_START; /* its row proves the frame record */
		} else {
			/* 1: pairs with C in publish_index() (as rs_objtab_begin()) */
			seq = atomic_load_explicit(&rs_latch.seq, memory_order_acquire);
		}
		if (abs ? walk_fast(seq, w->fp, w->sp, w->stack.hi, words, n0, cap, w->skip, reasons, 1, verdict, &n,
				    &rs)
			: walk_fast(seq, w->fp, w->sp, w->stack.hi, words, n0, cap, w->skip, reasons, 0, verdict, &n,
				    &rs))
			return n;
		rsp = &rs;
	}
general:
	if (abs)
		return walk_absolute(w, words, cap, verdict, rsp);
	return walk_relative(w, words, cap, verdict, rsp);
}

/* Fill the parts of a walk every capture shares. */
static void walk_init(struct rs_walk *w, const struct rs_thread_stack *ts, unsigned flags)
{
	w->stack = ts->stack;
	w->alt = ts->alt;
	w->reasons = 0;
	w->skip = 0;
	w->flags = flags;
	w->pc = 0;
	w->lr = 0;
	w->fp_pc = 0;
	w->delta = 0;
	w->latch = NULL;
}

static int unknown_stack(uint64_t *words, size_t cap, uintptr_t pc, unsigned flags, uint32_t reasons,
			 struct relstack_verdict *v)
{
	struct rs_walk w = { 0 };

	/* No range is known: only what needs no stack read (the pc) is written. */
	w.pc = pc;
	w.sp = 0;
	w.flags = flags;
	w.reasons = reasons | RELSTACK_UNRELIABLE_OUTSIDE_STACK;
	return (int)rs_unwind_walk(&w, words, cap, v);
}

/*
 * The rest of relstack_capture(), out of its fast path's way; @n, @seq,
 * @rfp and @rlo are the struct walk_resume from walk_fast(), passed in
 * registers so that the fast path keeps no struct in memory.
 */
__attribute__((noinline)) static int capture_slow(uint64_t *words, size_t cap, unsigned skip, unsigned flags,
						  struct relstack_verdict *v, uintptr_t fp, uintptr_t fp_pc, size_t n,
						  uint64_t seq, uintptr_t rfp, uintptr_t rlo, uintptr_t rowner)
{
	const struct walk_resume rs = { seq, rfp, rlo, n, rowner };
	struct rs_walk w;

	/* R1: pairs with W3 in stack.c */
	if (rs_unlikely(!atomic_load_explicit(&rs_tls.stack.valid, memory_order_relaxed)))
		return unknown_stack(words, cap, 0, flags, 0, v);
	atomic_signal_fence(memory_order_acquire);
	/* R2 */
	w.stack = rs_tls.stack.stack;
	w.alt = rs_tls.stack.alt;
	w.reasons = 0;
	w.flags = flags;
	w.pc = 0;
	w.lr = 0;
	w.fp = fp;
	w.fp_pc = fp_pc;
	w.sp = fp; /* our own frame record is the lowest thing the walk reads */
	w.skip = skip;
	w.delta = 0;
	w.latch = NULL;
	if (flags & RELSTACK_CAPTURE_ABSOLUTE)
		return (int)walk_absolute(&w, words, cap, v, &rs);
	return (int)walk_relative(&w, words, cap, v, &rs);
}

/*
 * A return address into the function that calls this: a pc in its body,
 * where its frame record is set up.  Where a record does not top its frame,
 * the walk finds the CFA of relstack_capture()'s own record from its row
 * at that pc (record_cfa()).
 */
__attribute__((noinline)) static uintptr_t pc_in_caller(void)
{
	return (uintptr_t)__builtin_return_address(0);
}

/* Keep @x live after a call: the call is then no tail call (relstack_capture()'s frame record stays). */
#define no_tail_call(x) __asm__ volatile("" : "+r"(x))

/*
 * relstack_capture() with frames to skip (a caller dropping its own frame),
 * apart so that the common capture keeps its registers.  @fp is
 * relstack_capture()'s frame record, @fp_pc a pc in it (pc_in_caller(), or
 * 0 where the record tops its frame); it is called, never jumped to, so
 * that record stays.
 */
__attribute__((noinline)) static int capture_skipping(uint64_t *words, size_t cap, unsigned skip, unsigned flags,
						      struct relstack_verdict *v, uintptr_t fp, uintptr_t fp_pc)
{
	struct walk_resume rs;
	size_t n;

	/* the checker's walk is the general one: it looks at every frame */
	if (flags & RELSTACK_CAPTURE_CHECK)
		return capture_slow(words, cap, skip, flags, v, fp, fp_pc, 0, 0, 0, 0, 0);
	/* R1' and R2: see relstack_capture(); 1: pairs with C in publish_index() */
	if (walk_fast(atomic_load_explicit(&rs_latch.seq, memory_order_acquire), fp, fp, rs_tls.stack.stack.hi,
		      words, 0, cap, skip, 0, flags & RELSTACK_CAPTURE_ABSOLUTE, v, &n, &rs))
		return (int)n;
	return capture_slow(words, cap, skip, flags, v, fp, fp_pc, rs.n, rs.seq, rs.fp, rs.lo, rs.owner);
}

__attribute__((noinline)) int relstack_capture(uint64_t *words, size_t cap, unsigned skip, unsigned flags,
					       struct relstack_verdict *v)
{
	uintptr_t fp = rs_arch_frame_address();
	struct walk_resume rs;
	uint64_t seq;
	size_t n;
	bool done;
	int ret;

	if (rs_unlikely(flags & ~(RELSTACK_CAPTURE_ABSOLUTE | RELSTACK_CAPTURE_CHECK) || (!words && cap)))
		return -EINVAL;
	/*
	 * R1': pairs with W1 and W3 in stack.c (an unknown stack has lo
	 * UINTPTR_MAX); walk_fast() checks fp against its top.
	 */
	if (rs_unlikely(fp < rs_tls.stack.stack.lo)) {
		ret = capture_slow(words, cap, skip, flags, v, fp, RS_ARCH_RECORD_TOPS_FRAME ? 0 : pc_in_caller(), 0, 0,
				   0, 0, 0);
		no_tail_call(ret);
		return ret;
	}
	atomic_signal_fence(memory_order_acquire);
	/* R2 */
	if (rs_unlikely(skip || (flags & RELSTACK_CAPTURE_CHECK))) {
		ret = capture_skipping(words, cap, skip, flags, v, fp, RS_ARCH_RECORD_TOPS_FRAME ? 0 : pc_in_caller());
		no_tail_call(ret);
		return ret;
	}
	/* 1: pairs with C in publish_index() (as rs_objtab_begin()) */
	seq = atomic_load_explicit(&rs_latch.seq, memory_order_acquire);
	if (flags)
		done = walk_fast(seq, fp, fp, rs_tls.stack.stack.hi, words, 0, cap, 0, 0, 1, v, &n, &rs);
	else
		done = walk_fast(seq, fp, fp, rs_tls.stack.stack.hi, words, 0, cap, 0, 0, 0, v, &n, &rs);
	if (rs_unlikely(!done)) {
		ret = capture_slow(words, cap, 0, flags, v, rs_arch_frame_address(),
				   RS_ARCH_RECORD_TOPS_FRAME ? 0 : pc_in_caller(), rs.n, rs.seq, rs.fp, rs.lo, rs.owner);
		no_tail_call(ret);
		return ret;
	}
	return (int)n;
}

int relstack_capture_context(const void *ucontext, uint64_t *words, size_t cap, unsigned flags,
			     struct relstack_verdict *v)
{
	struct rs_thread_stack ts;
	struct rs_arch_context c;
	struct rs_walk w;

	if (flags & ~(RELSTACK_CAPTURE_ABSOLUTE | RELSTACK_CAPTURE_CHECK) || (!words && cap) || !ucontext)
		return -EINVAL;
	/* The caller vouches for the ucontext: it may be read in full. */
	rs_arch_context_read(ucontext, &c);
	if (!rs_thread_stack_get(&ts)) {
		if (!c.alt_hi)
			return unknown_stack(words, cap, c.pc, flags, RELSTACK_UNRELIABLE_ASYNC_START, v);
		ts = (struct rs_thread_stack){ 0 };
	}
	if (!ts.alt.hi && c.alt_hi) {
		ts.alt.lo = c.alt_lo;
		ts.alt.hi = c.alt_hi;
	}
	walk_init(&w, &ts, flags);
	w.pc = c.pc;
	w.lr = c.lr;
	w.fp = c.fp;
	w.sp = c.sp;
	w.reasons = RELSTACK_UNRELIABLE_ASYNC_START;
	return (int)rs_unwind_walk(&w, words, cap, v);
}
