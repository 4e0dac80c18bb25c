// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * main -> caller -> asm_call (asm_call.S: no frame record, no CFI) -> cb,
 * and main -> caller_fp -> asm_call_fp (a frame record and its CFI) -> cb,
 * built with frame pointers; cb captures, plainly and with the stack
 * checker.  Tags: asm_call.plain, asm_call.check, asm_call_fp.plain,
 * asm_call_fp.check.
 */
#include "trace.h"

void asm_call(void (*f)(void));
void asm_call_fp(void (*f)(void));

static const char *tag;
static unsigned flags;

__attribute__((noinline)) void cb(void)
{
	CAPTURE(tag, flags);
}

__attribute__((noinline)) void caller(void)
{
	asm_call(cb);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void caller_fp(void)
{
	asm_call_fp(cb);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	for (int check = 0; check < 2; check++) {
		flags = check ? RELSTACK_CAPTURE_CHECK : 0;
		tag = check ? "asm_call.check" : "asm_call.plain";
		caller();
		caller();
		tag = check ? "asm_call_fp.check" : "asm_call_fp.plain";
		caller_fp();
		caller_fp();
	}
	return 0;
}
