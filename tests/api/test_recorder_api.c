// SPDX-License-Identifier: LGPL-2.1-or-later
/* The recorder and reader through the shared library's public API only. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>

#include <relstack/relstack.h>

static char dir[64], path[128];

static int setup(void **state)
{
	strcpy(dir, "/tmp/rs-api-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/buf", dir);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

struct lock_event {
	uint64_t lock;
	uint32_t waited_us;
	int32_t owner;
	char name[8];
};

__attribute__((noinline)) static int contended(struct relstack_recorder *rec, int ev)
{
	struct lock_event e = { 0xabcdef, 1234, -1, "mtx" };
	int ret = relstack_recorder__record(rec, (unsigned)ev, &e, sizeof(e), 0);

	__asm__ volatile("" ::: "memory");
	return ret;
}

static void an_event_with_fields_and_a_stack_round_trips_through_the_file(void **state)
{
	static const struct relstack_event_field fields[] = {
		{ "lock", offsetof(struct lock_event, lock), 8, RELSTACK_FIELD_HEX },
		{ "waited_us", offsetof(struct lock_event, waited_us), 4, RELSTACK_FIELD_UNSIGNED },
		{ "owner", offsetof(struct lock_event, owner), 4, RELSTACK_FIELD_SIGNED },
		{ "name", offsetof(struct lock_event, name), 8, RELSTACK_FIELD_STRING },
	};
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_run_info info;
	struct relstack_entry e;
	int64_t v;
	int ev;

	o.mode = RELSTACK_MODE_STOP;
	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);
	ev = relstack_recorder__define_event(rec, "lock_contended", fields, 4, sizeof(struct lock_event));
	assert_true(ev >= 2);
	relstack_recorder__thread_init();
	assert_int_equal(contended(rec, ev), 0);
	assert_int_equal(relstack_recorder__flush(rec), 0);
	assert_int_equal(relstack_recorder__close(rec), 0);

	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.mode, RELSTACK_MODE_STOP);
	assert_int_equal(info.records, 1);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_non_null(c);
	assert_int_equal(relstack_cursor__next(c, &out), 1);
	assert_string_equal(out.event_name, "lock_contended");
	assert_int_equal(relstack_record__field_int(&out, "lock", &v), 0);
	assert_int_equal(v, 0xabcdef);
	assert_int_equal(relstack_record__field_int(&out, "owner", &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(relstack_record__field_int(&out, "waited_us", &v), 0);
	assert_int_equal(v, 1234);
	assert_string_equal((const char *)out.fields + out.schema->field[3].offset, "mtx");
	assert_true(out.nwords >= 1);
	relstack_word_decode(relstack_reader__format(r), out.words[0], &e);
	relstack_reader__check_entry(r, RELSTACK_RUN_CURRENT, out.epoch, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT); /* contended(), in this executable */
	assert_int_equal(e.slot, RELSTACK_MAIN_SLOT);
	assert_int_equal(relstack_cursor__next(c, &out), 0);
	relstack_cursor__free(c);
	relstack_reader__close(r);
}

static void a_context_record_says_its_first_word_is_an_interrupted_instruction(void **state)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_verdict v = { 0 };
	uint64_t words[64];
	ucontext_t uc;
	int n;

	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);
	relstack_recorder__thread_init();
	assert_int_equal(getcontext(&uc), 0);
	/* a context's record, a plain one, and words written with and without the flag */
	assert_int_equal(relstack_recorder__record_context(rec, &uc, RELSTACK_EVENT_STACK, NULL, 0, 0), 0);
	assert_int_equal(relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, 0), 0);
	n = relstack_capture_context(&uc, words, 64, 0, &v);
	assert_true(n > 0);
	assert_int_equal(relstack_recorder__write(rec, RELSTACK_EVENT_STACK, words, (size_t)n, &v, NULL, 0,
						  RELSTACK_RECORD_INTERRUPTED), 0);
	assert_int_equal(relstack_recorder__write(rec, RELSTACK_EVENT_STACK, words + 1, (size_t)n - 1, &v, NULL, 0, 0),
			 0);
	assert_int_equal(relstack_recorder__close(rec), 0);

	r = relstack_reader__open(path, NULL);
	assert_non_null(r);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_non_null(c);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(relstack_cursor__next(c, &out), 1);
		assert_true(out.nwords > 0);
		assert_int_equal(out.interrupted, i == 0 || i == 2);
	}
	assert_int_equal(relstack_cursor__next(c, &out), 0);
	relstack_cursor__free(c);
	relstack_reader__close(r);
}

