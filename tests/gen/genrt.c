// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * genrt.c - the runtime of a generated program (tests/gen/generate.py):
 * captures, and one line per capture with the words, the verdict and the
 * shadow stack (gen.h) at that moment, for tests/gen/oracle.py to judge.
 * Linked into each generated program, built with frame pointers.
 *
 * Output (the file named by argv[1]), one write(2) per line:
 *
 *	R kind=c|x|p seq= tid= site= flags= skip= cap= ra= ret= reasons= frames=
 *	  words=W,W,... shadow=K:V,K:V,... [refclean= ref=W,...]   (numbers in hex)
 *	O bias name lo-hi,lo-hi,...              every object and its code, at the end
 *	N bit= name=                             each reason's name (relstack_reason_string)
 *	F records= dropped= result= pid=         the end of a run
 *
 * ref= is the same stack unwound by libunwind (built with GEN_LIBUNWIND),
 * refclean=1 when it reached the outermost frame.
 *
 * kind c: relstack_capture() in gen_check(), ra its return address (into
 * the generated function that called it); kind x:
 * relstack_capture_context() of a handler's ucontext; kind p: a `relstack
 * ps` snapshot of this process, taken by a child while gen_check() waits
 * in waitpid() (its JSON in the file GEN_PS_OUT names).
 *
 * Environment: GEN_GDB_MARKS=N calls gen_gdb_mark(seq) after the first N
 * captures (gdb stops there); GEN_PS_SEQ=K takes the snapshot at capture K
 * with GEN_RELSTACK (the relstack command).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <relstack/relstack.h>

#include "gen.h"

#ifdef GEN_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define GEN_WORDS 512
#define GEN_DL_MAX 256
#define GEN_MAX_RECORDS 4000
#define GEN_ALTSTACK (256 * 1024)

__thread struct gen_shadow gen_sh __attribute__((tls_model("initial-exec")));
void *gen_dl[GEN_DL_MAX];

static void gen_nofree(void *p)
{
	(void)p;
}

static const struct gen_libc gen_libc_fns = {
	.qsort = qsort,
	.bsearch = bsearch,
	.lfind = lfind,
	.tsearch = tsearch,
	.tfind = tfind,
	.twalk = twalk,
	.tdestroy = tdestroy,
	.dl_iterate_phdr = dl_iterate_phdr,
	.raise = raise,
	.pthread_kill = pthread_kill,
	.pthread_self = pthread_self,
	.nofree = gen_nofree,
};
const struct gen_libc *volatile gen_libc = &gen_libc_fns;

static int gen_out = -1;
static void *gen_dl_handle;
static atomic_long gen_seq;
static atomic_long gen_dropped;
static long gen_gdb_marks;
static long gen_ps_seq = -1;
static const char *gen_tool, *gen_ps_out;

/* One line, built without the C library's formatting (handlers call this). */
struct gen_line {
	char buf[32768];
	size_t len;
	int overflow;
};

static void put_str(struct gen_line *l, const char *s)
{
	size_t n = strlen(s);

	if (l->len + n >= sizeof(l->buf)) {
		l->overflow = 1;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void put_hex(struct gen_line *l, uint64_t v)
{
	char tmp[17];
	int i = 16;

	tmp[i] = 0;
	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	put_str(l, tmp + i);
}

static void put_field(struct gen_line *l, const char *name, uint64_t v)
{
	put_str(l, " ");
	put_str(l, name);
	put_str(l, "=");
	put_hex(l, v);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			abort();
		p += w;
		n -= (size_t)w;
	}
}

static void put_shadow(struct gen_line *l)
{
	long n = gen_sh.n;

	put_str(l, " shadow=");
	if (n < 0 || n > GEN_SHADOW_MAX) {
		put_str(l, "bad");
		return;
	}
	for (long i = 0; i < n; i++) {
		if (i)
			put_str(l, ",");
		put_hex(l, gen_sh.kind[i]);
		put_str(l, ":");
		put_hex(l, gen_sh.value[i]);
	}
}

static void emit(struct gen_line *l)
{
	put_str(l, "\n");
	if (l->overflow)
		abort();
	write_all(gen_out, l->buf, l->len);
}

static __thread struct gen_line gen_line_buf;

/*
 * The same stack by libunwind (the C library's frames by their CFI), for
 * the frames the shadow stack cannot name: its instruction pointers, the
 * SIGNAL marker for a signal frame; *clean when it reached the outermost
 * frame without an error.
 */
struct gen_ref {
	uint64_t words[GEN_WORDS];
	int n;
	int clean;
};

#ifdef GEN_LIBUNWIND
/* A frame without CFI: libunwind would guess it, and may fault on the guess. */
static int nocfi_on_stack(void)
{
	for (long i = 0; i < gen_sh.n && i < GEN_SHADOW_MAX; i++)
		if (gen_sh.kind[i] & GEN_NOCFI)
			return 1;
	return 0;
}

static void ref_walk(unw_cursor_t *c, struct gen_ref *ref, uint64_t signal_word)
{
	int r;

	ref->n = 0;
	do {
		unw_word_t ip;

		if (unw_get_reg(c, UNW_REG_IP, &ip) < 0)
			break;
		/* flagged is the frame a signal interrupted: the one before it is the trampoline's */
		if (unw_is_signal_frame(c) > 0 && ref->n > 0)
			ref->words[ref->n - 1] = signal_word;
		ref->words[ref->n++] = (uint64_t)ip;
		r = unw_step(c);
	} while (r > 0 && ref->n < GEN_WORDS);
	ref->clean = r == 0;
}
#endif

static void put_ref(struct gen_line *l, const struct gen_ref *ref)
{
	if (ref->n < 0)
		return;
	put_field(l, "refclean", (uint64_t)ref->clean);
	put_str(l, " ref=");
	for (int i = 0; i < ref->n; i++) {
		if (i)
			put_str(l, ",");
		put_hex(l, ref->words[i]);
	}
}

static uint64_t gen_signal_word;

static void record(char kind, long seq, int site, unsigned flags, unsigned skip, unsigned cap, uintptr_t ra,
		   const uint64_t *words, int ret, const struct relstack_verdict *v, const struct gen_ref *ref)
{
	struct gen_line *l = &gen_line_buf;
	char k[2] = { kind, 0 };

	l->len = 0;
	l->overflow = 0;
	put_str(l, "R kind=");
	put_str(l, k);
	put_field(l, "seq", (uint64_t)seq);
	put_field(l, "tid", (uint64_t)gen_sh.tid);
	put_field(l, "site", (uint64_t)site);
	put_field(l, "flags", flags);
	put_field(l, "skip", skip);
	put_field(l, "cap", cap);
	put_field(l, "ra", ra);
	put_field(l, "ret", (uint64_t)(int64_t)ret);
	put_field(l, "reasons", v->reasons);
	put_field(l, "frames", v->frames);
	put_str(l, " words=");
	for (int i = 0; i < ret; i++) {
		if (i)
			put_str(l, ",");
		put_hex(l, words[i]);
	}
	put_shadow(l);
	put_ref(l, ref);
	emit(l);
}

/* gdb's breakpoint: the frames it unwinds here are compared with capture @seq. */
__attribute__((noinline, used)) void gen_gdb_mark(long seq)
{
	__asm__ volatile("" ::"r"(seq) : "memory");
}

/* A `relstack ps` snapshot of this process while this thread waits for it. */
__attribute__((noinline)) static void gen_ps_snapshot(long seq, int site, uintptr_t ra)
{
	struct gen_line *l = &gen_line_buf;
	char pid[32];
	int status = -1;
	pid_t c;

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* where Yama restricts ptrace */
	c = fork();
	if (c == 0) {
		int fd = open(gen_ps_out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execl(gen_tool, gen_tool, "ps", "--format", "json", pid, (char *)NULL);
		_exit(127);
	}
	if (c > 0)
		while (waitpid(c, &status, 0) < 0 && errno == EINTR)
			;
	__asm__ volatile("" ::: "memory"); /* the waitpid call is not a tail call */
	l->len = 0;
	l->overflow = 0;
	put_str(l, "R kind=p");
	put_field(l, "seq", (uint64_t)seq);
	put_field(l, "tid", (uint64_t)gen_sh.tid);
	put_field(l, "site", (uint64_t)site);
	put_field(l, "ra", ra);
	put_field(l, "status", (uint64_t)(uint32_t)status);
	put_shadow(l);
	emit(l);
}

__attribute__((noinline)) void gen_check(int site, unsigned flags, unsigned skip, unsigned cap)
{
	uint64_t words[GEN_WORDS];
	struct relstack_verdict v = { 0 };
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int ret = relstack_capture(words, cap < GEN_WORDS ? cap : GEN_WORDS, skip, flags, &v);
	long seq = atomic_fetch_add(&gen_seq, 1);
	static __thread struct gen_ref ref;

	if (seq >= GEN_MAX_RECORDS) {
		atomic_fetch_add(&gen_dropped, 1);
		return;
	}
	ref.n = -1;
#ifdef GEN_LIBUNWIND
	if (!nocfi_on_stack()) {
		unw_context_t uc;
		unw_cursor_t c;

		/* its first frame is this one; the next is the return into our caller */
		if (unw_getcontext(&uc) == 0 && unw_init_local(&c, &uc) == 0)
			ref_walk(&c, &ref, gen_signal_word);
	}
#endif
	record('c', seq, site, flags, skip, cap, ra, words, ret, &v, &ref);
	if (seq < gen_gdb_marks)
		gen_gdb_mark(seq);
	if (seq == gen_ps_seq && gen_tool && gen_ps_out)
		gen_ps_snapshot(seq, site, ra);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void gen_check_ctx(int site, const void *uc, unsigned flags, unsigned cap)
{
	uint64_t words[GEN_WORDS];
	struct relstack_verdict v = { 0 };
	int ret = relstack_capture_context(uc, words, cap < GEN_WORDS ? cap : GEN_WORDS, flags, &v);
	long seq = atomic_fetch_add(&gen_seq, 1);
	static __thread struct gen_ref ref;

	if (seq >= GEN_MAX_RECORDS) {
		atomic_fetch_add(&gen_dropped, 1);
		return;
	}
	ref.n = -1;
#ifdef GEN_LIBUNWIND
	if (!nocfi_on_stack()) {
		unw_cursor_t c;
		ucontext_t copy = *(const ucontext_t *)uc; /* libunwind wants it writable */

		if (unw_init_local2(&c, &copy, UNW_INIT_SIGNAL_FRAME) == 0)
			ref_walk(&c, &ref, gen_signal_word);
	}
#endif
	record('x', seq, site, flags, 0, cap, 0, words, ret, &v, &ref);
	if (seq < gen_gdb_marks)
		gen_gdb_mark(seq);
	__asm__ volatile("" ::: "memory");
}

void gen_install_handler(int signo, void (*fn)(int, siginfo_t *, void *), int onstack)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | (onstack ? SA_ONSTACK : 0);
	sigemptyset(&sa.sa_mask);
	if (sigaction(signo, &sa, NULL) != 0)
		abort();
}

/*
 * @altstack: 0 none; 1 an alternate signal stack, then registered; 2
 * registered, then an alternate stack the library was not told about.
 */
void gen_thread_setup(int altstack, int do_register)
{
	gen_sh.pid = getpid();
	gen_sh.tid = (long)syscall(SYS_gettid);
	if (altstack == 2 && do_register && relstack_thread_register() != 0)
		abort();
	if (altstack) {
		stack_t ss = { 0 };

		ss.ss_sp = mmap(NULL, GEN_ALTSTACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ss.ss_sp == MAP_FAILED)
			abort();
		ss.ss_size = GEN_ALTSTACK;
		if (sigaltstack(&ss, NULL) != 0)
			abort();
	}
	if (altstack != 2 && do_register && relstack_thread_register() != 0)
		abort();
}

void gen_run_thread(void *(*fn)(void *), long arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, (void *)arg) != 0 || pthread_join(t, NULL) != 0)
		abort();
}

void gen_rt_init(int argc, char **argv, const char *const *dl_names, int dl_count)
{
	const char *s;

	if (argc < 3) {
		fprintf(stderr, "usage: %s OUTPUT DLOPEN-LIBRARY\n", argv[0]);
		exit(2);
	}
	gen_out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (gen_out < 0) {
		perror(argv[1]);
		exit(2);
	}
	if ((s = getenv("GEN_GDB_MARKS")))
		gen_gdb_marks = atol(s);
	if ((s = getenv("GEN_PS_SEQ")))
		gen_ps_seq = atol(s);
	gen_tool = getenv("GEN_RELSTACK");
	gen_ps_out = getenv("GEN_PS_OUT");
	gen_sh.pid = getpid();
	gen_sh.tid = (long)syscall(SYS_gettid);
	{
		struct relstack_format fmt;

		relstack_format_native(&fmt);
		gen_signal_word = fmt.marker_signal;
	}
	if (dl_count > GEN_DL_MAX)
		abort();
	if (dl_count) {
		gen_dl_handle = dlopen(argv[2], RTLD_NOW);
		if (!gen_dl_handle) {
			fprintf(stderr, "%s\n", dlerror());
			exit(2);
		}
		for (int i = 0; i < dl_count; i++)
			if (!(gen_dl[i] = dlsym(gen_dl_handle, dl_names[i]))) {
				fprintf(stderr, "%s\n", dlerror());
				exit(2);
			}
		/* the object table learns of a dlopen'd object at its next scan */
		if (relstack_objtab__refresh() < 0)
			abort();
	}
}

static int put_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct gen_line *l = data;
	int first = 1;

	(void)size;
	l->len = 0;
	l->overflow = 0;
	put_str(l, "O ");
	put_hex(l, info->dlpi_addr);
	put_str(l, " ");
	put_str(l, info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "-");
	put_str(l, " ");
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!first)
			put_str(l, ",");
		first = 0;
		put_hex(l, info->dlpi_addr + ph->p_vaddr);
		put_str(l, "-");
		put_hex(l, info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
	}
	emit(l);
	return 0;
}

void gen_rt_finish(long result)
{
	struct gen_line *l = &gen_line_buf;

	dl_iterate_phdr(put_object, l);
	for (unsigned bit = 0; bit < 32; bit++) {
		const char *name = relstack_reason_string(1u << bit);

		if (!name)
			continue;
		l->len = 0;
		l->overflow = 0;
		put_str(l, "N");
		put_field(l, "bit", bit);
		put_str(l, " name=");
		put_str(l, name);
		emit(l);
	}
	l->len = 0;
	l->overflow = 0;
	put_str(l, "F");
	put_field(l, "records", (uint64_t)atomic_load(&gen_seq));
	put_field(l, "dropped", (uint64_t)atomic_load(&gen_dropped));
	put_field(l, "result", (uint64_t)result);
	put_field(l, "pid", (uint64_t)getpid());
	emit(l);
	if (gen_dl_handle)
		dlclose(gen_dl_handle);
	close(gen_out);
}
