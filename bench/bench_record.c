// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program built without relstack for bench/record.py: N calls of labs(3)
 * through the PLT, timed in the thread's CPU time, printed as ns per call.  Under the agent with
 * --call 'labs if arg0 == -1' every call is a non-matching one; with
 * --call labs every call is recorded.
 *
 * Usage: bench_record N
 *        bench_record now     prints CLOCK_MONOTONIC at main's first
 *                             instruction, in ns (the start-up's end)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, acc = 0;
	struct timespec a, b;

	if (argc > 1 && !strcmp(argv[1], "now")) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		printf("%lld\n", (long long)a.tv_sec * 1000000000LL + a.tv_nsec);
		return 0;
	}
	/* the thread's CPU time: on a shared machine, time spent descheduled is not the call's */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		acc += labs(i);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	printf("%.2f %ld\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n, acc);
	return 0;
}
