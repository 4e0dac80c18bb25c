// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librelstack loaded with dlopen(RTLD_LOCAL): its dlclose() interposes
 * nothing, so the table pins nothing, and a frame in a library that can
 * be unloaded is never trusted: its word names nothing and the verdict
 * says "objects-changing".  Frames in objects the loader never unloads
 * stay trusted.  Public API only, through dlsym().
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <relstack/relstack.h>

static int (*capture)(uint64_t *, size_t, unsigned, unsigned, struct relstack_verdict *);
static uint64_t words[64];
static struct relstack_verdict verdict;
static int nwords;

__attribute__((noinline)) static void capture_here(void)
{
	nwords = capture(words, 64, 0, RELSTACK_CAPTURE_ABSOLUTE, &verdict);
	__asm__ volatile("" ::: "memory");
}

static void *get(void *h, const char *name)
{
	void *p = dlsym(h, name);

	assert_non_null(p);
	return p;
}

static void a_library_dlopened_locally_pins_nothing_and_trusts_no_unloadable_frame(void **state)
{
	char path[PATH_MAX];
	int (*refresh)(void);
	void (*call)(void (*)(void));
	void *lib, *h, *p;

	lib = dlopen(LIBRELSTACK_PATH, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(lib);
	p = get(lib, "relstack_capture");
	memcpy(&capture, &p, sizeof(capture));
	p = get(lib, "relstack_objtab__refresh");
	memcpy(&refresh, &p, sizeof(refresh));
	/* the program's dlclose is still the C library's */
	assert_true(dlsym(RTLD_DEFAULT, "dlclose") != get(lib, "dlclose"));

	snprintf(path, sizeof(path), "%s/librs_plugin_c.so", PLUGIN_DIR);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	assert_true(refresh() > 0);
	p = get(h, "plugin_call");
	memcpy(&call, &p, sizeof(call));

	capture_here();
	assert_false(verdict.reasons & RELSTACK_UNRELIABLE_OBJECTS_CHANGING);
	call(capture_here);
	assert_true(verdict.reasons & RELSTACK_UNRELIABLE_OBJECTS_CHANGING);

	/* not pinned: the C library's dlclose() unloads it at once */
	assert_int_equal(dlclose(h), 0);
	assert_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_library_dlopened_locally_pins_nothing_and_trusts_no_unloadable_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
