// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The unwinder's fast walk (walk_fast() in unwind.c) against its complete
 * walk (walk_once()): the same words, counts, reasons, epoch and end frame
 * on every stack.
 *
 * Stacks are frame chains built in a mapping with inaccessible pages on
 * both sides (as in test_unwind.c), their return addresses in real
 * objects: the test program and librs_unwind_fp.so (frame pointers; the
 * fast walk caches one of them), librs_unwind_nofp.so and the C runtime
 * (no frame pointers; followed by its CFI, and ending stacks at its
 * outermost frame, directly or one CFI frame later), the signal-return
 * trampoline, unknown text and garbage.  Real stacks too: the main thread
 * (ending at _start), a thread ending at clone3, and captures from a
 * timer's signal handler that change the thread's cache while the
 * interrupted code walks.
 *
 * The two walks are reached through rs_unwind_walk(); the reference walk
 * has RS_WALK_COMPLETE, so the fast walk is never tried for it (checked
 * below, with the tracer) and it stores no tail in the thread's cache.
 *
 * The tracer: the fast walk alone writes absolute words from
 * rs_tls.fast.wdelta[1] and tail_word[1][]; the complete walk computes
 * its own.  Adding 1 to them before an absolute walk marks every word the
 * fast walk wrote and the final result kept, which tells a walk the fast
 * path finished from one it handed over (and where) or left from the
 * start.
 *
 * Real call chains run before cmocka's runner (main thread) or on threads
 * of their own: the runner keeps no frame pointers.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/objtab.h"
#include "capture/objtab-local.h"
#include "capture/unwind-local.h"
#include "cfi-test.h"
#include "relstack/relstack.h"
#include "unwind-test.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define STACK_WORDS 4096
#define MAXW 600   /* room for the deepest generated stack */
#define CANARY 0x5eed5eed5eed5eedull
#define UNKNOWN_TEXT_ADDR ((uintptr_t)0x10000)
#define RANDOM_STACKS 1000000

/* Not static, so that no interprocedural optimisation changes the real chains. */
void real_compare(void *arg);
void *entry_thread(void *arg);
void *chain_thread(void *arg);
void chain_cb(void *arg);

struct image {
	unsigned char *map;
	size_t len;
	uintptr_t *w; /* STACK_WORDS words, guard pages around */
};

static struct image img, himg; /* the walks', the signal handler's */

static uintptr_t slot(const struct image *m, size_t i) { return (uintptr_t)&m->w[i]; }

static void frame(struct image *m, size_t i, uintptr_t next, uintptr_t ra)
{
	m->w[i] = next;
	m->w[i + 1] = ra;
}

static int image_new(struct image *m)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t body = STACK_WORDS * sizeof(uintptr_t);

	m->len = body + 2 * (size_t)page;
	m->map = mmap(NULL, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->map == MAP_FAILED)
		return -1;
	if (mprotect(m->map + page, body, PROT_READ | PROT_WRITE))
		return -1;
	m->w = (uintptr_t *)(void *)(m->map + page);
	return 0;
}

/* ---- the objects return addresses are taken from ---- */

