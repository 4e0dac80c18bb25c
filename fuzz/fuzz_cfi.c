// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: the CFI readers of the capture side.  The input is
 * one object's read-only segment: an .eh_frame_hdr at its start, its
 * .eh_frame anywhere after.  cfi.c compiles it into a table, whose rows
 * are then asked for at addresses the input's last bytes choose, and at
 * the start of each row.  The same bytes are also read as a .debug_frame
 * section (cfi-debug.c) and as an .sframe section (cfi-sframe.c);
 * fpcheck.c reads the same bytes through a made-up program header table
 * (the segment also stands for the object's text, so the signal
 * trampoline search reads it too).  Every read must stay in the input.
 */
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture/cfi.h"
#include "capture/fpcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_cfi_table *t;
	struct rs_cfi_row row;
	struct rs_fp_facts facts;
	struct dl_phdr_info info = { 0 };
	ElfW(Phdr) ph[2];
	unsigned char *seg;
	uintptr_t lo, hi;

	if (size < 8)
		return 0;
	/* an exact-size copy: ASan sees any read past the end */
	seg = malloc(size);
	if (!seg)
		return 0;
	memcpy(seg, data, size);
	lo = (uintptr_t)seg;
	hi = lo + size;
	t = rs_cfi_table_compile(lo, lo, hi, lo, size);
	if (t) {
		uintptr_t prev = 0, start;

		for (size_t i = 0; i < 8; i++)
			rs_cfi_row_at(t, lo + data[size - 1 - i] * (size / 256 + 1), &row);
		for (uint32_t i = 0; i < rs_cfi_table_rows(t) && i < 256; i++) {
			if (rs_cfi_table_row(t, i, &start, &row) == -ERANGE || (i && start <= prev))
				abort(); /* rows must be sorted, each starting after the one before */
			prev = start;
			rs_cfi_row_at(t, start, &row);
			rs_cfi_row_at(t, start + 3, &row);
		}
		rs_cfi_table_free(t);
	}
	for (int k = 0; k < 2; k++) {
		uintptr_t prev = 0, start;

		t = k ? rs_cfi_table_from_sframe(lo, size, lo, 1u << 20)
		      : rs_cfi_table_from_debug_frame(seg, size, 0, 1u << 20);
		if (!t)
			continue;
		for (uint32_t i = 0; i < rs_cfi_table_rows(t) && i < 256; i++) {
			if (rs_cfi_table_row(t, i, &start, &row) == -ERANGE || (i && start <= prev))
				abort();
			prev = start;
			rs_cfi_row_at(t, start + 1, &row);
		}
		rs_cfi_table_free(t);
	}
	memset(ph, 0, sizeof(ph));
	ph[0].p_type = PT_LOAD;
	ph[0].p_filesz = ph[0].p_memsz = size;
	ph[1].p_type = PT_GNU_EH_FRAME;
	info.dlpi_addr = lo;
	info.dlpi_phdr = ph;
	info.dlpi_phnum = 2;
	rs_fp_check(&info, lo, hi, &facts);
	free(seg);
	return 0;
}
