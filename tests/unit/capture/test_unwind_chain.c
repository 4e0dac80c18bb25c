// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The unwinder on real call chains: through the test program, a linked
 * library and a dlopen'd one (all built with frame pointers), through a
 * library built without them, from signal handlers on an alternate
 * stack, and on threads whose stack is not known.
 *
 * Chains run on threads of their own: cmocka's runner, which calls the
 * tests, is built without frame pointers and would make every trace
 * taken under it unreliable (correctly).  The threads record what they
 * saw; the assertions run on the test's thread.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/cfi.h"
#include "capture/objtab-local.h"
#include "capture/unwind-local.h"
#include "relstack/relstack.h"
#include "unwind-test.h"

#define MAXW 128

/* Exported (the program is linked with -rdynamic) so dladdr names them. */
void chain_capture_here(void *arg);
void chain_from_dl(void *arg);
void chain_start(void *arg);
void *chain_thread(void *arg);
void spin_until_signalled(void);
void nofp_callback(void *arg);
void handler(int sig, siginfo_t *si, void *uc);
void *sig_thread(void *arg);
void capture_from_main(void);

struct trace {
	uint64_t words[MAXW];
	int n;
	struct relstack_verdict v;
};

struct chain_result {
	struct trace abs, rel, skip1;
	uintptr_t entry_fp_seen;
};

static rs_unwind_dl_call_fn dl_call;

static const char *name_of(uint64_t addr, const char **object)
{
	Dl_info di;

	memset(&di, 0, sizeof(di));
	if (!dladdr((void *)(uintptr_t)addr, &di)) {
		*object = "";
		return "";
	}
	*object = di.dli_fname ? di.dli_fname : "";
	return di.dli_sname ? di.dli_sname : "";
}

