// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: nm(1) / System.map text files.  The input is parsed
 * into a symbol index, sealed, and looked up at addresses taken from the
 * input itself and from every symbol boundary, so hostile text reaches
 * the sort, the alias collapse, the containment links and the search.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode/symindex.h"
#include "decode/symsrc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_symindex ix;
	struct rs_nminfo info;
	struct rs_symhit hit;
	uint64_t limit = 0;

	if (size >= 8)
		memcpy(&limit, data, 8);
	rs_symindex_init(&ix);
	if (rs_nmfile_parse((const char *)data, size, &ix, &info) >= 0) {
		rs_symindex_seal(&ix, info.etext ? info.etext : limit);
		for (size_t i = 0; i < ix.n; i++) {
			uint64_t a = ix.addr[i];

			if (rs_symindex_lookup(&ix, a, &hit) == 0 && strlen(hit.name) > (1u << 30))
				__builtin_trap();
			rs_symindex_lookup(&ix, a - 1, &hit);
			rs_symindex_lookup(&ix, a + ix.ent[i].size, &hit);
		}
		rs_symindex_lookup(&ix, limit, &hit);
	}
	rs_symindex_fini(&ix);
	return 0;
}
