// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The program test_unwind_gdb.py runs under gdb: a corpus of stacks that
 * pass through the C library, each captured once with relstack_capture()
 * (absolute words) on the main thread and, where it applies, on a second
 * thread.  For each capture it writes one line to the file named by
 * argv[1]:
 *
 *	<tag> <reasons in hex> <word> ... [END]
 *
 * gdb stops at every call of relstack_capture and prints the frames it
 * unwinds there; the test compares the two, frame by frame.
 *
 * The corpus: a chain through a linked and a dlopen'd library; callbacks
 * from the C library (pthread_once, qsort, bsearch, twalk,
 * dl_iterate_phdr); a tail call; handlers run by exit (atexit, on_exit, a
 * destructor); a signal handler that interrupted the C library; handlers
 * run on threads blocked in read, nanosleep and pthread_cond_wait.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <search.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relstack/relstack.h"
#include "unwind-lib.h"

#ifndef UNWIND_DL_PATH
#error UNWIND_DL_PATH must name librs_unwind_dl.so
#endif

#define MAXW 128

/* Not static: gdb and the test name them, and no interprocedural optimisation may merge them. */
void corpus_capture(const char *tag);
void corpus_capture_context(const char *tag, const void *uc);
void gdb_capture_here(void *arg);
void gdb_from_dl(void *arg);
void gdb_chain_start(void);
void tail_entry(void);
void tail_caller(void);
void tail_callee(void);
void *corpus_thread(void *arg);
void run_corpus(const char *where);

static FILE *out;
static void (*dl_call)(rs_unwind_cb, void *);
static const char *where; /* "main" or "thread" */

static void write_trace(const char *tag, const uint64_t *w, int n, const struct relstack_verdict *v)
{
	struct relstack_format f;

	relstack_format_native(&f);
	fprintf(out, "%s.%s %x", tag, where, v->reasons);
	for (int i = 0; i < n; i++) {
		if (w[i] == relstack_word_marker(&f, RELSTACK_MARKER_END))
			fprintf(out, " END");
		else
			fprintf(out, " %#llx", (unsigned long long)w[i]);
	}
	fputc('\n', out);
	fflush(out);
}

__attribute__((noinline)) void corpus_capture(const char *tag)
{
	uint64_t w[MAXW];
	struct relstack_verdict v;
	int n = relstack_capture(w, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &v);

	write_trace(tag, w, n, &v);
	__asm__ volatile("" ::: "memory");
}

/* The stack a signal interrupted, from its ucontext. */
__attribute__((noinline)) void corpus_capture_context(const char *tag, const void *uc)
{
	uint64_t w[MAXW];
	struct relstack_verdict v;
	int n = relstack_capture_context(uc, w, MAXW, RELSTACK_CAPTURE_ABSOLUTE, &v);

	write_trace(tag, w, n, &v);
	__asm__ volatile("" ::: "memory");
}

/* ---- a chain through the program, a linked library and a dlopen'd one ---- */

