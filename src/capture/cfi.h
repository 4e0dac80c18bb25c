/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The call-frame information of the objects that can never be unloaded:
 * the main executable, the C runtime (the object holding
 * __libc_start_main) and the dynamic linker.  The unwinder reads it on
 * the capture path, one row at a time, for two things only:
 *
 * - to walk through frames of the C runtime and the dynamic linker, which
 *   Debian builds without frame pointers (a callback from qsort, a
 *   thread's start routine called by start_thread);
 * - to prove the end of a stack: the ABI marks a thread's outermost frame
 *   by a return-address rule of DW_CFA_undefined (glibc's _start, and the
 *   child side of clone and clone3).
 *
 * Reading an object's memory on the capture path is safe only while the
 * object stays mapped, which these three do for the life of the process;
 * no other object's CFI is read here.  Reads stay inside the PT_LOAD
 * segment that holds .eh_frame_hdr (where the linker also puts .eh_frame).
 */
#ifndef RELSTACK_CFI_H
#define RELSTACK_CFI_H

#include <stdbool.h>
#include <stdint.h>

#include "relstack-local.h"

#define RS_CFI_OBJECTS 3

/* One object whose CFI may be read, found at library load. */
struct rs_cfi_object {
	uintptr_t start, end;       /* the object's mapped span */
	uintptr_t lo, hi;           /* the segment every read stays in */
	uintptr_t hdr;              /* .eh_frame_hdr: the base of its datarel pointers */
	const unsigned char *table; /* its search table: count pairs of sdata4 (pc, FDE) */
	uint32_t count;
};

/* How to find a register of the caller. */
enum rs_cfi_rule {
	RS_CFI_SAME = 0,      /* unchanged */
	RS_CFI_OFFSET = 1,    /* saved at CFA + offset */
	RS_CFI_UNDEFINED = 2, /* not recoverable; for the return address: the outermost frame */
};

/*
 * A row of the CFI table: the CFA is cfa_reg (the stack or the frame
 * pointer register) + cfa_off; the return address and the caller's frame
 * pointer follow their rules.
 */
struct rs_cfi_row {
	int64_t cfa_off, ra_off, fp_off;
	bool cfa_on_fp;
	uint8_t ra_rule, fp_rule; /* enum rs_cfi_rule */
};

RS_HIDDEN extern struct rs_cfi_object rs_cfi_objects[RS_CFI_OBJECTS];
RS_HIDDEN extern unsigned rs_cfi_nobjects;

/*
 * Set @o's search table from the .eh_frame_hdr at @hdr, every read (the
 * table's and the FDEs') to stay in [lo, hi).  False, with no table, for
 * a header the walk cannot use.  (The fuzz target gives it any bytes.)
 */
RS_HIDDEN bool rs_cfi_object_table(struct rs_cfi_object *o, uintptr_t hdr, uintptr_t lo, uintptr_t hi);

/* Find the three objects; at library load, before any capture. */
RS_HIDDEN void rs_cfi_init(void);

/* The object holding @pc whose CFI may be read, or NULL. */
static inline const struct rs_cfi_object *rs_cfi_object_of(uintptr_t pc)
{
	for (unsigned i = 0; i < rs_cfi_nobjects && i < RS_CFI_OBJECTS; i++)
		if (pc - rs_cfi_objects[i].start < rs_cfi_objects[i].end - rs_cfi_objects[i].start)
			return &rs_cfi_objects[i];
	return NULL;
}

/*
 * The row of @o's CFI that holds at @pc (for a return address, pass the
 * address minus one: the call).  Returns 0, -ENOENT when no FDE covers
 * @pc, -ENOTSUP for a row the walk cannot use (a CFA or a rule given by
 * a DWARF expression, a CFA on another register, a signal frame's FDE,
 * malformed CFI).  Async-signal-safe.
 */
RS_HIDDEN int rs_cfi_row_at(const struct rs_cfi_object *o, uintptr_t pc, struct rs_cfi_row *row);

#endif
