// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A library the object-table tests unload and replace by another at the
 * same address.  Built as librs_swap_c and librs_swap_d, with and without
 * a build-id: the same code under names of the same length, so the two of
 * a pair have the same text size and differ only by name and file.
 */
#define PLUGIN_API __attribute__((visibility("default")))
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(x) CAT(SWAP_PREFIX, x)

PLUGIN_API void NAME(_call)(void (*fn)(void));
PLUGIN_API int NAME(_fault)(volatile int *p);
PLUGIN_API void NAME(_at_unload)(void (*fn)(void));

static void (*unload_fn)(void);

/* Calls back through a frame of this object. */
__attribute__((noinline)) void NAME(_call)(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
}

/* Faults inside this object when @p is NULL. */
__attribute__((noinline)) int NAME(_fault)(volatile int *p)
{
	int v = *p;

	__asm__ volatile("" ::: "memory");
	return v + 1;
}

/* @fn is called through a frame of this object when it is unloaded. */
void NAME(_at_unload)(void (*fn)(void))
{
	unload_fn = fn;
}

__attribute__((destructor)) static void unloading(void)
{
	if (unload_fn)
		NAME(_call)(unload_fn);
}
