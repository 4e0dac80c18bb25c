// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A target for `relstack ps`: threads parked in known call chains, each
 * in a different state, and its own checks that being snapshot changed
 * nothing it can see.
 *
 *   reader     reader_outer > reader_inner > read() on a pipe
 *   sleeper    sleeper_outer > sleeper_inner > nanosleep(), in a loop
 *   waiter     waiter_outer > waiter_inner > pthread_cond_wait()
 *   spinner1,2 spinner_outer > spinner_inner, counting
 *   handler    handler_outer > handler_inner, in which SIGUSR1's handler
 *              on_usr1 > handler_sleep sleeps (nanosleep) until the end
 *   deep       deep(20) > deep(19) > ... > deep(1) > deep_bottom > nanosleep()
 *   stranger   stranger_outer > code in an anonymous mapping (a jump to
 *              itself): in no object, so its stack is never reliable
 *   leaver     leaver_outer > leaving_soon > read() on a pipe until "l" is
 *              read on standard input, then leaver_after > nanosleep()
 *
 * Prints "ready" once every thread is about to park.  Reads commands on
 * standard input: "l" lets the leaver go, "q" ends: every thread is
 * released, its results checked (read() got the byte written, never
 * EINTR; nanosleep() never failed; the spinners counted; SIGUSR1 came
 * exactly once; no other signal came), and the exit status is 0 only if
 * they all hold, with "ok" or the failed check printed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline)) __attribute__((visibility("default")))
#define KEEP __asm__ volatile("" ::: "memory")

