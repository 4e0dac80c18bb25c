/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every CPU's ucontext holds alike, for the rs_arch_context_read()
 * of each src/capture/arch/<cpu>/unwind-arch.h.
 */
#ifndef RELSTACK_UCONTEXT_LOCAL_H
#define RELSTACK_UCONTEXT_LOCAL_H

#include <signal.h>
#include <stdint.h>

/*
 * The alternate signal stack a ucontext reports, as each CPU's
 * rs_arch_context_read() takes it: setup_rt_frame() saves the thread's
 * sigaltstack settings in uc_stack.  0, 0 if none (or a range that wraps).
 */
static inline void rs_context_alt_stack(const stack_t *ss, uintptr_t *lo, uintptr_t *hi)
{
	if (!(ss->ss_flags & SS_DISABLE) && ss->ss_size) {
		*lo = (uintptr_t)ss->ss_sp;
		*hi = *lo + ss->ss_size;
		if (*hi >= *lo)
			return;
	}
	*lo = *hi = 0;
}

#endif
