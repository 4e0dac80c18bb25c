// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * realign.c's shape for the sampler (relstack record --sample): main ->
 * at (DEPTH+1 frames) -> lfind -> cmp (realigns its stack) or cmp_plain
 * -> busy, which spins; no capture of its own, not linked with relstack.
 */
#include <search.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) void busy(void)
{
	for (int i = 0; i < 100000; i++)
		sink += (unsigned long)i;
}

__attribute__((noinline)) int cmp(const void *a, const void *b)
{
	_Alignas(64) char aligned[64];
	int n = *(const int *)a & 7;
	char vla[n + 1];

	memset(aligned, 1, sizeof(aligned));
	memset(vla, 2, (size_t)n + 1);
	__asm__ volatile("" ::"r"(aligned), "r"(vla) : "memory");
	busy();
	return *(const int *)a != *(const int *)b;
}

__attribute__((noinline)) int cmp_plain(const void *a, const void *b)
{
	busy();
	return *(const int *)a != *(const int *)b;
}

__attribute__((noinline)) int at(int d, int (*compar)(const void *, const void *))
{
	int key = 1, one = 1, r;
	size_t n = 1;

	if (d > 0) {
		r = at(d - 1, compar);
		__asm__ volatile("" ::: "memory");
		return r;
	}
	return lfind(&key, &one, &n, sizeof(int), compar) != NULL;
}

int main(void)
{
	for (int k = 0; k < 200; k++)
		for (int d = 0; d < 6; d++) {
			at(d, cmp_plain);
			at(d, cmp);
		}
	return 0;
}
