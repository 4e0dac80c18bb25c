/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Helper objects for the unwinder's tests: call chains through objects of
 * known frame-pointer discipline.  Every function calls the next one and
 * then runs an empty asm statement, so no call becomes a tail call and
 * every frame stays on the stack.
 */
#ifndef RS_TEST_UNWIND_LIB_H
#define RS_TEST_UNWIND_LIB_H

#include <stdint.h>

typedef void (*rs_unwind_cb)(void *arg);

/* librs_unwind_fp.so (linked), built with -fno-omit-frame-pointer: call @cb two frames down. */
void rs_unwind_fp_call(rs_unwind_cb cb, void *arg);
void rs_unwind_fp_inner(rs_unwind_cb cb, void *arg);

/* librs_unwind_dl.so (dlopen'd), built with -fno-omit-frame-pointer. */
void rs_unwind_dl_call(rs_unwind_cb cb, void *arg);
void rs_unwind_dl_inner(rs_unwind_cb cb, void *arg);

/*
 * librs_unwind_nofp.so, built with -fomit-frame-pointer: call @cb with
 * %rbp holding @junk, not a frame pointer.
 */
void rs_unwind_nofp_call(rs_unwind_cb cb, void *arg, uintptr_t junk);

/* librs_unwind_debug_frame.so: the same, built without unwind tables (its CFI in .debug_frame only). */
void rs_unwind_debug_frame_call(rs_unwind_cb cb, void *arg, uintptr_t junk);

/* librs_unwind_sframe.so (dlopen'd): the same, its CFI in .sframe only. */
void rs_unwind_sframe_call(rs_unwind_cb cb, void *arg, uintptr_t junk);

#endif
