/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Building a compiled CFI table (cfi.h), for the readers of each source
 * of CFI: cfi.c (.eh_frame, through .eh_frame_hdr, in memory) and
 * cfi-debug.c (.debug_frame, from the object's file or its debug file).
 * A source hands the builder each FDE's rules in address order; the
 * builder turns them into rows and finally into a table.  Scan time only:
 * it allocates.
 */
#ifndef RELSTACK_CFI_LOCAL_H
#define RELSTACK_CFI_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/cfi-parse.h"
#include "capture/cfi.h"

/* A compiled row, three 16-bit words (cfi.c, "rows"). */
struct packed {
	uint16_t w[3];
};

struct rs_cfi_builder {
	uintptr_t bias;   /* rows are keyed by address - bias */
	uint64_t span;    /* the object's extent from bias: rows past it name no code of it, and are dropped */
	uint32_t *ip;     /* row i starts at ip[i] */
	struct packed *row;
	uint32_t n, cap;
	bool nomem;
	/* FDEs overlapped: the rows kept are the first FDE's, a lookup in place may read another's (no record map) */
	bool overlap;
	struct rs_cfi_stats stats;
};

/*
 * The rows of an FDE covering [begin, begin + range), its CIE @cie and
 * its own instructions [insns, end), then a gap where it ends.  Rows only
 * go forwards: hand FDEs over in address order.
 */
RS_HIDDEN void rs_cfi_build_rows(struct rs_cfi_builder *b, const struct cie *cie, uintptr_t begin, uintptr_t range,
				 const unsigned char *insns, const unsigned char *end);

/*
 * A row that holds over [loc, end) (NULL: unsupported there), given as
 * the walk uses it (a source whose rows need no instructions: .sframe),
 * then a gap from @end, which a next row starting there replaces.
 */
RS_HIDDEN void rs_cfi_build_row(struct rs_cfi_builder *b, uintptr_t loc, uintptr_t end, const struct rs_cfi_row *row);

/* An unsupported row from @loc on (an FDE that cannot be read, listed there). */
RS_HIDDEN void rs_cfi_build_unsupported(struct rs_cfi_builder *b, uintptr_t loc);

/*
 * The table of the rows built, looked up by pc - @bias; frees the
 * builder's arrays.  NULL with errno ENOMEM.
 */
RS_HIDDEN struct rs_cfi_table *rs_cfi_build_finish(struct rs_cfi_builder *b, uintptr_t bias);

#endif
