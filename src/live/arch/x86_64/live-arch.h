/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * x86-64 side of live snapshots: where a stopped thread's registers
 * (PTRACE_GETREGSET, NT_PRSTATUS) keep the three the walk starts from.
 * Another architecture provides the same names in
 * src/live/arch/<cpu>/live-arch.h.
 */
#ifndef RELSTACK_LIVE_ARCH_H
#define RELSTACK_LIVE_ARCH_H

#include <stdint.h>
#include <sys/user.h>

typedef struct user_regs_struct rs_live_arch_regs;

/* Bytes below the stack pointer a function may use without moving it (the System V red zone). */
#define RS_LIVE_ARCH_RED_ZONE 128u

static inline void rs_live_arch_start(const rs_live_arch_regs *r, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
	*pc = (uintptr_t)r->rip;
	*sp = (uintptr_t)r->rsp;
	*fp = (uintptr_t)r->rbp;
}

#endif
