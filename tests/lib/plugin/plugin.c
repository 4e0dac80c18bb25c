// SPDX-License-Identifier: LGPL-2.1-or-later
/* A plugin the tests dlopen and dlclose; built under several names. */
#include <stdint.h>

#define PLUGIN_API __attribute__((visibility("default")))

PLUGIN_API int plugin_work(int x);
PLUGIN_API uintptr_t plugin_address(void);

__attribute__((noinline)) int plugin_work(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

uintptr_t plugin_address(void)
{
	return (uintptr_t)&plugin_work;
}

PLUGIN_API void plugin_call(void (*fn)(void));

/* Calls back through a frame of this object. */
__attribute__((noinline)) void plugin_call(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}
