// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CFI tables from .sframe: the Simple Frame format GNU as writes with
 * --gsframe, loaded in its own segment (PT_GNU_SFRAME), for an object
 * that carries it without .eh_frame.  SFrame keeps exactly what the walk
 * uses — per range of addresses, the CFA as the stack or frame pointer
 * plus an offset, the return address and the frame pointer as offsets
 * from the CFA — so its rows turn into compiled rows one for one.
 *
 * Read (versions 1 and 2, the build's CPU only: RS_ARCH_SFRAME_ABI,
 * x86-64 with the return address at CFA - 8, or aarch64, which tracks
 * it), every read bounded by the section:
 *
 *	preamble   magic 0xdee2, version, flags
 *	header     abi/arch, fixed FP and RA offsets, aux header length,
 *	           FDE and FRE counts, FRE bytes, FDE and FRE offsets
 *	FDEs       function start (from the section, or from the field itself
 *	           with SFRAME_F_FDE_FUNC_START_PCREL), size, first FRE, FRE
 *	           count, info (FRE type, FDE type); v2 adds a repeat size
 *	FREs       start offset (1, 2 or 4 bytes), info (CFA base register,
 *	           offset count and size), then the offsets
 *
 * FDEs of the PCMASK type (PLT entries, whose rows repeat every few
 * bytes) become unsupported rows, as their expression rules do in
 * .eh_frame.  Scan time only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/cfi-local.h"
#include "capture/unwind-local.h"

#define SFRAME_MAGIC 0xdee2
#define SFRAME_F_FDE_FUNC_START_PCREL 0x4
#define SFRAME_HEADER 28

struct sframe_fde {
	int64_t start; /* from the section's start */
	uint32_t size, fre_off, nfres;
	uint8_t info;
};

