// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Raw tracefs pages into records: hand-made pages, annotated field by
 * field, through the converter into a buffer file, read back with the
 * public reader.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernel/kernel.h"
#include "kfixture.h"
#include "relstack/reader.h"
#include "relstack/recorder.h"
#include "ring/recorder-local.h"

#define STEXT 0xffffffff81000000ull
#define SCHEDULE_20 (0xffffffff821fb620ull + 0x20)        /* schedule+0x20 */
#define SCHED_10 (0xffffffff821fa6c0ull + 0x10)           /* __schedule+0x10 */
#define SYSCALL_ENTRY_10 (0xffffffff810000baull + 0x10)   /* entry_SYSCALL_64_after_hwframe+0x10 */
#define PAGE 4096
#define COMMIT_MISSED (1ull << 31)     /* events were lost before this page */
#define COMMIT_MISSED_STORED (1ull << 30) /* ... and their count follows the data */

struct page {
	uint8_t b[PAGE];
	size_t len; /* data bytes so far */
};

/* One event: a 4-byte header (type_len = length / 4 in bits 0..4, time delta above), then its data. */
static void put_event(struct page *p, const void *data, size_t len)
{
	uint32_t hdr = (uint32_t)(len / 4) | (1u << 5);

	assert_true(len % 4 == 0 && len / 4 <= 28);
	memcpy(p->b + 16 + p->len, &hdr, 4);
	memcpy(p->b + 16 + p->len + 4, data, len);
	p->len += 4 + len;
}

static void put_sched_switch(struct page *p, int32_t pid, const char *comm, int64_t prev_state)
{
	uint8_t e[64] = { 0 };
	uint16_t type = KFIX_SCHED_SWITCH_ID;

	memcpy(e + 0, &type, 2);        /* common_type */
	memcpy(e + 4, &pid, 4);         /* common_pid */
	strcpy((char *)e + 8, comm);    /* prev_comm[16] */
	memcpy(e + 24, &pid, 4);        /* prev_pid */
	memcpy(e + 32, &prev_state, 8); /* prev_state (long) */
	strcpy((char *)e + 40, "next"); /* next_comm[16] */
	put_event(p, e, sizeof(e));
}

static void put_stack(struct page *p, int32_t pid, const uint64_t *addrs, int32_t n)
{
	uint8_t e[16 + 8 * 8] = { 0 };
	uint16_t type = KFIX_KERNEL_STACK_ID;

	memcpy(e + 0, &type, 2);                          /* common_type */
	memcpy(e + 4, &pid, 4);                           /* common_pid */
	memcpy(e + 8, &n, 4);                             /* size: entries */
	memcpy(e + 16, addrs, (size_t)n * 8);             /* caller[] */
	put_event(p, e, 16 + (size_t)n * 8);
}

/* The page header: time stamp, then commit (data bytes and flags); a missed-events count after the data. */
static void finish_page(struct page *p, uint64_t missed)
{
	uint64_t ts = 1000, commit = p->len;

	if (missed) {
		commit |= COMMIT_MISSED | COMMIT_MISSED_STORED;
		memcpy(p->b + 16 + p->len, &missed, 8);
	}
	memcpy(p->b, &ts, 8);
	memcpy(p->b + 8, &commit, 8);
}

struct fixture {
	char path[64];
	struct tep_handle *tep;
	struct rs_ksyms syms;
	struct rs_ktab *kt;
	struct relstack_recorder *rec;
	struct rs_kconv *c;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static const int ids[] = { KFIX_SCHED_SWITCH_ID };
	size_t isz;
	unsigned cap;
	int fd;

	strcpy(f->path, "/tmp/relstack-kconv-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	f->tep = kfix_tep();
	assert_true(rs_ksyms_parse(kfix_kallsyms, sizeof(kfix_kallsyms) - 1, &f->syms) > 0);
	f->kt = rs_ktab_new(&f->syms, NULL, 0, "/nonexistent");
	f->rec = rs_recorder_open_foreign(f->path, NULL);
	assert_non_null(f->rec);
	rs_ktab_publish(f->kt, rs_recorder_objtab_image(f->rec, &isz, &cap), 256);
	f->c = rs_kconv_new(f->tep, f->kt, f->rec, ids, 1, 0);
	assert_non_null(f->c);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rs_kconv_free(f->c);
	if (f->rec)
		relstack_recorder__close(f->rec);
	rs_ktab_free(f->kt);
	rs_ksyms_free(&f->syms);
	tep_free(f->tep);
	unlink(f->path);
	free(f);
	return 0;
}

/* Close the recorder and read its records back. */
static struct relstack_reader *reopen(struct fixture *f)
{
	struct relstack_reader *r;

