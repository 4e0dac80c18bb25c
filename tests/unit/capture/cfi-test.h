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
#include <link.h>
#include <errno.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/objtab.h"
#include "unwind-arch.h"

/*
 * A return address b in the object holding @addr such that every return
 * address in [b, b + @len) is proven by the object's record map (cfi.h:
 * the row of the call a frame-record row), so that the walks follow each
 * by its frame record; 0 if the object has no such run.
 */
static inline uintptr_t record_ra_run(uintptr_t addr, unsigned len)
{
	struct rs_lookup l;
	const uint64_t *map;
	uintptr_t origin;
	uint64_t bits;

	if (!rs_objtab_lookup(addr, &l) || !l.cfi || !(map = rs_cfi_table_record_map(l.cfi, &origin, &bits)))
		return 0;
	for (uint64_t g = 0, n = (len + RS_CFI_MAP_GRAIN - 1) / RS_CFI_MAP_GRAIN; g + n <= bits; g++) {
		uintptr_t b = origin + g * RS_CFI_MAP_GRAIN + 1;
		bool all = true;

		for (uint64_t k = g; k < g + n; k++)
			all &= map[k / 64] >> (k % 64) & 1;
		if (all && b >= l.start && b + len <= l.end)
			return b;
	}
	return 0;
}

/* The signal-return trampoline the object table publishes with the C runtime; 0 if none. */
static inline uintptr_t crt_restorer(void)
{
	struct rs_lookup l;

	if (!rs_objtab_lookup((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"), &l))
		return 0;
	return l.restorer;
}

/* Its rt_sigreturn trampoline (kind 0), where an SA_SIGINFO handler returns; 0 if none. */
static inline uintptr_t crt_rt_restorer(void)
{
	uintptr_t r = crt_restorer(), base = r & ~(uintptr_t)1; /* bit 0 may name a layout (unwind-arch.h) */

	for (uintptr_t a = base; r && a < base + 32; a++)
		if (rs_arch_restorer_kind(a, r) == 0)
			return a;
	return 0;
}

struct cfi_of_find {
	uintptr_t addr;
	struct rs_cfi_table *t;
};

static inline int cfi_of_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct cfi_of_find *f = data;

	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && f->addr - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz) {
			f->t = rs_cfi_table_build(info, NULL, NULL, 0);
			return 1;
		}
	}
	return 0;
}

/*
 * The CFI of the object holding @addr, compiled (as the object table
 * compiles a dlopen'd object's): the object table gives the objects a
 * program starts with in-place tables, which have no rows to list.  The
 * rows are the same (test_cfi_readelf.py, and every crafted stack below
 * that the walk follows through the in-place table).  One table per
 * object, kept.
 */
static inline const struct rs_cfi_table *cfi_of_addr(uintptr_t addr)
{
	static struct {
		uintptr_t lo, hi;
		struct rs_cfi_table *t;
	} made[8];
	struct cfi_of_find f = { addr, NULL };
	struct rs_lookup l;

	for (unsigned i = 0; i < 8; i++)
		if (made[i].t && addr - made[i].lo < made[i].hi - made[i].lo)
			return made[i].t;
	if (!rs_objtab_lookup(addr, &l))
		return NULL;
	dl_iterate_phdr(cfi_of_one, &f);
	for (unsigned i = 0; i < 8 && f.t; i++) {
		if (!made[i].t) {
			made[i].lo = l.start;
			made[i].hi = l.end;
			made[i].t = f.t;
			break;
		}
	}
	return f.t;
}

/* The C runtime's. */
static inline const struct rs_cfi_table *crt_cfi(void)
{
	return cfi_of_addr((uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"));
}

enum row_kind {
	ROW_OUTERMOST,   /* the return address rule is undefined */
	ROW_ENTRY,       /* CFA = sp + a word, return address at CFA - a word, frame pointer unchanged */
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
			if (!err && r.ra_rule == RS_CFI_OFFSET && !r.cfa_on_fp && r.cfa_off == (int64_t)sizeof(uintptr_t) &&
			    r.ra_off == -(int64_t)sizeof(uintptr_t) &&
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
