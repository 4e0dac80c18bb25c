// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the object table learns of an object from its call-frame
 * information when it first sees it (never on the capture path): where its
 * signal-return trampoline is, and whether its CFI can hold a frame-record
 * row at all.
 *
 * Whether a frame is followed by its frame record is not decided here, nor
 * per object: each return address is proven by the CFI row of its call
 * (cfi.h, rs_cfi_row_is_record(), and the record map built with the
 * table).  What is learned here is of two kinds:
 *
 * - A fact: a frame-record row has its CFA on the frame pointer, so an
 *   object none of whose FDEs (nor their CIEs) ever defines the CFA on the
 *   frame pointer has none (records == false): RELSTACK_OBJECT_NO_FP.
 * - A cost decision, proving nothing: whether a record map is worth
 *   building for the objects a process starts with (their in-place tables
 *   keep no rows, so the map costs a pass of the row builder over all of
 *   their CFI at load time).  It is when at least RS_MAP_PERCENT of the
 *   FDEs of functions that use stack define their CFA on the frame
 *   pointer: a program or library built with -fno-omit-frame-pointer, whose
 *   frames the fast walk then proves by the map.  Without a map every
 *   frame of the object is still proven, row by row, by the general walk
 *   (Debian's libc, ld.so and libstdc++ come out far below).
 *
 * An FDE whose CIE has the 'S' augmentation (a signal frame: glibc's
 * __restore_rt) is searched for the trampoline's bytes.  The read stops
 * once the trampoline is found and both answers are settled by what was
 * read (the FDEs left, at most the count in .eh_frame_hdr's search table,
 * could no longer change them).  This runs for every object at library
 * load, so the one-byte LEB128s that nearly all CFI uses are read inline.
 *
 * Reads stay inside the PT_LOAD segment that holds .eh_frame; a malformed
 * entry ends the parse (what was read so far stands).
 */
#include <elf.h>
#include <stdbool.h>
#include <string.h>

#include "capture/cfi-parse.h"
#include "capture/fpcheck.h"
#include "capture/unwind-local.h"

#define RS_MAP_PERCENT 50

/* What a function's CFA instructions say about its frame. */
enum cfa_kind {
	CFA_MALFORMED = -1,
	CFA_NO_FRAME = 0, /* the CFA never moves: a leaf that touches no stack, or a stub */
	CFA_ON_SP = 1,    /* the function uses stack, and the CFA stays on the stack pointer */
	CFA_ON_FP = 2,    /* the CFA is defined on the frame pointer somewhere */
};

/* Classify CFA instructions [p, end). */
static enum cfa_kind cfa_on_fp(const unsigned char *p, const unsigned char *end, uint8_t fde_enc)
{
	struct cursor c = { p, end, false };
	bool moved = false;

	while (!c.bad && c.p < c.end) {
		uint8_t op = *c.p++;
		uint64_t reg;

		if (op & 0xc0) {                      /* advance_loc, offset, restore */
			if ((op & 0xc0) == 0x80)
				get_uleb(&c);         /* offset */
			continue;
		}
		switch (op) {
		case 0x00: case 0x0a: case 0x0b: break;                 /* nop, remember/restore_state */
		case 0x01: {                                            /* set_loc */
			size_t n = encoded_size(fde_enc);

			if (!n)
				return CFA_MALFORMED;
			skip(&c, n);
			break;
		}
		case 0x02: skip(&c, 1); break;                          /* advance_loc1 */
		case 0x03: skip(&c, 2); break;                          /* advance_loc2 */
		case 0x04: skip(&c, 4); break;                          /* advance_loc4 */
		case 0x05: case 0x09: case 0x14: case 0x2f:             /* two ulebs */
			get_uleb(&c); get_uleb(&c); break;
		case 0x06: case 0x07: case 0x08: case 0x2e:             /* one uleb */
			get_uleb(&c); break;
		case 0x0e:                                              /* def_cfa_offset */
			get_uleb(&c);
			moved = true;
			break;
		case 0x0c:                                              /* def_cfa reg, off */
			reg = get_uleb(&c);
			get_uleb(&c);
			if (reg == RS_ARCH_DWARF_FP)
				return CFA_ON_FP;
			moved = true;
			break;
		case 0x0d:                                              /* def_cfa_register */
			if (get_uleb(&c) == RS_ARCH_DWARF_FP)
				return CFA_ON_FP;
			moved = true;
			break;
		case 0x12:                                              /* def_cfa_sf reg, soff */
			reg = get_uleb(&c);
			get_sleb(&c);
			if (reg == RS_ARCH_DWARF_FP)
				return CFA_ON_FP;
			moved = true;
			break;
		case 0x0f:                                              /* def_cfa_expression: no record row */
			skip(&c, get_uleb(&c));
			moved = true;
			break;
		case 0x10: case 0x16:                                   /* (val_)expression reg, block */
			get_uleb(&c); skip(&c, get_uleb(&c)); break;
		case 0x11: case 0x15:                                   /* (val_)offset_extended_sf reg, soff */
			get_uleb(&c); get_sleb(&c); break;
		case 0x13: get_sleb(&c); moved = true; break;           /* def_cfa_offset_sf */
		default: return CFA_MALFORMED;
		}
	}
	if (c.bad)
		return CFA_MALFORMED;
	return moved ? CFA_ON_SP : CFA_NO_FRAME;
}

/* The signal-return trampoline inside [start, start + len); 0 if none. */
static uintptr_t find_restorer(uintptr_t start, uintptr_t len, uintptr_t text_start, uintptr_t text_end)
{
	if (start < text_start || start > text_end || len > text_end - start || len > 64)
		return 0;
	for (uintptr_t pc = start; pc + RS_ARCH_SIGRETURN_LEN <= start + len; pc++) {
		uintptr_t r = rs_arch_restorer_at((const unsigned char *)pc);

		if (r)
			return r;
	}
	return 0;
}

/*
 * .eh_frame's address from .eh_frame_hdr; 0 if there is none.  *fdes is
 * the number of FDEs the header's search table lists, 0 if it has none.
 */
static uintptr_t eh_frame_start(const struct dl_phdr_info *info, uint64_t *fdes)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *hdr;
		struct cursor c;
		uintptr_t lo, hi;

		if (ph->p_type != PT_GNU_EH_FRAME)
			continue;
		hdr = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		if (!load_segment(info, (uintptr_t)hdr, &lo, &hi))
			return 0;
		c = (struct cursor){ hdr, (const unsigned char *)hi, false };
		if (get_byte(&c) != 1) /* version */
			return 0;
		{
			uint8_t enc = get_byte(&c);
			uint8_t count_enc = get_byte(&c);
			uint8_t table_enc = get_byte(&c);
			uintptr_t eh, n;

			if (c.bad)
				return 0;
			eh = get_encoded(&c, enc, (uintptr_t)hdr);
			/* a count is absolute; DW_EH_PE_omit (0xff): no table */
			if (!c.bad && table_enc != 0xff && count_enc != 0xff && !(count_enc & 0x70)) {
				n = get_encoded(&c, count_enc, 0);
				if (!c.bad)
					*fdes = n;
			}
			return eh;
		}
	}
	return 0;
}

