// SPDX-License-Identifier: LGPL-2.1-or-later
/* The --call filter language: what matches, and where a bad expression is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/callexpr.h"

static int matches(const char *spec, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct rs_call_filter f;
	char err[128];
	uint64_t args[6] = { a0, a1, a2, 0, 0, 0 };

	assert_int_equal(rs_call_parse(spec, &f, err, sizeof(err)), 0);
	return rs_call_match(&f, args);
}

static void expect_error(const char *spec, int column, const char *message)
{
	struct rs_call_filter f;
	char err[128] = "";

	assert_int_equal(rs_call_parse(spec, &f, err, sizeof(err)), -column);
	assert_non_null(strstr(err, message));
}

static void a_function_without_a_condition_matches_every_call(void **state)
{
	struct rs_call_filter f;
	char err[128];

	assert_int_equal(rs_call_parse("  abort ", &f, err, sizeof(err)), 0);
	assert_string_equal(f.function, "abort");
	assert_true(matches("abort", 0, 0, 0));
}

static void comparisons_are_signed_and_each_operator_means_what_it_says(void **state)
{
	assert_true(matches("malloc if arg0 >= 1048576", 1048576, 0, 0));
	assert_false(matches("malloc if arg0 >= 1048576", 1048575, 0, 0));
	assert_true(matches("f if arg0 > 100000", 100001, 0, 0));
	assert_false(matches("f if arg0 > 100000", 100000, 0, 0));
	assert_true(matches("f if arg0 < 0", (uint64_t)-1, 0, 0));
	assert_true(matches("f if arg1 <= -1", 0, (uint64_t)-5, 0));
	assert_true(matches("write if arg0 == 2", 2, 0, 0));
	assert_false(matches("write if arg0 != 2", 2, 0, 0));
	assert_true(matches("f if arg2 == 0x10", 0, 0, 16));
}

static void and_binds_tighter_than_or_and_flags_test_with_a_mask(void **state)
{
	assert_true(matches("f if arg0 == 1 || arg1 == 1 && arg2 == 1", 1, 0, 0));
	assert_false(matches("f if (arg0 == 1 || arg1 == 1) && arg2 == 1", 1, 0, 0));
	assert_true(matches("open if arg1 & 0x40", 0, 0x41, 0));
	assert_false(matches("open if arg1 & 0x40", 0, 0x1, 0));
	assert_true(matches("open if arg1 & 3 == 1", 0, 0x41, 0));
}

static void a_bad_expression_names_the_column_where_it_goes_wrong(void **state)
{
	expect_error("malloc if arg0 >", 17, "expected arg0..arg5");
	expect_error("write if arg9 == 1", 13, "arguments are arg0 to arg5");
	expect_error("malloc when arg0", 8, "expected 'if EXPR'");
	expect_error("f if (arg0 == 1", 16, "expected ')'");
	expect_error("f if arg0 = 1", 11, "expected one of");
	expect_error("f if arg0 == 1 arg1", 16, "expected && ||");
	expect_error("f if arg0 == 99999999999999999999", 14, "not a 64-bit number");
	expect_error("", 1, "expected a function name");
	expect_error("malloc if", 10, "expected arg0..arg5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_function_without_a_condition_matches_every_call),
		cmocka_unit_test(comparisons_are_signed_and_each_operator_means_what_it_says),
		cmocka_unit_test(and_binds_tighter_than_or_and_flags_test_with_a_mask),
		cmocka_unit_test(a_bad_expression_names_the_column_where_it_goes_wrong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
