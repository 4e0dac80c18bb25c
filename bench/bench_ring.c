// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The buffer file's write path, per record, against its floor and the
 * obvious alternative, in the same process:
 *
 *   write    relstack_recorder__write() of 32 entry words already captured:
 *            timestamp, reserve, copy, checksum, commit (the copy only)
 *   clock, tsc   one read of CLOCK_MONOTONIC, of the time stamp counter
 *   whole    relstack_recorder__record() 32 frames deep: capture + encode
 *            + write, the call a program makes
 *   memcpy   memcpy() of the same bytes (a 32-word record) into a 1 MiB
 *            ring: the floor
 *   write2   write(2) of the same bytes to a file
 *   open     relstack_recorder__open() with a 1 MiB ring: the process's
 *            first (it makes the file and measures the counter's rate),
 *            then a second one, over the file the first made
 *
 *   bench_ring              time every method, records/s from 1, 2 and 4 threads
 *                           (4 oversubscribe a 2-CPU machine), each scaling printed
 *                           beside the control's (a loop of pure computation, run
 *                           in the same way right before); then each cache line two
 *                           writers could share per record, isolated (line_*)
 *   bench_ring METHOD N     N records of METHOD only (for bench/callgrind.sh)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relstack/relstack.h"
#include "ring-arch.h" /* the counter the write step reads (src/ring/arch/<cpu>/) */

#define DEPTH 32
#define RECORD_BYTES (48 + DEPTH * 8)
#define FLOOR_RING (1u << 20)

static struct relstack_recorder *rec;
static char dir[64], path[128], wpath[128];
static uint64_t words[DEPTH];
static unsigned char src[RECORD_BYTES];
static unsigned char *floor_ring;
static int wfd;
static size_t frames_seen;
static double open_first_us, open_again_us;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void do_write(unsigned long n)
{
	struct relstack_verdict v = { 0, DEPTH, 1 };

	for (unsigned long i = 0; i < n; i++)
		relstack_recorder__write(rec, RELSTACK_EVENT_STACK, words, DEPTH, &v, NULL, 0, 0);
}

static void do_memcpy(unsigned long n)
{
	size_t off = 0;

	for (unsigned long i = 0; i < n; i++) {
		memcpy(floor_ring + off, src, RECORD_BYTES);
		__asm__ volatile("" : : "r"(floor_ring) : "memory");
		off += (RECORD_BYTES + 15) & ~15u;
		if (off + RECORD_BYTES > FLOOR_RING)
			off = 0;
	}
}

static void do_write2(unsigned long n)
{
	size_t off = 0;

	for (unsigned long i = 0; i < n; i++) {
		if (write(wfd, src, RECORD_BYTES) != RECORD_BYTES)
			abort();
		off += RECORD_BYTES;
		if (off + RECORD_BYTES > FLOOR_RING) {
			lseek(wfd, 0, SEEK_SET);
			off = 0;
		}
	}
}

/* DEPTH frames: main and the libc start-up account for the first few. */
__attribute__((noinline)) static void deep(unsigned level, unsigned long n)
{
	if (level > 3) {
		deep(level - 1, n);
	} else {
		for (unsigned long i = 0; i < n; i++)
			relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, 0);
	}
	__asm__ volatile("" ::: "memory");
}

static void do_whole(unsigned long n)
{
	deep(DEPTH, n);
}

/*
 * What one timestamp costs: the write step reads one per record, the time
 * stamp counter where it can stand for CLOCK_MONOTONIC (src/ring/ring-clock.c),
 * else CLOCK_MONOTONIC.
 */
static void do_tsc(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		uint64_t t = rs_arch_ticks();

		__asm__ volatile("" : : "r"(t) : "memory");
	}
}

static void do_clock(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		__asm__ volatile("" : : "r"(&ts) : "memory");
	}
}

static void (*const methods[])(unsigned long) = { do_write, do_whole, do_memcpy, do_write2, do_clock, do_tsc };
static const char *const names[] = { "write", "whole", "memcpy", "write2", "clock", "tsc" };
#define NMETHODS (sizeof(names) / sizeof(names[0]))

