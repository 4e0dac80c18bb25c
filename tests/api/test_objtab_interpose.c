// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The shared library's dlclose() interposes the C library's for a
 * program linked with it: a library the object table lists (and pins)
 * is still unloaded by dlclose(), and the table knows before dlclose()
 * returns.  A capture through a listed library is reliable.  Public API
 * only.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <relstack/relstack.h>

static uint64_t words[64];
static struct relstack_verdict verdict;

__attribute__((noinline)) static void capture_here(void)
{
	relstack_capture(words, 64, 0, 0, &verdict);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *call)
{
	void (*fn)(void (*)(void));

	relstack_thread_register();
	memcpy(&fn, &call, sizeof(fn));
	fn(capture_here);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

static void dlclose_unloads_a_listed_library_and_the_table_knows_at_once(void **state)
{
	char path[PATH_MAX];
	struct relstack_format f;
	struct relstack_entry e;
	struct relstack_object o;
	pthread_t t;
	void *h, *call;

	snprintf(path, sizeof(path), "%s/librs_plugin_b.so", PLUGIN_DIR);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	call = dlsym(h, "plugin_call");
	assert_non_null(call);
	assert_true(relstack_objtab__refresh() > 0);

	/* thread entry <- thread_main <- plugin_call <- capture_here: every frame trusted */
	assert_int_equal(pthread_create(&t, NULL, thread_main, call), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(verdict.reasons, 0);
	relstack_format_native(&f);
	relstack_word_decode(&f, words[1], &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(relstack_objtab_get(e.slot, &o), 0);
	assert_non_null(strstr(o.path, "librs_plugin_b.so"));

	assert_int_equal(dlclose(h), 0);
	assert_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(relstack_objtab_get(e.slot, &o), 0);
	assert_int_equal(o.state, RELSTACK_OBJECT_UNLOADED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dlclose_unloads_a_listed_library_and_the_table_knows_at_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
