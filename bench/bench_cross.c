// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The same work on every architecture, for bench/cross.sh: captures at a
 * fixed depth (counted by callgrind, so emulated or native runs compare),
 * and a buffer file of such stacks for decoding elsewhere.
 *
 *   bench_cross capture DEPTH N   N captures, DEPTH frames below main
 *   bench_cross record FILE N     N records of the stack 32 frames below main
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relstack/relstack.h"

#define MAXW 256

static uint64_t words[MAXW];
static struct relstack_recorder *rec;
static unsigned long count;

__attribute__((noinline)) static void leaf(int mode)
{
	struct relstack_verdict v;
	int n;

	for (unsigned long i = 0; i < count; i++) {
		n = relstack_capture(words, MAXW, 0, 0, &v);
		if (mode && n >= 0)
			relstack_recorder__write(rec, 0, words, (size_t)n, &v, NULL, 0, 0);
		__asm__ volatile("" ::: "memory");
	}
}

__attribute__((noinline)) static void descend(int depth, int mode)
{
	if (depth > 1)
		descend(depth - 1, mode);
	else
		leaf(mode);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "capture") == 0) {
		count = strtoul(argv[3], NULL, 0);
		relstack_thread_register();
		descend(atoi(argv[2]), 0);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "record") == 0) {
		struct relstack_recorder_opts o = { .sz = sizeof(o), .size = 4u << 20 };

		rec = relstack_recorder__open(argv[2], &o);
		if (!rec) {
			perror(argv[2]);
			return 1;
		}
		count = strtoul(argv[3], NULL, 0);
		relstack_thread_register();
		descend(32, 1);
		return relstack_recorder__close(rec) ? 1 : 0;
	}
	fprintf(stderr, "usage: bench_cross capture DEPTH N | record FILE N\n");
	return 2;
}
