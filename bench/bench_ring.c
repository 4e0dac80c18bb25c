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
 *   bench_ring              time every method, records/s from 1 and 2 threads (and,
 *                           as a control, how a loop of pure computation scales)
 *   bench_ring METHOD N     N records of METHOD only (for bench/callgrind.sh)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "relstack/relstack.h"

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
		uint64_t t = __rdtsc();

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

static void *thread_main(void *arg)
{
	relstack_thread_register();
	relstack_recorder__thread_init();
	rate_fn(*(unsigned long *)arg);
	return NULL;
}

static double rate(unsigned threads, unsigned long per_thread)
{
	double best = 0;

	for (int rep = 0; rep < 5; rep++) {
		pthread_t t[2];
		uint64_t t0 = now_ns();

		for (unsigned i = 0; i < threads; i++)
			pthread_create(&t[i], NULL, thread_main, &per_thread);
		for (unsigned i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		double r = (double)threads * (double)per_thread * 1e9 / (double)(now_ns() - t0);
		if (r > best)
			best = r;
	}
	return best;
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
	r1 = rate(1, 1000000);
	r2 = rate(2, 1000000);
	printf("ring_rate_1thread: %.0f records/s\n", r1);
	printf("ring_rate_2threads: %.0f records/s\n", r2);
	printf("ring_scaling_2threads: %.2f x\n", r2 / r1);
	rate_fn = do_spin;
	r1 = rate(1, 200000);
	r2 = rate(2, 200000);
	printf("cpu_spin_scaling_2threads: %.2f x\n", r2 / r1); /* the machine's parallelism now */
	rate_fn = do_write;
	r1 = rate(1, 2000000);
	r2 = rate(2, 2000000);
	printf("ring_write_rate_1thread: %.0f records/s\n", r1);
	printf("ring_write_rate_2threads: %.0f records/s\n", r2);
	printf("ring_write_scaling_2threads: %.2f x\n", r2 / r1);
	cleanup();
	return 0;
}
