// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A library built with -fomit-frame-pointer whose function uses the frame
 * pointer register (RS_FP_REG, given by the build: %rbp; on aarch64 x28,
 * tests/lib/unwind/meson.build says why) as an ordinary register across a
 * call: on x86 the callee saves the junk value as if it were its caller's
 * frame pointer.  Its CFI never puts the CFA on the frame pointer (nor
 * saves x29, on aarch64), so the object table marks the object as keeping
 * no frame pointers.
 * Built a second time without unwind tables, its CFI only in
 * .debug_frame, as rs_unwind_debug_frame_call; a third time with its CFI
 * only in .sframe, as rs_unwind_sframe_call.
 */
#include "unwind-lib.h"

#ifndef RS_UNWIND_NOFP_NAME
#define RS_UNWIND_NOFP_NAME rs_unwind_nofp_call
#endif

__attribute__((noinline)) void RS_UNWIND_NOFP_NAME(rs_unwind_cb cb, void *arg, uintptr_t junk)
{
	register uintptr_t r __asm__(RS_FP_REG) = junk;

	__asm__ volatile("" : "+r"(r));
	cb(arg);
	__asm__ volatile("" : "+r"(r) :: "memory");
}