static double best_ns(void (*fn)(unsigned long), unsigned long n)
{
	double best = 1e30;

	for (int rep = 0; rep < 7; rep++) {
		uint64_t t0 = now_ns();

		fn(n);
		double per = (double)(now_ns() - t0) / (double)n;
		if (per < best)
			best = per;
	}
	return best;
}

static void (*rate_fn)(unsigned long) = do_whole;

/* The control: pure computation, no memory shared.  How well 2 threads can scale on this machine now. */
static void do_spin(unsigned long n)
{
	volatile uint64_t x = 0;

	for (unsigned long i = 0; i < n * 64; i++)
		x = x + i;
}

#define MAX_THREADS 4

/* What each thread of a rate measurement is given: its index and its count. */
struct thread_arg {
	unsigned ix;
	unsigned long n;
};

static void *thread_main(void *arg)
{
	relstack_thread_register();
	relstack_recorder__thread_init();
	rate_fn(((struct thread_arg *)arg)->n);
	return NULL;
}

/* Records/s of @threads threads each running @start for @per_thread records: the best of five. */
static double threads_rate(void *(*start)(void *), unsigned threads, unsigned long per_thread)
{
	double best = 0;

	for (int rep = 0; rep < 5; rep++) {
		pthread_t t[MAX_THREADS];
		struct thread_arg a[MAX_THREADS];
		uint64_t t0 = now_ns();

		for (unsigned i = 0; i < threads; i++) {
			a[i] = (struct thread_arg){ i, per_thread };
			pthread_create(&t[i], NULL, start, &a[i]);
		}
		for (unsigned i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		double r = (double)threads * (double)per_thread * 1e9 / (double)(now_ns() - t0);
		if (r > best)
			best = r;
	}
	return best;
}

static double rate(unsigned threads, unsigned long per_thread)
{
	return threads_rate(thread_main, threads, per_thread);
}

/*
 * The lines two writers could share per record, each alone: two threads
 * do only that line's work, once on one line for both (shared) and once on
 * a line each (own); a line that is shared costs where `shared` scales
 * worse than `own`.  The work is the write step's, without the rest of it:
 *
 *   line_ring    304-byte records copied into 4 KiB chunks claimed from one
 *                1 MiB ring with one head (shared: the ring's lines pass
 *                from CPU to CPU a lap later, and the head), or from a
 *                512 KiB ring and head per thread (own)
 *   line_head    per record, the lapped check's load of the head, which the
 *                other thread's chunk claims write every 13 records
 *   line_owner   per record, the owner word's CAS and release store, two
 *                threads' owner words in one line or a line each
 *   line_count   per chunk, the overwritten counter's fetch_add
 *   line_holder  per chunk, the object table horizon stored (shared: as
 *                before, every chunk; own: loaded, stored when it changes)
 */
#define LINE_RING (1u << 20)
#define LINE_REC 304u
#define LINE_PER_CHUNK (4096u / LINE_REC)

struct line_word {
	_Alignas(64) _Atomic uint64_t w;
};

static struct line_word line_words[2];
static unsigned char *line_ring;
static int line_shared;

static _Atomic uint64_t *line_of(unsigned ix)
{
	return &line_words[line_shared ? 0 : ix].w + (line_shared ? ix : 0);
}

static void line_ring_fn(unsigned ix, unsigned long n)
{
	_Atomic uint64_t *head = &line_words[line_shared ? 0 : ix].w;
	size_t span = line_shared ? LINE_RING : LINE_RING / 2;
	unsigned char *base = line_ring + (line_shared ? 0 : ix * (LINE_RING / 2));
	size_t chunk = 0, used = 4096;

	for (unsigned long i = 0; i < n; i++) {
		if (used + LINE_REC > 4096) {
			chunk = atomic_fetch_add_explicit(head, 4096, memory_order_relaxed) & (span - 1);
			used = 0;
		}
		memcpy(base + chunk + used, src, LINE_REC);
		__asm__ volatile("" : : "r"(base) : "memory");
		used += LINE_REC;
	}
}

static void line_head_fn(unsigned ix, unsigned long n)
{
	_Atomic uint64_t *head = &line_words[line_shared ? 0 : ix].w;
	uint64_t sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		if (i % LINE_PER_CHUNK == 0)
			atomic_fetch_add_explicit(head, 4096, memory_order_relaxed);
		sum += atomic_load_explicit(head, memory_order_relaxed);
		__asm__ volatile("" : : "r"(sum) : "memory");
	}
}

