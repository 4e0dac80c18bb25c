/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Return addresses of known CFI rows, for crafted stacks: found in the
 * C runtime's own .eh_frame_hdr table (cfi.h), so that the tests follow
 * whatever C library the machine has.  A return address ra is looked up
 * at ra - 1, so each is the start of an FDE plus one: the row there is
 * the function's entry row.
 */
#ifndef RS_TEST_CFI_TEST_H
#define RS_TEST_CFI_TEST_H

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/objtab.h"

/* The signal-return trampoline the object table publishes with the C runtime; 0 if none. */
static inline uintptr_t crt_restorer(void)
{
	struct rs_lookup l;

	if (!rs_objtab_lookup((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"), &l))
		return 0;
	return l.restorer;
}

/* The C runtime's CFI object. */
static inline const struct rs_cfi_object *crt_cfi(void)
{
	return rs_cfi_object_of((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"));
}

enum row_kind {
	ROW_OUTERMOST,   /* the return address rule is undefined */
	ROW_ENTRY,       /* CFA = sp + 8, return address at CFA - 8, frame pointer unchanged */
	ROW_SAVES_FP,    /* CFA on the stack pointer, the frame pointer saved */
	ROW_UNSUPPORTED, /* a rule the walk cannot follow */
};

/* The first return address in @o's FDEs whose row is of @kind; 0 if none. */
static inline uintptr_t cfi_ra_of_kind(const struct rs_cfi_object *o, enum row_kind kind)
{
	for (uint32_t i = 0; o && i < o->count; i++) {
		int32_t rel;
		uintptr_t pc;
		struct rs_cfi_row r;
		int err;

		memcpy(&rel, o->table + (size_t)i * 8, sizeof(rel));
		pc = o->hdr + (intptr_t)rel;
		err = rs_cfi_row_at(o, pc, &r);
		switch (kind) {
		case ROW_OUTERMOST:
			if (!err && r.ra_rule == RS_CFI_UNDEFINED)
				return pc + 1;
			break;
		case ROW_ENTRY:
			if (!err && r.ra_rule == RS_CFI_OFFSET && !r.cfa_on_fp && r.cfa_off == 8 && r.ra_off == -8 &&
			    r.fp_rule == RS_CFI_SAME)
				return pc + 1;
			break;
		case ROW_SAVES_FP:
			/* later rows of the FDE: the first where the frame pointer is saved */
			for (uintptr_t a = pc; !err && a < pc + 64; a++) {
				if (rs_cfi_row_at(o, a, &r))
					break;
				if (r.ra_rule == RS_CFI_OFFSET && !r.cfa_on_fp && r.fp_rule == RS_CFI_OFFSET)
					return a + 1;
			}
			break;
		case ROW_UNSUPPORTED:
			/*
			 * The first row of an FDE the reader refuses (a CFA given by an
			 * expression, as in the PLT), not a signal trampoline's FDE
			 * (refused as a whole; the walk knows the trampoline by address).
			 */
			if (err || (uintptr_t)(crt_restorer() - pc) < 64)
				break;
			for (uintptr_t a = pc + 1; a < pc + 64; a++)
				if (rs_cfi_row_at(o, a, &r) == -ENOTSUP)
					return a + 1;
			break;
		}
	}
	return 0;
}

#endif
