// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * RELSTACK_RECORD_RESCAN: a record made through a library dlopen'd after
 * the last scan names the library's frames when the flag asks for a
 * re-scan, and says "unknown-text" when it does not.  Public API only.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <relstack/reader.h>
#include <relstack/recorder.h>
#include <relstack/relstack.h>

static struct relstack_recorder *rec;
static unsigned record_flags;

__attribute__((noinline)) static void record_here(void)
{
	assert_int_equal(relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, record_flags), 0);
	__asm__ volatile("" ::: "memory");
}

/* Does some frame of @r name an object whose path ends with @suffix? */
static int names_object(struct relstack_reader *r, const struct relstack_record *x, const char *suffix)
{
	for (size_t i = 0; i < x->nwords; i++) {
		struct relstack_entry e;
		struct relstack_object o;

		relstack_word_decode(relstack_reader__format(r), x->words[i], &e);
		relstack_reader__check_entry(r, RELSTACK_RUN_CURRENT, x->epoch, &e);
		if (e.kind != RELSTACK_ENTRY_OBJECT ||
		    relstack_reader__object(r, RELSTACK_RUN_CURRENT, e.slot, &o, NULL, NULL) != 0)
			continue;
		if (strlen(o.path) >= strlen(suffix) && strcmp(o.path + strlen(o.path) - strlen(suffix), suffix) == 0)
			return 1;
	}
	return 0;
}

static void a_rescan_record_names_a_library_loaded_since_the_last_scan(void **state)
{
	char dir[] = "/tmp/relstack-rescan-XXXXXX", path[4096], plugin[4096];
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	void (*call)(void (*)(void));
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record x;
	void *h, *sym;
	int n = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rescan.rsb", dir);
	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);

	/* Loaded after the recorder's scan, and nobody scans again. */
	snprintf(plugin, sizeof(plugin), "%s/librs_plugin_c.so", PLUGIN_DIR);
	h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	sym = dlsym(h, "plugin_call");
	assert_non_null(sym);
	memcpy(&call, &sym, sizeof(call));

	record_flags = 0;
	call(record_here);
	record_flags = RELSTACK_RECORD_RESCAN;
	call(record_here);
	assert_int_equal(relstack_recorder__close(rec), 0);

	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_non_null(c);
	while (relstack_cursor__next(c, &x) > 0) {
		if (n == 0) {
			/* without the flag: the plugin's frame is in no known object */
			assert_true(x.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
			assert_false(names_object(r, &x, "librs_plugin_c.so"));
		} else {
			assert_false(x.reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
			assert_true(names_object(r, &x, "librs_plugin_c.so"));
		}
		n++;
	}
	assert_int_equal(n, 2);
	relstack_cursor__free(c);
	relstack_reader__close(r);
	dlclose(h);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_rescan_record_names_a_library_loaded_since_the_last_scan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
