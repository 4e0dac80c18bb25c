/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The alternate signal stack a ucontext names, for the architectures'
 * rs_arch_context_read() (src/capture/arch/<cpu>/unwind-arch.h): the
 * kernel's setup_rt_frame() saves the thread's sigaltstack settings in
 * uc_stack, the same field on every Linux architecture.
 */
#ifndef RELSTACK_UCONTEXT_STACK_H
#define RELSTACK_UCONTEXT_STACK_H

#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

/* [*lo, *hi): the alternate stack @u names; 0, 0 if none (or a range that wraps). */
static inline void rs_ucontext_alt_stack(const ucontext_t *u, uintptr_t *lo, uintptr_t *hi)
{
	if (!(u->uc_stack.ss_flags & SS_DISABLE) && u->uc_stack.ss_size) {
		*lo = (uintptr_t)u->uc_stack.ss_sp;
		*hi = *lo + u->uc_stack.ss_size;
		if (*hi < *lo)
			*lo = *hi = 0;
	} else {
		*lo = *hi = 0;
	}
}

#endif