static void line_owner_fn(unsigned ix, unsigned long n)
{
	_Atomic uint64_t *owner = line_of(ix);

	for (unsigned long i = 0; i < n; i++) {
		uint64_t expect = 2;

		atomic_compare_exchange_strong_explicit(owner, &expect, 1, memory_order_acquire, memory_order_relaxed);
		atomic_store_explicit(owner, 2, memory_order_release);
	}
}

static void line_count_fn(unsigned ix, unsigned long n)
{
	_Atomic uint64_t *count = line_of(ix);

	for (unsigned long i = 0; i < n; i++)
		if (i % LINE_PER_CHUNK == 0)
			atomic_fetch_add_explicit(count, LINE_PER_CHUNK, memory_order_relaxed);
		else
			__asm__ volatile("" ::: "memory");
}

static void line_holder_fn(unsigned ix, unsigned long n)
{
	_Atomic uint64_t *holder = &line_words[0].w; /* the object table's word: one for the process */

	for (unsigned long i = 0; i < n; i++) {
		if (i % LINE_PER_CHUNK)
			continue;
		if (line_shared || atomic_load_explicit(holder, memory_order_relaxed) != 7)
			atomic_store_explicit(holder, 7, memory_order_relaxed);
		__asm__ volatile("" ::: "memory");
	}
}

static void (*line_fn)(unsigned, unsigned long);

static void *line_main(void *arg)
{
	struct thread_arg *a = arg;

	line_fn(a->ix, a->n);
	return NULL;
}

static void lines(double control)
{
	static const struct {
		const char *name;
		void (*fn)(unsigned, unsigned long);
	} L[] = {
		{ "line_ring", line_ring_fn },   { "line_head", line_head_fn },	{ "line_owner", line_owner_fn },
		{ "line_count", line_count_fn }, { "line_holder", line_holder_fn },
	};

	line_ring = aligned_alloc(4096, LINE_RING);
	memset(line_ring, 0, LINE_RING);
	for (size_t i = 0; i < sizeof(L) / sizeof(L[0]); i++) {
		line_fn = L[i].fn;
		for (line_shared = 1; line_shared >= 0; line_shared--) {
			double r1 = threads_rate(line_main, 1, 4000000), r2 = threads_rate(line_main, 2, 4000000);

			const char *how = line_shared ? "shared" : "own";

			printf("%s_%s_scaling_2threads: %.2f x\n", L[i].name, how, r2 / r1);
			printf("%s_%s_scaling_2threads: ratio %.2f vs cpu_spin_scaling_2threads\n", L[i].name, how,
			       r2 / r1 / control);
		}
	}
	free(line_ring);
}

static void setup(void)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_verdict v;

	strcpy(dir, "/tmp/rs-bench-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/buf", dir);
	snprintf(wpath, sizeof(wpath), "%s/write2", dir);
	o.size = FLOOR_RING; /* the same ring size as the memcpy floor: same cache behaviour */
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = now_ns();

		rec = relstack_recorder__open(path, &o);
		if (!rec)
			abort();
		*(i ? &open_again_us : &open_first_us) = (double)(now_ns() - t0) / 1000;
		if (i == 0)
			relstack_recorder__close(rec);
	}
	wfd = open(wpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	floor_ring = aligned_alloc(64, FLOOR_RING);
	memset(floor_ring, 0, FLOOR_RING);
	for (unsigned i = 0; i < DEPTH; i++)
		words[i] = 0x8000000000000000ull | (uint64_t)i << 53 | (0x1000u + i * 16);
	memset(src, 0x5a, sizeof(src));
	relstack_recorder__thread_init();
	relstack_recorder__write(rec, RELSTACK_EVENT_STACK, words, DEPTH, NULL, NULL, 0, 0);
	{
		/* the depth the whole call really captures */
		struct relstack_reader *r;

		deep(DEPTH, 1);
		relstack_recorder__flush(rec);
		r = relstack_reader__open(path, NULL);
		if (r) {
			struct relstack_cursor *c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
			struct relstack_record out;

			while (c && relstack_cursor__next(c, &out) > 0)
				frames_seen = out.nwords;
			relstack_cursor__free(c);
			relstack_reader__close(r);
		}
	}
	(void)v;
}

