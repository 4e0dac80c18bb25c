// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stack ranges: which memory a capture on this thread may read.
 *
 * Owns the per-thread cache (struct rs_thread_stack, in initial-exec TLS
 * so that a signal handler reaches it with one %fs-relative load, no
 * __tls_get_addr and no allocation).  The TLS block (rs_tls)
 * also holds unwind.c's struct rs_fast_cache, so that the capture path
 * reaches both from one thread-pointer offset.
 *
 * The cache is filled outside the capture path, where system calls are
 * allowed: by the library's constructor for the thread that loads it
 * (the main thread for a linked or preloaded library), and by
 * relstack_thread_register() for every other thread.  A capture on a
 * thread whose cache is empty reads no stack at all (docs/unwinder.md).
 *
 * Ordering: only the owning thread writes its cache, and only signal
 * handlers on that same thread can interrupt it, so compiler fences are
 * enough.  The writer clears valid and sets stack.lo to UINTPTR_MAX (W1),
 * fills the other fields (W2), sets stack.lo and valid (W3); a reader
 * loads valid (R1) and then the fields (R2).  R1 pairs with W1/W3 through
 * atomic_signal_fence: a handler that runs between W1 and W3 sees
 * valid == 0 and uses no field.  relstack_capture()'s fast path reads
 * stack.lo instead of valid (R1'): UINTPTR_MAX, as before the first
 * registration, is below no frame pointer and sends it to the path that
 * reads valid; any other value was read before W1 or after W3, with the
 * fields that go with it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "capture/objtab.h"
#include "capture/unwind-local.h"

__thread struct rs_thread_cache rs_tls __attribute__((tls_model("initial-exec"))) = {
	.stack.stack.lo = UINTPTR_MAX, /* unknown: see R1' above */
	.fast.fast_seq = UINT64_MAX,   /* empty: see walk_fast() in unwind.c */
};

bool rs_thread_stack_get(struct rs_thread_stack *out)
{
	/* R1: pairs with W3 */
	if (!atomic_load_explicit(&rs_tls.stack.valid, memory_order_relaxed))
		return false;
	atomic_signal_fence(memory_order_acquire);
	/* R2 */
	out->stack = rs_tls.stack.stack;
	out->alt = rs_tls.stack.alt;
	return true;
}

static void thread_stack_set(const struct rs_thread_stack *ts)
{
	/* W1 */
	atomic_store_explicit(&rs_tls.stack.valid, 0, memory_order_relaxed);
	rs_tls.stack.stack.lo = UINTPTR_MAX;
	atomic_signal_fence(memory_order_release);
	/* W2 */
	rs_tls.stack.stack.hi = ts->stack.hi;
	rs_tls.stack.alt = ts->alt;
	/* W3: pairs with R1 and R1' */
	atomic_signal_fence(memory_order_release);
	rs_tls.stack.stack.lo = ts->stack.lo;
	atomic_store_explicit(&rs_tls.stack.valid, 1, memory_order_relaxed);
}

static int learn_ranges(struct rs_thread_stack *ts)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	stack_t ss;
	int err;

	memset(ts, 0, sizeof(*ts));
	err = pthread_getattr_np(pthread_self(), &a);
	if (err)
		return -err;
	err = pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (err)
		return -err;
	if ((uintptr_t)addr + size < (uintptr_t)addr)
		return -ERANGE;
	ts->stack.lo = (uintptr_t)addr;
	ts->stack.hi = (uintptr_t)addr + size;
	if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) && ss.ss_size &&
	    (uintptr_t)ss.ss_sp + ss.ss_size > (uintptr_t)ss.ss_sp) {
		ts->alt.lo = (uintptr_t)ss.ss_sp;
		ts->alt.hi = (uintptr_t)ss.ss_sp + ss.ss_size;
	}
	return 0;
}

int relstack_thread_register(void)
{
	struct rs_thread_stack ts;
	int saved = errno, ret;

	ret = learn_ranges(&ts);
	if (ret == 0)
		thread_stack_set(&ts);
	errno = saved;
	return ret;
}

/* The loading thread's ranges. */
__attribute__((constructor)) static void stack_init(void)
{
	struct rs_thread_stack ts;
	int saved = errno;

	if (learn_ranges(&ts) == 0)
		thread_stack_set(&ts);
	errno = saved;
}