__attribute__((noinline)) void chain_capture_here(void *arg)
{
	struct chain_result *r = arg;

	r->abs.n = relstack_capture(r->abs.words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &r->abs.v);
	r->rel.n = relstack_capture(r->rel.words, MAXW, 0, 0, &r->rel.v);
	r->skip1.n = relstack_capture(r->skip1.words, MAXW, 1, RELSTACK_CAPTURE_ABSOLUTE, &r->skip1.v);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_from_dl(void *arg)
{
	dl_call(chain_capture_here, arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_start(void *arg)
{
	rs_unwind_fp_call(chain_from_dl, arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void *chain_thread(void *arg)
{
	if (relstack_thread_register() != 0)
		return NULL;
	chain_start(arg);
	__asm__ volatile("" ::: "memory");
	return arg;
}

static const char *const chain_names[] = {
	"chain_capture_here", "rs_unwind_dl_inner", "rs_unwind_dl_call", "chain_from_dl",
	"rs_unwind_fp_inner", "rs_unwind_fp_call", "chain_start", "chain_thread",
};

static void chain_through_linked_and_dlopened_libraries_is_reliable(void **state)
{
	static struct chain_result r;
	const char *obj;
	size_t k = RS_ARRAY_SIZE(chain_names);

	run_thread(chain_thread, &r);
	assert_int_equal(r.abs.v.reasons, 0);
	assert_int_equal(r.abs.n, (int)k + 3); /* the chain, start_thread, clone3, END */
	assert_int_equal(r.abs.v.frames, k + 2);
	for (size_t i = 0; i < k; i++)
		assert_string_equal(name_of(r.abs.words[i], &obj), chain_names[i]);
	for (size_t i = k; i < k + 2; i++) {
		name_of(r.abs.words[i], &obj);
		assert_non_null(strstr(obj, "libc.so")); /* the thread's start, in the C runtime */
	}
	assert_true(r.abs.words[k + 2] == RS_NATIVE_END);
}

static void relative_words_name_the_same_addresses(void **state)
{
	static struct chain_result r;

	run_thread(chain_thread, &r);
	assert_int_equal(r.rel.v.reasons, 0);
	assert_int_equal(r.rel.n, r.abs.n);
	assert_true(r.rel.words[r.rel.n - 1] == RS_NATIVE_END);
	/* word 0 is a different call site in chain_capture_here; the callers are the same */
	for (int i = 1; i < r.rel.n - 1; i++)
		assert_true(relstack_word_address(r.rel.words[i]) == r.abs.words[i]);
	/* the dlopen'd library has a slot of its own: the flag bit is set */
	assert_true(r.rel.words[1] & RS_NATIVE_FLAG);
	assert_false(r.rel.words[3] & RS_NATIVE_FLAG); /* chain_from_dl: the main program */
}

static void skip_drops_the_innermost_frames(void **state)
{
	static struct chain_result r;
	const char *obj;

	run_thread(chain_thread, &r);
	assert_int_equal(r.skip1.v.reasons, 0);
	assert_int_equal(r.skip1.n, r.abs.n - 1);
	assert_string_equal(name_of(r.skip1.words[0], &obj), "rs_unwind_dl_inner");
}

/* ---- through a library without frame pointers ---- */

struct nofp_case {
	uintptr_t junk;
	void (*call)(rs_unwind_cb, void *, uintptr_t); /* the function without frame pointer */
	struct trace t;
};

__attribute__((noinline)) void nofp_callback(void *arg)
{
	struct nofp_case *c = arg;

	c->t.n = relstack_capture(c->t.words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &c->t.v);
	__asm__ volatile("" ::: "memory");
}

static void *nofp_thread(void *arg)
{
	struct nofp_case *c = arg;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);

	if (relstack_thread_register() != 0)
		return NULL;
	/* junk chosen relative to this thread's stack */
	if (c->junk == 1)
		c->junk = here; /* a real frame further up: the chain even looks right */
	else if (c->junk == 2)
		c->junk = here - 4096; /* below the capture: down the stack */
	else if (c->junk == 3)
		c->junk = here + 4; /* misaligned */
	c->call(nofp_callback, c, c->junk);
	__asm__ volatile("" ::: "memory");
	return arg;
}

typedef void (*nofp_call_fn)(rs_unwind_cb, void *, uintptr_t);

/*
 * Whatever @call (named @name) leaves in %rbp (a frame pointer of 0,
 * small numbers, an address below the capture, a misaligned one,
 * garbage), its CFI row at the call finds its caller, and the trace is
 * proven to its end: nofp_thread, then start_thread and clone3 in the C
 * library, END.
 */
static void check_nofp_chain(nofp_call_fn call, const char *name)
{
	static const uintptr_t junk[] = { 0, 1, 2, 3, (uintptr_t)0x5a5a5a5a5a5a5a58ull };

	for (size_t i = 0; i < RS_ARRAY_SIZE(junk); i++) {
		static struct nofp_case c;
		const char *obj;

		memset(&c, 0, sizeof(c));
		c.junk = junk[i];
		c.call = call;
		run_thread(nofp_thread, &c);
		assert_int_equal(c.t.v.reasons, 0);
		assert_int_equal(c.t.n, 6);
		assert_string_equal(name_of(c.t.words[0], &obj), "nofp_callback");
		assert_string_equal(name_of(c.t.words[1], &obj), name);
		name_of(c.t.words[3], &obj);
		assert_non_null(strstr(obj, "libc.so"));
		assert_true(c.t.words[c.t.n - 1] == RS_NATIVE_END);
	}
}

static void chain_through_function_without_frame_pointer_is_followed_by_its_cfi(void **state)
{
	check_nofp_chain(rs_unwind_nofp_call, "rs_unwind_nofp_call");
}

/* The same function in a library built without unwind tables: its CFI in .debug_frame only, read from the file. */
static void chain_through_function_without_frame_pointer_is_followed_by_its_debug_frame(void **state)
{
	check_nofp_chain(rs_unwind_debug_frame_call, "rs_unwind_debug_frame_call");
}

static void debug_frame_of_another_build_is_refused(void **state)
{
	struct relstack_object o;
	struct rs_lookup l;
	struct rs_cfi_table *t;
	uint8_t other[RELSTACK_BUILD_ID_MAX];
	Dl_info di;

	assert_true(dladdr((void *)(uintptr_t)&rs_unwind_debug_frame_call, &di) && di.dli_fname);
	assert_true(rs_objtab_lookup((uintptr_t)&rs_unwind_debug_frame_call, &l));
	assert_int_equal(relstack_objtab_get(l.slot, &o), 0);
	assert_true(o.build_id_len >= 8);
	/* its own build-id: the file's .debug_frame is used */
	t = rs_cfi_table_debug(di.dli_fname, o.build_id, o.build_id_len, l.bias, l.end - l.bias);
	assert_non_null(t);
	assert_true(rs_cfi_table_rows(t) > 2);
	rs_cfi_table_free(t);
	/* another build's: neither the file nor a debug file by that id is used */
	memcpy(other, o.build_id, o.build_id_len);
	other[o.build_id_len - 1] ^= 0xff;
	errno = 0;
	assert_null(rs_cfi_table_debug(di.dli_fname, other, o.build_id_len, l.bias, l.end - l.bias));
	assert_int_equal(errno, ENOENT);
}

#ifdef UNWIND_SFRAME_PATH
/* The phdrs of the object named @name: whether it has .eh_frame_hdr, and .sframe. */
struct phdr_probe {
	const char *name;
	bool found, eh_frame, sframe;
};

static int probe_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct phdr_probe *p = data;

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, p->name))
		return 0;
	p->found = true;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		p->eh_frame |= info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME && info->dlpi_phdr[i].p_memsz > 0;
		p->sframe |= info->dlpi_phdr[i].p_type == 0x6474e554; /* PT_GNU_SFRAME */
	}
	return 1;
}
#endif

