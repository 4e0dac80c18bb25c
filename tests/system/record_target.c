// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program built without relstack (no header, no library, frame pointers
 * omitted as distributions build): what `relstack record` must record
 * unchanged.  test_record.py runs it.
 *
 *   crash         a NULL store three calls deep
 *   thread-crash  the same on a second thread
 *   own-handler   installs a SIGSEGV handler, then crashes: the handler
 *                 must still run (it prints and exits 42)
 *   fork-crash    forks; the child crashes, the parent exits 0
 *   dlopen-runpath  dlopens a plugin by a name its DT_RUNPATH alone finds
 *   varargs       prints what snprintf(3) makes of every integer argument
 *                 register, eight doubles (vector registers, %al) and
 *                 stack arguments, and what strtod(3) returns in %xmm0
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int *volatile null_ptr;

__attribute__((noinline)) static void store_null(int depth)
{
	if (depth == 0)
		*null_ptr = 1;
	else
		store_null(depth - 1);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

void parse_config(const char *s);
__attribute__((noinline)) void parse_config(const char *s)
{
	store_null((int)strlen(s) % 3);
	__asm__ volatile("" ::: "memory");
}

static void *thread_main(void *arg)
{
	parse_config(arg);
	return NULL;
}

static void on_segv(int signo)
{
	static const char msg[] = "own handler ran\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(43);
	_exit(42);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "crash";

	if (!strcmp(mode, "crash")) {
		parse_config("abcd");
	} else if (!strcmp(mode, "thread-crash")) {
		pthread_t t;

		pthread_create(&t, NULL, thread_main, "abcd");
		pthread_join(t, NULL);
	} else if (!strcmp(mode, "own-handler")) {
		signal(SIGSEGV, on_segv);
		parse_config("abcd");
	} else if (!strcmp(mode, "dlopen-runpath")) {
		void *h = dlopen("librecord_plugin.so", RTLD_NOW);
		int (*hello)(void);

		if (!h) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		*(void **)&hello = dlsym(h, "record_plugin_hello");
		return hello ? hello() : 1;
	} else if (!strcmp(mode, "varargs")) {
		char buf[256];
		int n = snprintf(buf, sizeof(buf), "%d %lld %d %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %.1f %d %s",
				 -1, 1LL << 40, 3, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9, "end");

		printf("%d %s %.3f\n", n, buf, strtod("2.625", NULL));
	} else if (!strcmp(mode, "fork-crash")) {
		int status;
		pid_t pid = fork();

		if (pid == 0)
			parse_config("abcd");
		waitpid(pid, &status, 0);
		return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV ? 0 : 1;
	}
	return 0;
}
