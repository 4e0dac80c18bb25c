// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Captures on many threads at once, while another thread dlopens and
 * dlcloses plugins and re-scans the object table, and a third sends the
 * workers signals whose handlers, on each worker's alternate stack,
 * capture too: every capture of the chain
 * gets the same verdict and names the same frames as the thread's first
 * one, and that verdict is "reliable"; no capture in a handler is ever
 * reliable or empty (the alternate stacks are registered), and none
 * faults.
 *
 * Under ThreadSanitizer the program carries the sanitizer's runtime,
 * built without frame pointers, and each thread starts in it
 * (__tsan_thread_start_func): the program is then, correctly, an object
 * without frame pointers, and the verdict must say so.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "capture/objtab-local.h"
#include "unwind-test.h"

#ifndef PLUGIN_DIR
#error PLUGIN_DIR must name the directory of the test plugins
#endif

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define THREADS 8
#define CAPTURES 2000
#define MAXW 64

static rs_unwind_dl_call_fn dl_call;
static _Atomic int stop;
static _Atomic unsigned loads; /* dlopen/dlclose cycles done by the churn thread */

struct worker {
	unsigned mismatched, captures;
	unsigned handled, handler_reliable_wrong, handler_empty, context_reliable_wrong;
	int first_n;
	uint32_t first_reasons;
	uint64_t first[MAXW];
	uintptr_t first_abs[MAXW];
	uint32_t reasons_seen;
	unsigned rel_addr_mismatch;
};

void threads_capture(void *arg);

__attribute__((unused)) static uint64_t end_word(void)
{
	struct relstack_format f;

	relstack_format_native(&f);
	return relstack_word_marker(&f, RELSTACK_MARKER_END);
}
void threads_from_dl(void *arg);

