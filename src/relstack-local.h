/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal helpers shared by every part of librelstack. */
#ifndef RELSTACK_LOCAL_H
#define RELSTACK_LOCAL_H

#include <stddef.h>
#include <stdint.h>

#define RS_HIDDEN __attribute__((visibility("hidden")))
#define RS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define rs_likely(x) __builtin_expect(!!(x), 1)
#define rs_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Forced inlining for the capture path.  Not in unoptimised
 * AddressSanitizer builds: there GCC 12 leaves the use-after-scope poison
 * of a forcibly inlined function's locals on the stack after it returns,
 * and later, unrelated frames trip over it.
 */
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
#define RS_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RS_ALWAYS_INLINE inline
#endif

/*
 * FNV-1a, 32 bits: the checksum of persisted records.  It detects torn and
 * corrupted records; it is not meant to resist an attacker, who is stopped
 * by the reader's bounds checks instead.
 */
static inline uint32_t rs_hash32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 16777619u;
	}
	return h;
}
#define RS_HASH32_INIT 2166136261u

/* The value of one hex digit, or -1. */
static inline int rs_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * The first @cap - 1 bytes of a small file (/proc, /sys), NUL-terminated;
 * 0 if unreadable or empty (src/ring/ring-clock.c).
 */
RS_HIDDEN size_t rs_read_small(const char *path, char *buf, size_t cap);

#endif
