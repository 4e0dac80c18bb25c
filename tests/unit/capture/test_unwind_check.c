// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A function that breaks the frame-pointer rules: broken_b, in assembly
 * (arch/<cpu>/broken-b.S), saves the frame pointer as an ordinary
 * register and points it at two words of its own making (a saved frame
 * pointer of 0 and the program's outermost return address, _start + 1),
 * then calls on.  Its CFI is honest.  A frame-pointer walk through it
 * would believe the fake record and end the stack at _start, "reliable";
 * the walk follows a frame record only where the row of the call proves
 * it, so broken_b (whose row keeps the CFA on the stack pointer) is
 * followed by its CFI, to its true caller, with and without the stack
 * checker (RELSTACK_CAPTURE_CHECK), which then finds nothing to disagree
 * with.  Then the seed's way: a timer samples a thread that runs through
 * broken_b, and no sample is fooled.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* The program's outermost return address that broken_b's fake record holds. */
extern char _start[];
#define FAKE_END ((uint64_t)(uintptr_t)_start + 1)

/* capture_here through @b: check_a's frame is the same for any b. */
__attribute__((noinline)) static void capture_through(void (*b)(void (*)(void)))
{
	check_a(b, capture_here);
	__asm__ volatile("" ::: "memory");
}

static void through_broken_b_the_walk_follows_its_cfi_past_the_fake_record(void **state)
{
	int fine_n;
	uint64_t fine_w[MAXW];
	struct relstack_verdict fine_v;

	capture_through(fine_b);
	fine_n = plain.n;
	memcpy(fine_w, plain.w, sizeof(fine_w));
	fine_v = plain.v;
	capture_through(broken_b);
	/*
	 * capture_here, broken_b, then check_a and every frame above it,
	 * exactly as through fine_b: not the fake record's _start.
	 */
	assert_int_equal(plain.n, fine_n);
	assert_int_equal(plain.v.reasons, fine_v.reasons);
	/* (capture_through's return address differs: two call sites here) */
	assert_true(fine_n > 6);
	assert_memory_equal(plain.w + 2, fine_w + 2, 2 * sizeof(uint64_t));
	assert_memory_equal(plain.w + 5, fine_w + 5, (size_t)(fine_n - 5) * sizeof(uint64_t));
	for (int i = 0; i < plain.n; i++)
		assert_true(plain.w[i] != FAKE_END);
	if (!plain.v.reasons)
		assert_true(plain.w[plain.n - 1] == native_marker(RELSTACK_MARKER_END));
	/* the checker walks the same frames (the first word: the other call site in capture_here), and agrees */
	assert_int_equal(checked.v.reasons, plain.v.reasons);
	assert_int_equal(checked.n, plain.n);
	assert_memory_equal(checked.w + 1, plain.w + 1, (size_t)(plain.n - 1) * sizeof(uint64_t));
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
static _Atomic unsigned samples, mismatches, reliable_samples, fooled;

__attribute__((noinline)) void spin_here(void)
{
	for (volatile unsigned i = 0; i < 20000 && !stop; i++)
		;
}

static void on_prof(int sig, siginfo_t *si, void *uc)
{
	uint64_t w[MAXW];
	struct relstack_verdict v;

	int n = relstack_capture_context(uc, w, MAXW, RELSTACK_CAPTURE_CHECK | RELSTACK_CAPTURE_ABSOLUTE, &v);
	bool fake = false;

	for (int i = 0; i < n; i++)
		fake |= w[i] == FAKE_END;
	samples++;
	mismatches += !!(v.reasons & RELSTACK_UNRELIABLE_FP_MISMATCH);
	reliable_samples += v.reasons == 0;
	fooled += fake;
}

struct sampled {
	void (*b)(void (*)(void));
	unsigned samples, mismatches, reliable, fooled;
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
	samples = mismatches = reliable_samples = fooled = 0;
	timer_settime(t, 0, &its, NULL);
	while (samples < 300 && time(NULL) < end)
		check_a(s->b, spin_here);
	timer_delete(t);
	s->samples = samples;
	s->mismatches = mismatches;
	s->reliable = reliable_samples;
	s->fooled = fooled;
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

static void a_sampler_through_the_broken_function_is_never_fooled(void **state)
{
	struct sampled broken = { broken_b, 0, 0, 0, 0 }, fine = { fine_b, 0, 0, 0, 0 };

#if defined(__SANITIZE_THREAD__)
	fprintf(stderr, "skipped: ThreadSanitizer calls signal handlers itself, later\n");
	skip();
#endif
	sample(&broken);
	sample(&fine);
	fprintf(stderr, "through broken_b: %u samples, %u reliable, %u through the fake record, %u fp-mismatch; "
		"through fine_b: %u samples, %u reliable, %u fp-mismatch\n",
		broken.samples, broken.reliable, broken.fooled, broken.mismatches, fine.samples, fine.reliable,
		fine.mismatches);
	assert_true(broken.samples >= 100 && fine.samples >= 100);
	/* most samples land in spin_here, below broken_b: proven frame by frame, to the true end */
	assert_int_equal(broken.fooled, 0);
	assert_true(broken.reliable > broken.samples / 2);
	assert_int_equal(broken.mismatches, 0);
	assert_int_equal(fine.mismatches, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(through_broken_b_the_walk_follows_its_cfi_past_the_fake_record),
		cmocka_unit_test(the_checker_finds_nothing_on_a_stack_that_keeps_the_rules),
		cmocka_unit_test(a_sampler_through_the_broken_function_is_never_fooled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
