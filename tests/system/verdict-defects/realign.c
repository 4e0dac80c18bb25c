// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A comparator that realigns its stack, called back by the C library.
 *
 * cmp keeps 64-byte aligned storage and a variable-length array: GCC
 * realigns its frame through a DRAP (its frame record holds a copy of the
 * return address, the real one lies above the alignment padding).
 * cmp_plain is the same without either (-DNO_REALIGN makes cmp one too:
 * the control).  Each is called by lfind, tfind and qsort (two elements:
 * msort_with_tmp, then __qsort_r) from at(), DEPTH recursions of at()
 * below run(), first cmp_plain then cmp at each depth, so that the
 * thread's cache holds what a walk through the same C library call site
 * found just before.  The thread warms its cache with a capture first.
 * All of it on the main thread, then on a second one.
 *
 * Tags: ROUTINE.COMPARATOR.THREAD.DEPTH, e.g. lfind.cmp.main.3.
 */
#include <pthread.h>
#include <search.h>
#include <string.h>

#include "trace.h"

#define DEPTHS 6

static const char *thread_name, *comparator, *routine;
static int depth;

#define TAG_CAPTURE()                                                                                  \
	do {                                                                                           \
		char t_[96];                                                                           \
		if (!routine)                                                                          \
			break;                                                                         \
		snprintf(t_, sizeof(t_), "%s.%s.%s.%d", routine, comparator, thread_name, depth);     \
		CAPTURE(t_, 0);                                                                        \
	} while (0)

static int order(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

__attribute__((noinline)) int cmp(const void *a, const void *b)
{
#ifndef NO_REALIGN
	_Alignas(64) char aligned[64];
	int n = *(const int *)a & 7;
	char vla[n + 1];

	memset(aligned, 1, sizeof(aligned));
	memset(vla, 2, (size_t)n + 1);
	__asm__ volatile("" ::"r"(aligned), "r"(vla) : "memory");
#endif
	TAG_CAPTURE();
	return order(a, b);
}

__attribute__((noinline)) int cmp_plain(const void *a, const void *b)
{
	TAG_CAPTURE();
	return order(a, b);
}

__attribute__((noinline)) int at(int d, int (*compar)(const void *, const void *))
{
	static __thread void *root;
	int key = 1, two[2] = { 2, 1 }, r;
	size_t one = 1;

	if (d > 0) {
		r = at(d - 1, compar);
		__asm__ volatile("" ::: "memory");
		return r;
	}
	if (strcmp(routine, "lfind") == 0)
		return lfind(&key, two + 1, &one, sizeof(int), compar) != NULL;
	if (strcmp(routine, "tfind") == 0) {
		static __thread int node = 1;

		if (!root) {
			const char *saved = routine;

			routine = NULL; /* the first insertion compares nothing, but say so */
			tsearch(&node, &root, order);
			routine = saved;
		}
		return tfind(&key, &root, compar) != NULL;
	}
	qsort(two, 2, sizeof(int), compar);
	return two[0];
}

__attribute__((noinline)) void warm(void)
{
	char t[64];

	snprintf(t, sizeof(t), "warm.none.%s.0", thread_name);
	CAPTURE(t, 0);
}

__attribute__((noinline)) void run(void)
{
	static const char *const routines[] = { "lfind", "tfind", "qsort" };

	warm();
	for (unsigned r = 0; r < sizeof(routines) / sizeof(routines[0]); r++)
		for (depth = 0; depth < DEPTHS; depth++) {
			routine = routines[r];
			comparator = "cmp_plain";
			at(depth, cmp_plain);
			comparator = "cmp";
			at(depth, cmp);
			routine = NULL;
		}
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	relstack_thread_register();
	run();
	return arg;
}

int main(void)
{
	pthread_t t;

	thread_name = "main";
	run();
	thread_name = "thread";
	if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	return 0;
}
