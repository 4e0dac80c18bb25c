// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * aarch64 signal frames as the kernel lays them out (under qemu-user, as
 * qemu does, the same layout): a capture in a handler crosses the frame
 * through the handler's frame record {the kernel's frame record, the
 * trampoline}, the ucontext before that record, and goes on from the
 * interrupted pc - here inside the C library's system call, a leaf whose
 * return address is still in x30.  The handler is installed with a
 * restorer of the test's own (restorer.S) by the raw system call, since
 * glibc passes none on aarch64 and qemu-user maps no vDSO.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <cmocka.h>

#include "capture/objtab-local.h"
#include "relstack/relstack.h"

#define MAXW 64
#define RS_SA_RESTORER 0x04000000

void rs_test_restorer(void);
void handler(int sig, siginfo_t *si, void *uc);
void sender(void);

/* The kernel's struct sigaction (include/uapi/asm-generic/signal.h). */
struct ksigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static struct {
	int n;
	uint64_t w[MAXW];
	struct relstack_verdict v;
} cap;

__attribute__((noinline)) void handler(int sig, siginfo_t *si, void *uc)
{
	cap.n = relstack_capture(cap.w, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &cap.v);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void sender(void)
{
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

static int index_of(uint64_t word)
{
	for (int i = 0; i < cap.n; i++)
		if (cap.w[i] == word)
			return i;
	return -1;
}

/* Is @w a return address into (or a pc of) @fn, within its first 256 bytes? */
static bool in_fn(uint64_t w, void (*fn)(void))
{
	return w - (uintptr_t)fn < 256;
}

static void a_handler_capture_crosses_the_kernel_signal_frame_to_the_sender(void **state)
{
	struct ksigaction sa = { handler, SA_SIGINFO | RS_SA_RESTORER, rs_test_restorer, 0 }, old;
	struct rs_lookup l;
	int s;

	assert_int_equal(relstack_thread_register(), 0);
	assert_true(relstack_objtab__refresh() >= 0);
	/* the premise: the object table found the restorer by its signal CIE */
	assert_true(rs_objtab_lookup((uintptr_t)rs_test_restorer, &l));
	assert_true(l.restorer == (uintptr_t)rs_test_restorer);
	assert_int_equal(syscall(SYS_rt_sigaction, SIGUSR1, &sa, &old, 8), 0);
	sender();
	syscall(SYS_rt_sigaction, SIGUSR1, &old, NULL, 8);

	/* handler, the signal marker, then the interrupted pc and its callers: sender among them */
	assert_true(cap.n > 3);
	assert_true(in_fn(cap.w[0], (void (*)(void))handler));
	s = index_of(RS_NATIVE_SIGNAL);
	assert_int_equal(s, 1);
	for (int i = s + 1; i < cap.n; i++)
		if (in_fn(cap.w[i], sender)) {
			s = -1;
			break;
		}
	assert_int_equal(s, -1);
	/* the interrupted pc's row proves its frame: reliable across the signal frame, to END */
	assert_int_equal(cap.v.reasons, 0);
	assert_true(cap.w[cap.n - 1] == RS_NATIVE_END);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_handler_capture_crosses_the_kernel_signal_frame_to_the_sender),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
