// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The stack checker (RELSTACK_CAPTURE_CHECK) against a function that
 * breaks the frame-pointer rules: broken_b, in assembly
 * (arch/<cpu>/broken-b.S), saves the frame pointer as an ordinary
 * register and points it at two words of its own making (a saved frame
 * pointer of 0 and the program's outermost return address, _start), then
 * calls on.  Its CFI is honest.  A frame-pointer walk through it
 * believes the fake record and ends the stack at _start, reliable; the
 * checker finds that broken_b's CFI puts its frame elsewhere.  Then the
 * seed's way: a timer samples a thread that runs through broken_b.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "relstack/relstack.h"

#define MAXW 64

/* Not static: the assembly (arch/<cpu>/broken-b.S) calls and names them. */
void broken_b(void (*fn)(void));
void fine_b(void (*fn)(void));
void check_a(void (*b)(void (*)(void)), void (*fn)(void));
void capture_here(void);
void spin_here(void);

/* The same call, keeping the rules. */
__attribute__((noinline)) void fine_b(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void check_a(void (*b)(void (*)(void)), void (*fn)(void))
{
	b(fn);
	__asm__ volatile("" ::: "memory");
}

static struct {
	int n;
	uint64_t w[MAXW];
	struct relstack_verdict v;
} plain, checked;

__attribute__((noinline)) void capture_here(void)
{
	plain.n = relstack_capture(plain.w, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &plain.v);
	checked.n = relstack_capture(checked.w, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE | RELSTACK_CAPTURE_CHECK,
				     &checked.v);
	__asm__ volatile("" ::: "memory");
}

/* A marker word as this process writes it (4- or 8-byte words). */
static uint64_t native_marker(enum relstack_marker m)
{
	struct relstack_format f;

	relstack_format_native(&f);
	return relstack_word_marker(&f, m);
}

static void through_broken_b_the_walk_believes_a_fake_end_and_the_checker_does_not(void **state)
{
	check_a(broken_b, capture_here);
	/*
	 * capture_here, broken_b, then the fake record: _start and END.  The
	 * frame-pointer chain cannot tell; this is why the checker exists.
	 */
	assert_int_equal(plain.v.reasons, 0);
	assert_int_equal(plain.n, 4);
	assert_true(plain.w[3] == native_marker(RELSTACK_MARKER_END));
	/* the same frames (the first word: the other call site in capture_here), and the disagreement named */
	assert_int_equal(checked.v.reasons, RELSTACK_UNRELIABLE_FP_MISMATCH);
	assert_int_equal(checked.n, 3);
	assert_memory_equal(checked.w + 1, plain.w + 1, 2 * sizeof(uint64_t));
}

static void the_checker_finds_nothing_on_a_stack_that_keeps_the_rules(void **state)
{
	check_a(fine_b, capture_here);
	/* capture_here, fine_b, check_a, the test runner's frames...: the same with and without the check */
	assert_int_equal(checked.n, plain.n);
	assert_memory_equal(checked.w + 1, plain.w + 1, (size_t)(plain.n - 1) * sizeof(uint64_t));
	assert_false(checked.v.reasons & RELSTACK_UNRELIABLE_FP_MISMATCH);
	assert_int_equal(checked.v.reasons, plain.v.reasons);
	assert_int_equal(relstack_capture(plain.w, MAXW, 0, 0x4, &plain.v), -22); /* unknown flag: -EINVAL */
}

/* ---- sampling ---- */

static volatile sig_atomic_t stop;
static _Atomic unsigned samples, mismatches, reliable_samples;

__attribute__((noinline)) void spin_here(void)
{
	for (volatile unsigned i = 0; i < 20000 && !stop; i++)
		;
}

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	uint64_t w[MAXW];
	struct relstack_verdict v;

	relstack_capture_context(uc, w, MAXW, RELSTACK_CAPTURE_CHECK, &v);
	samples++;
	mismatches += !!(v.reasons & RELSTACK_UNRELIABLE_FP_MISMATCH);
	reliable_samples += v.reasons == 0;
}

struct sampled {
	void (*b)(void (*)(void));
	unsigned samples, mismatches;
};

static void *sampled_thread(void *arg)
{
	struct sampled *s = arg;
	struct sigevent ev = { 0 };
	struct itimerspec its = { { 0, 200000 }, { 0, 200000 } };
	timer_t t;
	time_t end = time(NULL) + 20;

	relstack_thread_register();
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGPROF;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t))
		return NULL;
	samples = mismatches = 0;
	timer_settime(t, 0, &its, NULL);
	while (samples < 300 && time(NULL) < end)
		check_a(s->b, spin_here);
	timer_delete(t);
	s->samples = samples;
	s->mismatches = mismatches;
	return arg;
}

static void sample(struct sampled *s)
{
	struct sigaction sa = { .sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t th;
	void *ret;

	sigaction(SIGPROF, &sa, NULL);
	assert_int_equal(pthread_create(&th, NULL, sampled_thread, s), 0);
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_ptr_equal(ret, s);
	signal(SIGPROF, SIG_IGN);
}

static void a_sampler_with_the_checker_finds_the_broken_function(void **state)
{
	struct sampled broken = { broken_b, 0, 0 }, fine = { fine_b, 0, 0 };

#if defined(__SANITIZE_THREAD__)
	fprintf(stderr, "skipped: ThreadSanitizer calls signal handlers itself, later\n");
	skip();
#endif
	sample(&broken);
	sample(&fine);
	fprintf(stderr, "through broken_b: %u of %u samples fp-mismatch; through fine_b: %u of %u\n",
		broken.mismatches, broken.samples, fine.mismatches, fine.samples);
	assert_true(broken.samples >= 100 && fine.samples >= 100);
	/* most samples land in spin_here, below broken_b */
	assert_true(broken.mismatches > broken.samples / 2);
	assert_int_equal(fine.mismatches, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(through_broken_b_the_walk_believes_a_fake_end_and_the_checker_does_not),
		cmocka_unit_test(the_checker_finds_nothing_on_a_stack_that_keeps_the_rules),
		cmocka_unit_test(a_sampler_with_the_checker_finds_the_broken_function),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
