/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One capture printed as a line for test_verdict_defects.py:
 *
 *   TAG REASONS WORD...
 *
 * REASONS the verdict's bits in hex; each WORD an absolute address as
 * OBJECT@0xOFFSET (the object's path, the offset from where it is
 * loaded: what nm prints for a position-independent file), or END,
 * UNKNOWN, SIGNAL.  The test names the offsets with gdb.
 */
#ifndef VERDICT_DEFECTS_TRACE_H
#define VERDICT_DEFECTS_TRACE_H

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <relstack/relstack.h>

#define TRACE_WORDS 256

static __attribute__((noinline)) void print_trace(const char *tag, const uint64_t *w, int n,
						  const struct relstack_verdict *v)
{
	static char exe[PATH_MAX];
	struct relstack_format fmt; /* the marker words: the native format's, absolute or not */

	relstack_format_native(&fmt);
	if (!exe[0] && !realpath("/proc/self/exe", exe))
		exe[0] = '\0';
	flockfile(stdout);
	printf("%s %x", tag, n < 0 ? 0xffffffffu : v->reasons);
	for (int i = 0; i < n; i++) {
		Dl_info d;

		if (w[i] == fmt.marker_end)
			printf(" END");
		else if (w[i] == fmt.marker_unknown)
			printf(" UNKNOWN");
		else if (w[i] == fmt.marker_signal)
			printf(" SIGNAL");
		else if (dladdr((void *)(uintptr_t)w[i], &d) && d.dli_fname)
			/* the program itself is named as it was started: its real path instead */
			printf(" %s@%#llx", d.dli_fname[0] == '/' ? d.dli_fname : exe,
			       (unsigned long long)(w[i] - (uintptr_t)d.dli_fbase));
		else
			printf(" ?@%#llx", (unsigned long long)w[i]);
	}
	printf("\n");
	fflush(stdout);
	funlockfile(stdout);
}

/* Capture the calling function's stack (its return address first) and print it. */
#define CAPTURE(tag, flags)                                                                            \
	do {                                                                                           \
		uint64_t w_[TRACE_WORDS];                                                              \
		struct relstack_verdict v_;                                                            \
		int n_ = relstack_capture(w_, TRACE_WORDS, 0, RELSTACK_CAPTURE_ABSOLUTE | (flags), &v_); \
		print_trace(tag, w_, n_, &v_);                                                         \
	} while (0)

#endif
