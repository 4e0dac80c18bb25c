// SPDX-License-Identifier: LGPL-2.1-or-later
/* Concurrent writers: threads, and signal handlers interrupting writers on their own thread. */
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
#include "ring/ring.h"

#define THREADS 4
#define PER_THREAD 20000

static struct rs_tmpfile tf;
static struct relstack_recorder *rec;
static int ev;
static _Atomic unsigned handled;
static _Atomic bool stop;
static _Atomic unsigned finished; /* writers done, waiting for the signaller to stop */

#define MAX_HANDLED 1000000
static bool seen[THREADS][MAX_HANDLED];

#define FROM_HANDLER 0x100u /* in a record's writer number: written by the signal handler on that thread */

static int put(uint32_t thread, uint32_t from_handler, uint64_t seq)
{
	return rs_seq_write(rec, ev, thread | (from_handler ? FROM_HANDLER : 0), seq, 1 + (unsigned)(seq % 16), NULL);
}

static __thread uint32_t my_thread = UINT32_MAX; /* set once the writer runs */
static __thread uint64_t my_handler_seq;

static void on_usr1(int sig)
{
	if (my_thread != UINT32_MAX && put(my_thread, 1, my_handler_seq++) == 0)
		atomic_fetch_add(&handled, 1);
}

static void *writer(void *arg)
{
	my_thread = (uint32_t)(uintptr_t)arg;
	relstack_recorder__thread_init();
	for (uint64_t s = 0; s < PER_THREAD; s++)
		assert_int_equal(put(my_thread, 0, s), 0);
	/* alive until the signaller stops: it signals live threads only */
	atomic_fetch_add(&finished, 1);
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

static pthread_t threads[THREADS];

static void *signaller(void *arg)
{
	while (!atomic_load(&stop)) {
		for (unsigned i = 0; i < THREADS; i++)
			pthread_kill(threads[i], SIGUSR1);
		sched_yield();
	}
	return NULL;
}

/*
 * @n threads running @fn, the first THREADS of them signalled until all are
 * done; then the recorder is closed.
 */
static void run_signalled(pthread_t *ts, unsigned n, void *(*fn)(void *))
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t sig;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	atomic_store(&stop, false);
	atomic_store(&finished, 0);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(pthread_create(&ts[i], NULL, fn, (void *)(uintptr_t)i), 0);
		if (i < THREADS)
			threads[i] = ts[i]; /* the signaller's targets */
	}
	pthread_create(&sig, NULL, signaller, NULL);
	while (atomic_load(&finished) < n)
		sched_yield();
	atomic_store(&stop, true);
	pthread_join(sig, NULL);
	for (unsigned i = 0; i < n; i++)
		pthread_join(ts[i], NULL);
	signal(SIGUSR1, SIG_IGN);
	assert_int_equal(relstack_recorder__close(rec), 0);
}

static void every_record_of_threads_and_nested_signal_handlers_is_intact(void **state)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	char err[256];
	struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_run_info info;
	uint64_t next[THREADS] = { 0 }, hnext[THREADS] = { 0 }, nh = 0;
	pthread_t ts[THREADS];

	rs_tmpfile_make(&tf, "ringt");
	o.size = 64u << 20; /* big enough that nothing is overwritten */
	rec = relstack_recorder__open(tf.path, &o);
	assert_non_null(rec);
	ev = rs_seq_define(rec);
	run_signalled(ts, THREADS, writer);

	r = relstack_reader__open(tf.path, &ro);
	assert_non_null(r);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.skipped, 0);
	assert_int_equal(info.lost, 0);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &out) > 0) {
		uint32_t t;
		uint64_t s;
		bool h;

		rs_seq_check(&out, &t, &s);
		h = t & FROM_HANDLER;
		t &= ~FROM_HANDLER;
		assert_true(t < THREADS);
		/*
		 * Per thread, records are in order: positions grow with each record.  Not
		 * so for the handler's: one that interrupted a record of its thread went
		 * into a chunk of its own, ahead of the thread's chunk.
		 */
		if (h) {
			assert_true(s < MAX_HANDLED);
			assert_false(seen[t][s]);
			seen[t][s] = true;
			hnext[t]++;
			nh++;
		} else {
			assert_int_equal(s, next[t]);
			next[t]++;
		}
	}
	for (unsigned i = 0; i < THREADS; i++) {
		assert_int_equal(next[i], PER_THREAD);
		for (uint64_t k = 0; k < hnext[i]; k++)
			assert_true(seen[i][k]); /* the handler's records of the thread: 0 .. n-1, each once */
	}
	assert_int_equal(nh, atomic_load(&handled));
	assert_int_equal(info.records, THREADS * PER_THREAD + nh);
	relstack_cursor__free(c);
	relstack_reader__close(r);
	rs_tmpfile_remove(&tf);
}

