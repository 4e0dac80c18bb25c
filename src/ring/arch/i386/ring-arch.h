/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two things the record writer asks of the CPU, i386 versions (the
 * x86-64 header, src/ring/arch/x86_64/ring-arch.h, says what each is):
 *
 *   rs_arch_ticks()   the time stamp counter (rdtsc), as on x86-64.
 *   rs_nh_block()     one 16-byte block of the record checksum, in plain
 *                     C: i386 does not promise SSE2, and the build does
 *                     not ask for it.  Two 64-bit lanes, each the product
 *                     of two 32-bit sums, exactly as the SSE2 version.
 */
#ifndef RELSTACK_RING_ARCH_H
#define RELSTACK_RING_ARCH_H

#include <stdint.h>
#include <string.h>
#include <x86intrin.h>

/* The kernel's clocksource that reads the same counter (ring.h, rs_arch_counter_hz()). */
#define RS_ARCH_CLOCKSOURCE "tsc"

typedef struct {
	uint64_t lane[2];
} rs_nh_acc;

static inline uint64_t rs_arch_ticks(void)
{
	return __rdtsc();
}

static inline rs_nh_acc rs_nh_zero(void)
{
	return (rs_nh_acc){ { 0, 0 } };
}

static inline rs_nh_acc rs_nh_load(const void *p)
{
	rs_nh_acc v;

	memcpy(v.lane, p, 16);
	return v;
}

static inline void rs_nh_store(void *p, rs_nh_acc v)
{
	memcpy(p, v.lane, 16);
}

/* Two 64-bit words as one block (lane 0 = bytes 0..7). */
static inline rs_nh_acc rs_nh_make(uint64_t lo, uint64_t hi)
{
	return (rs_nh_acc){ { lo, hi } };
}

/* acc + NH of block m under key k (lane-wise, mod 2^64) */
static inline rs_nh_acc rs_nh_block(rs_nh_acc acc, rs_nh_acc m, const uint32_t *k)
{
	for (int i = 0; i < 2; i++) {
		uint32_t x0 = (uint32_t)m.lane[i] + k[2 * i], x1 = (uint32_t)(m.lane[i] >> 32) + k[2 * i + 1];

		acc.lane[i] += (uint64_t)x0 * x1;
	}
	return acc;
}

/* Two accumulators summed lane-wise (mod 2^64): NH split over two sums joins here. */
static inline rs_nh_acc rs_nh_add(rs_nh_acc a, rs_nh_acc b)
{
	return (rs_nh_acc){ { a.lane[0] + b.lane[0], a.lane[1] + b.lane[1] } };
}

/* The two lanes summed, mod 2^64. */
static inline uint64_t rs_nh_fold(rs_nh_acc acc)
{
	return acc.lane[0] + acc.lane[1];
}

#endif
