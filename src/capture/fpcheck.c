// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the object table learns of an object from its call-frame
 * information when it first sees it (never on the capture path): where its
 * signal-return trampoline is.
 *
 * Whether a frame is followed by its frame record is not decided here, nor
 * per object: each return address is proven by the CFI row of its call
 * (cfi.h, rs_cfi_row_is_record(), and the record map built with the table).
 *
 * An FDE whose CIE has the 'S' augmentation (a signal frame: glibc's
 * __restore_rt) is searched for the trampoline's bytes; the read stops at
 * the first one found.  An object without one is read to the end, since
 * any FDE could hold it.  This runs for every object at library load, so
 * the one-byte LEB128s that nearly all CFI uses are read inline.
 *
 * Reads stay inside the PT_LOAD segment that holds .eh_frame; a malformed
 * entry ends the parse.
 */
#include <elf.h>
#include <stdbool.h>
#include <string.h>

#include "capture/cfi-parse.h"
#include "capture/fpcheck.h"
#include "capture/unwind-local.h"

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

/* The trampoline of the first signal frame's FDE in @info's .eh_frame; 0 if none. */
static uintptr_t signal_fde_restorer(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end)
{
	uint64_t fdes = 0;
	uintptr_t eh = eh_frame_start(info, &fdes), lo, hi, restorer = 0;
	const unsigned char *p, *end;
	const unsigned char *cie_at = NULL;
	struct cie cie = { 0 };

	if (!eh || !load_segment(info, eh, &lo, &hi))
		return 0;
	p = (const unsigned char *)eh;
	end = (const unsigned char *)hi;
	while (!restorer && (size_t)(end - p) >= 4) {
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
				cie_at = cp;
			}
			if (cie.signal) {
				pc_begin = get_encoded(&c, cie.fde_enc, 0);
				pc_range = get_encoded(&c, cie.fde_enc & 0x0f, 0);
				if (c.bad)
					break;
				restorer = find_restorer(pc_begin, pc_range, text_start, text_end);
			}
		}
		p = next;
	}
	return restorer;
}

void rs_fp_check(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end,
		 struct rs_fp_facts *out)
{
	out->restorer = signal_fde_restorer(info, text_start, text_end);
	if (!out->restorer) /* a C library whose trampolines have no signal CIE */
		out->restorer = rs_arch_find_restorer(text_start, text_end);
}