	relstack_recorder__close(f->rec);
	f->rec = NULL;
	r = relstack_reader__open(f->path, NULL);
	assert_non_null(r);
	return r;
}

static void a_stack_joins_its_event_and_an_event_without_one_is_written_bare(void **state)
{
	struct fixture *f = *state;
	static const uint64_t stack[] = { SCHED_10, SCHEDULE_20, SYSCALL_ENTRY_10 };
	static struct page p;
	struct relstack_reader *r;
	struct relstack_cursor *cur;
	struct relstack_record rec;
	struct relstack_format fmt;
	struct relstack_entry e;
	struct rs_krecord_stats st;
	int n = 0;

	put_sched_switch(&p, 100, "first", 1);
	put_stack(&p, 100, stack, 3);
	put_sched_switch(&p, 200, "second", (int64_t)0xffffffff81234567ull); /* a kernel address in a field */
	put_stack(&p, 300, stack, 3); /* another task's: not this event's stack */
	finish_page(&p, 0);
	assert_int_equal(rs_kconv_page(f->c, p.b, PAGE, 1), 1);
	assert_int_equal(rs_kconv_finish(f->c), 2);
	rs_kconv_stats(f->c, &st);
	assert_int_equal(st.stacks, 1);
	assert_int_equal(st.reliable, 1);

	r = reopen(f);
	relstack_format_native(&fmt);
	cur = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(cur, &rec) > 0) {
		int64_t v;

		assert_string_equal(rec.event_name, "sched_switch");
		assert_int_equal(relstack_record__field_int(&rec, "cpu", &v), 0);
		assert_int_equal(v, 1);
		if (n++ == 0) {
			assert_true(rec.has_stack);
			assert_int_equal(rec.reasons, 0);
			assert_int_equal(rec.nwords, 4);
			relstack_word_decode(&fmt, rec.words[1], &e);
			assert_int_equal(e.slot, 0);
			assert_int_equal(e.offset, SCHEDULE_20 - STEXT);
			assert_int_equal(rec.words[3], relstack_word_marker(&fmt, RELSTACK_MARKER_END));
			assert_int_equal(relstack_record__field_int(&rec, "prev_state", &v), 0);
			assert_int_equal(v, 1);
		} else {
			assert_false(rec.has_stack);
			assert_int_equal(relstack_record__field_int(&rec, "pid", &v), 0);
			assert_int_equal(v, 200);
			assert_int_equal(relstack_record__field_int(&rec, "prev_state", &v), 0);
			assert_int_equal(v, 0); /* withheld */
		}
	}
	assert_int_equal(n, 2);
	relstack_cursor__free(cur);
	relstack_reader__close(r);
}

static void events_the_kernel_lost_reach_the_runs_lost_counter(void **state)
{
	struct fixture *f = *state;
	static struct page p;
	struct relstack_run_info ri;
	struct relstack_reader *r;
	struct rs_krecord_stats st;

	put_sched_switch(&p, 100, "x", 0);
	finish_page(&p, 5);
	assert_true(rs_kconv_page(f->c, p.b, PAGE, 0) >= 0);
	rs_kconv_finish(f->c);
	rs_kconv_stats(f->c, &st);
	assert_int_equal(st.lost, 5);
	rs_recorder_count_lost(f->rec, st.lost);
	r = reopen(f);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &ri), 0);
	assert_int_equal(ri.lost, 5);
	relstack_reader__close(r);
}

static void a_page_whose_commit_overruns_it_is_refused(void **state)
{
	struct fixture *f = *state;
	static struct page p;

	put_sched_switch(&p, 100, "x", 0);
	finish_page(&p, 0);
	assert_int_equal(rs_kconv_page(f->c, p.b, 16 + p.len - 1, 0), -EINVAL);
	assert_int_equal(rs_kconv_page(f->c, p.b, 8, 0), -EINVAL);
	assert_int_equal(rs_kconv_page(f->c, p.b, PAGE, 100000), -EINVAL); /* no such CPU slot */
}

static void a_stack_longer_than_the_depth_is_cut_and_truncated(void **state)
{
	struct fixture *f = *state;
	static const int ids[] = { KFIX_SCHED_SWITCH_ID };
	static const uint64_t stack[] = { SCHED_10, SCHEDULE_20, SYSCALL_ENTRY_10 };
	static struct page p;
	struct rs_krecord_stats st;
	struct rs_kconv *c = rs_kconv_new(f->tep, f->kt, NULL, ids, 1, 2);

	put_sched_switch(&p, 100, "x", 0);
	put_stack(&p, 100, stack, 3);
	finish_page(&p, 0);
	assert_int_equal(rs_kconv_page(c, p.b, PAGE, 0), 1);
	rs_kconv_finish(c);
	rs_kconv_stats(c, &st);
	assert_int_equal(st.stacks, 1);
	assert_int_equal(st.reliable, 0);
	rs_kconv_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_stack_joins_its_event_and_an_event_without_one_is_written_bare, setup, teardown),
		cmocka_unit_test_setup_teardown(events_the_kernel_lost_reach_the_runs_lost_counter, setup, teardown),
		cmocka_unit_test_setup_teardown(a_page_whose_commit_overruns_it_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(a_stack_longer_than_the_depth_is_cut_and_truncated, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
