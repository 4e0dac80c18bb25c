// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The symbolizer tests' fixture: a shared library built -O2 -g whose
 * functions have known names, a known inlined call and known lines.  The
 * symfix_line_* constants let a test check file:line without hard-coding
 * line numbers.  Built a second time with -DSYMFIX_OTHER as "another build"
 * (same names, different code, different build-id).
 */
#define SF_API __attribute__((visibility("default"), noinline))

SF_API int symfix_leaf(int x);
SF_API int symfix_outer(int x);
SF_API int symfix_lines(int x);
SF_API int symfix_big(int x);
SF_API int symfix_nested(int x);

volatile int symfix_sink;

SF_API int symfix_leaf(int x)
{
#ifdef SYMFIX_OTHER
	symfix_sink = x * 3;
#endif
	symfix_sink = x;
	return x + 1;
}

__attribute__((visibility("default"))) const unsigned symfix_line_inner_first = __LINE__;
static inline __attribute__((always_inline)) int symfix_inner(int x)
{
	for (int i = 0; i < x; i++)
		symfix_sink += i * x;
	return symfix_sink;
}
__attribute__((visibility("default"))) const unsigned symfix_line_inner_last = __LINE__;

SF_API int symfix_outer(int x)
{
	int r = symfix_leaf(x);

	r += symfix_inner(r);
	return r + symfix_leaf(r);
}
__attribute__((visibility("default"))) const unsigned symfix_line_call = __LINE__ - 3;

SF_API int symfix_lines(int x)
{
	symfix_sink = x;
	return symfix_sink * 7;
}
__attribute__((visibility("default"))) const unsigned symfix_line_lines_first = __LINE__ - 5;

/* two levels of inlining: symfix_inner inside symfix_middle inside symfix_nested */
static inline __attribute__((always_inline)) int symfix_middle(int x)
{
	x += symfix_inner(x);
	return x * 5;
}
__attribute__((visibility("default"))) const unsigned symfix_line_middle_call = __LINE__ - 3;

SF_API int symfix_nested(int x)
{
	return symfix_middle(x) + symfix_leaf(x);
}
__attribute__((visibility("default"))) const unsigned symfix_line_nested_call = __LINE__ - 2;

/* a larger function, so sampled addresses land in bodies of several sizes */
SF_API int symfix_big(int x)
{
	int acc = 0;

	for (int i = 0; i < x; i++) {
		switch ((i + x) % 5) {
		case 0: acc += symfix_leaf(i); break;
		case 1: acc ^= symfix_outer(i); break;
		case 2: acc -= symfix_lines(i); break;
		case 3: acc += i * i; symfix_sink = acc; break;
		default: acc = acc * 31 + 7; break;
		}
	}
	return acc;
}
