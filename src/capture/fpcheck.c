// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Does an object keep frame pointers?  Read from its own call-frame
 * information, once per object, when the object table first sees it.
 *
 * A function built with frame pointers says so in its CFI: after
 * `push %rbp; mov %rsp,%rbp` the CFA is defined from the frame-pointer
 * register (DW_CFA_def_cfa_register %rbp, or DW_CFA_def_cfa %rbp, n).  A
 * function built without them keeps the CFA on the stack pointer; only
 * the few that need a frame anyway (alloca, VLAs, stack realignment) move
 * it to %rbp.  So: count the FDEs of the object's in-memory .eh_frame
 * (found through PT_GNU_EH_FRAME) and those whose instructions move the
 * CFA to the frame pointer.  On aarch64 the CFA stays on the stack
 * pointer with or without frame pointers, and a function that makes a
 * frame record says so by saving x29 (RS_ARCH_FP_BY_SAVE): GCC saves it
 * only for the record unless told -fomit-frame-pointer, and then seldom.
 * One function there that saves x30 without x29 (CFA_BREAKS_CHAIN) rules
 * its whole object out: a frame-record walk would pass over its caller
 * and still call the trace complete.
 * The object keeps frame pointers when at
 * least RS_FP_PERCENT of its FDEs do.  An object with no .eh_frame
 * proves nothing either way and is marked as keeping none: its frames
 * are then unreliable ("no-fp-object"), never trusted on a guess.  (It
 * has no CFI table either, so the walk cannot follow it otherwise.)
 *
 * Only FDEs of functions that use stack count: a leaf that touches no
 * stack (its CFA never moves) has no frame to keep, with or without
 * -fno-omit-frame-pointer (GCC omits leaf frame pointers by default), and
 * PLT stubs (a CFA expression) are nobody's frame.  Libraries built
 * without frame pointers (Debian's libc, ld.so, libm, libstdc++) keep them
 * in a small share of their counted FDEs, those built with
 * -fno-omit-frame-pointer in most: RS_FP_PERCENT lies between.
 *
 * While reading, an FDE whose CIE has the 'S' augmentation (a signal
 * frame: glibc's __restore_rt) is searched for the signal-return
 * trampoline, whose address the object table publishes with the object.
 *
 * The read stops early once a trampoline is found and the FDEs left (at
 * most the count in .eh_frame_hdr's search table, which the linker writes
 * from the same FDEs) could no longer change the verdict either way.  An
 * object without a trampoline is read to the end, since any FDE could hold
 * one.  This runs for every
 * object at library load, so the one-byte LEB128s that nearly all CFI
 * uses are read inline.
 *
 * Reads stay inside the PT_LOAD segment that holds .eh_frame; a malformed
 * entry ends the parse.  Never runs on the capture path.
 */
#include <elf.h>
#include <stdbool.h>
#include <string.h>

#include "capture/cfi-parse.h"
#include "capture/fpcheck.h"
#include "capture/unwind-local.h"

#define RS_FP_PERCENT 50

/* What a function's CFA instructions say about its frame. */
enum cfa_kind {
	CFA_MALFORMED = -1,
	CFA_NO_FRAME = 0, /* the CFA never moves: a leaf that touches no stack, or a stub */
	CFA_ON_SP = 1,    /* the function uses stack, and the CFA stays on the stack pointer */
	CFA_ON_FP = 2,    /* the CFA moves to the frame pointer */
	/*
	 * aarch64: the function saves its return address but makes no frame
	 * record, so a frame-pointer walk through it would skip its caller
	 * without noticing; its object is walked by its CFI.
	 */
	CFA_BREAKS_CHAIN = 3,
};

/* What saving register @reg tells: bit 0 a frame pointer saved, bit 1 a return address. */
static inline unsigned saved(uint64_t reg)
{
	return (reg == RS_ARCH_DWARF_FP) | (reg == RS_ARCH_DWARF_RA) << 1;
}

/* Classify CFA instructions [p, end). */
static enum cfa_kind cfa_on_fp(const unsigned char *p, const unsigned char *end, uint8_t fde_enc)
{
	struct cursor c = { p, end, false };
	bool moved = false;
	/* bit 0: the frame pointer saved, bit 1: the return address (saved(), RS_ARCH_FP_BY_SAVE) */
	unsigned saves = 0;

	while (!c.bad && c.p < c.end) {
		uint8_t op = *c.p++;
		uint64_t reg;

		if (op & 0xc0) {                      /* advance_loc, offset, restore */
			if ((op & 0xc0) == 0x80) {
				get_uleb(&c);         /* offset */
				saves |= saved(op & 0x3f);
			}
			continue;
		}
		switch (op) {
		case 0x00: case 0x0a: case 0x0b: break;                 /* nop, remember/restore_state */
		case 0x01: {                                            /* set_loc */
			size_t n = encoded_size(fde_enc);

			if (!n)
				return -1;
			skip(&c, n);
			break;
		}
		case 0x02: skip(&c, 1); break;                          /* advance_loc1 */
		case 0x03: skip(&c, 2); break;                          /* advance_loc2 */
		case 0x04: skip(&c, 4); break;                          /* advance_loc4 */
		case 0x05:                                              /* offset_extended reg, off */
			saves |= saved(get_uleb(&c));
			get_uleb(&c);
			break;
		case 0x09: case 0x14: case 0x2f:                        /* two ulebs */
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
		case 0x0f:                                              /* def_cfa_expression: PLT stubs */
			return CFA_NO_FRAME;
		case 0x10: case 0x16:                                   /* (val_)expression reg, block */
			get_uleb(&c); skip(&c, get_uleb(&c)); break;
		case 0x11:                                              /* offset_extended_sf reg, soff */
			saves |= saved(get_uleb(&c));
			get_sleb(&c);
			break;
		case 0x15: get_uleb(&c); get_sleb(&c); break;           /* val_offset_sf */
		case 0x13: get_sleb(&c); moved = true; break;           /* def_cfa_offset_sf */
		default: return CFA_MALFORMED;
		}
	}
	if (c.bad)
		return CFA_MALFORMED;
	if (RS_ARCH_FP_BY_SAVE && (saves & 1))
		return CFA_ON_FP;
	if (RS_ARCH_FP_BY_SAVE && (saves & 2))
		return CFA_BREAKS_CHAIN;
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
 * Can the FDEs still unread change the verdict?  At most @left of them,
 * each of which can add to framed, or to framed and on_fp: the verdict is
 * settled when it holds with all of them on the stack pointer, and when
 * it fails with all of them on the frame pointer.
 */
static bool verdict_settled(uint64_t framed, uint64_t on_fp, uint64_t left)
{
	return on_fp * 100 >= (framed + left) * RS_FP_PERCENT ||
	       (on_fp + left) * 100 < framed * RS_FP_PERCENT;
}

static bool keeps_fp(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end,
		     uintptr_t *restorer)
{
	uint64_t fdes = 0, left;
	uintptr_t eh = eh_frame_start(info, &fdes), lo, hi;
	const unsigned char *p, *end;
	const unsigned char *cie_at = NULL;
	struct cie cie = { 0 };
	bool cie_on_fp = false;
	uint64_t framed = 0, on_fp = 0;
	bool broken = false;

	if (!eh || !load_segment(info, eh, &lo, &hi))
		return false;
	p = (const unsigned char *)eh;
	end = (const unsigned char *)hi;
	left = fdes;
	while ((size_t)(end - p) >= 4) {
		struct cursor c = { p, end, false };
		uint64_t len = get_u(&c, 4);
		const unsigned char *body, *next;
		uint32_t id;

		if (len == 0)
			break; /* terminator */
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
			enum cfa_kind fp;

			if (left)
				left--;
			if (cp < (const unsigned char *)eh || cp >= end)
				break;
			if (cp != cie_at) {
				cc = (struct cursor){ cp, end, false };
				clen = get_u(&cc, 4);
				if (clen == 0xffffffffu)
					clen = get_u(&cc, 8);
				if (cc.bad || clen > (uint64_t)(cc.end - cc.p) || clen < 4 ||
				    get_u(&cc, 4) != 0)
					break;
				if (!parse_cie(cc.p, cc.p - 4 + clen, &cie))
					break;
				fp = cfa_on_fp(cie.insns, cie.insns_end, cie.fde_enc);
				if (fp == CFA_MALFORMED)
					break;
				cie_on_fp = fp == CFA_ON_FP;
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
			fp = cie_on_fp ? CFA_ON_FP : cfa_on_fp(c.p, next, cie.fde_enc);
			framed += fp == CFA_ON_SP || fp == CFA_ON_FP;
			on_fp += fp == CFA_ON_FP;
			broken |= fp == CFA_BREAKS_CHAIN;
			if (cie.signal && !*restorer)
				*restorer = find_restorer(pc_begin, pc_range, text_start, text_end);
			if (*restorer && (broken || (fdes && verdict_settled(framed, on_fp, left))))
				break;
		}
		p = next;
	}
	if (broken)
		return false;
	if (framed == 0)
		return true;
	return on_fp * 100 >= framed * RS_FP_PERCENT;
}

void rs_fp_check(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end,
		 struct rs_fp_facts *out)
{
	out->restorer = 0;
	out->keeps_fp = keeps_fp(info, text_start, text_end, &out->restorer);
	if (!out->restorer) /* a C library whose trampolines have no signal CIE */
		out->restorer = rs_arch_find_restorer(text_start, text_end);
}
