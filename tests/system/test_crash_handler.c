// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The crash handler, tested by crashing: a forked child installs it and
 * faults for real; the parent checks that the child died of that signal
 * (the signal took its course) and that the file holds the crash event,
 * with the signal's details and a stack whose first frame is the faulting
 * function.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"

/* Whether an integer division by zero traps (the build says; aarch64's gives 0). */
#ifndef RS_DIVIDE_TRAPS
#define RS_DIVIDE_TRAPS 1
#endif
/* An instruction that raises SIGILL (aarch64's __builtin_trap() is a breakpoint: SIGTRAP). */
#ifdef RS_UDF
#define RS_ILLEGAL_INSTRUCTION() __asm__ volatile(RS_UDF)
#else
#define RS_ILLEGAL_INSTRUCTION() __builtin_trap()
#endif

static char dir[64], path[128];
static volatile int *shared;

static int setup(void **state)
{
	strcpy(dir, "/tmp/rs-crashh-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/buf", dir);
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return shared == MAP_FAILED ? -1 : 0;
}

static int teardown(void **state)
{
	char p[160];

	unlink(path);
	snprintf(p, sizeof(p), "%s/bus", dir);
	unlink(p);
	rmdir(dir);
	munmap((void *)shared, 4096);
	return 0;
}

__attribute__((noinline)) static void null_deref(void)
{
	volatile int *volatile p = (volatile int *)(uintptr_t)16;

	*p = 1;
}

__attribute__((noinline)) static int divide(volatile int d)
{
	return 100 / d;
}

__attribute__((noinline)) static void bus_error(void)
{
	char p[160];
	int fd;
	volatile char *m;

	snprintf(p, sizeof(p), "%s/bus", dir);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (ftruncate(fd, 4096) < 0)
		_exit(3);
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ftruncate(fd, 0) < 0)
		_exit(3);
	m[0] = 1;
}

__attribute__((noinline)) static int overflow(int n)
{
	volatile char big[4096];

	big[0] = (char)n;
	if (n < (1 << 30))
		return overflow(n + 1) + big[0];
	return big[0];
}

static void prev_handler(int sig, siginfo_t *si, void *uc)
{
	shared[0]++;
	signal(sig, SIG_DFL); /* and let the fault happen again, fatally */
}

enum how { SEGV, ABRT, FPE, ILL, BUS, STACK_OVERFLOW, CHAINED, KILLED_BY_USER };

static void crash(enum how how)
{
	struct relstack_recorder *rec;
	struct sigaction sa = { .sa_sigaction = prev_handler, .sa_flags = SA_SIGINFO };

	/* the test framework catches these signals too: start from the defaults */
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	if (how == CHAINED)
		sigaction(SIGSEGV, &sa, NULL);
	rec = relstack_recorder__open(path, NULL);
	if (!rec || relstack_recorder__install_crash_handler(rec) != 0)
		_exit(2);
	switch (how) {
	case SEGV:
	case CHAINED:
		null_deref();
		break;
	case ABRT:
		abort();
	case FPE:
		divide(0);
		break;
	case ILL:
		RS_ILLEGAL_INSTRUCTION();
		break;
	case BUS:
		bus_error();
		break;
	case STACK_OVERFLOW:
		overflow(0);
		break;
	case KILLED_BY_USER:
		kill(getpid(), SIGSEGV);
		break;
	}
	_exit(4);
}

/* Runs @how in a child; returns the signal it died of.  Fills the crash event's fields. */
static int run(enum how how, struct relstack_record *out, uint64_t *words, int64_t f[5])
{
	static const char *names[] = { "signo", "code", "errno", "pid", "addr" };
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record rec;
	int status, found = 0;
	pid_t pid;

	unlink(path);
	shared[0] = 0;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		crash(how);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &rec) > 0) {
		assert_int_equal(rec.event_id, RELSTACK_EVENT_CRASH);
		assert_string_equal(rec.event_name, "crash");
		*out = rec;
		memcpy(words, rec.words, rec.nwords * sizeof(*words));
		for (unsigned i = 0; i < 5; i++)
			assert_int_equal(relstack_record__field_int(&rec, names[i], &f[i]), 0);
		found++;
	}
	assert_int_equal(found, 1); /* one crash, one record: the handler did not loop */
	relstack_cursor__free(c);
	relstack_reader__close(r);
	return WTERMSIG(status);
}

