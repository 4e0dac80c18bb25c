// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Retention: a recorder holds the object table's slots its retained records
 * may name.  An object unloaded after the oldest retained record keeps its
 * slot; once the ring has overwritten every record older than the unload,
 * the slot may go to another object.
 */
#include <dlfcn.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/objtab.h"
#include "relstack/relstack.h"

#ifndef PLUGIN_DIR
#error PLUGIN_DIR must name the directory of the test plugins
#endif

static void *open_plugin(const char *name)
{
	char path[4096];
	void *h;

	snprintf(path, sizeof(path), "%s/librs_plugin_%s.so", PLUGIN_DIR, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	return h;
}

static int find_slot(const char *suffix, struct relstack_object *out)
{
	struct relstack_objtab_stats st;

	relstack_objtab_stats(&st);
	for (uint32_t s = 0; s < st.capacity; s++) {
		size_t n, m = strlen(suffix);

		if (relstack_objtab_get(s, out) != 0 || out->state != RELSTACK_OBJECT_LOADED)
			continue;
		n = strlen(out->path);
		if (n >= m && strcmp(out->path + n - m, suffix) == 0)
			return (int)s;
	}
	return -1;
}

static void a_slot_unloaded_after_retained_records_is_reused_only_once_they_are_overwritten(void **state)
{
	char dir[64] = "/tmp/rs-retain-XXXXXX", path[128];
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_objtab_stats st;
	struct relstack_recorder *rec;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_object obj;
	uint64_t unload_epoch;
	void *ha, *hb, *hc;
	cpu_set_t cpus, one;
	int sa;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/buf", dir);
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	relstack_objtab_stats(&st);
	/* room for exactly one more object */
	assert_int_equal(rs_objtab_reset(st.loaded + 1), 0);
	o.size = 64u << 10;
	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);
	/*
	 * On one CPU, so in one write area: an area that still held a record
	 * from before the unload (the thread moved on from its chunk there)
	 * would rightly keep the slot.
	 */
	assert_int_equal(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);

	ha = open_plugin("a");
	relstack_objtab__refresh();
	sa = find_slot("librs_plugin_a.so", &obj);
	assert_true(sa > 0);
	assert_int_equal(relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, 0), 0);
	dlclose(ha);
	relstack_objtab__refresh();
	assert_int_equal(relstack_objtab_get((uint32_t)sa, &obj), 0);
	unload_epoch = obj.unload_epoch;
	assert_true(unload_epoch > 0);

	/* the ring still holds a record made before the unload: the slot stays a's */
	hb = open_plugin("b");
	relstack_objtab__refresh();
	assert_int_equal(find_slot("librs_plugin_b.so", &obj), -1);
	dlclose(hb);
	relstack_objtab__refresh();

	/* two laps of newer records overwrite it */
	for (unsigned i = 0; i < 3000; i++)
		assert_int_equal(relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, 0), 0);
	hc = open_plugin("c");
	relstack_objtab__refresh();
	assert_int_equal(find_slot("librs_plugin_c.so", &obj), sa);
	relstack_recorder__close(rec);
	sched_setaffinity(0, sizeof(cpus), &cpus);

	/* every record the file kept was made after the unload */
	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &out) > 0)
		assert_true(out.epoch >= unload_epoch);
	relstack_cursor__free(c);
	relstack_reader__close(r);
	dlclose(hc);
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_slot_unloaded_after_retained_records_is_reused_only_once_they_are_overwritten),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
