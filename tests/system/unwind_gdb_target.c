// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The program test_unwind_gdb.py runs under gdb.  It captures two stacks,
 * on the main thread and on a second thread, each through the program, a
 * linked library and a dlopen'd one, and writes to the file named by
 * argv[1], per capture, one line:
 *
 *	<reasons in hex> <words> <END present: 0/1> <function>@<object> ...
 *
 * naming each frame with dladdr ("?" when it finds no symbol).  gdb stops
 * at every call of relstack_capture and prints its backtrace there: the
 * frames above relstack_capture must be the same functions.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "relstack/relstack.h"
#include "unwind-lib.h"

#ifndef UNWIND_DL_PATH
#error UNWIND_DL_PATH must name librs_unwind_dl.so
#endif

#define MAXW 64

void gdb_capture_here(void *arg);
void gdb_from_dl(void *arg);
void gdb_chain_start(FILE *out);
void *gdb_thread(void *arg);

static void (*dl_call)(rs_unwind_cb, void *);

static void write_trace(FILE *out, const uint64_t *w, int n, const struct relstack_verdict *v)
{
	fprintf(out, "%x %d %d", v->reasons, n, n > 0 && w[n - 1] == UINT64_MAX);
	for (int i = 0; i < n; i++) {
		Dl_info di;
		const char *obj;

		if (w[i] == UINT64_MAX)
			break;
		memset(&di, 0, sizeof(di));
		dladdr((void *)(uintptr_t)w[i], &di);
		obj = di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
		obj = obj ? obj + 1 : (di.dli_fname ? di.dli_fname : "?");
		fprintf(out, " %s@%s", di.dli_sname ? di.dli_sname : "?", obj);
	}
	fputc('\n', out);
	fflush(out);
}

__attribute__((noinline)) void gdb_capture_here(void *arg)
{
	uint64_t w[MAXW];
	struct relstack_verdict v;
	int n = relstack_capture(w, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &v);

	write_trace(arg, w, n, &v);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void gdb_from_dl(void *arg)
{
	dl_call(gdb_capture_here, arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void gdb_chain_start(FILE *out)
{
	rs_unwind_fp_call(gdb_from_dl, out);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *gdb_thread(void *arg)
{
	relstack_thread_register();
	gdb_chain_start(arg);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *h, *sym;
	FILE *out;

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
	gdb_chain_start(out);
	if (pthread_create(&t, NULL, gdb_thread, out) || pthread_join(t, NULL))
		return 1;
	fclose(out);
	return 0;
}