/* @rec's first frame is in @fn, and its verdict is @reasons. */
static void first_frame_is(const uint64_t *words, const struct relstack_record *rec, uintptr_t fn, uint32_t reasons)
{
	struct relstack_entry e, want;
	struct relstack_format fmt;
	uint64_t w;

	relstack_format_native(&fmt);
	assert_true(rec->nwords >= 1);
	assert_int_equal(rec->reasons, reasons);
	relstack_word_decode(&fmt, words[0], &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	/* the faulting pc lies in @fn: same object, offset a little past its entry */
	assert_int_equal(relstack_encode(&fn, &w, 1, 0, NULL), 1);
	relstack_word_decode(&fmt, w, &want);
	assert_int_equal(e.slot, want.slot);
	assert_true(e.offset >= want.offset && e.offset < want.offset + 256);
}

static void a_null_dereference_is_recorded_with_the_fault_address_and_still_kills(void **state)
{
	struct relstack_record rec;
	uint64_t words[256];
	int64_t f[5];

	assert_int_equal(run(SEGV, &rec, words, f), SIGSEGV);
	assert_int_equal(f[0], SIGSEGV);
	assert_int_equal(f[1], SEGV_MAPERR);
	assert_int_equal(f[4], 16); /* in the first 64 KiB: reveals no layout, kept */
	first_frame_is(words, &rec, (uintptr_t)null_deref, 0); /* the faulting row proves the stack */
}

static void abort_is_recorded_and_the_process_still_aborts(void **state)
{
	struct relstack_record rec;
	uint64_t words[256];
	int64_t f[5];

	assert_int_equal(run(ABRT, &rec, words, f), SIGABRT);
	assert_int_equal(f[0], SIGABRT);
	assert_true(f[1] <= 0); /* sent by a process (abort raises it): no fault address */
	assert_true(f[3] > 0);  /* the sender's pid */
	assert_int_equal(f[4], 0);
	assert_true(rec.nwords >= 1); /* the pc in libc's raise, at least */
}

static void divide_by_zero_illegal_instruction_and_bus_error_are_recorded(void **state)
{
	struct relstack_record rec;
	uint64_t words[256];
	int64_t f[5];

	if (RS_DIVIDE_TRAPS) {
		assert_int_equal(run(FPE, &rec, words, f), SIGFPE);
		assert_int_equal(f[0], SIGFPE);
		assert_int_equal(f[1], FPE_INTDIV);
		first_frame_is(words, &rec, (uintptr_t)divide, 0);
	} else {
		print_message("not testable here: integer division by zero does not trap on this CPU\n");
	}

	assert_int_equal(run(ILL, &rec, words, f), SIGILL);
	assert_int_equal(f[0], SIGILL);
	assert_true(rec.nwords >= 1);

	assert_int_equal(run(BUS, &rec, words, f), SIGBUS);
	assert_int_equal(f[0], SIGBUS);
	first_frame_is(words, &rec, (uintptr_t)bus_error, 0);
}

static void a_stack_overflow_is_recorded_on_the_alternate_stack(void **state)
{
	struct relstack_record rec;
	uint64_t words[256];
	int64_t f[5];

	assert_int_equal(run(STACK_OVERFLOW, &rec, words, f), SIGSEGV);
	assert_int_equal(f[0], SIGSEGV);
	/* the stack pointer left the stack: nothing proven */
	first_frame_is(words, &rec, (uintptr_t)overflow,
		       RELSTACK_UNRELIABLE_ASYNC_START | RELSTACK_UNRELIABLE_OUTSIDE_STACK);
}

static void the_handler_installed_before_still_runs_after_the_record(void **state)
{
	struct relstack_record rec;
	uint64_t words[256];
	int64_t f[5];

	assert_int_equal(run(CHAINED, &rec, words, f), SIGSEGV);
	assert_int_equal(shared[0], 1);
	assert_int_equal(f[0], SIGSEGV);
}

static void a_signal_sent_by_a_process_is_recorded_with_its_sender(void **state)
{
	struct relstack_record rec;
	uint64_t words[256];
	int64_t f[5];

	assert_int_equal(run(KILLED_BY_USER, &rec, words, f), SIGSEGV);
	assert_int_equal(f[1], SI_USER);
	assert_true(f[3] > 0);
	assert_int_equal(f[4], 0);
}

static void install_twice_is_refused_and_uninstall_restores(void **state)
{
	struct relstack_recorder *rec = relstack_recorder__open(path, NULL);
	struct sigaction cur, before;

	assert_non_null(rec);
	sigaction(SIGSEGV, NULL, &before);
	assert_int_equal(relstack_recorder__install_crash_handler(rec), 0);
	assert_int_equal(relstack_recorder__install_crash_handler(rec), -EBUSY);
	sigaction(SIGSEGV, NULL, &cur);
	assert_true(cur.sa_flags & SA_ONSTACK);
	assert_int_equal(relstack_crash_handler__uninstall(), 0);
	sigaction(SIGSEGV, NULL, &cur);
	assert_true(cur.sa_sigaction == before.sa_sigaction);
	assert_int_equal(relstack_crash_handler__uninstall(), -ENOENT);
	assert_int_equal(relstack_recorder__install_crash_handler(rec), 0);
	relstack_recorder__close(rec); /* uninstalls */
	sigaction(SIGSEGV, NULL, &cur);
	assert_true(cur.sa_sigaction == before.sa_sigaction);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_null_dereference_is_recorded_with_the_fault_address_and_still_kills),
		cmocka_unit_test(abort_is_recorded_and_the_process_still_aborts),
		cmocka_unit_test(divide_by_zero_illegal_instruction_and_bus_error_are_recorded),
		cmocka_unit_test(a_stack_overflow_is_recorded_on_the_alternate_stack),
		cmocka_unit_test(the_handler_installed_before_still_runs_after_the_record),
		cmocka_unit_test(a_signal_sent_by_a_process_is_recorded_with_its_sender),
		cmocka_unit_test(install_twice_is_refused_and_uninstall_restores),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
