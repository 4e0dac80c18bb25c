// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A library unloaded and another loaded at the same address: every trace
 * recorded through the new one is either reliable and names, frame by
 * frame, the objects dladdr() finds at its addresses, or unreliable with
 * "unknown-text" or "objects-changing" and names none of the old one.
 * Never reliable and misnamed.
 *
 * Each case runs with the libraries that carry build-ids and with those
 * that do not (then only their files tell them apart), with the table
 * pinning its objects (our dlclose() interposes the C library's: the
 * test program exports it) and without (as when it does not), and
 * records from ordinary code (with and without RELSTACK_RECORD_RESCAN)
 * and from the crash handler, for a fault inside the new library.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "capture/objtab.h"

#define MAXW 64

enum how { ORDINARY, RESCAN, CRASH };

struct variant {
	const char *suffix; /* "" or "_nobid" */
	bool pinning;
	enum how how;
};

static struct relstack_recorder *rec;
static unsigned record_flags;
static int record_ret;

/* What the callback saw: the absolute addresses of the frames the record has. */
static uint64_t abs_words[MAXW];
static int abs_n;

static char *mapped_path(uint64_t addr)
{
	Dl_info di;

	if (!dladdr((void *)(uintptr_t)addr, &di) || !di.dli_fname || !di.dli_fname[0])
		return NULL;
	return realpath(di.dli_fname, NULL);
}

/*
 * The record, and an absolute capture from the same function: after
 * their first word (each its own call site here) the frames are the same.
 */
__attribute__((noinline)) static void record_here(void)
{
	struct relstack_verdict v;

	abs_n = relstack_capture(abs_words, MAXW, 0, RELSTACK_CAPTURE_ABSOLUTE, &v);
	record_ret = relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, record_flags);
	__asm__ volatile("" ::: "memory");
}

