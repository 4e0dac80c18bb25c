// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Capturing the calling thread's stack at depths 8, 32 and 128, against
 * the peers, in the same process:
 *
 *   relstack       relstack_capture(): walk + verdict + relative entry words
 *   relstack_abs   the same with RELSTACK_CAPTURE_ABSOLUTE
 *   fp_floor       a bare frame-pointer walk with no checks at all
 *   unw_backtrace  libunwind's unw_backtrace()
 *   glibc          glibc's backtrace() (through libgcc's unwinder); resolved
 *                  in libc.so.6 itself, since libunwind exports a
 *                  `backtrace` of its own that would otherwise interpose
 *
 * and variants of relstack's, measured but not ratioed against peers:
 *
 *   relstack_skip1    relstack_capture() skipping one frame (as the recorder does)
 *   relstack_context  relstack_capture_context() from a getcontext() ucontext
 *   relstack_qsort    relstack_capture() in a qsort() comparison function: the
 *                     C library's frames (no frame pointers) followed by CFI
 *   relstack_check    relstack_capture() with the stack checker
 *   unw_qsort         unw_backtrace() in the same qsort() comparison function:
 *                     the peer on that stack
 *   relstack_cold     a thread started for each capture: the first capture
 *                     of a thread, whose cache holds no range and no tail
 *   thread_only       the same threads, with no capture (what
 *                     relstack_cold costs beyond the capture itself)
 *
 *   bench_capture                  time every method at every depth: ns per
 *                                  capture and per frame, and ratios
 *   bench_capture METHOD DEPTH N   N captures of METHOD at DEPTH only (for
 *                                  callgrind: bench/capture.sh)
 *   bench_capture METHOD DEPTH frames   the frames one capture returns
 *
 * DEPTH distinct functions (each its own code, so return addresses
 * differ as in a real program) lead from main to the capture loop.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "relstack/relstack.h"

#define MAXW 256

enum method {
	RELSTACK, RELSTACK_ABS, FP_FLOOR, UNW_BACKTRACE, GLIBC, /* GLIBC: the last peer */
	RELSTACK_SKIP1, RELSTACK_CONTEXT, RELSTACK_QSORT, RELSTACK_CHECK, UNW_QSORT, RELSTACK_COLD, THREAD_ONLY,
	NMETHODS
};

static const char *const method_names[NMETHODS] = {
	"relstack", "relstack_abs", "fp_floor", "unw_backtrace", "glibc",
	"relstack_skip1", "relstack_context", "relstack_qsort", "relstack_check", "unw_qsort", "relstack_cold",
	"thread_only",
};

static int (*glibc_backtrace)(void **, int);
/*
 * libunwind's unw_backtrace(), from the run-time library libunwind.so.8
 * (Debian's libunwind8): dlopen'ed, not linked, so that the benchmark
 * needs no libunwind-dev, which cannot be installed beside LLVM's
 * libunwind-14-dev (libc++'s); a call through the pointer costs what the
 * call through the PLT of a linked library does.  Without the library
 * (a cross build's architecture may lack it) its methods report nothing.
 */
static int (*unw_backtrace)(void **, int);

struct run {
	enum method m;
	unsigned depth;
	unsigned long n;
	int frames;        /* per capture */
	uint32_t reasons;  /* relstack's verdict */
};

static uint64_t words[MAXW];
static void *ptrs[MAXW];