static atomic_int stop, failed, usr1_count, other_signals, parked;
static atomic_ulong spins[2];
static int reader_pipe[2], leaver_pipe[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static const char *failure = "";

/* The chains' functions: exported, so that gdb and relstack name them from the dynamic symbols too. */
void reader_inner(void), reader_outer(void), sleeper_inner(void), sleeper_outer(void);
void waiter_inner(void), waiter_outer(void), spinner_inner(atomic_ulong *n), spinner_outer(atomic_ulong *n);
void handler_sleep(void), handler_inner(void), handler_outer(void), deep_bottom(void), deep(int n);
void stranger_outer(void), leaver_after(void), leaving_soon(void), leaver_outer(void);

static void fail(const char *what)
{
	failure = what;
	atomic_store(&failed, 1);
}

static void nap(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	if (nanosleep(&ts, NULL) != 0)
		fail("nanosleep failed (EINTR?)");
}

/* ---- reader ---- */
NOINLINE void reader_inner(void)
{
	char c = 0;
	ssize_t n;

	atomic_fetch_add(&parked, 1);
	n = read(reader_pipe[0], &c, 1);
	if (n != 1 || c != 'x')
		fail("read returned early or the wrong byte");
	KEEP;
}

NOINLINE void reader_outer(void)
{
	reader_inner();
	KEEP;
}

/* ---- sleeper ---- */
NOINLINE void sleeper_inner(void)
{
	atomic_fetch_add(&parked, 1);
	while (!atomic_load(&stop))
		nap();
	KEEP;
}

NOINLINE void sleeper_outer(void)
{
	sleeper_inner();
	KEEP;
}

/* ---- waiter ---- */
NOINLINE void waiter_inner(void)
{
	pthread_mutex_lock(&mu);
	atomic_fetch_add(&parked, 1);
	while (!atomic_load(&stop))
		if (pthread_cond_wait(&cv, &mu) != 0)
			fail("pthread_cond_wait failed");
	pthread_mutex_unlock(&mu);
	KEEP;
}

NOINLINE void waiter_outer(void)
{
	waiter_inner();
	KEEP;
}

/* ---- spinners ---- */
NOINLINE void spinner_inner(atomic_ulong *n)
{
	atomic_fetch_add(&parked, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
	KEEP;
}

NOINLINE void spinner_outer(atomic_ulong *n)
{
	spinner_inner(n);
	KEEP;
}

/* ---- handler ---- */
NOINLINE void handler_sleep(void)
{
	while (!atomic_load(&stop))
		nap();
	KEEP;
}

static void on_usr1(int sig)
{
	atomic_fetch_add(&usr1_count, 1);
	handler_sleep();
	KEEP;
}

static void on_other(int sig)
{
	atomic_fetch_add(&other_signals, 1);
}

NOINLINE void handler_inner(void)
{
	atomic_fetch_add(&parked, 1);
	pthread_kill(pthread_self(), SIGUSR1);
	while (!atomic_load(&stop))
		nap();
	KEEP;
}

NOINLINE void handler_outer(void)
{
	handler_inner();
	KEEP;
}

/* ---- deep ---- */
NOINLINE void deep_bottom(void)
{
	atomic_fetch_add(&parked, 1);
	while (!atomic_load(&stop))
		nap();
	KEEP;
}

NOINLINE void deep(int n)
{
	if (n > 1)
		deep(n - 1);
	else
		deep_bottom();
	KEEP;
}

/* ---- stranger ---- */
NOINLINE void stranger_outer(void)
{
	static const unsigned char loop[] = { 0xeb, 0xfe }; /* jmp . */
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (code == MAP_FAILED) {
		fail("mmap");
		return;
	}
	memcpy(code, loop, sizeof(loop));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0) {
		fail("mprotect");
		return;
	}
	atomic_fetch_add(&parked, 1);
	{
		void (*run)(void);

		memcpy(&run, &code, sizeof(run)); /* a data pointer made a code pointer, as POSIX allows */
		run();
	}
	KEEP;
}

/* ---- leaver ---- */
NOINLINE void leaver_after(void)
{
	while (!atomic_load(&stop))
		nap();
	KEEP;
}

NOINLINE void leaving_soon(void)
{
	char c;

	atomic_fetch_add(&parked, 1);
	if (read(leaver_pipe[0], &c, 1) != 1)
		fail("leaver's read failed");
	KEEP;
}

NOINLINE void leaver_outer(void)
{
	leaving_soon();
	leaver_after();
	KEEP;
}

static void *thread_main(void *arg)
{
	switch ((int)(long)arg) {
	case 0: reader_outer(); break;
	case 1: sleeper_outer(); break;
	case 2: waiter_outer(); break;
	case 3: spinner_outer(&spins[0]); break;
	case 4: spinner_outer(&spins[1]); break;
	case 5: handler_outer(); break;
	case 6: deep(20); break;
	case 7: stranger_outer(); break;
	case 8: leaver_outer(); break;
	default: break;
	}
	return NULL;
}

static const char *const names[] = { "reader", "sleeper", "waiter", "spinner1", "spinner2",
				     "handler", "deep", "stranger", "leaver" };

int main(void)
{
	pthread_t th[9];
	struct sigaction sa;
	int c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_other;
	/* every signal a snapshot could leak: none may arrive */
	sigaction(SIGTRAP, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	if (pipe(reader_pipe) || pipe(leaver_pipe))
		return 2;
	for (int i = 0; i < 9; i++) {
		if (i == 7) {
			pthread_attr_t a;

			/* the stranger never returns: detached, left running at exit */
			pthread_attr_init(&a);
			pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
			if (pthread_create(&th[i], &a, thread_main, (void *)(long)i) != 0)
				return 2;
		} else if (pthread_create(&th[i], NULL, thread_main, (void *)(long)i) != 0) {
			return 2;
		}
		pthread_setname_np(th[i], names[i]);
	}
	while (atomic_load(&parked) < 9) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	printf("ready\n");
	fflush(stdout);
	while ((c = getchar()) != EOF && c != 'q')
		if (c == 'l' && write(leaver_pipe[1], "l", 1) != 1)
			fail("write to the leaver");
	{
		unsigned long before[2] = { atomic_load(&spins[0]), atomic_load(&spins[1]) };
		int waited = 0;

		/* three threads spin on fewer cores: give the scheduler its turns, up to 5 s */
		while ((atomic_load(&spins[0]) == before[0] || atomic_load(&spins[1]) == before[1]) && waited++ < 250)
			nap();
		if (atomic_load(&spins[0]) == before[0] || atomic_load(&spins[1]) == before[1])
			fail("a spinner stopped counting");
	}
	atomic_store(&stop, 1);
	if (write(reader_pipe[1], "x", 1) != 1 || write(leaver_pipe[1], "l", 1) != 1)
		fail("write");
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 9; i++)
		if (i != 7)
			pthread_join(th[i], NULL);
	if (atomic_load(&usr1_count) != 1)
		fail("SIGUSR1 did not come exactly once");
	if (atomic_load(&other_signals) != 0)
		fail("a signal the target did not expect came");
	if (atomic_load(&failed)) {
		printf("FAIL %s\n", failure);
		return 1;
	}
	printf("ok\n");
	return 0;
}