static void cleanup(void)
{
	relstack_recorder__close(rec);
	close(wfd);
	unlink(path);
	unlink(wpath);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	double ns[NMETHODS], r1, r2;

	setup();
	if (argc == 3) {
		for (unsigned m = 0; m < NMETHODS; m++)
			if (strcmp(argv[1], names[m]) == 0)
				methods[m](strtoul(argv[2], NULL, 0));
		cleanup();
		return 0;
	}
	for (unsigned m = 0; m < NMETHODS; m++)
		ns[m] = best_ns(methods[m], m == 3 ? 20000 : 200000);
	printf("ring_open_first: %.0f us\n", open_first_us);
	printf("ring_open_again: %.0f us\n", open_again_us);
	printf("ring_write_d32: %.1f ns/record\n", ns[0]);
	printf("ring_whole_d32: %.1f ns/record\n", ns[1]);
	printf("ring_whole_d32_words: %zu words/record\n", frames_seen);
	printf("ring_memcpy_%uB: %.1f ns/record\n", RECORD_BYTES, ns[2]);
	printf("ring_write2_%uB: %.1f ns/record\n", RECORD_BYTES, ns[3]);
	printf("ring_clock_monotonic: %.1f ns/read\n", ns[4]);
	printf("ring_clock_tsc: %.1f ns/read\n", ns[5]); /* one of the two is part of every write */
	printf("ring_write_d32: ratio %.2f vs memcpy\n", ns[0] / ns[2]);
	printf("ring_write_d32: ratio %.3f vs write2\n", ns[0] / ns[3]);
	printf("ring_whole_d32: ratio %.2f vs memcpy\n", ns[1] / ns[2]);
	printf("ring_whole_d32: ratio %.3f vs write2\n", ns[1] / ns[3]);
	for (int w = 0; w < 2; w++) {
		/* the control right before each: the machine's parallelism now */
		const char *name = w ? "ring_write" : "ring_whole";
		double c2, c4, r4;

		rate_fn = do_spin;
		r1 = rate(1, 200000);
		c2 = rate(2, 200000) / r1;
		c4 = rate(4, 200000) / r1;
		printf("cpu_spin_scaling_2threads: %.2f x\n", c2);
		printf("cpu_spin_scaling_4threads: %.2f x\n", c4);
		rate_fn = w ? do_write : do_whole;
		r1 = rate(1, w ? 2000000 : 1000000);
		r2 = rate(2, w ? 2000000 : 1000000);
		r4 = rate(4, w ? 1000000 : 500000);
		printf("%s_rate_1thread: %.0f records/s\n", name, r1);
		printf("%s_rate_2threads: %.0f records/s\n", name, r2);
		printf("%s_rate_4threads: %.0f records/s\n", name, r4);
		printf("%s_scaling_2threads: %.2f x\n", name, r2 / r1);
		printf("%s_scaling_2threads: ratio %.2f vs cpu_spin_scaling_2threads\n", name, r2 / r1 / c2);
		printf("%s_scaling_4threads: %.2f x\n", name, r4 / r1);
		printf("%s_scaling_4threads: ratio %.2f vs cpu_spin_scaling_4threads\n", name, r4 / r1 / c4);
	}
	if (getenv("BENCH_RING_LINES") == NULL || strcmp(getenv("BENCH_RING_LINES"), "0") != 0) {
		rate_fn = do_spin;
		r1 = rate(1, 200000);
		r2 = rate(2, 200000);
		printf("cpu_spin_scaling_2threads: %.2f x\n", r2 / r1);
		lines(r2 / r1);
	}
	cleanup();
	return 0;
}
