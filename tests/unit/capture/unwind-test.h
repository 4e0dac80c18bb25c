/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the unwinder's tests on real stacks share: running a thread, and
 * the dlopen'd helper library's entry point.  Include after cmocka.h.
 */
#ifndef RS_TEST_UNWIND_TEST_H
#define RS_TEST_UNWIND_TEST_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "unwind-lib.h"

#ifndef UNWIND_DL_PATH
#error UNWIND_DL_PATH must name librs_unwind_dl.so
#endif

typedef void (*rs_unwind_dl_call_fn)(rs_unwind_cb cb, void *arg);

/* Run @fn(@arg) on a new thread and wait: @fn returns @arg when it did its work. */
static inline void run_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	void *ret;

	assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, arg);
}

/* rs_unwind_dl_call from librs_unwind_dl.so, loaded now; NULL (said on stderr) if it cannot be. */
static inline rs_unwind_dl_call_fn load_dl_call(void)
{
	void *h = dlopen(UNWIND_DL_PATH, RTLD_NOW | RTLD_LOCAL);
	rs_unwind_dl_call_fn fn = NULL;
	void *sym;

	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", UNWIND_DL_PATH, dlerror());
		return NULL;
	}
	sym = dlsym(h, "rs_unwind_dl_call");
	if (!sym)
		fprintf(stderr, "%s: no rs_unwind_dl_call\n", UNWIND_DL_PATH);
	else
		memcpy(&fn, &sym, sizeof(fn)); /* POSIX: dlsym's pointer names a function */
	return fn;
}

#endif
