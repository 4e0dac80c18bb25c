// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The stack table: repeated stacks written once and named by records,
 * verdicts and epochs kept per record, a full table falling back to
 * inline stacks, overwrite mode never giving an old record a newer stack,
 * and threads and signal handlers inserting the same stacks at once.
 *
 * A "seq" record of writer T and number S carries the words
 * rs_seq_payload(T, S, i): records written with the same (T, S) carry the
 * same stack, and rs_seq_check() proves every word read back.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "ring-fixture.h"

static struct rs_tmpfile tf;

static int setup(void **state)
{
	rs_tmpfile_make(&tf, "stacks");
	return 0;
}

static int teardown(void **state)
{
	rs_tmpfile_remove(&tf);
	return 0;
}

static struct relstack_recorder *open_rec(uint64_t size, enum relstack_recorder_mode mode, unsigned flags)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;

	o.size = size;
	o.mode = mode;
	o.flags = flags;
	rec = relstack_recorder__open(tf.path, &o);
	assert_non_null(rec);
	return rec;
}

/* Reads the current run: every record checked word by word; returns how many, and the table's figures. */
static size_t read_back(struct relstack_run_info *info, struct relstack_stack_table_info *st)
{
	struct relstack_reader *r = rs_seq_reader(tf.path);
	struct relstack_cursor *c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	struct relstack_record rec;
	uint32_t t;
	uint64_t s;
	size_t n = 0;

	assert_non_null(c);
	while (rs_seq_next(c, &rec, &t, &s))
		n++;
	relstack_cursor__free(c);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, info), 0);
	assert_int_equal(relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, st), 0);
	assert_null(relstack_reader__record_error(r, RELSTACK_RUN_CURRENT));
	relstack_reader__close(r);
	return n;
}

static uint64_t repeated_run(unsigned flags, struct relstack_stack_table_info *st)
{
	struct relstack_recorder *rec = open_rec(1u << 20, RELSTACK_MODE_STOP, flags);
	struct relstack_run_info info;
	int ev = rs_seq_define(rec);

	for (unsigned i = 0; i < 2000; i++)
		assert_int_equal(rs_seq_write(rec, ev, 7, i % 5, 32, NULL), 0);
	assert_int_equal(relstack_recorder__close(rec), 0);
	assert_int_equal(read_back(&info, st), 2000);
	assert_int_equal(info.skipped, 0);
	return info.written;
}

static void a_repeated_stack_is_written_once_and_each_record_names_it(void **state)
{
	struct relstack_stack_table_info st, none;
	uint64_t with = repeated_run(0, &st), without;

	assert_int_equal(st.entries, 5);
	assert_int_equal(st.ref_records, 2000);
	assert_int_equal(st.inline_records, 0);
	assert_int_equal(st.full, 0);
	assert_int_equal(st.damaged, 0);
	assert_true(st.size > 0 && st.used > 0 && st.used < st.arena_size);
	without = repeated_run(RELSTACK_RECORDER_NO_STACK_TABLE, &none);
	assert_int_equal(none.entries, 0);
	assert_int_equal(none.ref_records, 0);
	assert_int_equal(none.inline_records, 2000);
	/* 32 words inline against an 8-byte reference: the ring takes a fifth or less (8-byte words), a half (4-byte) */
	assert_true(with * (sizeof(uintptr_t) == 8 ? 4 : 2) <= without);
}

static void the_verdict_and_the_epoch_are_the_records_not_the_stacks(void **state)
{
	struct relstack_recorder *rec = open_rec(1u << 20, RELSTACK_MODE_STOP, 0);
	struct relstack_stack_table_info st;
	struct relstack_run_info info;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	int ev = rs_seq_define(rec);
	uint32_t t;
	uint64_t s;
	unsigned i = 0;

	for (unsigned k = 0; k < 6; k++) {
		struct relstack_verdict v = { .reasons = k % 2 ? RELSTACK_UNRELIABLE_SIGNAL_FRAME : 0, .epoch = 10 + k };

		assert_int_equal(rs_seq_write(rec, ev, 1, 1, 20, &v), 0);
	}
	assert_int_equal(relstack_recorder__close(rec), 0);
	assert_int_equal(read_back(&info, &st), 6);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.ref_records, 6);
	r = rs_seq_reader(tf.path);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (rs_seq_next(c, &out, &t, &s)) {
		assert_int_equal(out.reasons, i % 2 ? RELSTACK_UNRELIABLE_SIGNAL_FRAME : 0);
		assert_int_equal(out.epoch, 10 + i);
		i++;
	}
	assert_int_equal(i, 6);
	relstack_cursor__free(c);
	relstack_reader__close(r);
}

static void a_full_table_falls_back_to_inline_stacks_and_counts_them(void **state)
{
	/* the smallest ring: its table holds a few dozen stacks of 256 words */
	struct relstack_recorder *rec = open_rec(64u << 10, RELSTACK_MODE_OVERWRITE, 0);
	struct relstack_stack_table_info st;
	struct relstack_run_info info;
	int ev = rs_seq_define(rec);
	size_t n;

	for (unsigned i = 0; i < 200; i++)
		assert_int_equal(rs_seq_write(rec, ev, 2, i, 256, NULL), 0);
	/* a stack the table took before it filled is still named */
	assert_int_equal(rs_seq_write(rec, ev, 2, 0, 256, NULL), 0);
	assert_int_equal(relstack_recorder__close(rec), 0);
	n = read_back(&info, &st);
	assert_true(n > 0);
	assert_true(st.entries > 0 && st.entries < 200);
	assert_int_equal(st.full, 200 - st.entries);
	assert_true(st.inline_records > 0);
	assert_int_equal(st.ref_records + st.inline_records, n);
	assert_true(st.ref_records >= 1); /* the last record, at least */
	assert_int_equal(st.damaged, 0);
}

