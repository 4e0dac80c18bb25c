// SPDX-License-Identifier: LGPL-2.1-or-later
/* The run clock: which clock records carry, and how the reader turns counter ticks into CLOCK_MONOTONIC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "ring/ring.h"
#include "ring-fixture.h"

static struct rs_tmpfile tf;
static const char *path = tf.path;

static int setup(void **state)
{
	rs_tmpfile_make(&tf, "clock");
	return 0;
}

static int teardown(void **state)
{
	rs_tmpfile_remove(&tf);
	rs_clock_no_tsc = false;
	return 0;
}

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Records written between two readings of CLOCK_MONOTONIC read back between
 * them (give or take 1 ms for a counter rate measured over 2 ms), with and
 * without a flush between the records.
 */
static void check_times(bool flush_between)
{
	struct relstack_recorder *rec = relstack_recorder__open(path, NULL);
	uint64_t before[4], after[4];
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	unsigned n = 0;

	assert_non_null(rec);
	for (unsigned i = 0; i < 4; i++) {
		struct timespec pause = { 0, 3000000 };

		before[i] = mono();
		assert_int_equal(relstack_recorder__write(rec, RELSTACK_EVENT_STACK, NULL, 0, NULL, NULL, 0, 0), 0);
		after[i] = mono();
		nanosleep(&pause, NULL);
		if (flush_between && i == 1)
			assert_int_equal(relstack_recorder__flush(rec), 0);
	}
	assert_int_equal(relstack_recorder__close(rec), 0);
	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &out) > 0) {
		assert_true(n < 4);
		if (out.time_ns + 1000000 < before[n] || out.time_ns > after[n] + 1000000)
			fail_msg("record %u: time %llu, written between %llu and %llu", n,
				 (unsigned long long)out.time_ns, (unsigned long long)before[n],
				 (unsigned long long)after[n]);
		n++;
	}
	assert_int_equal(n, 4);
	relstack_cursor__free(c);
	relstack_reader__close(r);
}

static void record_times_read_back_as_clock_monotonic_with_either_run_clock(void **state)
{
	for (int no_tsc = 0; no_tsc < 2; no_tsc++) {
		for (int flush = 0; flush < 2; flush++) {
			struct relstack_recorder *rec;

			rs_clock_no_tsc = no_tsc;
			check_times(flush);
			/* which clock the run carried */
			rec = relstack_recorder__open(path, NULL);
			assert_non_null(rec);
			if (no_tsc) {
				assert_int_equal(rec->run->clock, RS_CLOCK_MONOTONIC);
				assert_int_equal(rec->run->tsc_hz, 0);
				assert_int_equal(rec->run->tsc_start, 0);
			} else {
				print_message("# run clock: %s\n", rec->run->clock == RS_CLOCK_TSC ?
					      "time stamp counter" : "CLOCK_MONOTONIC (counter not usable here)");
			}
			relstack_recorder__close(rec);
		}
	}
}

static void runs_after_the_first_reuse_the_counter_rate_the_process_measured(void **state)
{
	struct relstack_recorder *rec = relstack_recorder__open(path, NULL);
	uint64_t hz, start;

	assert_non_null(rec);
	if (rec->run->clock != RS_CLOCK_TSC) {
		relstack_recorder__close(rec);
		print_message("# skipped: records carry CLOCK_MONOTONIC here (the counter cannot stand for it)\n");
		skip();
	}
	hz = rec->run->tsc_hz;
	start = rec->run->tsc_start;
	relstack_recorder__close(rec);
	rec = relstack_recorder__open(path, NULL);
	assert_non_null(rec);
	assert_int_equal(rec->run->clock, RS_CLOCK_TSC);
	assert_true(rec->run->tsc_hz == hz);      /* not measured again ... */
	assert_true(rec->run->tsc_start > start); /* ... but the run has its own starting moment */
	relstack_recorder__close(rec);
}

/*
 * The CPU's word on its counter (src/ring/arch/<cpu>/ring-counter.c): a
 * rate a reader accepts where the CPU publishes one (aarch64's cntfrq_el0),
 * else a request to measure it, or no.  Whether the counter then keeps
 * that rate against CLOCK_MONOTONIC is a property of the hardware: under
 * user-mode emulation it is the emulator's, and this says so.
 */