static void chain_through_function_without_frame_pointer_is_followed_by_its_sframe(void **state)
{
#ifndef UNWIND_SFRAME_PATH
	fprintf(stderr, "skipped: the assembler writes no .sframe for this target (GNU as --gsframe)\n");
	skip();
#else
	struct phdr_probe probe = { "librs_unwind_sframe.so", false, false, false };
	void *h = dlopen(UNWIND_SFRAME_PATH, RTLD_NOW | RTLD_LOCAL), *sym;
	nofp_call_fn call;

	assert_non_null(h);
	sym = dlsym(h, "rs_unwind_sframe_call");
	assert_non_null(sym);
	assert_int_equal(relstack_objtab__refresh() >= 0, 1);
	/* the premise: CFI in .sframe only */
	dl_iterate_phdr(probe_one, &probe);
	assert_true(probe.found && probe.sframe && !probe.eh_frame);
	memcpy(&call, &sym, sizeof(call)); /* POSIX: dlsym names a function */
	check_nofp_chain(call, "rs_unwind_sframe_call");
	dlclose(h);
#endif
}

/* ---- signal handlers ---- */

struct sig_case {
	bool register_alt;           /* register the thread after installing the alternate stack */
	uintptr_t alt_lo, alt_hi;
	_Atomic int spinning, handled;
	bool on_alt;
	uintptr_t trampoline; /* where the handler returns: the signal-return trampoline */
	struct trace cap, ctx;
};

static struct sig_case *sig_now;

void handler(int sig, siginfo_t *si, void *uc)
{
	struct sig_case *c = sig_now;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);

	c->on_alt = here >= c->alt_lo && here < c->alt_hi;
	c->trampoline = (uintptr_t)__builtin_return_address(0);
	c->cap.n = relstack_capture(c->cap.words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &c->cap.v);
	c->ctx.n = relstack_capture_context(uc, c->ctx.words, MAXW, RELSTACK_CAPTURE_ABSOLUTE, &c->ctx.v);
	atomic_store(&c->handled, 1);
}

/*
 * The loop the signal interrupts.  It is a leaf, and GCC gives a leaf that
 * needs no stack no frame even with -fno-omit-frame-pointer; asking for
 * the frame address makes it set one up, so the interrupted context has
 * a frame-pointer chain to its caller.
 */
__attribute__((noinline)) void spin_until_signalled(void)
{
	__asm__ volatile("" ::"r"(__builtin_frame_address(0)));
	atomic_store(&sig_now->spinning, 1);
	while (!atomic_load_explicit(&sig_now->handled, memory_order_relaxed))
		;
	__asm__ volatile("" ::: "memory");
}