/*
 * Entries are never reused in a run: records of many more distinct
 * stacks than the table holds, lapping a small ring many times, each read
 * back with its own words (rs_seq_check), old and new alike.
 */
/* Every other record one of 3000 stacks, the others one of the first 50, which the table holds. */
static unsigned k_of(unsigned i)
{
	return i % 2 ? i / 2 % 50 : i % 3000;
}

static void in_overwrite_mode_an_old_record_never_picks_up_a_newer_stack(void **state)
{
	struct relstack_recorder *rec = open_rec(64u << 10, RELSTACK_MODE_OVERWRITE, 0);
	struct relstack_stack_table_info st, st2;
	struct relstack_run_info info;
	int ev = rs_seq_define(rec);
	size_t n;

	for (unsigned i = 0; i < 20000; i++)
		assert_int_equal(rs_seq_write(rec, ev, 3, k_of(i), 1 + k_of(i) % 24, NULL), 0);
	n = read_back(&info, &st);
	assert_true(info.overwritten > 0);
	assert_true(n > 0);
	assert_true(st.full > 0 && st.ref_records > 0);
	/* more laps: the entries and the records naming them are the same ones */
	for (unsigned i = 0; i < 20000; i++)
		assert_int_equal(rs_seq_write(rec, ev, 3, k_of(i), 1 + k_of(i) % 24, NULL), 0);
	assert_int_equal(relstack_recorder__close(rec), 0);
	read_back(&info, &st2);
	assert_int_equal(st2.entries, st.entries);
	assert_int_equal(st2.used, st.used);
	assert_int_equal(st2.damaged, 0);
}

/* ---- threads and signal handlers inserting the same stacks ---- */

#define THREADS 4
#define PER_THREAD 20000
#define STACKS 300
#define HANDLED_MAX 20000

static struct relstack_recorder *shared;
static int shared_ev;
static _Atomic bool stop, go;
static _Atomic unsigned finished; /* writers done, alive until the signaller stops */
static _Atomic unsigned handled;
static __thread bool is_writer;
static __thread unsigned handler_next;

static void on_usr1(int sig)
{
	unsigned k = handler_next++ % STACKS;

	/*
	 * The same stacks the threads insert, from inside their writes; at
	 * most HANDLED_MAX of them, so that a busy machine (the signaller
	 * running far more than the writers) cannot fill the ring.
	 */
	if (is_writer && atomic_load(&handled) < HANDLED_MAX &&
	    rs_seq_write(shared, shared_ev, 9, k, 1 + (k + 1) % 40, NULL) == 0)
		atomic_fetch_add(&handled, 1);
}

static void *inserter(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;

	is_writer = true;
	handler_next = t * 7;
	relstack_recorder__thread_init();
	while (!atomic_load(&go))
		sched_yield();
	for (unsigned i = 0; i < PER_THREAD; i++) {
		unsigned k = (i + t * 13) % STACKS;

		assert_int_equal(rs_seq_write(shared, shared_ev, 9, k, 1 + (k + 1) % 40, NULL), 0);
	}
	/* alive until the signaller stops: it signals live threads only */
	atomic_fetch_add(&finished, 1);
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

static void *signaller(void *arg)
{
	pthread_t *th = arg;

	atomic_store(&go, true);
	while (atomic_load(&finished) < THREADS) {
		for (unsigned i = 0; i < THREADS; i++)
			pthread_kill(th[i], SIGUSR1);
		sched_yield();
	}
	atomic_store(&stop, true);
	return NULL;
}

static void threads_and_signal_handlers_inserting_the_same_stacks_leave_one_entry_each(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct relstack_stack_table_info st;
	struct relstack_run_info info;
	pthread_t th[THREADS], sig;
	size_t n;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	shared = open_rec(16u << 20, RELSTACK_MODE_STOP, 0);
	shared_ev = rs_seq_define(shared);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, inserter, (void *)(uintptr_t)i);
	pthread_create(&sig, NULL, signaller, th);
	pthread_join(sig, NULL);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	signal(SIGUSR1, SIG_IGN);
	assert_int_equal(relstack_recorder__close(shared), 0);

	n = read_back(&info, &st);
	assert_int_equal(n, THREADS * PER_THREAD + atomic_load(&handled));
	assert_int_equal(info.skipped, 0);
	/* one entry per stack: the index never names two copies of one */
	assert_int_equal(st.entries, STACKS);
	assert_int_equal(st.ref_records, n);
	assert_int_equal(st.full, 0);
	assert_int_equal(st.damaged, 0);
	assert_true(atomic_load(&handled) > 0);
	printf("# %zu records, %u from signal handlers, %llu entries\n", n, atomic_load(&handled),
	       (unsigned long long)st.entries);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_repeated_stack_is_written_once_and_each_record_names_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_verdict_and_the_epoch_are_the_records_not_the_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(a_full_table_falls_back_to_inline_stacks_and_counts_them, setup, teardown),
		cmocka_unit_test_setup_teardown(in_overwrite_mode_an_old_record_never_picks_up_a_newer_stack, setup,
						teardown),
		cmocka_unit_test_setup_teardown(threads_and_signal_handlers_inserting_the_same_stacks_leave_one_entry_each,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
