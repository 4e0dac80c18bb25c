// SPDX-License-Identifier: LGPL-2.1-or-later
/* A linked library that keeps frame pointers (built with -fno-omit-frame-pointer). */
#include "unwind-lib.h"

__attribute__((noinline)) void rs_unwind_fp_inner(rs_unwind_cb cb, void *arg)
{
	cb(arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void rs_unwind_fp_call(rs_unwind_cb cb, void *arg)
{
	rs_unwind_fp_inner(cb, arg);
	__asm__ volatile("" ::: "memory");
}
