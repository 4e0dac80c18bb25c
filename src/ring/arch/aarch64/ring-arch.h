/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The two things the record writer asks of the CPU, aarch64 versions
 * (the same names as src/ring/arch/x86_64/ring-arch.h):
 *
 *   rs_arch_ticks()   the virtual count of the generic timer (cntvct_el0),
 *                     readable at EL0 under Linux.  Its rate is the
 *                     architecture's promise, constant and published in
 *                     cntfrq_el0 (rs_arch_ticks_hz()): nothing to measure.
 *                     No isb before the read, on purpose, as on x86-64: a
 *                     record's time may be read a little early or late
 *                     against its other stores, which orders nothing.
 *   rs_nh_block()     one 16-byte block of the record checksum (ring.h):
 *                     (m0 + k0) * (m1 + k1) and (m2 + k2) * (m3 + k3),
 *                     32 x 32 -> 64 bits, in the two lanes of a NEON
 *                     register (xtn and shrn pick the factors, umlal
 *                     multiplies and adds); Advanced SIMD is part of the
 *                     aarch64 base, so no CPU check is needed.
 */
#ifndef RELSTACK_RING_ARCH_H
#define RELSTACK_RING_ARCH_H

#include <arm_neon.h>
#include <stdint.h>

typedef uint64x2_t rs_nh_acc;

static inline uint64_t rs_arch_ticks(void)
{
	uint64_t t;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(t));
	return t;
}

/* The kernel's clocksource that reads the same counter (ring.h, rs_arch_counter_hz()). */
#define RS_ARCH_CLOCKSOURCE "arch_sys_counter"

/* The counter's rate in Hz, as the firmware set it for the kernel. */
static inline uint64_t rs_arch_ticks_hz(void)
{
	uint64_t hz;

	__asm__("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz & 0xffffffffu; /* bits 63:32 are RES0 */
}

static inline rs_nh_acc rs_nh_zero(void)
{
	return vdupq_n_u64(0);
}

static inline rs_nh_acc rs_nh_load(const void *p)
{
	return vreinterpretq_u64_u8(vld1q_u8((const uint8_t *)p));
}

static inline void rs_nh_store(void *p, rs_nh_acc v)
{
	vst1q_u8((uint8_t *)p, vreinterpretq_u8_u64(v));
}

/* Two 64-bit words as one block (lane 0 = bytes 0..7). */
static inline rs_nh_acc rs_nh_make(uint64_t lo, uint64_t hi)
{
	return vcombine_u64(vcreate_u64(lo), vcreate_u64(hi));
}

/* acc + NH of block m under key k (lane-wise, mod 2^64) */
static inline rs_nh_acc rs_nh_block(rs_nh_acc acc, rs_nh_acc m, const uint32_t *k)
{
	uint64x2_t x = vreinterpretq_u64_u32(vaddq_u32(vreinterpretq_u32_u64(m), vld1q_u32(k)));

	/* the low halves (x0, x2) times the high halves (x1, x3), lane by lane */
	return vmlal_u32(acc, vmovn_u64(x), vshrn_n_u64(x, 32));
}

/* Two accumulators summed lane-wise (mod 2^64): NH split over two sums joins here. */
static inline rs_nh_acc rs_nh_add(rs_nh_acc a, rs_nh_acc b)
{
	return vaddq_u64(a, b);
}

/* The two lanes summed, mod 2^64. */
static inline uint64_t rs_nh_fold(rs_nh_acc acc)
{
	return vaddvq_u64(acc);
}

#endif
