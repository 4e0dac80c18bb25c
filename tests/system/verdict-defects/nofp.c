// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A file of a frame-pointer program built without frame pointers (plain
 * -O2), or with them for the control: it calls back without touching
 * %rbp, so the frame record above it is its caller's caller's.
 */
typedef void (*fn)(int);

void nofp_apply(fn f, int x);

__attribute__((noinline)) void nofp_apply(fn f, int x)
{
	f(x + 1);
	__asm__ volatile("" ::: "memory");
}