/*
 * Is the map decision settled?  At most @left FDEs are unread, each of
 * which can add to framed, or to framed and on_fp: settled when it holds
 * with all of them on the stack pointer, and when it fails with all of
 * them on the frame pointer.
 */
static bool map_settled(uint64_t framed, uint64_t on_fp, uint64_t left)
{
	return on_fp * 100 >= (framed + left) * RS_MAP_PERCENT || (on_fp + left) * 100 < framed * RS_MAP_PERCENT;
}

/* Read @info's .eh_frame for the facts (fpcheck.h). */
static void read_eh_frame(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end,
			  struct rs_fp_facts *out)
{
	uint64_t fdes = 0, left, framed = 0, on_fp = 0;
	uintptr_t eh = eh_frame_start(info, &fdes), lo, hi;
	const unsigned char *p, *end;
	const unsigned char *cie_at = NULL;
	struct cie cie = { 0 };
	enum cfa_kind cie_kind = CFA_NO_FRAME;
	bool read_all = false;

	if (!eh || !load_segment(info, eh, &lo, &hi))
		return;
	p = (const unsigned char *)eh;
	end = (const unsigned char *)hi;
	left = fdes;
	while ((size_t)(end - p) >= 4) {
		struct cursor c = { p, end, false };
		uint64_t len = get_u(&c, 4);
		const unsigned char *body, *next;
		uint32_t id;

		if (len == 0) {
			read_all = true;
			break; /* terminator */
		}
		if (len == 0xffffffffu)
			len = get_u(&c, 8);
		if (c.bad || len > (uint64_t)(c.end - c.p) || len < 4)
			break;
		body = c.p;
		next = body + len;
		id = (uint32_t)get_u(&c, 4);
		c.end = next;
		if (id == 0) {
			p = next;
			continue; /* a CIE: parsed when an FDE names it */
		}
		{
			const unsigned char *cp = body - id;
			struct cursor cc;
			uint64_t clen;
			uintptr_t pc_begin, pc_range;
			enum cfa_kind k;

			if (left)
				left--;
			if (cp < (const unsigned char *)eh || cp >= end)
				break;
			if (cp != cie_at) {
				cc = (struct cursor){ cp, end, false };
				clen = get_u(&cc, 4);
				if (clen == 0xffffffffu)
					clen = get_u(&cc, 8);
				if (cc.bad || clen > (uint64_t)(cc.end - cc.p) || clen < 4 || get_u(&cc, 4) != 0)
					break;
				if (!parse_cie(cc.p, cc.p - 4 + clen, &cie))
					break;
				cie_kind = cfa_on_fp(cie.insns, cie.insns_end, cie.fde_enc);
				if (cie_kind == CFA_MALFORMED)
					break;
				cie_at = cp;
			}
			pc_begin = get_encoded(&c, cie.fde_enc, 0);
			pc_range = get_encoded(&c, cie.fde_enc & 0x0f, 0);
			if (cie.has_z)
				skip(&c, get_uleb(&c));
			if (c.bad)
				break;
			if (pc_range == 0) {
				p = next;
				continue;
			}
			k = cie_kind == CFA_ON_FP ? CFA_ON_FP : cfa_on_fp(c.p, next, cie.fde_enc);
			framed += k == CFA_ON_SP || k == CFA_ON_FP;
			on_fp += k == CFA_ON_FP;
			/* a malformed FDE: its rows may hold anything (the table says unsupported); counted as a record's */
			out->records |= k == CFA_ON_FP || k == CFA_MALFORMED;
			if (cie.signal && !out->restorer)
				out->restorer = find_restorer(pc_begin, pc_range, text_start, text_end);
			if (out->restorer && out->records && fdes && map_settled(framed, on_fp, left))
				break;
		}
		p = next;
	}
	if ((size_t)(end - p) < 4)
		read_all = true;
	/* stopped early on malformed CFI: what was not read proves no absence */
	if (!read_all)
		out->records = true;
	out->map_worth = framed && on_fp * 100 >= framed * RS_MAP_PERCENT;
}

void rs_fp_check(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end,
		 struct rs_fp_facts *out)
{
	out->restorer = 0;
	out->records = false;
	out->map_worth = false;
	read_eh_frame(info, text_start, text_end, out);
	if (!out->restorer) /* a C library whose trampolines have no signal CIE */
		out->restorer = rs_arch_find_restorer(text_start, text_end);
}
