/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * i386 side of live snapshots: where a stopped thread's registers
 * (PTRACE_GETREGSET, NT_PRSTATUS) keep the three the walk starts from.
 */
#ifndef RELSTACK_LIVE_ARCH_H
#define RELSTACK_LIVE_ARCH_H

#include <stdint.h>
#include <sys/user.h>

typedef struct user_regs_struct rs_live_arch_regs;

/* The i386 System V ABI has no red zone: nothing below the stack pointer is live. */
#define RS_LIVE_ARCH_RED_ZONE 0u

static inline void rs_live_arch_start(const rs_live_arch_regs *r, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
	*pc = (uintptr_t)r->eip;
	*sp = (uintptr_t)r->esp;
	*fp = (uintptr_t)r->ebp;
}

#endif
