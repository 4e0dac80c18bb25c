/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The --call interposer's view of this CPU's PLT (call.c): the relocation that binds a PLT slot. */
#ifndef RELSTACK_AGENT_CALL_ARCH_H
#define RELSTACK_AGENT_CALL_ARCH_H

#include <elf.h>

/* a relocation's type and symbol, of this CPU's ELF class */
#define RS_ARCH_R_TYPE(info) ELF32_R_TYPE(info)
#define RS_ARCH_R_SYM(info) ELF32_R_SYM(info)
#define RS_ARCH_JUMP_SLOT R_386_JMP_SLOT

#endif
