// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The target of bench/ps.py: N threads (argv[1], default 8), each DEPTH
 * frames deep (argv[2], default 20) in a nanosleep loop, until standard
 * input closes.  Prints "ready" once every thread is parked.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int parked;
static int depth = 20;
static volatile int parked_forever = 1;

void descend(int n);

__attribute__((noinline)) void descend(int n)
{
	if (n > 2) {
		descend(n - 1);
	} else {
		struct timespec ts = { 1, 0 };

		atomic_fetch_add(&parked, 1);
		while (parked_forever)
			nanosleep(&ts, NULL);
	}
	__asm__ volatile("" ::: "memory");
}

static void *run(void *arg)
{
	descend(depth);
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	char c;

	if (argc > 2)
		depth = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, run, NULL) != 0)
			return 1;
	}
	while (atomic_load(&parked) < n) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