static void *open_lib(const char *name, const char *suffix, uintptr_t *base)
{
	char path[PATH_MAX];
	struct link_map *lm;
	void *h;

	snprintf(path, sizeof(path), "%s/librs_swap_%s%s.so", PLUGIN_DIR, name, suffix);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	assert_int_equal(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	*base = lm->l_addr;
	return h;
}

struct through {
	void (*call)(void (*)(void));
};

/*
 * On a thread of its own, whose frames all keep frame pointers (the test
 * framework's do not): thread entry, this, the library, record_here().
 */
__attribute__((noinline)) static void *through_thread(void *arg)
{
	struct through *t = arg;

	relstack_recorder__thread_init();
	t->call(record_here);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

static void call_through(void *h, const char *name)
{
	char sym[64];
	struct through t;
	pthread_t th;
	void *p;

	snprintf(sym, sizeof(sym), "swap_%s_call", name);
	p = dlsym(h, sym);
	assert_non_null(p);
	memcpy(&t.call, &p, sizeof(t.call));
	record_ret = -1;
	assert_int_equal(pthread_create(&th, NULL, through_thread, &t), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(record_ret, 0);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*
 * Check a record's frames: @expect[i] is the file mapped at frame i
 * (NULL: unknown or not checked).  Returns how many frames name an
 * object; fails on a frame that names the wrong one, or on @old.
 */
static int check_frames(struct relstack_reader *r, const struct relstack_record *x, char *const *expect,
			size_t nexpect, const char *old)
{
	int named = 0;

	for (size_t i = 0; i < x->nwords; i++) {
		struct relstack_entry e;
		struct relstack_object o;
		char *canon;

		relstack_word_decode(relstack_reader__format(r), x->words[i], &e);
		relstack_reader__check_entry(r, RELSTACK_RUN_CURRENT, x->epoch, &e);
		if (e.kind != RELSTACK_ENTRY_OBJECT)
			continue;
		assert_int_equal(relstack_reader__object(r, RELSTACK_RUN_CURRENT, e.slot, &o, NULL, NULL), 0);
		if (ends_with(o.path, old))
			fail_msg("frame %zu names the unloaded library %s", i, o.path);
		canon = realpath(o.path, NULL);
		if (i < nexpect && expect[i]) {
			if (!canon || strcmp(canon, expect[i]) != 0)
				fail_msg("frame %zu names %s, the address is in %s", i, o.path, expect[i]);
		}
		free(canon);
		named++;
	}
	return named;
}

static void run(const struct variant *va)
{
	char dir[] = "/tmp/relstack-swap-XXXXXX", path[PATH_MAX], old[64], new[64];
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	char *expect[MAXW] = { 0 };
	uintptr_t base_c, base_d;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record x;
	void *hc, *hd;
	uint64_t old_epoch;
	int n = 0, status;
	const uint32_t allowed = RELSTACK_UNRELIABLE_UNKNOWN_TEXT | RELSTACK_UNRELIABLE_OBJECTS_CHANGING;

	snprintf(old, sizeof(old), "librs_swap_c%s.so", va->suffix);
	snprintf(new, sizeof(new), "librs_swap_d%s.so", va->suffix);
	rs_objtab_set_pinning(va->pinning);
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/swap.rsb", dir);
	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);

	/* The old library, known to the table: its record names it. */
	hc = open_lib("c", va->suffix, &base_c);
	assert_true(relstack_objtab__refresh() > 0);
	{
		struct relstack_objtab_stats st;

		relstack_objtab_stats(&st);
		old_epoch = st.epoch;
	}
	record_flags = 0;
	call_through(hc, "c");

	/* Swapped: the new library where the old one was. */
	assert_int_equal(dlclose(hc), 0);
	hd = open_lib("d", va->suffix, &base_d);
	if (base_d != base_c) {
		/* the premise: a kernel maps it where the old one was; qemu-user's own placement may not */
		print_message("not testable here: the new library loaded at %#lx, not at %#lx where the old one was "
			      "(user-mode emulation places mappings its own way)\n", (unsigned long)base_d,
			      (unsigned long)base_c);
		dlclose(hd);
		relstack_recorder__close(rec);
		unlink(path);
		rmdir(dir);
		skip();
	}

	if (va->how == CRASH) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			char sym[64];
			int (*fault)(volatile int *);
			void *p;

			signal(SIGSEGV, SIG_DFL); /* not the test framework's: the fault must kill */
			if (relstack_recorder__install_crash_handler(rec) != 0)
				_exit(3);
			snprintf(sym, sizeof(sym), "swap_%s_fault", "d");
			p = dlsym(hd, sym);
			memcpy(&fault, &p, sizeof(fault));
			fault((volatile int *)(uintptr_t)16); /* unmapped, and not NULL, which UBSan would report first */
			_exit(4);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		/* killed by the fault (or, under a sanitizer, by its handler next in the chain) */
		assert_false(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) >= 3));
		expect[0] = mapped_path((uint64_t)(uintptr_t)dlsym(hd, "swap_d_fault"));
	} else {
		struct relstack_format f;

		relstack_format_native(&f);
		record_flags = va->how == RESCAN ? RELSTACK_RECORD_RESCAN : 0;
		call_through(hd, "d");
		for (int i = 1; i < abs_n && i < MAXW; i++)
			if (abs_words[i] < relstack_word_marker(&f, RELSTACK_MARKER_SIGNAL)) /* not a marker */
				expect[i] = mapped_path(abs_words[i]);
	}
	assert_int_equal(relstack_recorder__close(rec), 0);

	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_non_null(c);
	while (relstack_cursor__next(c, &x) > 0) {
		if (n == 0) {
			/*
			 * Through the old library, before the swap: reliable with a
			 * pin; without one its range may change under any capture.
			 */
			assert_int_equal(x.reasons, va->pinning ? 0 : RELSTACK_UNRELIABLE_OBJECTS_CHANGING);
			assert_true(check_frames(r, &x, NULL, 0, "\n") > 0);
		} else {
			int named = check_frames(r, &x, expect, MAXW, old);

			if (va->how == CRASH) {
				assert_int_equal(x.event_id, RELSTACK_EVENT_CRASH);
				assert_true(x.reasons & RELSTACK_UNRELIABLE_ASYNC_START);
				/* the faulting pc is in the new library, which no scan has seen */
				assert_true(x.reasons & allowed);
			} else if (x.reasons == 0) {
				/* reliable: every frame named, each as dladdr() names it */
				assert_int_equal(named, (int)x.nwords - 1);
			} else {
				assert_true(x.reasons & allowed);
				assert_int_equal(x.reasons & ~allowed, 0);
			}
			/* a re-scan with pins settles it: reliable */
			if (va->how == RESCAN && va->pinning)
				assert_int_equal(x.reasons, 0);
		}
		n++;
	}
	assert_int_equal(n, 2);
	relstack_cursor__free(c);
	relstack_reader__close(r);

	/*
	 * A refresh gives the new library a slot of its own, named after its
	 * file, even where nothing but the file tells the two apart.
	 */
	relstack_objtab__refresh();
	{
		struct relstack_object ob;
		uintptr_t a = (uintptr_t)dlsym(hd, "swap_d_call");
		struct relstack_format f;
		struct rs_lookup l;
		uint64_t w;

		assert_true(rs_objtab_lookup(a, &l));
		assert_int_equal(relstack_objtab_get(l.slot, &ob), 0);
		assert_int_equal(ob.state, RELSTACK_OBJECT_LOADED);
		assert_true(ends_with(ob.path, new));
		assert_true(ob.load_epoch > old_epoch);
		relstack_format_native(&f);
		relstack_encode(&a, &w, 1, 0, NULL);
		/* without a pin the range may change under any capture: it names nothing */
		assert_true((w == f.marker_unknown) == !va->pinning);
	}

	for (int i = 0; i < MAXW; i++)
		free(expect[i]);
	dlclose(hd);
	unlink(path);
	rmdir(dir);
}