__attribute__((noinline)) static int text_in_test(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

struct object {
	uintptr_t base; /* return addresses are base + [0, 32) */
};

/* fpo[0..nfp): objects that keep frame pointers; the test program is one unless a sanitizer runtime is linked in */
static struct object fpo[2];
static unsigned nfp;
static uintptr_t nofp_ra, entry_ra[2], restorer, pass_ra;
static bool prog_fp;

/* Does the object holding @a prove frame records where crafted stacks put return addresses? */
static bool keeps_fp(uintptr_t a)
{
	return record_ra_run(a, 32) != 0;
}

static int find_objects(void)
{
	struct rs_lookup l;

	if (relstack_objtab__refresh() < 0)
		return -1;
	prog_fp = keeps_fp((uintptr_t)&text_in_test);
	if (prog_fp)
		fpo[nfp++] = (struct object){ record_ra_run((uintptr_t)&text_in_test, 32) };
	if (keeps_fp((uintptr_t)&rs_unwind_fp_inner))
		fpo[nfp++] = (struct object){ record_ra_run((uintptr_t)&rs_unwind_fp_inner, 32) };
	/* a return address the walk cannot follow: a C runtime row given by an expression (its PLT) */
	nofp_ra = cfi_ra_of_kind(crt_cfi(), ROW_UNSUPPORTED);
	/*
	 * Two ends of a stack in the C runtime: its outermost frame, and a
	 * function's entry row whose return address (at the frame record +
	 * 16, see common_stack()) is the outermost frame.
	 */
	entry_ra[0] = cfi_ra_of_kind(crt_cfi(), ROW_OUTERMOST);
	entry_ra[1] = cfi_ra_of_kind(crt_cfi(), ROW_ENTRY);
	restorer = crt_rt_restorer();
	/* a frame a recorder in another object skips: in librs_unwind_fp.so */
	pass_ra = (uintptr_t)&rs_unwind_fp_call + 5;
	if (nfp == 0 || !entry_ra[0] || !entry_ra[1] || !rs_objtab_lookup(entry_ra[0], &l) || !l.cfi || !nofp_ra)
		return -1; /* the premises of every case below */
	return 0;
}

/* ---- the two walks, and the tracer ---- */

static __thread uint64_t tail_armed[RS_TAIL_WORDS], tail_kept[RS_TAIL_WORDS];

static void tracer_arm(void)
{
	rs_tls.fast.wdelta[1] = rs_tls.fast.start + 1;
	memcpy(tail_kept, rs_tls.fast.tail_word[1], sizeof(tail_kept));
	for (unsigned i = 0; i < RS_TAIL_WORDS; i++)
		rs_tls.fast.tail_word[1][i] += 1;
	memcpy(tail_armed, rs_tls.fast.tail_word[1], sizeof(tail_armed));
}

/* A word of the cached tail the tracer marked (its value before marking). */
static bool is_cached_tail_word(uint64_t word)
{
	for (unsigned i = 0; i < RS_TAIL_WORDS; i++)
		if (tail_kept[i] == word)
			return true;
	return false;
}

/* The values a store gives them (fast_cache_store()); a tail stored meanwhile is left as it is. */
static void tracer_disarm(void)
{
	rs_tls.fast.wdelta[1] = rs_tls.fast.start;
	if (!memcmp(tail_armed, rs_tls.fast.tail_word[1], sizeof(tail_armed)))
		memcpy(rs_tls.fast.tail_word[1], tail_kept, sizeof(tail_kept));
}

struct result {
	size_t n;
	struct relstack_verdict v;
	uint64_t words[MAXW + 8];
};

/* The complete walk: see the top of the file. */
static void walk_complete(const struct rs_walk *w0, size_t cap, struct result *r)
{
	struct rs_walk w = *w0;

	w.flags |= RS_WALK_COMPLETE;
	memset(&r->v, 0xa5, sizeof(r->v));
	r->n = rs_unwind_walk(&w, r->words, cap, &r->v);
}

/* The walk with the fast path; @trace: absolute, with the tracer armed. */
static void walk_with_fast(const struct rs_walk *w0, size_t cap, struct result *r, bool trace)
{
	struct rs_walk w = *w0;

	for (size_t i = 0; i < cap + 8 && i < RS_ARRAY_SIZE(r->words); i++)
		r->words[i] = CANARY;
	memset(&r->v, 0x5a, sizeof(r->v));
	if (trace)
		tracer_arm();
	r->n = rs_unwind_walk(&w, r->words, cap, &r->v);
	if (trace)
		tracer_disarm();
}

/*
 * Compare; returns how many words the fast walk wrote (traced), or -1 on
 * a difference.  Traced words must be a run from the first frame after
 * the interrupted pc, each the reference's + 1.
 */
static int differ_at(const struct rs_walk *w, size_t cap, const struct result *f, const struct result *ref,
		     bool trace)
{
	size_t first = w->pc && !w->skip ? 1 : 0, traced = 0;

	if (f->n != ref->n || f->n > cap || f->v.reasons != ref->v.reasons || f->v.frames != ref->v.frames ||
	    f->v.epoch != ref->v.epoch)
		return -1;
	for (size_t i = cap; i < cap + 8 && i < RS_ARRAY_SIZE(f->words); i++)
		if (f->words[i] != CANARY)
			return -1; /* written past the array */
	for (size_t i = 0; i < f->n; i++) {
		if (f->words[i] == ref->words[i])
			continue;
		if (!trace || f->words[i] != ref->words[i] + 1)
			return -1;
		if (i == first + traced) {
			traced++;
			continue;
		}
		/* not the fast walk's, but the general walk's copy of the cached tail: marked too */
		if (!is_cached_tail_word(ref->words[i]))
			return -1;
	}
	return (int)traced;
}

static void report(const char *what, const struct rs_walk *w, size_t cap, const struct result *f,
		   const struct result *ref)
{
	fprintf(stderr, "%s: cap %zu skip %u flags %u pc %#lx\n", what, cap, w->skip, w->flags,
		(unsigned long)w->pc);
	fprintf(stderr, "  fast: n %zu reasons %#x frames %u epoch %lu\n", f->n, f->v.reasons, f->v.frames,
		(unsigned long)f->v.epoch);
	fprintf(stderr, "  full: n %zu reasons %#x frames %u epoch %lu\n", ref->n, ref->v.reasons, ref->v.frames,
		(unsigned long)ref->v.epoch);
	for (size_t i = 0; i < f->n || i < ref->n; i++)
		fprintf(stderr, "  [%zu] %#018llx %#018llx\n", i, (unsigned long long)f->words[i],
			(unsigned long long)ref->words[i]);
}

/* Both walks on @w, untraced: fails the test on any difference. */
static void check_walk(const struct rs_walk *w, size_t cap)
{
	static struct result f, ref;

	walk_with_fast(w, cap, &f, false);
	walk_complete(w, cap, &ref);
	if (differ_at(w, cap, &f, &ref, false) < 0) {
		report("fast and complete walks differ", w, cap, &f, &ref);
		fail();
	}
}

/* A walk of @m from the frame at word @first, the whole image its stack. */
static void walk_of(struct rs_walk *w, const struct image *m, size_t first)
{
	memset(w, 0, sizeof(*w));
	w->fp = slot(m, first);
	w->sp = slot(m, 0);
	w->stack.lo = slot(m, 0);
	w->stack.hi = slot(m, STACK_WORDS);
}

/*
 * The end of a stack at word @i of @m: a frame record returning to @ra, one
 * of entry_ra[]; for entry_ra[1], whose CFA is the frame record + 24, the
 * outermost frame's return address above it.
 */
static void stack_end(struct image *m, size_t i, uintptr_t next, uintptr_t ra)
{
	frame(m, i, next, ra);
	if (ra == entry_ra[1])
		m->w[i + 2] = entry_ra[0];
}

/*
 * A common stack in @m: @depth frames in object @o from word @at, 2 + gap
 * words apart, then the end of the stack at @ra (stack_end()).  Returns
 * the last frame record's word.
 */
static size_t common_stack(struct image *m, size_t at, unsigned depth, const struct object *o, size_t gap,
			   uintptr_t ra)
{
	size_t i = at;

	for (unsigned d = 0; d < depth; d++, i += 2 + gap)
		frame(m, i, slot(m, i + 2 + gap), o->base + d % 32);
	stack_end(m, i, 0, ra);
	return i;
}

/* ---- random stacks ---- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uintptr_t garbage(void)
{
	switch (rnd() % 8) {
	case 0: return 0;
	case 1: return 1;
	case 2: return slot(&img, rnd() % STACK_WORDS);
	case 3: return slot(&img, rnd() % STACK_WORDS) + 1 + rnd() % 7;
	case 4: return UNKNOWN_TEXT_ADDR + rnd() % 4096;
	case 5: return ~(uintptr_t)0 - rnd() % 4;
	default: return (uintptr_t)rnd();
	}
}

/* A return address the fast walk may not decide (or, now and then, may). */
static uintptr_t odd_ra(void)
{
	switch (rnd() % 7) {
	case 0: return fpo[rnd() % nfp].base + rnd() % 32; /* maybe the other object */
	case 1: return nofp_ra;
	case 2: return entry_ra[rnd() % 2];                  /* the C runtime, mid-stack */
	case 3: return restorer;
	case 4: return UNKNOWN_TEXT_ADDR + rnd() % 4096;
	case 5: return pass_ra;
	default: return garbage();
	}
}

/*
 * One random stack in img: mostly the common one (a run in one object
 * that keeps frame pointers, then the end of the stack), with perturbations.
 * Fills @w; @o is the object most frames are in.
 */
static unsigned end_kind;

static void random_stack(struct rs_walk *w, const struct object *o)
{
	size_t at = 4 + rnd() % 16, i = at, top_cut;
	unsigned depth = rnd() % 4 ? (unsigned)(rnd() % 40) : (unsigned)(rnd() % 250);
	bool perturb = rnd() % 3 == 0;
	/* a signal frame's words, from the handler's record to past its ucontext */
	size_t ucw = (rs_arch_sigframe_context(RS_ARCH_FRAME_SIZE, 0) + sizeof(ucontext_t)) / sizeof(uintptr_t) + 4;

	for (size_t j = 0; j < 24; j++) /* what the start of the last stack left, partly */
		img.w[j] = rnd() % 2 ? garbage() : img.w[j];
	walk_of(w, &img, at);
	for (unsigned d = 0; d < depth && i + 2 * ucw + 64 < STACK_WORDS; d++) {
		size_t gap = rnd() % 4 ? 0 : rnd() % 6, next = i + 2 + gap;
		uintptr_t ra = o->base + rnd() % 32, nx = slot(&img, next);

		if (perturb && rnd() % 24 == 0)
			ra = odd_ra();
		if (perturb && rnd() % 64 == 0) {
			switch (rnd() % 4) {
			case 0: nx = garbage(); break;
			case 1: nx = slot(&img, next) + 1 + rnd() % 7; break;   /* misaligned */
			case 2: nx = slot(&img, i - rnd() % 3); break;         /* not increasing */
			default: nx = 0; break;                                /* a saved 0: the end */
			}
		}
		if (ra == restorer) {
			/* a signal frame: the ucontext above the handler's record, the interrupted frames above it */
			ucontext_t *uc = (ucontext_t *)rs_arch_sigframe_context(slot(&img, i) + RS_ARCH_FRAME_SIZE, 0);
			size_t above = i + ucw, fpw = above + rnd() % 3;

			memset(uc, 0, sizeof(*uc));
			rs_arch_context_set(uc, rnd() % 2 ? o->base + 3 : odd_ra(), slot(&img, above), slot(&img, fpw));
			frame(&img, i, garbage(), ra);
			i = fpw;
			continue;
		}
		frame(&img, i, nx, ra);
		i = next;
	}
	/*
	 * The last frame: the end of the stack in the C runtime, or not.  As
	 * on a real thread, the same end (and the same frame pointer there)
	 * for many stacks in a row, which the fast walk then finishes.
	 */
	if (rnd() % 32 == 0)
		end_kind = (unsigned)(rnd() % 6);
	switch (end_kind) {
	case 0: case 1: case 2:
		stack_end(&img, i, rnd() % 8 ? 0 : garbage(), entry_ra[0]);
		break;
	case 3: case 4:
		stack_end(&img, i, rnd() % 8 ? 0 : garbage(), entry_ra[1]);
		if (rnd() % 8 == 0) /* what the CFI finds above the frame record is not the end */
			img.w[i + 2] = rnd() % 2 ? o->base : garbage();
		break;
	default:
		frame(&img, i, rnd() % 2 ? 0 : garbage(), rnd() % 2 ? o->base : garbage());
		break;
	}
	/* the stack's top: the image's, or cut somewhere around the chain */
	if (rnd() % 8 == 0) {
		top_cut = at + rnd() % (i + 8 - at);
		w->stack.hi = slot(&img, top_cut) - (rnd() % 4 == 0 ? rnd() % 8 : 0);
	}
	if (rnd() % 16 == 0)
		w->sp = w->fp + (rnd() % 2 ? 8 : -(uintptr_t)16 * (rnd() % 3)); /* the first frame outside, or not */
	if (rnd() % 32 == 0)
		w->fp = garbage();
	if (rnd() % 6 == 0) {
		/* an interrupted context: its pc first */
		w->pc = rnd() % 2 ? o->base + rnd() % 32 : odd_ra();
		w->reasons = RELSTACK_UNRELIABLE_ASYNC_START;
	}
	w->skip = rnd() % 4 ? 0 : (unsigned)(rnd() % 4);
	if (w->skip && rnd() % 2) /* the recorder's own frame, in another object */
		img.w[at + 1] = pass_ra;
	w->flags = rnd() % 2 ? RELSTACK_CAPTURE_ABSOLUTE : 0;
}

/*
 * What a traced walk says about the fast path: it finished the walk
 * (every frame word and the tail's traced, END after them), it
 * handed over after writing some, or none of its words were kept.
 */
enum fast_use { FAST_NONE, FAST_RESUMED, FAST_FINISHED };

static enum fast_use fast_use_of(const struct rs_walk *w, const struct result *ref, int traced)
{
	size_t first = w->pc && !w->skip ? 1 : 0;

	if (traced == 0)
		return FAST_NONE;
	if (ref->v.reasons == w->reasons && ref->n >= 2 && ref->words[ref->n - 1] == RS_NATIVE_END &&
	    (size_t)traced + first == ref->v.frames)
		return FAST_FINISHED;
	return FAST_RESUMED;
}

static struct result last_ref; /* the reference of the last check_traced() */

static enum fast_use check_traced_n(const struct rs_walk *w, size_t cap, int *traced)
{
	static struct result f;
	struct rs_walk t = *w;
	int k;

	t.flags = RELSTACK_CAPTURE_ABSOLUTE;
	walk_with_fast(&t, cap, &f, true);
	walk_complete(&t, cap, &last_ref);
	k = differ_at(&t, cap, &f, &last_ref, true);
	if (k < 0)
		report("fast and complete walks differ (traced)", &t, cap, &f, &last_ref);
	assert_true(k >= 0);
	*traced = k;
	return fast_use_of(&t, &last_ref, k);
}

static enum fast_use check_traced(const struct rs_walk *w, size_t cap)
{
	int k;

	return check_traced_n(w, cap, &k);
}

static void fast_walk_equals_complete_walk_on_random_stacks(void **state)
{
	unsigned use[3] = { 0 }, reliable = 0, cur = 0;
	uint32_t seen = 0;

	memset(img.w, 0, STACK_WORDS * sizeof(uintptr_t));
	for (unsigned iter = 0; iter < RANDOM_STACKS; iter++) {
		struct rs_walk w;
		size_t cap;

		/* the common object changes now and then: the cache follows */
		if (rnd() % 64 == 0)
			cur = (unsigned)(rnd() % nfp);
		random_stack(&w, &fpo[cur]);
		cap = rnd() % 4 ? MAXW : (size_t)(rnd() % 64);
		if (rnd() % 2) {
			use[check_traced(&w, cap)]++;
			reliable += last_ref.v.reasons == 0;
			seen |= last_ref.v.reasons;
		} else {
			check_walk(&w, cap);
		}
	}
	fprintf(stderr, "%u stacks; of the traced walks the fast path finished %u, handed over %u after "
		"writing words, wrote none kept %u; %u reliable\n",
		RANDOM_STACKS, use[FAST_FINISHED], use[FAST_RESUMED], use[FAST_NONE], reliable);
	/* the stacks reach every case of the fast path, and every reason */
	assert_true(use[FAST_FINISHED] > RANDOM_STACKS / 20);
	assert_true(use[FAST_RESUMED] > RANDOM_STACKS / 50);
	assert_true(use[FAST_NONE] > RANDOM_STACKS / 50);
	assert_true(reliable > use[FAST_FINISHED]);
	/* the table gives OBJECTS_CHANGING, the checker (never here) FP_MISMATCH, kernel stacks the last three */
	assert_int_equal(seen | RELSTACK_UNRELIABLE_OBJECTS_CHANGING | RELSTACK_UNRELIABLE_FP_MISMATCH |
				 RELSTACK_UNRELIABLE_INTERRUPT_FRAME | RELSTACK_UNRELIABLE_KERNEL_REFUSED |
				 RELSTACK_UNRELIABLE_UNCHECKED,
			 RELSTACK_UNRELIABLE_ALL);
}

/* ---- directed cases on crafted stacks ---- */

/* A common stack of @depth frames in fpo[0] from word 4, entry at entry_ra[0]; walked once to warm the cache. */
static size_t warm_common_stack(struct rs_walk *w, unsigned depth, size_t gap)
{
	size_t e;

	memset(img.w, 0, STACK_WORDS * sizeof(uintptr_t));
	e = common_stack(&img, 4, depth, &fpo[0], gap, entry_ra[0]);
	walk_of(w, &img, 4);
	check_walk(w, MAXW);
	assert_int_equal(check_traced(w, MAXW), FAST_FINISHED);
	return e;
}

static void fast_walk_stopping_at_a_frame_it_does_not_decide_is_resumed_there(void **state)
{
	/* return addresses the fast walk leaves to the complete walk */
	const uintptr_t odd[] = {
		nfp > 1 ? fpo[1].base + 7 : (uintptr_t)&text_in_test + 7, nofp_ra, entry_ra[1], UNKNOWN_TEXT_ADDR, restorer, 12345,
	};
	struct rs_walk w;
	int traced;

	for (size_t o = 0; o < RS_ARRAY_SIZE(odd); o++) {
		for (unsigned k = 0; k < 24; k++) {
			warm_common_stack(&w, 30, 0);
			img.w[4 + 2 * k + 1] = odd[o];
			check_traced_n(&w, MAXW, &traced);
			/* the k frames before it are the fast walk's words, kept */
			assert_int_equal(traced, (int)k);
			assert_true(last_ref.n > k);
			check_walk(&w, MAXW);
		}
	}
	/*
	 * The outermost frame the cached tail starts with, anywhere: the
	 * stack ends there, and the fast walk writes the tail (it read no
	 * slot, so nothing else is compared).
	 */
	for (unsigned k = 0; k < 24; k++) {
		warm_common_stack(&w, 30, 0);
		img.w[4 + 2 * k + 1] = entry_ra[0];
		assert_int_equal(check_traced_n(&w, MAXW, &traced), FAST_FINISHED);
		assert_int_equal(traced, (int)k + 1);
		assert_int_equal(last_ref.v.reasons, 0);
		assert_int_equal(last_ref.n, k + 2);
	}
	/* a frame pointer leaving the window: the frame that held it is the fast walk's too */
	for (unsigned k = 0; k < 24; k++) {
		const uintptr_t next[] = { 0, slot(&img, 4 + 2 * k), slot(&img, STACK_WORDS), slot(&img, 2) };

		for (size_t j = 0; j < RS_ARRAY_SIZE(next); j++) {
			warm_common_stack(&w, 30, 0);
			img.w[4 + 2 * k] = next[j];
			check_traced_n(&w, MAXW, &traced);
			assert_int_equal(traced, (int)k + 1);
			/* a saved 0 after a function that is not the outermost one proves no end */
			if (j == 0)
				assert_int_equal(last_ref.v.reasons, RELSTACK_UNRELIABLE_END_UNPROVEN);
			else
				assert_true(last_ref.v.reasons != 0);
			check_walk(&w, MAXW);
		}
	}
	/* a misaligned frame pointer: the fast walk's words are all dropped */
	for (unsigned k = 0; k < 24; k++) {
		warm_common_stack(&w, 30, 0);
		img.w[4 + 2 * k] = slot(&img, 4 + 2 * k + 2) + sizeof(uintptr_t) / 2;
		check_traced_n(&w, MAXW, &traced);
		assert_int_equal(traced, 0);
		assert_int_equal(last_ref.v.reasons, RELSTACK_UNRELIABLE_MISALIGNED);
		check_walk(&w, MAXW);
	}
	/* even when the misaligned record reads as a perfect frame of the chain, up to the entry */
	for (unsigned k = 0; k < 24; k++) {
		uintptr_t bad = slot(&img, 4 + 2 * k + 2) + sizeof(uintptr_t) / 2, rec[2];

		warm_common_stack(&w, 30, 0);
		img.w[4 + 2 * k] = bad;
		rec[0] = slot(&img, 4 + 2 * k + 6);
		rec[1] = fpo[0].base + 2;
		memcpy((void *)bad, rec, sizeof(rec));
		check_traced_n(&w, MAXW, &traced);
		assert_int_equal(traced, 0);
		assert_int_equal(last_ref.v.reasons, RELSTACK_UNRELIABLE_MISALIGNED);
		assert_int_equal(last_ref.n, k + 1);
		check_walk(&w, MAXW);
	}
}

static void complete_walk_of_this_test_never_takes_the_fast_path(void **state)
{
	static struct result f, ref;
	struct rs_walk w;

	warm_common_stack(&w, 20, 1);
	w.flags = RELSTACK_CAPTURE_ABSOLUTE;
	walk_with_fast(&w, MAXW, &f, false);
	tracer_arm();
	walk_complete(&w, MAXW, &ref);
	tracer_disarm();
	assert_int_equal(ref.n, f.n);
	assert_memory_equal(ref.words, f.words, f.n * sizeof(f.words[0]));
}

static void cache_made_before_the_object_table_changed_is_not_used(void **state)
{
	struct rs_walk w;
	uint64_t epoch;
	void *h = NULL;

	for (int round = 0; round < 4; round++) {
		warm_common_stack(&w, 20, 0);
		epoch = last_ref.v.epoch;
		/* load or unload an object: a new index, a new epoch */
		if (round % 2 == 0) {
			h = dlopen(UNWIND_DL_PATH, RTLD_NOW | RTLD_LOCAL);
			assert_non_null(h);
		} else {
			assert_int_equal(dlclose(h), 0);
		}
		relstack_objtab__refresh(); /* dlclose() has already told the table */
		assert_int_equal(check_traced(&w, MAXW), FAST_NONE);
		assert_true(last_ref.v.epoch != epoch);
		check_walk(&w, MAXW);
		/* and the cache the complete walk made under the new index is */
		assert_int_equal(check_traced(&w, MAXW), FAST_FINISHED);
	}
}

static void frames_to_skip_are_decided_by_the_fast_walk_when_the_cache_allows(void **state)
{
	struct rs_walk w;
	uintptr_t other = nfp > 1 ? fpo[1].base + 11 : nofp_ra;

	for (unsigned s = 0; s <= 3; s++) {
		/* skipped frames in the cached object */
		warm_common_stack(&w, 20, 0);
		w.skip = s;
		check_walk(&w, MAXW);
		assert_int_equal(check_traced(&w, MAXW), FAST_FINISHED);
		assert_int_equal(last_ref.n, 20 - s + 2);
		/*
		 * the last one skipped at a return address a walk skipped before
		 * in another object (the cache keeps the last such address)
		 */
		size_t last = 4 + 2 * (s ? s - 1 : 0) + 1;

		img.w[last] = pass_ra;
		if (s) {
			check_walk(&w, MAXW); /* learns pass_ra */
			assert_int_equal(check_traced(&w, MAXW), FAST_FINISHED);
			assert_int_equal(last_ref.v.reasons, 0);
		}
		/* at any other address outside the cached object: the complete walk decides */
		img.w[last] = other;
		if (s) {
			assert_int_equal(check_traced(&w, MAXW), FAST_NONE);
			check_walk(&w, MAXW);
		}
		/* every frame skipped, the tail's too: END alone */
		img.w[last] = fpo[0].base;
		w.skip = 21 + s;
		check_walk(&w, MAXW);
		check_traced(&w, MAXW);
		assert_int_equal(last_ref.v.reasons, 0);
		assert_int_equal(last_ref.n, 1);
		assert_true(last_ref.words[0] == RS_NATIVE_END);
	}
}

static void truncated_array_of_every_length_gives_the_same_words_and_verdict(void **state)
{
	const unsigned depth = 40;
	enum fast_use use;
	struct rs_walk w;

	for (size_t gap = 0; gap <= 1; gap++) {
		for (unsigned s = 0; s <= 3; s++) {
			for (int pc = 0; pc <= 1; pc++) {
				/*
				 * The whole trace: the interrupted pc, the frames and the
				 * tail, less those skipped, and END when reliable
				 * (without a pc): depth + 2 - s words either way.
				 */
				size_t full = depth + 2 - s;

				for (size_t cap = 0; cap <= full + RS_TAIL_WORDS; cap++) {
					warm_common_stack(&w, depth, gap);
					w.skip = s;
					if (pc) {
						/* an interrupted pc whose frame pointer is followed: one no CFI row describes */
						w.pc = cfi_ra_of_kind(cfi_of_addr(fpo[nfp - 1].base), ROW_GAP) - 1;
						w.reasons = RELSTACK_UNRELIABLE_ASYNC_START;
					}
					check_walk(&w, cap);
					w.flags = RELSTACK_CAPTURE_ABSOLUTE;
					check_walk(&w, cap);
					use = check_traced(&w, cap);
					/*
					 * With room for all, and for a tail of RS_TAIL_WORDS
					 * words and END after the frames (this tail has one),
					 * the fast walk's alone; it cuts its window to the room
					 * in the array counting 16 bytes a frame, so frames
					 * further apart are handed over.
					 */
					if (!pc && gap == 0 && cap >= full + RS_TAIL_WORDS - 1)
						assert_int_equal(use, FAST_FINISHED);
					/*
					 * (With less room the general walk finishes: where the fast
					 * walk handed over just before the tail, the tracer cannot
					 * tell the general walk's copy of the cached tail from
					 * the fast walk's.)
					 */
					if (cap < full)
						assert_true(use != FAST_FINISHED);
					assert_int_equal(last_ref.n, cap < full ? cap : full);
					assert_int_equal(!!(last_ref.v.reasons & RELSTACK_UNRELIABLE_TRUNCATED),
							 cap < full);
				}
			}
		}
	}
}

/* ---- a signal handler changing the cache in the middle of a walk ---- */

static struct rs_walk hwalk[2];
static struct result href[2], hres;
static _Atomic unsigned handler_runs;
static volatile sig_atomic_t handler_differ;

/*
 * On the interrupted thread: walks of stacks of its own, taken in turn,
 * each leaving the thread's cache other than the one before left it
 * (another fast range, or another tail).
 */
static void on_timer(int sig)
{
	unsigned i = atomic_load_explicit(&handler_runs, memory_order_relaxed) % 2;

	walk_with_fast(&hwalk[i], MAXW, &hres, false);
	if (differ_at(&hwalk[i], MAXW, &hres, &href[i], false) < 0)
		handler_differ++;
	atomic_fetch_add_explicit(&handler_runs, 1, memory_order_relaxed);
}

/*
 * Walk @w[0..nw) in turn, with a timer's handler walking on this thread
 * as often as the system lets it, until @want walks were interrupted (a
 * count of signals, not of time).  Returns that count; *bad counts walks
 * that differ from @ref.
 */
static unsigned interrupt_walks(const struct rs_walk *w, const struct result *ref, unsigned nw, unsigned want,
				unsigned *iters, unsigned *bad)
{
	static struct result f;
	struct sigaction sa, old;
	struct itimerval it = { { 0, 20 }, { 0, 20 } }, off = { { 0, 0 }, { 0, 0 } };
	unsigned interrupted = 0, i = 0;

	*bad = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_timer;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	for (*iters = 0; interrupted < want && *iters < 200000000u; (*iters)++, i = (i + 1) % nw) {
		unsigned before = atomic_load_explicit(&handler_runs, memory_order_relaxed);

		atomic_signal_fence(memory_order_seq_cst);
		walk_with_fast(&w[i], ref[i].n + 2, &f, false);
		atomic_signal_fence(memory_order_seq_cst);
		interrupted += atomic_load_explicit(&handler_runs, memory_order_relaxed) != before;
		if (differ_at(&w[i], ref[i].n + 2, &f, &ref[i], false) < 0 && (*bad)++ == 0)
			report("interrupted walk differs", &w[i], ref[i].n + 2, &f, &ref[i]);
	}
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	return interrupted;
}

static void handler_changing_the_cache_mid_walk_changes_no_word(void **state)
{
	static struct result ref[3];
	struct rs_walk w[3];
	unsigned interrupted, iters, bad;
	size_t e;

#ifdef UNDER_TSAN
	fprintf(stderr, "skipped: ThreadSanitizer defers signals to its interceptors, so no handler "
		"can run inside a walk\n");
	skip();
#endif
	/* the handler's stacks, in their own image */
	memset(himg.w, 0, STACK_WORDS * sizeof(uintptr_t));
	common_stack(&himg, 4, 12, &fpo[nfp - 1], 0, entry_ra[1]);
	common_stack(&himg, 1000, 12, &fpo[0], 1, entry_ra[1]);
	walk_of(&hwalk[0], &himg, 4);
	walk_of(&hwalk[1], &himg, 1000);
	hwalk[1].flags = RELSTACK_CAPTURE_ABSOLUTE;
	for (int i = 0; i < 2; i++) {
		walk_complete(&hwalk[i], MAXW, &href[i]);
		assert_int_equal(href[i].v.reasons, 0);
	}
	/*
	 * The interrupted walks: a long common stack; the same leaving the
	 * cached object near its end (handed over, resumed); and one skipping
	 * the recorder's frame in another object.
	 */
	memset(img.w, 0, STACK_WORDS * sizeof(uintptr_t));
	e = common_stack(&img, 4, 250, &fpo[0], 0, entry_ra[0]);
	walk_of(&w[0], &img, 4);
	common_stack(&img, e + 8, 250, &fpo[0], 0, entry_ra[0]);
	img.w[e + 8 + 2 * 200 + 1] = nofp_ra;
	walk_of(&w[1], &img, e + 8);
	w[1].flags = RELSTACK_CAPTURE_ABSOLUTE;
	e = 2 * e + 16;
	common_stack(&img, e, 200, &fpo[0], 1, entry_ra[0]);
	walk_of(&w[2], &img, e);
	img.w[(w[2].fp - slot(&img, 0)) / 8 + 1] = pass_ra;
	w[2].skip = 1;
	for (int i = 0; i < 3; i++) {
		walk_complete(&w[i], MAXW, &ref[i]);
		check_walk(&w[i], MAXW);
	}
	assert_int_equal(ref[0].v.reasons, 0);
	assert_int_equal(ref[1].v.reasons, RELSTACK_UNRELIABLE_NO_FP_OBJECT);
	assert_int_equal(ref[2].v.reasons, 0);
	assert_int_equal(ref[2].n, 200 - 1 + 2); /* the frames but the skipped one, the C runtime's, END */

	interrupted = interrupt_walks(w, ref, 3, 300, &iters, &bad);
	fprintf(stderr, "long stacks: %u walks, %u interrupted by a handler that walked\n", iters, interrupted);
	assert_int_equal(bad, 0);
	assert_int_equal(handler_differ, 0);
	assert_true(interrupted >= 300);

	/*
	 * Short stacks, and a handler that changes only the tail (two
	 * stacks in the same object, each ending at another return address
	 * into the C runtime): most walks are then at their tail when
	 * the handler runs, where the cache is read last.
	 */
	memset(himg.w, 0, STACK_WORDS * sizeof(uintptr_t));
	common_stack(&himg, 4, 2, &fpo[0], 0, entry_ra[1]);
	common_stack(&himg, 100, 2, &fpo[0], 0, entry_ra[0]);
	walk_of(&hwalk[0], &himg, 4);
	walk_of(&hwalk[1], &himg, 100);
	for (int i = 0; i < 2; i++)
		walk_complete(&hwalk[i], MAXW, &href[i]);
	memset(img.w, 0, STACK_WORDS * sizeof(uintptr_t));
	common_stack(&img, 4, 2, &fpo[0], 0, entry_ra[0]);
	walk_of(&w[0], &img, 4);
	w[1] = w[0];
	w[1].flags = RELSTACK_CAPTURE_ABSOLUTE;
	for (int i = 0; i < 2; i++) {
		walk_complete(&w[i], 6, &ref[i]);
		assert_int_equal(ref[i].v.reasons, 0);
	}
	interrupted = interrupt_walks(w, ref, 2, 5000, &iters, &bad);
	fprintf(stderr, "short stacks: %u walks, %u interrupted by a handler that walked\n", iters, interrupted);
	assert_int_equal(bad, 0);
	assert_int_equal(handler_differ, 0);
	assert_true(interrupted >= 5000);
}

/* ---- real stacks: the main thread's end and a thread's ---- */

struct real_case {
	unsigned compared, differ, capture_differ;
	bool fast_finished;   /* a warm traced relstack_capture() was the fast walk's alone */
	bool cacheable;       /* a walk caches the trace's tail (warm_walk()) */
	bool fast_can_finish; /* and the fast walk can write the whole trace from the cache (warm_walk()) */
	const char *why;      /* what stops the fast walk from finishing, if it cannot */
	unsigned traced;      /* its words after the first the fast walk wrote (and kept) */
	uint32_t full_reasons;
	size_t full_n;
};

static struct real_case main_case, thread_case, chain_case;

/* The row of the call before the return address @ra, in the table the walks use. */
static int call_row(uintptr_t ra, struct rs_cfi_row *row)
{
	struct rs_lookup l;

	if (!rs_objtab_lookup(ra, &l) || !l.cfi)
		return -ENOENT;
	return rs_cfi_row_at(l.cfi, ra - 1, row);
}

/* Does the record map of @l's object prove the return address @ra? */
static bool map_proves(const struct rs_lookup *l, uintptr_t ra)
{
	const uint64_t *map;
	uintptr_t origin;
	uint64_t bits, g;

	if (!l->cfi || !(map = rs_cfi_table_record_map(l->cfi, &origin, &bits)) || ra - 1 < origin)
		return false;
	g = (ra - 1 - origin) >> RS_CFI_MAP_SHIFT;
	return g < bits && (map[g / 64] >> (g % 64) & 1);
}

/*
 * How a warm walk goes through the absolute words @w of a reliable trace
 * (n of them, END last), from what the CFI says of each return address
 * (the row of its call; docs/unwinder.md, "Every frame's proof"): the
 * frames whose row is a frame-record row are followed by their records;
 * the first one whose row is not starts the tail, followed by CFI to the
 * end.  The walk caches that tail (unwind.c, struct tail) when it fits the
 * cache and no row of it realigns the stack through a DRAP (its CFA is a
 * value no slot of the tail compares) or goes back to frame records: sets
 * rc->cacheable.  The fast walk alone can then write the whole trace if
 * every frame before the tail has its return address in the first
 * frame's object, proven by that object's record map (the fast range is
 * one object's, and proves by the map alone): sets rc->fast_can_finish,
 * or rc->why.
 */
static void warm_walk(struct real_case *rc, const uint64_t *w, size_t n)
{
	struct rs_cfi_row row;
	struct rs_lookup first;
	size_t i, k;

	rc->cacheable = rc->fast_can_finish = false;
	rc->why = "the trace is not reliable";
	if (n < 2 || w[n - 1] != RS_NATIVE_END || !rs_objtab_lookup((uintptr_t)w[0], &first))
		return;
	for (i = 0; i < n - 1 && call_row((uintptr_t)w[i], &row) == 0 && rs_cfi_row_is_record(&row); i++)
		;
	if (i == n - 1) {
		rc->why = "no tail: every frame is followed by its frame record";
		return;
	}
	for (k = i; k < n - 1; k++) {
		int err = call_row((uintptr_t)w[k], &row);

		if (err == -ENOTSUP && row.cfa_deref) {
			rc->why = "a function of its tail realigns its stack through a DRAP";
			return;
		}
		if (err) {
			rc->why = "a row of its tail is one the walk does not follow";
			return;
		}
		if (rs_cfi_row_is_record(&row)) {
			rc->why = "its tail goes back to frame records";
			return;
		}
	}
	if (n - 1 - i > RS_TAIL_WORDS) {
		rc->why = "its tail has more frames than the cache holds";
		return;
	}
	rc->cacheable = true;
	for (k = 0; k < i; k++) {
		if ((uintptr_t)w[k] - first.start >= first.end - first.start) {
			rc->why = "a frame before its tail is in another object than the first";
			return;
		}
		if (!map_proves(&first, (uintptr_t)w[k])) {
			rc->why = "a frame before its tail is proven by its row, not by its object's record map";
			return;
		}
	}
	rc->fast_can_finish = true;
	rc->why = NULL;
}

/*
 * On a real stack, from the frame of this function: the fast and the
 * complete walk, and relstack_capture() (whose own frame, above ours, is
 * its first word, and is checked even when skipped).
 */
__attribute__((noinline)) void real_compare(void *arg)
{
	static __thread struct result f, ref;
	static __thread uint64_t words[MAXW + 8];
	struct real_case *rc = arg;
	uintptr_t fp = rs_arch_frame_address();
	struct relstack_verdict v;
	struct rs_thread_stack ts;
	struct rs_walk w;
	int n;

	if (!rs_thread_stack_get(&ts))
		return;
	memset(&w, 0, sizeof(w));
	w.fp = fp;
	w.sp = fp;
	w.stack = ts.stack;
	w.alt = ts.alt;
	walk_complete(&w, MAXW, &ref);
	rc->full_n = ref.n;
	rc->full_reasons = ref.v.reasons;
	for (unsigned skip = 0; skip <= 3; skip++) {
		for (unsigned flags = 0; flags <= RELSTACK_CAPTURE_ABSOLUTE; flags += RELSTACK_CAPTURE_ABSOLUTE) {
			for (size_t cap = 0; cap <= rc->full_n + 3; cap++) {
				w.skip = skip;
				w.flags = flags;
				walk_with_fast(&w, cap, &f, false);
				walk_complete(&w, cap, &ref);
				rc->compared++;
				rc->differ += differ_at(&w, cap, &f, &ref, false) < 0;

				/* relstack_capture(): one frame more than the walk from here */
				n = relstack_capture(words, cap, skip, flags, &v);
				w.skip = skip ? skip - 1 : 0;
				if (skip || cap == 0) {
					walk_complete(&w, cap, &ref);
				} else {
					walk_complete(&w, cap - 1, &ref);
					memmove(ref.words + 1, ref.words, ref.n * sizeof(ref.words[0]));
					ref.words[0] = words[0];
					ref.n++;
					ref.v.frames++;
				}
				if (!skip && cap == 0) {
					ref.n = 0;
					ref.v.reasons = RELSTACK_UNRELIABLE_TRUNCATED;
					ref.v.frames = 0;
				}
				if (n < 0 || (size_t)n != ref.n || v.reasons != ref.v.reasons ||
				    v.frames != ref.v.frames || v.epoch != ref.v.epoch ||
				    memcmp(words, ref.words, ref.n * sizeof(words[0])))
					rc->capture_differ++;
			}
		}
	}
	/* warm now: traced, a reliable capture is the fast walk's alone */
	tracer_arm();
	n = relstack_capture(words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &v);
	tracer_disarm();
	w.skip = 0;
	w.flags = RELSTACK_CAPTURE_ABSOLUTE;
	walk_complete(&w, MAXW, &ref);
	rc->traced = 0;
	if (n >= 2 && (size_t)n == ref.n + 1 && v.reasons == ref.v.reasons)
		while (rc->traced + 1 < (unsigned)n && words[rc->traced + 1] == ref.words[rc->traced] + 1)
			rc->traced++;
	rc->fast_finished = v.reasons == 0 && rc->traced + 2 == (unsigned)n && words[n - 1] == RS_NATIVE_END;
	warm_walk(rc, ref.words, ref.n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *entry_thread(void *arg)
{
	if (relstack_thread_register() != 0)
		return NULL;
	real_compare(arg);
	__asm__ volatile("" ::: "memory");
	return arg;
}

__attribute__((noinline)) void chain_cb(void *arg)
{
	real_compare(arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *chain_thread(void *arg)
{
	if (relstack_thread_register() != 0)
		return NULL;
	rs_unwind_fp_call(chain_cb, arg);
	__asm__ volatile("" ::: "memory");
	return arg;
}

static void check_real_case(const struct real_case *rc, const char *what)
{
	fprintf(stderr, "%s: %u walks of a %zu-word trace (reasons %#x), %u fast walks differ, %u captures "
		"differ, warm capture %s by the fast walk alone (%u words after the first from it)\n", what,
		rc->compared, rc->full_n, rc->full_reasons, rc->differ, rc->capture_differ,
		rc->fast_finished ? "done" : "not done", rc->traced);
	assert_true(rc->compared > 0);
	assert_int_equal(rc->differ, 0);
	assert_int_equal(rc->capture_differ, 0);
}

/*
 * False, saying so, when the program keeps no frame pointers (a sanitizer
 * runtime linked into it): its frames are then followed by its CFI, which
 * the fast walk never does; only the equality above is checked.
 */
static bool traces_can_be_reliable(void)
{
	if (!prog_fp)
		fprintf(stderr, "the program keeps no frame pointers: traces and fast walks not checked further\n");
	return prog_fp;
}

static void main_thread_end_at_start_is_found_by_both_walks(void **state)
{
	/* from real_compare's frame: main, __libc_start_call_main, __libc_start_main, _start, END */
	check_real_case(&main_case, "main thread");
	if (!traces_can_be_reliable())
		return;
	assert_int_equal(main_case.full_reasons, 0);
	assert_int_equal(main_case.full_n, 5);
	if (main_case.fast_can_finish)
		assert_true(main_case.fast_finished);
	else
		fprintf(stderr, "main thread: not written by the fast walk alone: %s\n", main_case.why);
}

static void thread_end_at_clone3_is_found_by_both_walks(void **state)
{
	memset(&thread_case, 0, sizeof(thread_case));
	run_thread(entry_thread, &thread_case);
	check_real_case(&thread_case, "thread");
	if (!traces_can_be_reliable())
		return;
	/* entry_thread, start_thread, clone3, END (a sanitizer's thread start may add frames) */
	if (thread_case.full_reasons == 0) {
		assert_true(thread_case.full_n >= 4);
		if (thread_case.fast_can_finish)
			assert_true(thread_case.fast_finished);
		else
			fprintf(stderr, "thread: not written by the fast walk alone: %s\n", thread_case.why);
	}
}

static void thread_chain_through_a_library_is_resumed_and_equal(void **state)
{
	memset(&chain_case, 0, sizeof(chain_case));
	run_thread(chain_thread, &chain_case);
	check_real_case(&chain_case, "chain through librs_unwind_fp.so");
	/* chain_cb, rs_unwind_fp_inner, rs_unwind_fp_call, chain_thread, start_thread, clone3, END */
	if (!prog_fp)
		skip();
	assert_int_equal(chain_case.full_reasons, 0);
	assert_true(chain_case.full_n >= 7);
	/* a warm capture: the fast walk wrote chain_cb's word, then handed over at the library */
	assert_false(chain_case.fast_finished);
	if (chain_case.cacheable) /* (the fast walk is armed by a cached tail) */
		assert_int_equal(chain_case.traced, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(complete_walk_of_this_test_never_takes_the_fast_path),
		cmocka_unit_test(fast_walk_stopping_at_a_frame_it_does_not_decide_is_resumed_there),
		cmocka_unit_test(cache_made_before_the_object_table_changed_is_not_used),
		cmocka_unit_test(frames_to_skip_are_decided_by_the_fast_walk_when_the_cache_allows),
		cmocka_unit_test(truncated_array_of_every_length_gives_the_same_words_and_verdict),
		cmocka_unit_test(fast_walk_equals_complete_walk_on_random_stacks),
		cmocka_unit_test(handler_changing_the_cache_mid_walk_changes_no_word),
		cmocka_unit_test(main_thread_end_at_start_is_found_by_both_walks),
		cmocka_unit_test(thread_end_at_clone3_is_found_by_both_walks),
		cmocka_unit_test(thread_chain_through_a_library_is_resumed_and_equal),
	};

	if (!RS_ARCH_RECORD_TOPS_FRAME) {
		/* the fast walk's whole walk needs a cached tail, which no walk stores there */
		printf("not run here: this CPU's frame records sit at the bottom of their frames, so no walk caches "
		       "a tail and every walk is the complete one: there is no fast walk to compare\n");
		return 0;
	}
	if (getenv("RS_TEST_SEED")) /* another run of the random stacks, replayable */
		rng = strtoull(getenv("RS_TEST_SEED"), NULL, 0) | 1;
	if (image_new(&img) || image_new(&himg) || find_objects()) {
		fprintf(stderr, "setup failed: stack images, or objects not as the tests need them\n");
		return 1;
	}
	real_compare(&main_case); /* before cmocka's runner is on the stack */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
