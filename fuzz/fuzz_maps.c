// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: /proc/PID/maps text as `relstack ps` parses it
 * (src/live/maps.c).  Every mapping kept must be a non-empty range, and
 * parsing the same text twice must give the same digest.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "live/live.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *a = malloc(size + 1), *b = malloc(size + 1);
	struct rs_live_map *ma = NULL, *mb = NULL;
	unsigned na = 0, nb = 0;
	uint64_t da, db;

	if (!a || !b)
		goto out;
	memcpy(a, data, size);
	a[size] = '\0';
	memcpy(b, a, size + 1);
	if (rs_live_maps_parse(a, &ma, &na, &da) || rs_live_maps_parse(b, &mb, &nb, &db))
		goto out;
	if (na != nb || da != db)
		abort();
	for (unsigned i = 0; i < na; i++)
		if (ma[i].start >= ma[i].end)
			abort();
out:
	free(ma);
	free(mb);
	free(a);
	free(b);
	return 0;
}
