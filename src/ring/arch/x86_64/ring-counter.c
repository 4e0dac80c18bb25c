// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Whether the time stamp counter may stand for CLOCK_MONOTONIC, as far as
 * the CPU can say (ring.h, rs_arch_counter_hz()): its rate is constant and
 * it does not stop in idle states (constant_tsc and nonstop_tsc in
 * /proc/cpuinfo).  x86 CPUs do not publish the rate itself: ring-clock.c
 * measures it.
 */
#include <string.h>

#include "ring/ring.h"

static bool has_word(const char *line, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = strstr(line, w); p; p = strstr(p + 1, w))
		if ((p == line || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
			return true;
	return false;
}

uint64_t rs_arch_counter_hz(void)
{
	char buf[8192]; /* the first CPU's block of /proc/cpuinfo is a few KiB */
	char *flags, *eol;

	if (!rs_read_small("/proc/cpuinfo", buf, sizeof(buf)))
		return RS_COUNTER_UNUSABLE;
	flags = strstr(buf, "\nflags");
	if (!flags)
		return RS_COUNTER_UNUSABLE;
	eol = strchr(flags + 1, '\n');
	if (eol)
		*eol = 0;
	return has_word(flags, "constant_tsc") && has_word(flags, "nonstop_tsc") ? RS_COUNTER_MEASURE
										 : RS_COUNTER_UNUSABLE;
}