__attribute__((noinline)) void gdb_capture_here(void *arg)
{
	corpus_capture("chain");
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void gdb_from_dl(void *arg)
{
	dl_call(gdb_capture_here, arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void gdb_chain_start(void)
{
	rs_unwind_fp_call(gdb_from_dl, NULL);
	__asm__ volatile("" ::: "memory");
}

/* ---- callbacks from the C library ---- */

static void once_cb(void)
{
	corpus_capture("pthread_once");
	__asm__ volatile("" ::: "memory");
}

static int captured_cmp;

static int cmp_int(const void *a, const void *b)
{
	if (!captured_cmp++)
		corpus_capture("qsort");
	return *(const int *)a - *(const int *)b;
}

static int bsearch_cmp(const void *key, const void *elt)
{
	static __thread int done;

	if (!done++)
		corpus_capture("bsearch");
	return *(const int *)key - *(const int *)elt;
}

static int tree_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void twalk_action(const void *node, VISIT which, int depth)
{
	static __thread int done;

	if (which == leaf && !done++)
		corpus_capture("twalk");
	__asm__ volatile("" ::: "memory");
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	corpus_capture("dl_iterate_phdr");
	__asm__ volatile("" ::: "memory");
	return 1;
}

/*
 * A tail call: tail_caller jumps to tail_callee, so its frame is not on the
 * stack and will not be returned to; tail_callee returns to tail_entry.
 */
/* tail_caller is in assembly: arch/<cpu>/tail-caller.S */

__attribute__((noinline)) void tail_callee(void)
{
	corpus_capture("tail_call");
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void tail_entry(void)
{
	tail_caller();
	__asm__ volatile("" ::: "memory");
}

/* ---- a signal handler that interrupted the C library ---- */

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	corpus_capture("signal");
	corpus_capture_context("signal_context", uc);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void run_corpus(const char *w)
{
	static pthread_once_t once[2] = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT };
	int a[64], key = 17, *found;
	void *tree = NULL;

	where = w;
	gdb_chain_start();
	pthread_once(&once[strcmp(w, "main") != 0], once_cb);
	for (int i = 0; i < 64; i++)
		a[i] = (i * 37) % 64;
	captured_cmp = 0;
	qsort(a, 64, sizeof(a[0]), cmp_int);
	found = bsearch(&key, a, 64, sizeof(a[0]), bsearch_cmp);
	for (int i = 0; i < 8; i++)
		tsearch(&a[i], &tree, tree_cmp);
	twalk(tree, twalk_action);
	dl_iterate_phdr(phdr_cb, NULL);
	tail_entry();
	raise(SIGUSR1); /* the handler runs as raise's system call returns into the C library */
	while (tree)
		tdelete(*(int **)tree, &tree, tree_cmp);
	__asm__ volatile("" ::: "memory");
	if (!found)
		abort();
}

__attribute__((noinline)) void *corpus_thread(void *arg)
{
	relstack_thread_register();
	run_corpus("thread");
	__asm__ volatile("" ::: "memory");
	return arg;
}

/* ---- threads blocked in the C library, interrupted by a signal ---- */

static _Atomic int blocked_ready, blocked_handled, blocked_tid;
static int blocked_pipe[2];
static pthread_mutex_t blocked_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t blocked_cond = PTHREAD_COND_INITIALIZER;
static int blocked_done;

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
	corpus_capture("blocked");
	corpus_capture_context("blocked_context", uc);
	atomic_store(&blocked_handled, 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void *blocked_thread(void *arg)
{
	struct timespec ts = { 30, 0 };
	char c;

	relstack_thread_register();
	atomic_store(&blocked_tid, (int)gettid());
	atomic_store(&blocked_ready, 1);
	if (strcmp(where, "read") == 0) {
		if (read(blocked_pipe[0], &c, 1) != 1)
			abort();
	} else if (strcmp(where, "nanosleep") == 0) {
		nanosleep(&ts, NULL); /* EINTR once the handler returns */
	} else {
		pthread_mutex_lock(&blocked_lock);
		while (!blocked_done)
			pthread_cond_wait(&blocked_cond, &blocked_lock);
		pthread_mutex_unlock(&blocked_lock);
	}
	__asm__ volatile("" ::: "memory");
	return arg;
}

/* A thread blocked in @kind; once it sleeps in the kernel, SIGUSR2 runs the handler on it. */
static int run_blocked(const char *kind)
{
	pthread_t t;
	char state = 0;

	where = kind;
	atomic_store(&blocked_ready, 0);
	atomic_store(&blocked_handled, 0);
	blocked_done = 0;
	if (pthread_create(&t, NULL, blocked_thread, NULL))
		return -1;
	while (!atomic_load(&blocked_ready))
		sched_yield();
	/* asleep in the system call: its state in /proc is S */
	for (int i = 0; i < 1000 && state != 'S'; i++) {
		char path[64], buf[256];
		FILE *f;

		usleep(1000);
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", atomic_load(&blocked_tid));
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && strrchr(buf, ')'))
			state = strrchr(buf, ')')[2];
		if (f)
			fclose(f);
	}
	pthread_kill(t, SIGUSR2);
	while (!atomic_load(&blocked_handled))
		sched_yield();
	if (write(blocked_pipe[1], "x", 1) != 1)
		return -1;
	pthread_mutex_lock(&blocked_lock);
	blocked_done = 1;
	pthread_cond_broadcast(&blocked_cond);
	pthread_mutex_unlock(&blocked_lock);
	pthread_join(t, NULL);
	if (strcmp(kind, "read") != 0) {
		char c;

		if (read(blocked_pipe[0], &c, 1) != 1) /* the byte no reader took */
			return -1;
	}
	return 0;
}

/* ---- run by exit, on the main thread ---- */

static void atexit_handler(void)
{
	where = "main";
	corpus_capture("atexit");
	__asm__ volatile("" ::: "memory");
}

static void on_exit_handler(int status, void *arg)
{
	where = "main";
	corpus_capture("on_exit");
	__asm__ volatile("" ::: "memory");
}

__attribute__((destructor)) static void destructor(void)
{
	if (!out)
		return;
	where = "main";
	corpus_capture("destructor");
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *h, *sym;

	if (argc != 2 || !(out = fopen(argv[1], "w"))) {
		fprintf(stderr, "usage: unwind_gdb_target OUTPUT\n");
		return 2;
	}
	h = dlopen(UNWIND_DL_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(sym = dlsym(h, "rs_unwind_dl_call"))) {
		fprintf(stderr, "unwind_gdb_target: %s\n", dlerror());
		return 1;
	}
	memcpy(&dl_call, &sym, sizeof(dl_call)); /* POSIX: dlsym's pointer names a function */
	relstack_objtab__refresh();
	sigaction(SIGUSR1, &(struct sigaction){ .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO }, NULL);
	atexit(atexit_handler);
	on_exit(on_exit_handler, NULL);
	run_corpus("main");
	if (pthread_create(&t, NULL, corpus_thread, NULL) || pthread_join(t, NULL))
		return 1;
	sigaction(SIGUSR2, &(struct sigaction){ .sa_sigaction = on_usr2, .sa_flags = SA_SIGINFO | SA_RESTART }, NULL);
	if (pipe(blocked_pipe) || run_blocked("read") || run_blocked("nanosleep") || run_blocked("cond_wait"))
		return 1;
	return 0;
}