static void the_cpu_gives_its_counter_rate_or_asks_for_a_measurement(void **state)
{
	uint64_t hz = rs_arch_counter_hz();
	uint64_t t0 = rs_arch_ticks(), t1 = rs_arch_ticks();

	assert_true(hz == RS_COUNTER_UNUSABLE || hz == RS_COUNTER_MEASURE ||
		    (hz >= RS_TSC_HZ_MIN && hz <= RS_TSC_HZ_MAX));
	assert_true(t1 >= t0); /* the counter never goes back on one thread */
	if (hz > RS_COUNTER_MEASURE)
		print_message("# the CPU publishes its counter rate: %llu Hz (its steadiness is the hardware's: "
			      "not testable under emulation)\n", (unsigned long long)hz);
	else
		print_message("# the counter's rate is %s\n", hz == RS_COUNTER_MEASURE ? "measured" : "not usable");
}

static void counter_ticks_convert_by_the_anchor_and_a_bad_anchor_is_ignored(void **state)
{
	struct rs_run_head h;

	memset(&h, 0, sizeof(h));
	h.clock = RS_CLOCK_TSC;
	h.tsc_start = 1000;
	h.monotonic_ns = 5000000000ull;
	h.tsc_hz = 2000000000ull; /* 2 ticks a ns */
	assert_true(rs_clock_to_ns(&h, 1000) == 5000000000ull);
	assert_true(rs_clock_to_ns(&h, 3000) == 5000001000ull);
	assert_true(rs_clock_to_ns(&h, 0) == 5000000000ull - 500); /* a tick before the start */

	/* an anchor 0.5 % off the measured rate: ticks up to it are interpolated, exactly at it */
	h.anchor_seq = 2;
	h.anchor_tsc = 1000 + 2000000000ull;
	h.anchor_monotonic_ns = 5000000000ull + 1005000000ull;
	assert_true(rs_clock_to_ns(&h, h.anchor_tsc) == h.anchor_monotonic_ns);
	assert_true(rs_clock_to_ns(&h, 1000 + 1000000000ull) == 5000000000ull + 502500000ull);

	/* written halfway (odd), or 2 % off the measured rate: the measured rate again */
	h.anchor_seq = 3;
	assert_true(rs_clock_to_ns(&h, h.anchor_tsc) == 6000000000ull);
	h.anchor_seq = 4;
	h.anchor_monotonic_ns = 5000000000ull + 1020000000ull;
	assert_true(rs_clock_to_ns(&h, h.anchor_tsc) == 6000000000ull);

	/* hostile values end at the ends of the range, never wrap */
	h.anchor_seq = 0;
	assert_true(rs_clock_to_ns(&h, UINT64_MAX) > rs_clock_to_ns(&h, UINT64_MAX / 2));
	h.monotonic_ns = UINT64_MAX;
	assert_true(rs_clock_to_ns(&h, UINT64_MAX) == UINT64_MAX);
	h.monotonic_ns = 0;
	h.tsc_start = UINT64_MAX;
	assert_true(rs_clock_to_ns(&h, 0) == 0);
	h.tsc_hz = RS_TSC_HZ_MAX + 1; /* out of range: no conversion at all */
	assert_true(rs_clock_to_ns(&h, 12345) == 12345);
	h.clock = RS_CLOCK_MONOTONIC;
	h.tsc_hz = 0;
	assert_true(rs_clock_to_ns(&h, 12345) == 12345);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(record_times_read_back_as_clock_monotonic_with_either_run_clock, setup,
						teardown),
		cmocka_unit_test_setup_teardown(runs_after_the_first_reuse_the_counter_rate_the_process_measured, setup,
						teardown),
		cmocka_unit_test(counter_ticks_convert_by_the_anchor_and_a_bad_anchor_is_ignored),
		cmocka_unit_test(the_cpu_gives_its_counter_rate_or_asks_for_a_measurement),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
