// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: ELF symbol tables and DWARF.  The input is opened as
 * an ELF image in memory; its .symtab and .dynsym are loaded into a
 * symbol index and looked up at every symbol, and its DWARF (if any) is
 * asked for lines and inlined frames at the same addresses.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>

#include "decode/symindex.h"
#include "decode/symsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned types[2] = { SHT_SYMTAB, SHT_DYNSYM };
	struct rs_dwinline in[8];
	struct rs_dwloc loc;
	char *copy;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		struct rs_symdwarf *dw = rs_symelf_has_dwarf(elf) ? rs_symdwarf_new(elf) : NULL;

		for (int t = 0; t < 2; t++) {
			struct rs_symindex ix;
			struct rs_symhit hit;

			rs_symindex_init(&ix);
			if (rs_symelf_load(elf, types[t], &ix) >= 0) {
				rs_symindex_seal(&ix, 0);
				for (size_t i = 0; i < ix.n && i < 256; i++) {
					rs_symindex_lookup(&ix, ix.addr[i] + 1, &hit);
					if (dw) {
						rs_symdwarf_line(dw, ix.addr[i] + 1, &loc);
						rs_symdwarf_inlines(dw, ix.addr[i] + 1, in, 8);
					}
				}
			}
			rs_symindex_fini(&ix);
		}
		rs_symdwarf_free(dw);
	}
	if (elf)
		elf_end(elf);
	free(copy);
	return 0;
}
