// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * main -> outer_fp -> nofp_apply (nofp.c) -> cb, built with frame
 * pointers.  "capture": cb captures twice on the main thread (the second
 * with the thread's cache warm) and twice on a second thread, tags
 * cb.main and cb.thread.  "spin": cb prints "ready" and spins until
 * killed, for relstack ps.
 */
#include <pthread.h>
#include <string.h>

#include "trace.h"

void nofp_apply(void (*f)(int), int x);

static int spin;
static const char *tag;
static volatile int stop;

__attribute__((noinline)) void cb(int x)
{
	if (spin) {
		puts("ready");
		fflush(stdout);
		while (!stop)
			__asm__ volatile("pause" ::: "memory");
		return;
	}
	CAPTURE(tag, 0);
	(void)x;
}

__attribute__((noinline)) void outer_fp(int x)
{
	nofp_apply(cb, x);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	relstack_thread_register();
	outer_fp(1);
	outer_fp(2);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;

	spin = argc > 1 && strcmp(argv[1], "spin") == 0;
	tag = "cb.main";
	outer_fp(1);
	outer_fp(2);
	if (spin)
		return 0;
	tag = "cb.thread";
	if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	return 0;
}