__attribute__((noinline)) void threads_capture(void *arg)
{
	struct worker *w = arg;
	uint64_t words[MAXW], abs[MAXW];
	struct relstack_verdict v, va;
	int n, na;

	n = relstack_capture(words, MAXW, 0, 0, &v);
	na = relstack_capture(abs, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &va);
	w->captures++;
	w->reasons_seen |= v.reasons | va.reasons;
	if (w->captures == 1) {
		w->first_n = n;
		w->first_reasons = v.reasons;
		memcpy(w->first, words, sizeof(words[0]) * (size_t)n);
	} else if (n != w->first_n || v.reasons != w->first_reasons ||
		   memcmp(words, w->first, sizeof(words[0]) * (size_t)n)) {
		w->mismatched++;
	}
	if (n != na || v.reasons != va.reasons)
		w->mismatched++;
	/* words after the first (two call sites differ) name the absolute addresses */
	for (int i = 1; i < n - 1; i++)
		if (relstack_word_address(words[i]) != abs[i])
			w->rel_addr_mismatch++;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void threads_from_dl(void *arg)
{
	dl_call(threads_capture, arg);
	__asm__ volatile("" ::: "memory");
}

/* What this thread's signal handlers saw. */
static __thread volatile unsigned t_handled;
static __thread unsigned t_handler_reliable_wrong, t_handler_empty, t_context_reliable_wrong;

#ifdef UNDER_TSAN
#define SIGNAL_FRAME_SEEN 1 /* not required */
#else
#define SIGNAL_FRAME_SEEN 0
#endif

static bool has_word(const uint64_t *words, int n, uint64_t w)
{
	for (int i = 0; i < n; i++)
		if (words[i] == w)
			return true;
	return false;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	uint64_t words[MAXW];
	struct relstack_verdict v;

	int n = relstack_capture(words, MAXW, 0, 0, &v);

	/*
	 * Reliable across the signal frame only with its SIGNAL marker and END
	 * (the interrupted row proved it).  ThreadSanitizer calls handlers
	 * itself, from its interceptors: no signal frame on the stack then.
	 */
	t_handler_empty += n <= 0;
	t_handler_reliable_wrong += n > 0 && v.reasons == 0 && (!(SIGNAL_FRAME_SEEN || has_word(words, n, RS_NATIVE_SIGNAL)) ||
								 words[n - 1] != RS_NATIVE_END);
	n = relstack_capture_context(uc, words, MAXW, 0, &v);
	t_context_reliable_wrong += n > 0 && v.reasons == 0 && words[n - 1] != RS_NATIVE_END;
	t_handled++;
}

static pthread_t workers[THREADS];
static _Atomic int workers_done;

static void *signaller_main(void *arg)
{
	while (atomic_load(&workers_done) < THREADS) {
		for (unsigned i = 0; i < THREADS; i++)
			pthread_kill(workers[i], SIGUSR1);
		sched_yield();
	}
	return arg;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	size_t alt_size = 64 * 1024;
	void *alt = mmap(NULL, alt_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_t ss = { .ss_sp = alt, .ss_size = alt_size }, old;
	sigset_t set;

	if (alt == MAP_FAILED)
		return NULL;
	sigaltstack(&ss, &old); /* a sanitizer's runtime may have one: it is put back below */
	relstack_thread_register(); /* after the alternate stack: it is learned too */
	/* created with the signal blocked: a handler before registration would capture nothing */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	while (!atomic_load(&loads)) /* start once the table has changed at least once */
		sched_yield();
	for (unsigned i = 0; i < CAPTURES; i++)
		rs_unwind_fp_call(threads_from_dl, arg);
	__asm__ volatile("" ::: "memory");
	/*
	 * The signaller keeps sending until every worker is done.  Wait in a
	 * blocking call: ThreadSanitizer delivers signals there, it defers
	 * them elsewhere.
	 */
	while (!t_handled) {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
	}
	/* no more signals here: the counts are final */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigaltstack(&old, NULL);
	munmap(alt, alt_size);
	w->handled = t_handled;
	w->handler_reliable_wrong = t_handler_reliable_wrong;
	w->handler_empty = t_handler_empty;
	w->context_reliable_wrong = t_context_reliable_wrong;
	atomic_fetch_add(&workers_done, 1);
	return arg;
}

static void *churn_main(void *arg)
{
	static const char *const names[] = { "a", "b", "c", "d" };

	while (!atomic_load(&stop)) {
		for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			char path[4096];
			void *h;

			snprintf(path, sizeof(path), "%s/librs_plugin_%s.so", PLUGIN_DIR, names[i]);
			h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			if (!h)
				continue;
			relstack_objtab__refresh();
			dlclose(h);
			relstack_objtab__refresh();
			atomic_fetch_add(&loads, 1);
		}
	}
	return arg;
}

static void many_threads_get_the_same_verdict_and_frames_while_objects_come_and_go(void **state)
{
	static struct worker w[THREADS];
	struct sigaction sa;
	pthread_t churn, sig;
	sigset_t block, mask;
	unsigned handled = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(pthread_create(&churn, NULL, churn_main, NULL), 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &mask); /* the workers inherit it */
	for (unsigned i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&workers[i], NULL, worker_main, &w[i]), 0);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	assert_int_equal(pthread_create(&sig, NULL, signaller_main, NULL), 0);
	/* the signaller stops once every worker is done: no signal to a joined thread */
	assert_int_equal(pthread_join(sig, NULL), 0);
	for (unsigned i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(workers[i], NULL), 0);
	atomic_store(&stop, 1);
	assert_int_equal(pthread_join(churn, NULL), 0);
	signal(SIGUSR1, SIG_IGN);

	for (unsigned i = 0; i < THREADS; i++) {
		assert_int_equal(w[i].captures, CAPTURES);
		assert_int_equal(w[i].mismatched, 0);
		assert_int_equal(w[i].handler_reliable_wrong, 0);
		assert_int_equal(w[i].handler_empty, 0);
		assert_int_equal(w[i].context_reliable_wrong, 0);
		assert_true(w[i].handled > 0);
		handled += w[i].handled;
		assert_int_equal(w[i].rel_addr_mismatch, 0);
#ifdef UNDER_TSAN
		/*
		 * The program holds ThreadSanitizer's runtime, without frame
		 * pointers: its frames are followed by the program's CFI.
		 */
		fprintf(stderr, "thread %u: %d words, reasons %#x\n", i, w[i].first_n, w[i].first_reasons);
		assert_int_equal(w[i].first_reasons, 0);
		assert_true(w[i].first[w[i].first_n - 1] == end_word());
#else
		assert_int_equal(w[i].reasons_seen, 0);
		/*
		 * threads_capture, dl inner, dl call, threads_from_dl, fp inner, fp call, worker_main,
		 * start_thread, clone3, END
		 */
		assert_int_equal(w[i].first_n, 10);
		assert_true(w[i].first[9] == end_word());
#endif
	}
	assert_true(atomic_load(&loads) > 0);
	printf("signal handlers that captured: %u\n", handled);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(many_threads_get_the_same_verdict_and_frames_while_objects_come_and_go),
	};

	dl_call = load_dl_call();
	if (!dl_call)
		return 1;
	relstack_objtab__refresh();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
