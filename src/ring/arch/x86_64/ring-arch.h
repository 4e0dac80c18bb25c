/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two things the record writer asks of the CPU, x86-64 versions:
 *
 *   rs_arch_ticks()   the time stamp counter (rdtsc).  Not serialising, on
 *                     purpose: a record's time may be read a few cycles
 *                     early or late against its other stores, which orders
 *                     nothing (the commit protocol is stores only).
 *   rs_nh_block()     one 16-byte block of the record checksum (ring.h):
 *                     (m0 + k0) * (m1 + k1) and (m2 + k2) * (m3 + k3), both
 *                     32 x 32 -> 64 bits, in the two lanes of an SSE2
 *                     register (pshufd, pmuludq); SSE2 is part of x86-64, so no
 *                     CPU check is needed.
 *
 * Whether the counter can stand for CLOCK_MONOTONIC is decided once, when
 * a run starts (ring-clock.c), never here.
 */
#ifndef RELSTACK_RING_ARCH_H
#define RELSTACK_RING_ARCH_H

#include <emmintrin.h>
#include <stdint.h>
#include <x86intrin.h>

/* The kernel's clocksource that reads the same counter (ring.h, rs_arch_counter_hz()). */
#define RS_ARCH_CLOCKSOURCE "tsc"

typedef __m128i rs_nh_acc;

static inline uint64_t rs_arch_ticks(void)
{
	return __rdtsc();
}

static inline rs_nh_acc rs_nh_zero(void)
{
	return _mm_setzero_si128();
}

static inline rs_nh_acc rs_nh_load(const void *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

static inline void rs_nh_store(void *p, rs_nh_acc v)
{
	_mm_storeu_si128((__m128i *)p, v);
}

/* Two 64-bit words as one block (lane 0 = bytes 0..7). */
static inline rs_nh_acc rs_nh_make(uint64_t lo, uint64_t hi)
{
	return _mm_set_epi64x((long long)hi, (long long)lo);
}

/* acc + NH of block m under key k (lane-wise, mod 2^64) */
static inline rs_nh_acc rs_nh_block(rs_nh_acc acc, rs_nh_acc m, const uint32_t *k)
{
	__m128i x = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)k));

	/* pshufd puts x1 and x3 where pmuludq takes its second factors */
	return _mm_add_epi64(acc, _mm_mul_epu32(x, _mm_shuffle_epi32(x, _MM_SHUFFLE(3, 3, 1, 1))));
}

/* Two accumulators summed lane-wise (mod 2^64): NH split over two sums joins here. */
static inline rs_nh_acc rs_nh_add(rs_nh_acc a, rs_nh_acc b)
{
	return _mm_add_epi64(a, b);
}

/* The two lanes summed, mod 2^64. */
static inline uint64_t rs_nh_fold(rs_nh_acc acc)
{
	return (uint64_t)_mm_cvtsi128_si64(acc) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
}

#endif