void *sig_thread(void *arg)
{
	struct sig_case *c = arg;
	size_t size = 64 * 1024;
	stack_t ss = { 0 };
	void *alt;

	if (!c->register_alt)
		relstack_thread_register();
	alt = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (alt == MAP_FAILED)
		return NULL;
	ss.ss_sp = alt;
	ss.ss_size = size;
	sigaltstack(&ss, NULL);
	c->alt_lo = (uintptr_t)alt;
	c->alt_hi = (uintptr_t)alt + size;
	if (c->register_alt)
		relstack_thread_register();
	spin_until_signalled();
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	munmap(alt, size);
	return arg;
}

static void signal_on(struct sig_case *c)
{
	struct sigaction sa, old;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	sig_now = c;
	assert_int_equal(pthread_create(&t, NULL, sig_thread, c), 0);
	while (!atomic_load(&c->spinning))
		sched_yield();
	assert_int_equal(pthread_kill(t, SIGUSR1), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	sigaction(SIGUSR1, &old, NULL);
	assert_true(c->on_alt);
}

static int index_of(const struct trace *t, uint64_t word)
{
	for (int i = 0; i < t->n; i++)
		if (t->words[i] == word)
			return i;
	return -1;
}

/*
 * A walk crosses a signal frame at the trampoline's object (the C
 * library's restorer, the vDSO's __kernel_rt_sigreturn).  User-mode
 * emulation may put it in no object (qemu-user without a vDSO writes it
 * to a page of its own): no walk can cross it there, and this says so.
 */
static bool trampoline_in_an_object(const struct sig_case *c)
{
	Dl_info di;

	if (dladdr((void *)c->trampoline, &di) && di.dli_fname)
		return true;
	print_message("not testable here: the signal-return trampoline at %#lx is in no object "
		      "(user-mode emulation without a vDSO)\n", (unsigned long)c->trampoline);
	return false;
}

static void capture_in_handler_on_alternate_stack_crosses_the_signal_frame(void **state)
{
	static struct sig_case c;
	const char *obj;
	int s;

	memset(&c, 0, sizeof(c));
	c.register_alt = true;
	signal_on(&c);
	if (!trampoline_in_an_object(&c))
		skip();
	/* the interrupted instruction's row proves its frame: reliable across the signal frame */
	assert_int_equal(c.cap.v.reasons, 0);
	assert_string_equal(name_of(c.cap.words[0], &obj), "handler");
	s = index_of(&c.cap, RS_NATIVE_SIGNAL);
	assert_int_equal(s, 1);
	/* the interrupted pc, then its callers on the thread's stack, to the entry */
	assert_string_equal(name_of(c.cap.words[2], &obj), "spin_until_signalled");
	assert_string_equal(name_of(c.cap.words[3], &obj), "sig_thread");
	for (int i = 4; i < 6; i++) {
		name_of(c.cap.words[i], &obj);
		assert_non_null(strstr(obj, "libc.so"));
	}
	assert_int_equal(c.cap.n, 7);
	assert_true(c.cap.words[6] == RS_NATIVE_END);
}

static void context_capture_in_handler_starts_at_the_interrupted_pc(void **state)
{
	static struct sig_case c;
	const char *obj;

	memset(&c, 0, sizeof(c));
	c.register_alt = true;
	signal_on(&c);
	assert_int_equal(c.ctx.v.reasons, 0);
	assert_string_equal(name_of(c.ctx.words[0], &obj), "spin_until_signalled");
	assert_string_equal(name_of(c.ctx.words[1], &obj), "sig_thread");
	assert_int_equal(index_of(&c.ctx, RS_NATIVE_SIGNAL), -1);
	assert_int_equal(c.ctx.n, 5); /* then start_thread, clone3, END: the interrupted row proves the frame */
	assert_true(c.ctx.words[4] == RS_NATIVE_END);
}

static void capture_on_unregistered_alternate_stack_reads_nothing(void **state)
{
	static struct sig_case c;

	memset(&c, 0, sizeof(c));
	c.register_alt = false; /* registered before the alternate stack existed */
	signal_on(&c);
	assert_int_equal(c.cap.v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
	assert_int_equal(c.cap.n, 0);
	/* the ucontext names the alternate stack; the interrupted frames are on the known stack */
	assert_int_equal(c.ctx.v.reasons, 0);
	assert_int_equal(c.ctx.n, 5);
}

/* ---- a walk over a copy of the stack ---- */

/*
 * The stack of getcontext()'s caller, copied, then walked as a snapshot:
 * the same words and verdict as a context capture of the live stack, and
 * what the copy says, not the live stack, where the two differ.
 */
/*
 * Copy live stack memory as raw words, as a reader of another process
 * does: AddressSanitizer's redzones on it are not this copy's business.
 */
__attribute__((no_sanitize("address"))) static void copy_raw(uintptr_t *dst, const uintptr_t *src, size_t words)
{
	for (size_t i = 0; i < words; i++)
		dst[i] = ((const volatile uintptr_t *)src)[i];
}

__attribute__((noinline)) static void snapshot_here(void)
{
	uint64_t live[MAXW], snap[MAXW];
	struct relstack_verdict lv, sv;
	struct rs_thread_stack ts;
	struct rs_walk w;
	struct rs_arch_context uctx;
	ucontext_t uc;
	unsigned char *copy;
	uintptr_t base;
	size_t len, n;
	int ln;

	assert_true(rs_thread_stack_get(&ts));
	assert_int_equal(getcontext(&uc), 0);
	ln = relstack_capture_context(&uc, live, MAXW, RELSTACK_CAPTURE_ABSOLUTE, &lv);
	assert_true(ln >= 4);
	assert_int_equal(lv.reasons, 0);
	/* the live stack from the context's stack pointer up, copied elsewhere */
	rs_arch_context_read(&uc, &uctx);
	base = uctx.sp;
	assert_true(base >= ts.stack.lo && base < ts.stack.hi);
	len = ts.stack.hi - base;
	copy = malloc(len);
	assert_non_null(copy);
	copy_raw((uintptr_t *)(void *)copy, (const uintptr_t *)base, len / sizeof(uintptr_t));

	memset(&w, 0, sizeof(w));
	w.stack = ts.stack;
	w.alt = ts.alt;
	w.pc = uctx.pc;
	w.fp = uctx.fp;
	w.sp = base;
	w.reasons = RELSTACK_UNRELIABLE_ASYNC_START;
	w.flags = RELSTACK_CAPTURE_ABSOLUTE | RS_WALK_SNAPSHOT;
	w.delta = (intptr_t)((uintptr_t)copy - base);
	n = rs_unwind_walk(&w, snap, MAXW, &sv);
	assert_int_equal(n, (size_t)ln);
	assert_int_equal(sv.reasons, lv.reasons);
	assert_memory_equal(snap, live, n * sizeof(snap[0]));

	/*
	 * The objects from an index of the walk's own (as for another
	 * process): the same words; without the C library in it, its frames
	 * are unknown text.
	 */
	{
		static struct rs_latch own;
		static struct rs_index_entry e[RS_INDEX_MAX];
		struct rs_objtab_view v;
		unsigned m = 0, libc = RS_INDEX_MAX;

		rs_objtab_begin(&v);
		for (unsigned i = 0; i < v.n; i++) {
			const struct rs_index_range *r = &v.ix->r[i];

			e[m] = (struct rs_index_entry){ r->start, r->end, r->bias, r->restorer,
							(const struct rs_cfi_table *)r->cfi, (uint32_t)r->slot_flags,
							(uint32_t)(r->slot_flags >> 32) };
			if ((uintptr_t)&abort - e[m].start < e[m].end - e[m].start)
				libc = m;
			m++;
		}
		assert_true(rs_objtab_end(&v) && libc < m);
		assert_int_equal(rs_objtab_index_build(&own, e, m, 1), 0);
		w.latch = &own;
		n = rs_unwind_walk(&w, snap, MAXW, &sv);
		assert_int_equal(sv.reasons, lv.reasons);
		assert_memory_equal(snap, live, n * sizeof(snap[0]));
		for (unsigned i = 0; i < m; i++)
			if ((uintptr_t)&abort - e[i].start < e[i].end - e[i].start)
				libc = i;
		e[libc] = e[--m];
		assert_int_equal(rs_objtab_index_build(&own, e, m, 1), 0);
		n = rs_unwind_walk(&w, snap, MAXW, &sv);
		assert_true(sv.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
		w.latch = NULL;
	}

	/* a return address changed in the copy only (this frame's, in its record): the snapshot walk sees it */
	{
		uintptr_t slot = w.fp + sizeof(uintptr_t) - base, v = 0x10, was; /* 0x10: in no object */

		assert_true(slot + sizeof(v) <= len);
		memcpy(&was, copy + slot, sizeof(was));
		assert_true(was == live[1]);
		memcpy(copy + slot, &v, sizeof(v));
	}
	n = rs_unwind_walk(&w, snap, MAXW, &sv);
	assert_true(sv.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	assert_true(n >= 2 && snap[0] == live[0] && snap[1] != live[1]);
	/* and the live stack is as it was */
	ln = relstack_capture_context(&uc, live, MAXW, RELSTACK_CAPTURE_ABSOLUTE, &lv);
	assert_int_equal(lv.reasons, 0);
	free(copy);
	__asm__ volatile("" ::: "memory");
}

static void a_copy_of_the_stack_walks_like_the_stack_itself(void **state)
{
	assert_int_equal(relstack_thread_register(), 0);
	snapshot_here();
}

/* ---- threads whose stack is not known ---- */

static void *unregistered_thread(void *arg)
{
	struct trace *t = arg;

	t->n = relstack_capture(t->words, MAXW, 0, 0, &t->v);
	return arg;
}

static void capture_on_unregistered_thread_is_outside_stack_with_no_words(void **state)
{
	static struct trace t;

	run_thread(unregistered_thread, &t);
	assert_int_equal(t.n, 0);
	assert_int_equal(t.v.reasons, RELSTACK_UNRELIABLE_OUTSIDE_STACK);
}

/* ---- the main thread, captured before cmocka's runner is on the stack ---- */

static struct trace main_trace;

__attribute__((noinline)) void capture_from_main(void)
{
	main_trace.n = relstack_capture(main_trace.words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &main_trace.v);
	__asm__ volatile("" ::: "memory");
}

static void main_thread_capture_ends_at_start(void **state)
{
	const char *obj;

	assert_int_equal(main_trace.v.reasons, 0);
	/* capture_from_main, main, __libc_start_call_main, __libc_start_main, _start, END */
	assert_int_equal(main_trace.n, 6);
	assert_string_equal(name_of(main_trace.words[0], &obj), "capture_from_main");
	assert_string_equal(name_of(main_trace.words[1], &obj), "main");
	name_of(main_trace.words[2], &obj);
	assert_non_null(strstr(obj, "libc.so"));
	assert_string_equal(name_of(main_trace.words[3], &obj), "__libc_start_main");
	assert_string_equal(name_of(main_trace.words[4], &obj), "_start");
	assert_true(main_trace.words[5] == RS_NATIVE_END);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(main_thread_capture_ends_at_start),
		cmocka_unit_test(chain_through_linked_and_dlopened_libraries_is_reliable),
		cmocka_unit_test(relative_words_name_the_same_addresses),
		cmocka_unit_test(skip_drops_the_innermost_frames),
		cmocka_unit_test(chain_through_function_without_frame_pointer_is_followed_by_its_cfi),
		cmocka_unit_test(chain_through_function_without_frame_pointer_is_followed_by_its_debug_frame),
		cmocka_unit_test(debug_frame_of_another_build_is_refused),
		cmocka_unit_test(chain_through_function_without_frame_pointer_is_followed_by_its_sframe),
		cmocka_unit_test(capture_in_handler_on_alternate_stack_crosses_the_signal_frame),
		cmocka_unit_test(context_capture_in_handler_starts_at_the_interrupted_pc),
		cmocka_unit_test(a_copy_of_the_stack_walks_like_the_stack_itself),
		cmocka_unit_test(capture_on_unregistered_alternate_stack_reads_nothing),
		cmocka_unit_test(capture_on_unregistered_thread_is_outside_stack_with_no_words),
	};

	dl_call = load_dl_call();
	if (!dl_call)
		return 1;
	relstack_objtab__refresh();
	capture_from_main();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
