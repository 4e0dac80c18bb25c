/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gen.h - the oracle of generated programs (tests/gen/generate.py).
 *
 * Every generated function keeps a per-thread shadow stack that says,
 * entry by entry, what the machine stack holds, so that a capture can be
 * judged exactly (tests/gen/oracle.py):
 *
 *   EXACT  v  a return address the stack holds: each generated function
 *             pushes its own (__builtin_return_address(0)) on entry, and
 *             each assembly trampoline does the same;
 *   INFUNC v  the stack holds one return address inside the function
 *             that starts at v: pushed before a call into the C library
 *             (qsort, raise, ...), whose return address C cannot name;
 *   SIGNAL v  a signal frame, v the interrupted pc: a handler's first
 *             entry (its own return address is the signal trampoline,
 *             where a trace writes the SIGNAL marker).
 *
 * Each function remembers its own depth (gen_d, the index of its entry)
 * and puts the depth back after every call it makes (GEN_RESYNC) and
 * when it returns (GEN_LEAVE), so an entry its callees left behind never
 * outlives the call.
 *
 * Tail calls: the caller leaves (GEN_TAIL) before `return g(x);` and
 * says which return address it had.  If the compiler made the call a
 * jump, g's return address is that one and g simply takes the caller's
 * place; if it made it a call, the caller's frame is still on the stack
 * and g puts its entry back first.  Either way the shadow stack is what
 * the machine stack will return through.
 *
 * Signals are raised only synchronously (raise, pthread_kill, or a leaf's
 * own tgkill system call), so a handler never runs between a store to
 * the shadow stack and the next.
 *
 * The layout is read by the assembly trampolines: n at 0, value[] at 8,
 * kind[] at 8 + 8 * GEN_SHADOW_MAX.
 */
#ifndef GEN_H
#define GEN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_RIP, dl_iterate_phdr */
#endif
#include <link.h>
#include <pthread.h>
#include <search.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>

#define GEN_SHADOW_MAX 256

enum gen_kind { GEN_EXACT = 0, GEN_INFUNC = 1, GEN_SIGNAL = 2 };

/*
 * Set in the kind of every entry a function without CFI pushes (its
 * file defines GEN_SELF_FLAGS to it before including this header; the
 * trampolines without CFI set it themselves): libunwind, the reference
 * for the C library's frames, guesses such frames and can fault.
 */
#define GEN_NOCFI 0x100
#ifndef GEN_SELF_FLAGS
#define GEN_SELF_FLAGS 0
#endif

struct gen_shadow {
	long n;
	uintptr_t value[GEN_SHADOW_MAX];
	uintptr_t kind[GEN_SHADOW_MAX];
	uintptr_t tail_ra; /* set by GEN_TAIL, consumed by the callee's GEN_ENTER */
	uintptr_t tail_kind;
	long pid, tid;     /* for leaves that signal their own thread without a call */
};

_Static_assert(offsetof(struct gen_shadow, value) == 8, "the trampolines' offset of value[]");
_Static_assert(offsetof(struct gen_shadow, kind) == 8 + 8 * GEN_SHADOW_MAX, "the trampolines' offset of kind[]");

/* Defined in the program; initial-exec, so reading it makes no call (leaves stay leaves). */
extern __thread struct gen_shadow gen_sh __attribute__((tls_model("initial-exec")));

#define GEN_PUT(d, v, k) (gen_sh.value[(d)] = (uintptr_t)(v), gen_sh.kind[(d)] = (k))

#define GEN_ENTER()                                                                         \
	long gen_d = gen_sh.n;                                                              \
	do {                                                                                \
		uintptr_t gen_ra_ = (uintptr_t)__builtin_return_address(0);                 \
		if (gen_sh.tail_ra) {                                                       \
			if (gen_sh.tail_ra != gen_ra_) { /* a call, not a jump: caller still there */ \
				GEN_PUT(gen_d, gen_sh.tail_ra, gen_sh.tail_kind);           \
				gen_d++;                                                    \
			}                                                                   \
			gen_sh.tail_ra = 0;                                                 \
		}                                                                           \
		GEN_PUT(gen_d, gen_ra_, GEN_EXACT | GEN_SELF_FLAGS);                        \
		gen_sh.n = gen_d + 1;                                                       \
	} while (0)

#define GEN_ENTER_SIGNAL(uc)                                                                \
	long gen_d = gen_sh.n;                                                              \
	do {                                                                                \
		GEN_PUT(gen_d, ((const ucontext_t *)(uc))->uc_mcontext.gregs[REG_RIP],      \
			GEN_SIGNAL | GEN_SELF_FLAGS);                                       \
		gen_sh.n = gen_d + 1;                                                       \
	} while (0)

#define GEN_RESYNC() (gen_sh.n = gen_d + 1)
#define GEN_LEAVE() (gen_sh.n = gen_d)
#define GEN_TAIL()                                                                          \
	(gen_sh.n = gen_d, gen_sh.tail_kind = GEN_EXACT | GEN_SELF_FLAGS,                   \
	 gen_sh.tail_ra = (uintptr_t)__builtin_return_address(0))
#define GEN_CALLOUT(self) (GEN_PUT(gen_d + 1, (self), GEN_INFUNC | GEN_SELF_FLAGS), gen_sh.n = gen_d + 2)

/* A leaf's signal to its own thread: the system call inline, no call instruction. */
#define GEN_LEAF_KILL(sig)                                                                  \
	do {                                                                                \
		long gen_ret_;                                                              \
		__asm__ volatile("syscall"                                                  \
				 : "=a"(gen_ret_)                                           \
				 : "0"((long)SYS_tgkill), "D"(gen_sh.pid), "S"(gen_sh.tid), \
				   "d"((long)(sig))                                         \
				 : "rcx", "r11", "memory");                                 \
		(void)gen_ret_;                                                             \
	} while (0)

/* The runtime (genrt.c). */
void gen_rt_init(int argc, char **argv, const char *const *dl_names, int dl_count);
void gen_rt_finish(long result);
void gen_install_handler(int signo, void (*fn)(int, siginfo_t *, void *), int onstack);
void gen_thread_setup(int altstack, int do_register);
void gen_run_thread(void *(*fn)(void *), long arg);
void gen_check(int site, unsigned flags, unsigned skip, unsigned cap);
void gen_check_ctx(int site, const void *uc, unsigned flags, unsigned cap);

/* Functions of the dlopen'd library, for callers outside it (dlsym). */
extern void *gen_dl[];

/*
 * The C library's functions, called through pointers the compiler cannot
 * see through: bsearch is an inline function in the headers, and a
 * callback's caller must be the C library's code, not ours.
 */
struct gen_libc {
	void (*qsort)(void *, size_t, size_t, int (*)(const void *, const void *));
	void *(*bsearch)(const void *, const void *, size_t, size_t, int (*)(const void *, const void *));
	void *(*lfind)(const void *, const void *, size_t *, size_t, int (*)(const void *, const void *));
	void *(*tsearch)(const void *, void **, int (*)(const void *, const void *));
	void *(*tfind)(const void *, void *const *, int (*)(const void *, const void *));
	void (*twalk)(const void *, void (*)(const void *, VISIT, int));
	void (*tdestroy)(void *, void (*)(void *));
	int (*dl_iterate_phdr)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
	int (*raise)(int);
	int (*pthread_kill)(pthread_t, int);
	pthread_t (*pthread_self)(void);
	void (*nofree)(void *);
};
extern const struct gen_libc *volatile gen_libc;

#endif