#define CASE(name, suffix, pinning, how) \
	static void name(void **state) \
	{ \
		const struct variant v = { suffix, pinning, how }; \
		run(&v); \
	}

CASE(swapped_library_with_build_ids_is_named_right_by_an_ordinary_record, "", true, ORDINARY)
CASE(swapped_library_with_build_ids_is_named_right_by_a_rescan_record, "", true, RESCAN)
CASE(swapped_library_with_build_ids_is_named_right_by_the_crash_handler, "", true, CRASH)
CASE(swapped_library_without_build_ids_is_named_right_by_an_ordinary_record, "_nobid", true, ORDINARY)
CASE(swapped_library_without_build_ids_is_named_right_by_a_rescan_record, "_nobid", true, RESCAN)
CASE(swapped_library_without_build_ids_is_named_right_by_the_crash_handler, "_nobid", true, CRASH)
CASE(unpinned_swapped_library_with_build_ids_is_never_misnamed_by_an_ordinary_record, "", false, ORDINARY)
CASE(unpinned_swapped_library_with_build_ids_is_never_misnamed_by_a_rescan_record, "", false, RESCAN)
CASE(unpinned_swapped_library_with_build_ids_is_never_misnamed_by_the_crash_handler, "", false, CRASH)
CASE(unpinned_swapped_library_without_build_ids_is_never_misnamed_by_an_ordinary_record, "_nobid", false, ORDINARY)
CASE(unpinned_swapped_library_without_build_ids_is_never_misnamed_by_a_rescan_record, "_nobid", false, RESCAN)
CASE(unpinned_swapped_library_without_build_ids_is_never_misnamed_by_the_crash_handler, "_nobid", false, CRASH)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(swapped_library_with_build_ids_is_named_right_by_an_ordinary_record),
		cmocka_unit_test(swapped_library_with_build_ids_is_named_right_by_a_rescan_record),
		cmocka_unit_test(swapped_library_with_build_ids_is_named_right_by_the_crash_handler),
		cmocka_unit_test(swapped_library_without_build_ids_is_named_right_by_an_ordinary_record),
		cmocka_unit_test(swapped_library_without_build_ids_is_named_right_by_a_rescan_record),
		cmocka_unit_test(swapped_library_without_build_ids_is_named_right_by_the_crash_handler),
		cmocka_unit_test(unpinned_swapped_library_with_build_ids_is_never_misnamed_by_an_ordinary_record),
		cmocka_unit_test(unpinned_swapped_library_with_build_ids_is_never_misnamed_by_a_rescan_record),
		cmocka_unit_test(unpinned_swapped_library_with_build_ids_is_never_misnamed_by_the_crash_handler),
		cmocka_unit_test(unpinned_swapped_library_without_build_ids_is_never_misnamed_by_an_ordinary_record),
		cmocka_unit_test(unpinned_swapped_library_without_build_ids_is_never_misnamed_by_a_rescan_record),
		cmocka_unit_test(unpinned_swapped_library_without_build_ids_is_never_misnamed_by_the_crash_handler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
