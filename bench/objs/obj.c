// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One of the many small objects the lookup benchmark loads, so that the
 * process holds about fifty objects, as a real program with its libraries
 * does.  OBJ_ID makes each build distinct.
 */
#define OBJ_API __attribute__((visibility("default")))
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

OBJ_API int CAT(bench_obj_fn_, OBJ_ID)(int x);

static int step(int x, int k)
{
	return (x * 2654435761u) ^ (unsigned)k;
}

int CAT(bench_obj_fn_, OBJ_ID)(int x)
{
	for (int i = 0; i < 64; i++)
		x = step(x, i + OBJ_ID);
	return x;
}