/* The floor: follow the chain while it goes up the stack, keep every return address. */
__attribute__((noinline)) static int fp_walk(uintptr_t *out, int cap)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	int n = 0;

	while (n < cap) {
		const uintptr_t *next = (const uintptr_t *)fp[0];

		out[n++] = fp[1];
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

__attribute__((noinline)) static void capture_loop(struct run *r)
{
	struct relstack_verdict v = { 0 };
	int n = 0;

	for (unsigned long i = 0; i < r->n; i++) {
		switch (r->m) {
		case RELSTACK:
			n = relstack_capture(words, MAXW, 0, 0, &v);
			break;
		case RELSTACK_ABS:
			n = relstack_capture(words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &v);
			break;
		case FP_FLOOR:
			n = fp_walk((uintptr_t *)words, MAXW);
			break;
		case UNW_BACKTRACE:
			n = unw_backtrace ? unw_backtrace(ptrs, MAXW) : -1;
			break;
		case GLIBC:
			n = glibc_backtrace(ptrs, MAXW);
			break;
		case RELSTACK_SKIP1:
			n = relstack_capture(words, MAXW, 1, 0, &v);
			break;
		case RELSTACK_QSORT:
		case RELSTACK_COLD:
			n = relstack_capture(words, MAXW, 0, 0, &v);
			break;
		case UNW_QSORT:
			n = unw_backtrace ? unw_backtrace(ptrs, MAXW) : -1;
			break;
		case RELSTACK_CHECK:
			n = relstack_capture(words, MAXW, 0, RELSTACK_CAPTURE_CHECK, &v);
			break;
		default:
			break;
		}
		__asm__ volatile("" ::: "memory");
	}
	r->frames = (r->m == RELSTACK || r->m == RELSTACK_ABS || (r->m > GLIBC && r->m != UNW_QSORT)) ? (int)v.frames
												   : n;
	r->reasons = v.reasons;
}

/* qsort() calls it once for two elements: the captures run inside the C library's call. */
static struct run *qsort_run;

static int qsort_cmp(const void *a, const void *b)
{
	capture_loop(qsort_run);
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void qsort_loop(struct run *r)
{
	int pair[2] = { 2, 1 };

	qsort_run = r;
	qsort(pair, 2, sizeof(pair[0]), qsort_cmp);
	__asm__ volatile("" ::: "memory");
}

/* Its own function: getcontext() returns twice for the compiler. */
__attribute__((noinline)) static void context_loop(struct run *r)
{
	struct relstack_verdict v = { 0 };
	ucontext_t uc;

	getcontext(&uc); /* this frame: it stays live for the whole loop */
	for (unsigned long i = 0; i < r->n; i++) {
		relstack_capture_context(&uc, words, MAXW, 0, &v);
		__asm__ volatile("" ::: "memory");
	}
	r->frames = (int)v.frames;
	r->reasons = v.reasons;
}

/*
 * Distinct functions: the one at index i of chain[] is called with
 * left = depth - 1 - i and calls chain[i + 1] until left reaches 0.
 */
typedef void (*chain_fn)(struct run *r, unsigned left);
static chain_fn chain[129];

#define CHAIN_FN(K)                                                       \
	__attribute__((noinline)) static void chain_##K(struct run *r, unsigned left) \
	{                                                                   \
		if (left)                                                   \
			chain[r->depth - left](r, left - 1);                \
		else if (r->m == RELSTACK_CONTEXT)                          \
			context_loop(r);                                    \
		else if (r->m == RELSTACK_QSORT || r->m == UNW_QSORT)       \
			qsort_loop(r);                                      \
		else                                                        \
			capture_loop(r);                                    \
		__asm__ volatile("" ::: "memory");                          \
	}
#define CHAIN8(B) CHAIN_FN(B##0) CHAIN_FN(B##1) CHAIN_FN(B##2) CHAIN_FN(B##3) \
	CHAIN_FN(B##4) CHAIN_FN(B##5) CHAIN_FN(B##6) CHAIN_FN(B##7)
CHAIN8(1) CHAIN8(2) CHAIN8(3) CHAIN8(4) CHAIN8(5) CHAIN8(6) CHAIN8(7) CHAIN8(8)
CHAIN8(9) CHAIN8(10) CHAIN8(11) CHAIN8(12) CHAIN8(13) CHAIN8(14) CHAIN8(15) CHAIN8(16)
CHAIN_FN(170)

static void chain_init(void)
{
	static const chain_fn fns[] = {
#define REF8(B) chain_##B##0, chain_##B##1, chain_##B##2, chain_##B##3, \
	chain_##B##4, chain_##B##5, chain_##B##6, chain_##B##7,
		REF8(1) REF8(2) REF8(3) REF8(4) REF8(5) REF8(6) REF8(7) REF8(8)
		REF8(9) REF8(10) REF8(11) REF8(12) REF8(13) REF8(14) REF8(15) REF8(16)
		chain_170,
	};

	memcpy(chain, fns, sizeof(fns));
}

/* A thread of its own: registered, then DEPTH functions, then one capture (or none). */
static void *cold_thread(void *arg)
{
	struct run *r = arg;

	relstack_thread_register();
	chain[0](r, r->depth - 1);
	return NULL;
}

/* DEPTH functions between main and the capture loop. */
static void run_at_depth(struct run *r)
{
	if (r->m == RELSTACK_COLD || r->m == THREAD_ONLY) {
		struct run one = *r;

		one.n = r->m == RELSTACK_COLD ? 1 : 0;
		for (unsigned long i = 0; i < r->n; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, cold_thread, &one) == 0)
				pthread_join(t, NULL);
		}
		r->frames = one.frames;
		r->reasons = one.reasons;
		return;
	}
	chain[0](r, r->depth - 1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median over 7 runs of about 20 ms each. */
static double time_ns(enum method m, unsigned depth, int *frames, uint32_t *reasons)
{
	struct run r = { m, depth, 1, 0, 0 };
	double t[7], t0;

	run_at_depth(&r); /* warm-up: glibc loads libgcc_s here */
	t0 = now_ns();
	run_at_depth(&r);
	r.n = (unsigned long)(20e6 / (now_ns() - t0 + 1));
	if (r.n < 10)
		r.n = 10;
	for (int i = 0; i < 7; i++) {
		t0 = now_ns();
		run_at_depth(&r);
		t[i] = (now_ns() - t0) / (double)r.n;
	}
	qsort(t, 7, sizeof(t[0]), cmp_double);
	*frames = r.frames;
	*reasons = r.reasons;
	return t[3];
}

static int lookup_method(const char *name)
{
	for (int i = 0; i < NMETHODS; i++)
		if (!strcmp(name, method_names[i]))
			return i;
	return -1;
}

int main(int argc, char **argv)
{
	static const unsigned depths[] = { 8, 32, 128 };
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	void *sym = libc ? dlsym(libc, "backtrace") : NULL;

	if (!sym) {
		fprintf(stderr, "bench_capture: glibc's backtrace not found\n");
		return 1;
	}
	memcpy(&glibc_backtrace, &sym, sizeof(glibc_backtrace)); /* POSIX: dlsym names a function */
	void *unw = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);

	sym = unw ? dlsym(unw, "unw_backtrace") : NULL;
	if (sym)
		memcpy(&unw_backtrace, &sym, sizeof(unw_backtrace));
	else
		fprintf(stderr, "bench_capture: libunwind.so.8 (Debian libunwind8) not found: no libunwind methods\n");
	chain_init();
	relstack_objtab__refresh();

	if (argc == 4) {
		int m = lookup_method(argv[1]);
		struct run r;

		if (m < 0 || atoi(argv[2]) < 1 || atoi(argv[2]) > 128) {
			fprintf(stderr, "usage: bench_capture [METHOD DEPTH(1-128) N]\n");
			return 1;
		}
		if (!strcmp(argv[3], "frames")) {
			r = (struct run){ (enum method)m, (unsigned)atoi(argv[2]), 1, 0, 0 };
			run_at_depth(&r);
			printf("%d\n", r.frames);
			return 0;
		}
		r = (struct run){ (enum method)m, (unsigned)atoi(argv[2]), strtoul(argv[3], NULL, 0), 0, 0 };
		run_at_depth(&r);
		return 0;
	}

	for (size_t d = 0; d < sizeof(depths) / sizeof(depths[0]); d++) {
		double ns[NMETHODS];
		int frames[NMETHODS];
		uint32_t reasons[NMETHODS];

		for (int m = 0; m < NMETHODS; m++) {
			ns[m] = time_ns((enum method)m, depths[d], &frames[m], &reasons[m]);
			printf("capture_%s_d%u: %.1f ns/capture\n", method_names[m], depths[d], ns[m]);
			printf("capture_%s_d%u_frame: %.2f ns/frame\n", method_names[m], depths[d], ns[m] / frames[m]);
			printf("capture_%s_d%u_frames: %d frames\n", method_names[m], depths[d], frames[m]);
		}
		printf("capture_relstack_d%u_reasons: %u reasons\n", depths[d], reasons[RELSTACK]); /* 0: reliable */
		for (int p = FP_FLOOR; p <= GLIBC; p++)
			printf("capture_relstack_d%u: ratio %.2f vs %s\n", depths[d], ns[RELSTACK] / ns[p],
			       method_names[p]);
		printf("capture_relstack_d%u: ratio %.2f vs relstack_abs\n", depths[d],
		       ns[RELSTACK] / ns[RELSTACK_ABS]);
	}
	return 0;
}
