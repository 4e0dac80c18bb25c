// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stop one thread, read it, release it.
 *
 * The thread is seized (PTRACE_SEIZE: no SIGSTOP is sent, the process's
 * job control sees nothing) and interrupted (PTRACE_INTERRUPT), which
 * stops it wherever it is: running, or blocked in a system call, which
 * the kernel restarts when the thread is released (the thread sees no
 * EINTR).  Then two reads: its registers (PTRACE_GETREGSET), and its
 * stack from the red zone below the stack pointer to the top of the
 * mapping holding it (process_vm_readv, one call), and it is released
 * (PTRACE_DETACH).  A thread in group stop (SIGSTOP, ^Z) reports that
 * stop and stays stopped when released; a thread caught at a signal
 * about to be delivered gets that signal back when released.
 *
 * A thread that ends meanwhile (or a process that exits) shows as its
 * wait returning an exit, or ESRCH from any step: the thread's err is
 * -ESRCH.  The wait has a deadline, so a thread in uninterruptible sleep
 * cannot hang the command: it is reported as not stopped (-ETIMEDOUT);
 * if it cannot be released yet, the kernel releases it when this process
 * exits.
 */
#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live/live.h"

/* src/live/arch/<cpu>/, chosen by the build */
#include "live-arch.h"

/* How long a thread may take to stop before it is reported as not stopped. */
#define STOP_DEADLINE_NS 2000000000ull
/* Stacks larger than this are not copied: the thread is reported, not walked. */
#define STACK_COPY_MAX ((size_t)256 << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Wait for @tid's stop.  *@inject: the signal to give back on release (a
 * signal-delivery stop's), 0 for the interrupt's stop or a group stop.
 */
static int wait_stop(pid_t tid, int *inject)
{
	uint64_t deadline = now_ns() + STOP_DEADLINE_NS;

	for (unsigned spins = 0;; spins++) {
		int st;
		pid_t r = waitpid(tid, &st, __WALL | WNOHANG);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == ECHILD ? -ESRCH : -errno;
		if (r == tid) {
			if (WIFEXITED(st) || WIFSIGNALED(st))
				return -ESRCH;
			if (WIFSTOPPED(st)) {
				*inject = (st >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(st);
				return 0;
			}
		}
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		/* a running thread stops within microseconds: yield first, sleep only for slow ones */
		if (spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
}

static const struct rs_live_map *map_of(const struct rs_live_snapshot *s, uintptr_t addr)
{
	unsigned lo = 0, hi = s->nmaps;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (addr < s->maps[mid].start)
			hi = mid;
		else if (addr >= s->maps[mid].end)
			lo = mid + 1;
		else
			return &s->maps[mid];
	}
	return NULL;
}

/* The lowest stack address a thread at @sp may use (its red zone), not below the mapping's @start. */
static uintptr_t red_zone_bottom(uintptr_t sp, uintptr_t start)
{
	uintptr_t red = RS_LIVE_ARCH_RED_ZONE; /* 0 on some CPUs: a variable keeps the test meaningful */

	return sp - start >= red ? sp - red : start;
}

static int fail(struct rs_live_thread *t, int err, const char *what)
{
	t->err = err;
	t->what = what;
	return 0;
}

int rs_live_thread_read(struct rs_live_snapshot *s, struct rs_live_thread *t, void **copy, uintptr_t *lo,
			uintptr_t *hi)
{
	const struct rs_live_map *m;
	rs_live_arch_regs regs;
	struct iovec iov = { &regs, sizeof(regs) }, local, remote;
	uint64_t t0;
	int inject = 0, e;
	char msg[160];
	void *buf;

	*copy = NULL;
	if (ptrace(PTRACE_SEIZE, t->tid, 0, 0) != 0)
		return errno == EPERM ? -EPERM : fail(t, -errno, "attach");
	t0 = now_ns();
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) != 0) {
		e = -errno;
		ptrace(PTRACE_DETACH, t->tid, 0, 0);
		return fail(t, e, "stop");
	}
	e = wait_stop(t->tid, &inject);
	if (e) {
		ptrace(PTRACE_DETACH, t->tid, 0, 0);
		return fail(t, e, "stop");
	}
	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) != 0) {
		e = -errno;
		goto release;
	}
	rs_live_arch_start(&regs, &t->pc, &t->sp, &t->fp);
	m = map_of(s, t->sp);
	if (!m && rs_live_maps_read(s, msg, sizeof(msg)) == 0)
		m = map_of(s, t->sp); /* a thread started after the maps were read */
	if (!m) {
		e = -EFAULT;
		goto release;
	}
	*lo = red_zone_bottom(t->sp, m->start);
	*hi = m->end;
	if (*hi - *lo > STACK_COPY_MAX) {
		e = -EFBIG;
		goto release;
	}
	buf = malloc(*hi - *lo);
	if (!buf) {
		e = -ENOMEM;
		goto release;
	}
	local = (struct iovec){ buf, *hi - *lo };
	remote = (struct iovec){ (void *)*lo, *hi - *lo };
	if (process_vm_readv(t->tid, &local, 1, &remote, 1, 0) != (ssize_t)(*hi - *lo)) {
		e = errno ? -errno : -EIO;
		free(buf);
		goto release;
	}
	ptrace(PTRACE_DETACH, t->tid, 0, (void *)(uintptr_t)inject);
	t->stopped_ns = now_ns() - t0;
	t->stack_bytes = *hi - *lo;
	*copy = buf;
	return 0;
release:
	ptrace(PTRACE_DETACH, t->tid, 0, (void *)(uintptr_t)inject);
	t->stopped_ns = now_ns() - t0;
	return fail(t, e, e == -EFAULT || e == -EFBIG || e == -ENOMEM || t->pc ? "stack" : "registers");
}