static void errors_have_distinct_codes_and_names(void **state)
{
	static const int codes[] = {
		RELSTACK_EFORMAT, RELSTACK_ECORRUPT, RELSTACK_EVERSION, RELSTACK_EMAGIC,
		RELSTACK_EBUILDID, RELSTACK_ENOSYMBOLS, RELSTACK_ETRUNCATED,
	};
	const size_t n = sizeof(codes) / sizeof(codes[0]);

	for (size_t i = 0; i < n; i++) {
		const char *name = relstack_strerror(-codes[i]);

		/* beyond errno's range, and named by relstack, not by strerror()'s fallback */
		assert_true(codes[i] > 255);
		assert_non_null(name);
		assert_null(strstr(name, "Unknown error"));
		assert_string_equal(name, relstack_strerror(codes[i]));
		for (size_t k = 0; k < i; k++) {
			assert_int_not_equal(codes[i], codes[k]);
			assert_string_not_equal(name, relstack_strerror(-codes[k]));
		}
	}
	/* errno values keep their own names */
	assert_string_equal(relstack_strerror(-ENOENT), strerror(ENOENT));
}

static void open_errors_name_the_file_and_carry_their_code(void **state)
{
	char err[200] = "";
	struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_recorder *rec;
	FILE *f;

	assert_null(relstack_reader__open(path, &ro));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, path));
	rec = relstack_recorder__open(path, NULL);
	assert_non_null(rec);
	relstack_recorder__close(rec);
	assert_int_equal(truncate(path, 5000), 0);
	assert_null(relstack_reader__open(path, &ro));
	assert_int_equal(errno, RELSTACK_ETRUNCATED);
	assert_non_null(strstr(err, path));
	f = fopen(path, "w");
	fputs("hello", f);
	fclose(f);
	assert_null(relstack_reader__open(path, &ro));
	assert_int_equal(errno, RELSTACK_EMAGIC);
	assert_non_null(strstr(err, path));
	assert_null(relstack_recorder__open(dir, NULL));
}

/* A caller's options struct, compiled against a header of another size. */
struct grown_recorder_opts {
	struct relstack_recorder_opts known;
	uint64_t newer_field;
};

struct grown_reader_opts {
	struct relstack_reader_opts known;
	uint64_t newer_field;
};

static void every_options_struct_follows_the_one_size_rule(void **state)
{
	struct relstack_recorder_opts too_small = { .sz = sizeof(size_t) - 1 };
	struct relstack_recorder_opts old = { .sz = sizeof(size_t) }; /* an old caller knowing only sz */
	struct grown_recorder_opts newer = { .known.sz = sizeof(newer) };
	struct relstack_reader_opts rtoo_small = { .sz = 0 };
	char err[200] = "";
	/* an old caller whose struct ends before errbuf_sz: the library must not read it */
	struct relstack_reader_opts rold = { .sz = offsetof(struct relstack_reader_opts, errbuf_sz),
					     .errbuf = err, .errbuf_sz = sizeof(err) };
	struct grown_reader_opts rnewer = { .known.sz = sizeof(rnewer) };
	struct relstack_recorder *rec;
	struct relstack_reader *r;

	/* sz must cover sz itself */
	errno = 0;
	assert_null(relstack_recorder__open(path, &too_small));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(access(path, F_OK), -1); /* refused before anything was created */

	/* a newer caller asking for something unknown is refused, untouched */
	newer.newer_field = 1;
	errno = 0;
	assert_null(relstack_recorder__open(path, &newer.known));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(access(path, F_OK), -1);

	/* ... and accepted when the unknown tail is zero */
	newer.newer_field = 0;
	rec = relstack_recorder__open(path, &newer.known);
	assert_non_null(rec);
	relstack_recorder__close(rec);

	/* an old caller's missing fields take their defaults */
	rec = relstack_recorder__open(path, &old);
	assert_non_null(rec);
	relstack_recorder__close(rec);

	/* the reader: the same rule */
	errno = 0;
	assert_null(relstack_reader__open(path, &rtoo_small));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(relstack_reader__open_mem("x", 1, &rtoo_small));
	assert_int_equal(errno, EINVAL);
	rnewer.newer_field = 7;
	errno = 0;
	assert_null(relstack_reader__open(path, &rnewer.known));
	assert_int_equal(errno, EINVAL);
	rnewer.newer_field = 0;
	r = relstack_reader__open(path, &rnewer.known);
	assert_non_null(r);
	relstack_reader__close(r);
	assert_int_equal(unlink(path), 0);
	assert_null(relstack_reader__open(path, &rold));
	assert_int_equal(errno, ENOENT);
	assert_string_equal(err, ""); /* errbuf_sz lies beyond the caller's struct */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(an_event_with_fields_and_a_stack_round_trips_through_the_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_context_record_says_its_first_word_is_an_interrupted_instruction, setup,
						teardown),
		cmocka_unit_test_setup_teardown(errors_have_distinct_codes_and_names, setup, teardown),
		cmocka_unit_test_setup_teardown(open_errors_name_the_file_and_carry_their_code, setup, teardown),
		cmocka_unit_test_setup_teardown(every_options_struct_follows_the_one_size_rule, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
