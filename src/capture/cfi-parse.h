/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading .eh_frame and .eh_frame_hdr in memory: the bounded cursor, the
 * LEB128 and DW_EH_PE pointer decoders, and the CIE, for fpcheck.c (at
 * scan time, over every FDE of an object) and cfi.c (on the capture path,
 * one FDE at a time).  Every read stays inside the cursor's [p, end); a
 * read past it sets bad and returns 0, so a malformed entry ends the parse
 * instead of the process.  No allocation, no system call: async-signal-safe.
 */
#ifndef RELSTACK_CFI_PARSE_H
#define RELSTACK_CFI_PARSE_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct cursor {
	const unsigned char *p, *end;
	bool bad;
};

/* An @n-byte value (1, 2, 4 or 8) in the process's byte order, as CFI is. */
static inline uint64_t get_u(struct cursor *c, size_t n)
{
	uint64_t v;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	switch (n) {
	case 1: v = *c->p; break;
	case 2: { uint16_t x; memcpy(&x, c->p, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, c->p, 4); v = x; break; }
	default: memcpy(&v, c->p, 8); break;
	}
	c->p += n;
	return v;
}

static inline uint8_t get_byte(struct cursor *c)
{
	if (c->bad || c->p == c->end) {
		c->bad = true;
		return 0;
	}
	return *c->p++;
}

static inline uint64_t get_leb_slow(struct cursor *c, bool is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	while (!c->bad) {
		b = get_byte(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

/*
 * LEB128: almost every one in CFI is a single byte, so that case is taken
 * first and inline (fpcheck.c runs over every FDE of every object).
 */
static inline uint64_t get_uleb(struct cursor *c)
{
	if (!c->bad && c->p < c->end && !(*c->p & 0x80))
		return *c->p++;
	return get_leb_slow(c, false);
}

static inline int64_t get_sleb(struct cursor *c)
{
	if (!c->bad && c->p < c->end && !(*c->p & 0x80)) {
		uint8_t b = *c->p++;

		return (b & 0x40) ? (int64_t)b - 0x80 : (int64_t)b;
	}
	return (int64_t)get_leb_slow(c, true);
}

static inline void skip(struct cursor *c, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n)
		c->bad = true;
	else
		c->p += n;
}

/* A DW_EH_PE-encoded pointer; @datarel is the data-relative base. */
static inline uintptr_t get_encoded(struct cursor *c, uint8_t enc, uintptr_t datarel)
{
	uintptr_t at = (uintptr_t)c->p, v;

	if (enc == 0xff) /* DW_EH_PE_omit */
		return 0;
	switch (enc & 0x0f) {
	case 0x00: v = (uintptr_t)get_u(c, sizeof(uintptr_t)); break;  /* absptr */
	case 0x01: v = (uintptr_t)get_uleb(c); break;                  /* uleb128 */
	case 0x02: v = (uintptr_t)get_u(c, 2); break;                  /* udata2 */
	case 0x03: v = (uintptr_t)get_u(c, 4); break;                  /* udata4 */
	case 0x04: v = (uintptr_t)get_u(c, 8); break;                  /* udata8 */
	case 0x09: v = (uintptr_t)get_sleb(c); break;                  /* sleb128 */
	case 0x0a: v = (uintptr_t)(int16_t)get_u(c, 2); break;         /* sdata2 */
	case 0x0b: v = (uintptr_t)(int32_t)get_u(c, 4); break;         /* sdata4 */
	case 0x0c: v = (uintptr_t)get_u(c, 8); break;                  /* sdata8 */
	default: c->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;               /* absolute */
	case 0x10: v += at; break;      /* pcrel */
	case 0x30: v += datarel; break; /* datarel */
	default: c->bad = true; return 0;
	}
	return v;
}

/* Size in bytes of a pointer of encoding @enc, for DW_CFA_set_loc; 0 if variable. */
static inline size_t encoded_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: return sizeof(uintptr_t);
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

/* What a CIE says about the FDEs that name it. */
struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	const unsigned char *insns, *insns_end; /* the initial instructions */
	uint8_t fde_enc;
	bool has_z;
	bool signal;
};

/* Parse a CIE's body [p, end) (after its length and zero id). */
static inline bool parse_cie(const unsigned char *p, const unsigned char *end, struct cie *cie)
{
	struct cursor c = { p, end, false };
	const char *aug;
	size_t auglen;
	uint8_t version;

	memset(cie, 0, sizeof(*cie));
	version = get_byte(&c);
	if (c.bad || (version != 1 && version != 3))
		return false;
	aug = (const char *)c.p;
	auglen = strnlen(aug, (size_t)(c.end - c.p));
	if (auglen == (size_t)(c.end - c.p))
		return false;
	skip(&c, auglen + 1);
	cie->code_align = get_uleb(&c);
	cie->data_align = get_sleb(&c);
	cie->ra_reg = version == 1 ? get_byte(&c) : get_uleb(&c);
	cie->fde_enc = 0; /* absptr unless 'R' says otherwise */
	if (aug[0] == 'z') {
		uint64_t len = get_uleb(&c);
		struct cursor a = { c.p, c.p, false };

		skip(&c, len);
		if (c.bad)
			return false;
		a.end = c.p;
		cie->has_z = true;
		for (size_t i = 1; i < auglen; i++) {
			switch (aug[i]) {
			case 'R': cie->fde_enc = get_byte(&a); break;
			case 'L': get_byte(&a); break;
			case 'P': {
				uint8_t enc = get_byte(&a);

				get_encoded(&a, enc & 0x7f, 0);
				break;
			}
			case 'S': cie->signal = true; break;
			case 'B': case 'G': break;
			default: return false;
			}
		}
		if (a.bad)
			return false;
	} else if (auglen) {
		return false; /* augmentations we cannot skip */
	}
	if (c.bad)
		return false;
	cie->insns = c.p;
	cie->insns_end = c.end;
	return true;
}

/*
 * An entry's length field at @p (4 bytes, or 0xffffffff and 8): sets
 * *body to what follows it and returns the body's length; 0 for the
 * terminator or an entry that does not fit before @end.
 */
static inline uint64_t entry_length(const unsigned char *p, const unsigned char *end, const unsigned char **body)
{
	struct cursor c = { p, end, false };
	uint64_t len = get_u(&c, 4);

	if (len == 0xffffffffu)
		len = get_u(&c, 8);
	if (c.bad || len > (uint64_t)(c.end - c.p) || len < 4)
		return 0;
	*body = c.p;
	return len;
}

/* The PT_LOAD segment holding @addr, as [lo, hi); false if none. */
static inline bool load_segment(const struct dl_phdr_info *info, uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && addr >= s && addr - s < ph->p_filesz) {
			*lo = s;
			*hi = s + ph->p_filesz;
			return true;
		}
	}
	return false;
}

#endif