static int cmp_fde(const void *a, const void *b)
{
	const struct sframe_fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The rows of FDE @f over [begin, begin + range), from its FREs at [fres, end). */
static void fre_rows(struct rs_cfi_builder *b, uintptr_t begin, uintptr_t range, const unsigned char *fres,
		     const unsigned char *end, const struct sframe_fde *f, int8_t fixed_ra)
{
	struct cursor c = { fres, end, false };
	unsigned addr_size = (f->info & 0xf) == 0 ? 1 : (f->info & 0xf) == 1 ? 2 : (f->info & 0xf) == 2 ? 4 : 0;
	/* a fixed offset of 0 ("invalid"): each FRE gives the return address's (aarch64) */
	const bool ra_tracked = fixed_ra == 0 && RS_ARCH_RA_IN_REGISTER;

	if (!addr_size || (f->info & 0x10) || (fixed_ra != -8 && !ra_tracked)) {
		rs_cfi_build_row(b, begin, begin + range, NULL); /* unsupported over the FDE */
		return;
	}
	for (uint32_t i = 0; i < f->nfres && !c.bad; i++) {
		uint64_t at = get_u(&c, addr_size), next_at = range;
		uint8_t info = get_byte(&c);
		unsigned count = (info >> 1) & 0xf, size = 1u << ((info >> 5) & 3);
		int64_t off[3] = { 0, 0, 0 };
		struct rs_cfi_row row;

		if (size > 4 || count < 1 || count > 2u + ra_tracked) {
			c.bad = true;
			break;
		}
		for (unsigned k = 0; k < count; k++)
			off[k] = size == 1 ? (int8_t)get_u(&c, 1) : size == 2 ? (int16_t)get_u(&c, 2) : (int32_t)get_u(&c, 4);
		/* where this FRE ends: the next one's start (peeked), or the function's end */
		if (i + 1 < f->nfres) {
			struct cursor p = c;

			next_at = get_u(&p, addr_size);
			if (p.bad || next_at <= at)
				c.bad = true;
		}
		if (c.bad || at >= range)
			break;
		if (next_at > range)
			next_at = range;
		/*
		 * CFA = SP (base register 1) or FP (0) + off[0]; then, where the
		 * return address is tracked, its offset (none: still in its
		 * register); else it is at CFA - 8; FP at CFA + the last offset
		 * if one is left.
		 */
		memset(&row, 0, sizeof(row));
		row.cfa_on_fp = !(info & 1);
		row.cfa_off = off[0];
		row.ra_rule = ra_tracked && count == 1 ? RS_CFI_SAME : RS_CFI_OFFSET;
		row.ra_off = ra_tracked ? off[1] : fixed_ra;
		row.fp_rule = count == 2u + ra_tracked ? RS_CFI_OFFSET : RS_CFI_SAME;
		row.fp_off = count == 2u + ra_tracked ? off[count - 1] : 0;
		rs_cfi_build_row(b, begin + at, begin + next_at, &row);
	}
	if (c.bad)
		rs_cfi_build_row(b, begin, begin + range, NULL);
}

struct rs_cfi_table *rs_cfi_table_from_sframe(uintptr_t sec, size_t size, uintptr_t bias, uint64_t span)
{
	struct rs_cfi_builder b = { .bias = bias, .span = span };
	const unsigned char *p = (const unsigned char *)sec, *end = p + size;
	struct cursor c = { p, end, false };
	uint32_t nfdes, nfres, fre_len, fdeoff, freoff;
	uint8_t version, flags, abi, auxlen;
	int8_t fixed_ra;
	size_t fde_size;
	struct sframe_fde *fdes;
	const unsigned char *fde_base, *fre_base;

	if (get_u(&c, 2) != SFRAME_MAGIC)
		goto bad;
	version = get_byte(&c);
	flags = get_byte(&c);
	abi = get_byte(&c);
	get_byte(&c); /* fixed FP offset: x86-64 has none */
	fixed_ra = (int8_t)get_byte(&c);
	auxlen = get_byte(&c);
	nfdes = (uint32_t)get_u(&c, 4);
	nfres = (uint32_t)get_u(&c, 4);
	fre_len = (uint32_t)get_u(&c, 4);
	fdeoff = (uint32_t)get_u(&c, 4);
	freoff = (uint32_t)get_u(&c, 4);
	(void)nfres;
	if (c.bad || (version != 1 && version != 2) || abi != RS_ARCH_SFRAME_ABI)
		goto bad;
	fde_size = version == 1 ? 17 : 20;
	if ((size_t)(end - p) < SFRAME_HEADER + (size_t)auxlen)
		goto bad;
	fde_base = p + SFRAME_HEADER + auxlen + fdeoff;
	fre_base = p + SFRAME_HEADER + auxlen + freoff;
	if (fdeoff > size || freoff > size || fde_base > end || fre_base > end || (size_t)(end - fde_base) / fde_size < nfdes ||
	    (size_t)(end - fre_base) < fre_len)
		goto bad;
	fdes = calloc(nfdes ? nfdes : 1, sizeof(*fdes));
	if (!fdes) {
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < nfdes; i++) {
		struct cursor f = { fde_base + (size_t)i * fde_size, end, false };
		int64_t s = (int32_t)get_u(&f, 4);

		if (flags & SFRAME_F_FDE_FUNC_START_PCREL)
			s += fde_base + (size_t)i * fde_size - p;
		fdes[i].start = s;
		fdes[i].size = (uint32_t)get_u(&f, 4);
		fdes[i].fre_off = (uint32_t)get_u(&f, 4);
		fdes[i].nfres = (uint32_t)get_u(&f, 4);
		fdes[i].info = get_byte(&f);
	}
	qsort(fdes, nfdes, sizeof(*fdes), cmp_fde);
	for (uint32_t i = 0; i < nfdes && !b.nomem; i++) {
		uintptr_t begin = sec + (uintptr_t)fdes[i].start;

		b.stats.fdes++;
		if (fdes[i].fre_off >= fre_len || !fdes[i].size) {
			rs_cfi_build_unsupported(&b, begin);
			continue;
		}
		fre_rows(&b, begin, fdes[i].size, fre_base + fdes[i].fre_off, fre_base + fre_len, &fdes[i], fixed_ra);
	}
	b.stats.cfi_bytes = size;
	free(fdes);
	return rs_cfi_build_finish(&b, bias);
bad:
	errno = ENOENT;
	return NULL;
}
