/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fuzz_reader input format: a buffer file with its runs of zero bytes
 * squeezed out.  An input is a sequence of segments, each
 *
 *   u32 literal (little-endian) | u32 zeros | `literal` bytes
 *
 * standing for those bytes followed by `zeros` zero bytes.  A segment cut
 * short by the end of the input stands for what is there; the file is cut
 * at RS_SEED_FILE_MAX bytes.
 */
#ifndef RS_RING_SEED_H
#define RS_RING_SEED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RS_SEED_FILE_MAX (1u << 20)
#define RS_SEED_ZEROS_MIN 32 /* shorter runs of zeros stay in the literal bytes */

static inline uint32_t rs_seed_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The file @in stands for, into @out (RS_SEED_FILE_MAX bytes); returns its size. */
static inline size_t rs_seed_expand(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t got = 0;

	while (n >= 8 && got < RS_SEED_FILE_MAX) {
		size_t lit = rs_seed_u32(in), zeros = rs_seed_u32(in + 4);

		in += 8;
		n -= 8;
		lit = lit < n ? lit : n;
		lit = lit < RS_SEED_FILE_MAX - got ? lit : RS_SEED_FILE_MAX - got;
		memcpy(out + got, in, lit);
		in += lit;
		n -= lit;
		got += lit;
		zeros = zeros < RS_SEED_FILE_MAX - got ? zeros : RS_SEED_FILE_MAX - got;
		memset(out + got, 0, zeros);
		got += zeros;
	}
	return got;
}

/* The input that stands for the @n-byte file @in, into @out (at least n + n / 4 + 16 bytes); returns its size. */
static inline size_t rs_seed_squeeze(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t o = 0, i = 0;

	while (i < n) {
		size_t start = i, lit_end, z = 0;

		/* literal bytes up to the next run of RS_SEED_ZEROS_MIN zeros, or the end */
		for (;;) {
			size_t k = i;

			while (k < n && in[k] == 0)
				k++;
			if (k - i >= RS_SEED_ZEROS_MIN || k == n) {
				lit_end = i;
				z = k - i;
				i = k;
				break;
			}
			i = k + 1;
		}
		for (int b = 0; b < 4; b++) {
			out[o + b] = (uint8_t)((lit_end - start) >> (8 * b));
			out[o + 4 + b] = (uint8_t)(z >> (8 * b));
		}
		memcpy(out + o + 8, in + start, lit_end - start);
		o += 8 + (lit_end - start);
	}
	return o;
}

#endif
