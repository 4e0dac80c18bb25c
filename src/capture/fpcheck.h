/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an object's call-frame information tells the object table when it
 * first sees the object (never on the capture path): its signal-return
 * trampoline, whether it can have frame-record rows, and whether a record
 * map is worth its cost.
 */
#ifndef RELSTACK_FPCHECK_H
#define RELSTACK_FPCHECK_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

#include "relstack-local.h"

/* What the check learned of one object (fpcheck.c). */
struct rs_fp_facts {
	uintptr_t restorer; /* its signal-return trampoline (checked code bytes), or 0 */
	/*
	 * false only when no FDE defines its CFA on the frame pointer: the
	 * object has no frame-record row (RELSTACK_OBJECT_NO_FP).  A fact.
	 */
	bool records;
	/* a record map is worth building at load time: a cost decision, proving nothing */
	bool map_worth;
};

/*
 * Read @info's CFI (the object as dl_iterate_phdr reports it;
 * [text_start, text_end) its executable span in this process) and say what
 * it shows, in @out.  Writes nothing else: the object table publishes the
 * facts with the object.
 */
RS_HIDDEN void rs_fp_check(const struct dl_phdr_info *info, uintptr_t text_start, uintptr_t text_end,
			   struct rs_fp_facts *out);

#endif
