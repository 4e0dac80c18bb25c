// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Whether the generic timer's virtual count may stand for CLOCK_MONOTONIC,
 * as far as the CPU can say (ring.h, rs_arch_counter_hz()).  The
 * architecture makes the count constant-rate and running in every power
 * state, and publishes the rate in cntfrq_el0, which firmware sets for the
 * kernel: it is taken as is, nothing is measured.  A zero there (firmware
 * that left it unset; the kernel then takes the rate from the device tree)
 * leaves the rate to be measured.
 */
#include "ring/ring.h"

uint64_t rs_arch_counter_hz(void)
{
	uint64_t hz = rs_arch_ticks_hz();

	return hz > RS_COUNTER_MEASURE ? hz : RS_COUNTER_MEASURE;
}
