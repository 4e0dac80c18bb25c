// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The --call interposer's fast path: every call of an interposed function
 * comes here first, from the stub (arch/<cpu>/call-stub.S), which has
 * saved the integer argument registers only.  This file and the filter
 * evaluation are built with -mgeneral-regs-only, so they cannot touch the
 * vector registers that carry floating-point arguments; the stub saves
 * those only for a call that matched, before rs_call_hit() records it.
 * A call that does not match is counted in the thread's own counters.
 */
#include "agent/agent-local.h"

__thread int rs_call_busy __attribute__((tls_model("initial-exec")));
__thread struct rs_call_counts rs_call_tls __attribute__((tls_model("initial-exec")));

void *rs_call_filter(unsigned k, const uint64_t *regs);

/* The function's address for a call that is only counted, NULL for one to record. */
void *rs_call_filter(unsigned k, const uint64_t *regs)
{
	struct rs_call_hook *h = &rs_call_hooks[k];

	if (rs_call_busy)
		return h->real;
	if (rs_call_match(&h->f, regs))
		return NULL;
	/* the thread's own count: no locked instruction (call.c sums them) */
	if (rs_call_tls.listed)
		__atomic_store_n(&rs_call_tls.unmatched[k], rs_call_tls.unmatched[k] + 1, __ATOMIC_RELAXED);
	else
		atomic_fetch_add_explicit(&h->unmatched, 1, memory_order_relaxed);
	return h->real;
}
