/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Return addresses of known CFI rows, for crafted stacks: found in the
 * C runtime's compiled CFI table (cfi.h), so that the tests follow
 * whatever C library the machine has.  A return address ra is looked up
 * at ra - 1, so each is the start of a row plus one: the row there is
 * the one found.
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

/* The compiled CFI table of the object holding @addr, as the object table publishes it. */
static inline const struct rs_cfi_table *cfi_of_addr(uintptr_t addr)
{
	struct rs_lookup l;

	if (!rs_objtab_lookup(addr, &l))
		return NULL;
	return l.cfi;
}

/* The C runtime's. */
static inline const struct rs_cfi_table *crt_cfi(void)
{
	return cfi_of_addr((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"));
}

enum row_kind {
	ROW_OUTERMOST,   /* the return address rule is undefined */
	ROW_ENTRY,       /* CFA = sp + 8, return address at CFA - 8, frame pointer unchanged */
	ROW_SAVES_FP,    /* CFA on the stack pointer, the frame pointer saved */
	ROW_UNSUPPORTED, /* a rule the walk cannot follow */
	ROW_GAP,         /* code no FDE covers (padding between functions) */
};

/* The first return address into a row of @o of @kind; 0 if none. */
static inline uintptr_t cfi_ra_of_kind(const struct rs_cfi_table *o, enum row_kind kind)
{
	uint32_t n = o ? rs_cfi_table_rows(o) : 0;

	for (uint32_t i = 0; i < n; i++) {
		struct rs_cfi_row r;
		uintptr_t pc;
		int err = rs_cfi_table_row(o, i, &pc, &r);

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
			if (!err && r.ra_rule == RS_CFI_OFFSET && !r.cfa_on_fp && r.fp_rule == RS_CFI_OFFSET)
				return pc + 1;
			break;
		case ROW_GAP:
			if (err == -ENOENT)
				return pc + 1;
			break;
		case ROW_UNSUPPORTED:
			/*
			 * A row the table marks unsupported (a CFA given by an
			 * expression, as in the PLT), not a signal trampoline's
			 * (the walk knows the trampoline by its address).
			 */
			if (err == -ENOTSUP && (uintptr_t)(crt_restorer() - pc) >= 64)
				return pc + 1;
			break;
		}
	}
	return 0;
}

#endif
