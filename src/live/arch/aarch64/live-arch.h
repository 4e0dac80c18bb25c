/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * aarch64 side of live snapshots: where a stopped thread's registers
 * (PTRACE_GETREGSET, NT_PRSTATUS: struct user_pt_regs) keep the three the
 * walk starts from.  The same names as src/live/arch/x86_64/live-arch.h.
 */
#ifndef RELSTACK_LIVE_ARCH_H
#define RELSTACK_LIVE_ARCH_H

#include <stdint.h>
#include <sys/user.h>

typedef struct user_regs_struct rs_live_arch_regs;

/* The AAPCS64 has no red zone: nothing below the stack pointer is live. */
#define RS_LIVE_ARCH_RED_ZONE 0u

static inline void rs_live_arch_start(const rs_live_arch_regs *r, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
	*pc = (uintptr_t)r->pc;
	*sp = (uintptr_t)r->sp;
	*fp = (uintptr_t)r->regs[29];
}

#endif