/*
 * Writers that move between CPUs (so between write areas) every few
 * records, with signal handlers writing on top, on a small ring of four
 * areas that wraps many times: every record read is intact, each once, and
 * a thread's records come in the order it wrote them.
 */
#define MOVERS 8
#define MOVER_RECORDS 6000

static cpu_set_t all_cpus;

static void *mover(void *arg)
{
	unsigned ncpu = (unsigned)CPU_COUNT(&all_cpus), k = 0;

	my_thread = (uint32_t)(uintptr_t)arg;
	relstack_recorder__thread_init();
	for (uint64_t s = 0; s < MOVER_RECORDS; s++) {
		if (s % 37 == 0 && ncpu > 1) {
			cpu_set_t one;
			unsigned want = (my_thread + k++) % ncpu;

			CPU_ZERO(&one);
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &all_cpus) && want-- == 0) {
					CPU_SET(c, &one);
					break;
				}
			sched_setaffinity(0, sizeof(one), &one);
		}
		put(my_thread, 0, s);
	}
	atomic_fetch_add(&finished, 1); /* as writer() */
	while (!atomic_load(&stop))
		sched_yield();
	return NULL;
}

static void writers_moving_between_write_areas_lose_order_of_no_record(void **state)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	char err[256];
	struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_run_info info;
	pthread_t movers[MOVERS];
	int64_t last[MOVERS];
	uint64_t n = 0;

	assert_int_equal(sched_getaffinity(0, sizeof(all_cpus), &all_cpus), 0);
	rs_tmpfile_make(&tf, "ringm");
	rs_ring_test_areas = 4;
	o.size = 256u << 10; /* four areas of 64 KiB: each laps many times */
	rec = relstack_recorder__open(tf.path, &o);
	rs_ring_test_areas = 0;
	assert_non_null(rec);
	ev = rs_seq_define(rec);
	run_signalled(movers, MOVERS, mover);

	r = relstack_reader__open(tf.path, &ro);
	assert_non_null(r);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_null(relstack_reader__run_error(r, 0));
	assert_null(relstack_reader__run_error(r, 1));
	assert_int_equal(info.skipped, 0);
	assert_true(info.overwritten > 0);
	for (unsigned i = 0; i < MOVERS; i++)
		last[i] = -1;
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &out) > 0) {
		uint32_t t;
		uint64_t s;

		rs_seq_check(&out, &t, &s); /* every byte of the record is the one written */
		n++;
		if (t & FROM_HANDLER)
			continue;
		assert_true(t < MOVERS);
		assert_true((int64_t)s > last[t]); /* by time, a thread's records in its order, each once */
		last[t] = (int64_t)s;
	}
	assert_int_equal(n, info.records);
	assert_true(n > 0);
	relstack_cursor__free(c);
	relstack_reader__close(r);
	rs_tmpfile_remove(&tf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_record_of_threads_and_nested_signal_handlers_is_intact),
		cmocka_unit_test(writers_moving_between_write_areas_lose_order_of_no_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
