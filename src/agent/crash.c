// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The crash handler: the faulting context's stack, with its verdict and
 * the signal's details, into a recorder, and then the signal takes its
 * course.
 *
 * In the handler (async-signal-safe: relstack_recorder__record_context(),
 * sigaction(2), raise(3)):
 *   1  record a RELSTACK_EVENT_CRASH event from the signal's ucontext;
 *   2  put back the action that was installed before ours, for this
 *      signal only, so a second crash cannot loop through us;
 *   3  a fault the kernel raised (si_code > 0, not SIGABRT): return; the
 *      faulting instruction runs again, faults again, and the previous
 *      action (a handler, or the default: core dump) gets it with the
 *      original siginfo;
 *      a signal a process sent (kill, raise, abort): call the previous
 *      handler with our siginfo, or, for the default action, raise the
 *      signal again - it stays pending until we return, then kills.
 *
 * The handler runs on an alternate signal stack (SA_ONSTACK), so a stack
 * overflow is recorded too, on the threads that have one: the installing
 * thread gets one, other threads call relstack_crash_handler__thread_init().
 * Faulting addresses are written only when the run may hold addresses, or
 * when they lie in the first 64 KiB (a NULL dereference reveals nothing).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "agent/agent-local.h"

#define RS_ALTSTACK (64u << 10)

static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
static struct relstack_recorder *_Atomic crash_rec;
static struct sigaction crash_prev[NSIG];

static bool is_fault(int signo, const siginfo_t *info)
{
	return info && info->si_code > 0 && signo != SIGABRT;
}

static void crash_handler(int signo, siginfo_t *info, void *uc)
{
	int saved = errno;
	/* 1: pairs with the release store in install */
	struct relstack_recorder *rec = atomic_load_explicit(&crash_rec, memory_order_acquire);
	const struct sigaction *prev = &crash_prev[signo];

	if (rec) {
		struct relstack_crash_fields f;

		memset(&f, 0, sizeof(f));
		f.signo = signo;
		if (info) {
			f.code = info->si_code;
			f.errno_ = info->si_errno;
			if (info->si_code <= 0)
				f.pid = (uint32_t)info->si_pid;
			if (is_fault(signo, info)) {
				uint64_t addr = (uint64_t)(uintptr_t)info->si_addr;

				if ((rec->flags & RELSTACK_RECORDER_ABSOLUTE) || addr < 65536)
					f.addr = addr;
				else
					f.flags |= RELSTACK_CRASH_ADDR_HIDDEN;
			}
		}
		relstack_recorder__record_context(rec, uc, RELSTACK_EVENT_CRASH, &f, sizeof(f), 0);
	}
	/* 2 */
	sigaction(signo, prev, NULL);
	/* 3 */
	if (!is_fault(signo, info)) {
		if (prev->sa_flags & SA_SIGINFO) {
			if (prev->sa_sigaction)
				prev->sa_sigaction(signo, info, uc);
		} else if (prev->sa_handler == SIG_DFL) {
			raise(signo);
		} else if (prev->sa_handler != SIG_IGN) {
			prev->sa_handler(signo);
		}
	}
	errno = saved;
}

int relstack_crash_handler__thread_init(void)
{
	stack_t cur, ss;
	void *mem;

	if (sigaltstack(NULL, &cur) < 0)
		return -errno;
	if (!(cur.ss_flags & SS_DISABLE) && cur.ss_size >= RS_ALTSTACK)
		return relstack_thread_register();
	/* one guard page below the stack: an overflow of the handler faults, never scribbles */
	mem = mmap(NULL, RS_ALTSTACK + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	mprotect(mem, 4096, PROT_NONE);
	ss.ss_sp = (char *)mem + 4096;
	ss.ss_size = RS_ALTSTACK;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) < 0) {
		int err = errno;

		munmap(mem, RS_ALTSTACK + 4096);
		return -err;
	}
	/* the unwinder learns the new stack range */
	return relstack_thread_register();
}

int relstack_recorder__install_crash_handler(struct relstack_recorder *rec)
{
	struct sigaction sa;
	int ret;

	if (!rec)
		return -EINVAL;
	pthread_mutex_lock(&crash_lock);
	if (atomic_load_explicit(&crash_rec, memory_order_relaxed)) {
		pthread_mutex_unlock(&crash_lock);
		return -EBUSY;
	}
	/*
	 * The alternate stack, with which the unwinder learns the thread's
	 * stacks; then the thread id, what relstack_recorder__thread_init()
	 * adds (calling it would learn the stacks a second time).
	 */
	ret = relstack_crash_handler__thread_init();
	rs_ring_tid();
	if (ret < 0) {
		pthread_mutex_unlock(&crash_lock);
		return ret;
	}
	/* 1: pairs with the acquire load in the handler */
	atomic_store_explicit(&crash_rec, rec, memory_order_release);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = crash_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < RS_ARRAY_SIZE(crash_signals); i++)
		sigaction(crash_signals[i], &sa, &crash_prev[crash_signals[i]]);
	pthread_mutex_unlock(&crash_lock);
	return 0;
}

static int uninstall_locked(void)
{
	if (!atomic_load_explicit(&crash_rec, memory_order_relaxed))
		return -ENOENT;
	for (unsigned i = 0; i < RS_ARRAY_SIZE(crash_signals); i++) {
		struct sigaction cur;
		int s = crash_signals[i];

		/* only where ours is still installed: a later handler stays */
		if (sigaction(s, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == crash_handler)
			sigaction(s, &crash_prev[s], NULL);
	}
	atomic_store_explicit(&crash_rec, NULL, memory_order_release);
	return 0;
}

int relstack_crash_handler__uninstall(void)
{
	int ret;

	pthread_mutex_lock(&crash_lock);
	ret = uninstall_locked();
	pthread_mutex_unlock(&crash_lock);
	return ret;
}

void rs_crash_handler_forget(struct relstack_recorder *rec)
{
	pthread_mutex_lock(&crash_lock);
	if (atomic_load_explicit(&crash_rec, memory_order_relaxed) == rec)
		uninstall_locked();
	pthread_mutex_unlock(&crash_lock);
}

/*
 * For an interposed sigaction(2) (the preloaded agent): while our handler
 * holds @signo, the program reads and sets the action we chain to, so its
 * own handler still runs after ours.  Returns 1 if it did, 0 if the
 * signal is not ours (the caller then makes the real call).
 */
int rs_crash_handler_chain(int signo, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction cur;

	if (signo <= 0 || signo >= NSIG || !atomic_load_explicit(&crash_rec, memory_order_acquire))
		return 0;
	if (sigaction(signo, NULL, &cur) < 0 || !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != crash_handler)
		return 0;
	if (old)
		*old = crash_prev[signo];
	if (act)
		crash_prev[signo] = *act;
	return 1;
}
