// SPDX-License-Identifier: LGPL-2.1-or-later
/* The buffer file: records, modes, runs, schemas, partial records, file creation. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "ring/ring.h"
#include "ring-fixture.h"

static struct rs_tmpfile tf;
static const char *path = tf.path;

static int setup(void **state)
{
	rs_tmpfile_make(&tf, "ring");
	return 0;
}

static int teardown(void **state)
{
	rs_tmpfile_remove(&tf);
	return 0;
}

static struct relstack_recorder *open_rec(enum relstack_recorder_mode mode, uint64_t size, unsigned flags)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;

	o.mode = mode;
	o.size = size;
	o.flags = flags;
	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);
	return rec;
}

/* Record @seq with @n words and a verdict of its own (seq & 3), so that verdicts read back are checked too. */
static int write_seq(struct relstack_recorder *rec, int ev, uint64_t seq, unsigned n)
{
	struct relstack_verdict v = { .reasons = (uint32_t)seq & 3, .frames = n, .epoch = 1 };

	return rs_seq_write(rec, ev, 0, seq, n, &v);
}

/* Checks every record of a run; returns how many, fills first/last seq. */
static size_t verify_run(struct relstack_reader *r, enum relstack_run_which which, uint64_t *first, uint64_t *last)
{
	struct relstack_cursor *c = relstack_reader__records(r, which);
	struct relstack_record rec;
	size_t n = 0;

	assert_non_null(c);
	while (relstack_cursor__next(c, &rec) > 0) {
		uint32_t t;
		uint64_t seq;

		rs_seq_check(&rec, &t, &seq);
		assert_int_equal(rec.reasons, (uint32_t)seq & 3);
		if (n == 0)
			*first = seq;
		else
			assert_int_equal(seq, *last + 1);
		*last = seq;
		n++;
	}
	relstack_cursor__free(c);
	return n;
}

static void records_come_back_with_words_fields_tid_and_event_name(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	int ev = rs_seq_define(rec);
	struct relstack_reader *r;
	struct relstack_run_info info;
	struct relstack_cursor *c;
	struct relstack_record out;
	uint64_t first = 0, last = 0;

	assert_true(ev >= 2);
	for (uint64_t s = 0; s < 100; s++)
		assert_int_equal(write_seq(rec, ev, s, (unsigned)(s % 40)), 0);
	assert_int_equal(relstack_recorder__close(rec), 0);

	r = rs_seq_reader(path);
	assert_int_equal(relstack_reader__run_count(r), 1);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.state, RELSTACK_RUN_CLOSED);
	assert_int_equal(info.records, 100);
	assert_int_equal(info.skipped, 0);
	assert_int_equal(info.pid, (uint32_t)getpid());
	assert_int_equal(info.ring_size, 1u << 20);
	assert_true(info.realtime_ns > 1600000000ull * 1000000000ull);
	assert_int_equal(verify_run(r, RELSTACK_RUN_CURRENT, &first, &last), 100);
	assert_int_equal(first, 0);
	assert_int_equal(last, 99);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_int_equal(relstack_cursor__next(c, &out), 1);
	assert_int_equal(out.tid, (uint32_t)gettid());
	assert_true(out.time_ns >= info.monotonic_ns);
	assert_true(out.realtime_ns >= info.realtime_ns);
	assert_int_equal(out.epoch, 1);
	assert_false(out.absolute);
	relstack_cursor__free(c);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_PREVIOUS, &info), -ENOENT);
	relstack_reader__close(r);
}

__attribute__((noinline)) static int record_here(struct relstack_recorder *rec)
{
	int ret = relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, 0);

	__asm__ volatile("" ::: "memory");
	return ret;
}

/*
 * A thread whose stack the unwinder knows (registered), running only code
 * built with frame pointers down to the thread's start: its stack can be
 * proven whole.
 */
static void *record_on_registered_thread(void *arg)
{
	assert_int_equal(relstack_recorder__thread_init(), 0);
	assert_int_equal(record_here(arg), 0);
	return arg;
}

static void recorded_stack_is_relative_reliable_and_checks_against_the_runs_object_table(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_entry e;
	struct relstack_object obj;
	uint64_t load = 1;
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, record_on_registered_thread, rec), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	relstack_recorder__close(rec);
	r = rs_seq_reader(path);
	assert_false(relstack_reader__has_addresses(r));
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_int_equal(relstack_cursor__next(c, &out), 1);
	assert_string_equal(out.event_name, "stack");
	assert_true(out.has_stack);
	assert_false(out.absolute);
	assert_true(out.nwords >= 2);
	assert_true(out.epoch >= 1);
	/* reliable, and so it ends with END */
	if (out.reasons != 0)
		fail_msg("verdict 0x%x: the stack of a registered thread with frame pointers is not reliable", out.reasons);
	assert_true(out.words[out.nwords - 1] == relstack_word_marker(relstack_reader__format(r), RELSTACK_MARKER_END));
	/* the first frame is record_here() in the main executable, and it checks out */
	relstack_word_decode(relstack_reader__format(r), out.words[0], &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, 0);
	relstack_reader__check_entry(r, RELSTACK_RUN_CURRENT, out.epoch, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(relstack_reader__object(r, RELSTACK_RUN_CURRENT, 0, &obj, &load, NULL), 0);
	assert_true(obj.flags & RELSTACK_OBJECT_MAIN);
	assert_int_equal(load, 0);
	relstack_cursor__free(c);
	relstack_reader__close(r);
}

static void absolute_stacks_need_the_option_and_then_the_file_says_it_holds_addresses(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_object obj;
	struct relstack_run_info info;
	uint64_t load = 0;

	assert_int_equal(relstack_recorder__record(rec, 0, NULL, 0, RELSTACK_RECORD_ABSOLUTE), -EPERM);
	relstack_recorder__close(rec);
	r = rs_seq_reader(path);
	assert_false(relstack_reader__has_addresses(r));
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.lost, 1);
	relstack_reader__close(r);

	rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, RELSTACK_RECORDER_ABSOLUTE);
	assert_int_equal(relstack_recorder__record(rec, 0, NULL, 0, RELSTACK_RECORD_ABSOLUTE), 0);
	assert_int_equal(relstack_recorder__record(rec, 0, NULL, 0, 0), 0);
	relstack_recorder__close(rec);
	r = rs_seq_reader(path);
	assert_true(relstack_reader__has_addresses(r));
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_int_equal(relstack_cursor__next(c, &out), 1);
	assert_true(out.absolute);
	assert_int_equal(relstack_cursor__next(c, &out), 1);
	assert_false(out.absolute); /* relative and absolute stacks mix in one run */
	relstack_cursor__free(c);
	assert_int_equal(relstack_reader__object(r, RELSTACK_RUN_CURRENT, 0, &obj, &load, NULL), 0);
	assert_true(load != 0);
	relstack_reader__close(r);
}

static void overwrite_mode_keeps_the_newest_records_and_counts_the_overwritten(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 64 << 10, 0);
	int ev = rs_seq_define(rec);
	struct relstack_reader *r;
	struct relstack_run_info info;
	uint64_t first = 0, last = 0;
	size_t n;

	for (uint64_t s = 0; s < 5000; s++)
		assert_int_equal(write_seq(rec, ev, s, 20), 0);
	relstack_recorder__close(rec);
	r = rs_seq_reader(path);
	n = verify_run(r, RELSTACK_RUN_CURRENT, &first, &last);
	assert_int_equal(last, 4999);
	assert_true(first > 0);
	assert_int_equal(n, last - first + 1);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.skipped, 0);
	assert_int_equal(info.lost, 0);
	assert_true(info.overwritten > 0);
	/* every record is either in the file or counted as overwritten (the last chunk's count is in TLS) */
	assert_true(info.overwritten + n <= 5000);
	assert_true(info.overwritten + n + RS_CHUNK / 208 >= 5000);
	relstack_reader__close(r);
}

static void stop_mode_keeps_the_oldest_records_and_counts_the_lost(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_STOP, 64 << 10, 0);
	int ev = rs_seq_define(rec);
	struct relstack_reader *r;
	struct relstack_run_info info;
	uint64_t first = 0, last = 0;
	unsigned refused = 0;
	size_t n;

	for (uint64_t s = 0; s < 5000; s++) {
		int ret = write_seq(rec, ev, s, 20);

		if (ret == -ENOSPC)
			refused++;
		else
			assert_int_equal(ret, 0);
	}
	relstack_recorder__close(rec);
	r = rs_seq_reader(path);
	n = verify_run(r, RELSTACK_RUN_CURRENT, &first, &last);
	assert_int_equal(first, 0);
	assert_int_equal(n, 5000 - refused);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.lost, refused);
	assert_int_equal(info.overwritten, 0);
	assert_true(refused > 4000);
	relstack_reader__close(r);
}

static void a_new_run_keeps_the_previous_run_decodable_and_drops_the_one_before(void **state)
{
	struct relstack_run_info cur, prev;
	struct relstack_reader *r;
	uint64_t first = 0, last = 0;

	for (unsigned run = 0; run < 3; run++) {
		struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
		int ev = rs_seq_define(rec);

		for (uint64_t s = 0; s < 10; s++)
			assert_int_equal(write_seq(rec, ev, run * 1000 + s, 5), 0);
		if (run < 2)
			relstack_recorder__close(rec);
		else {
			/* the third run is still open (or its writer died): the reader sees both */
			r = rs_seq_reader(path);
			assert_int_equal(relstack_reader__run_count(r), 2);
			assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &cur), 0);
			assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_PREVIOUS, &prev), 0);
			assert_int_equal(cur.generation, 3);
			assert_int_equal(cur.state, RELSTACK_RUN_ACTIVE);
			assert_true(cur.writer_alive);
			assert_false(prev.writer_alive);
			assert_int_equal(prev.generation, 2);
			assert_int_equal(prev.state, RELSTACK_RUN_CLOSED);
			assert_int_equal(verify_run(r, RELSTACK_RUN_CURRENT, &first, &last), 10);
			assert_int_equal(first, 2000);
			assert_int_equal(verify_run(r, RELSTACK_RUN_PREVIOUS, &first, &last), 10);
			assert_int_equal(first, 1000);
			/* the previous run brings its own object table and schemas */
			assert_true(relstack_reader__object_count(r, RELSTACK_RUN_PREVIOUS) > 0);
			assert_non_null(relstack_reader__schema_by_id(r, RELSTACK_RUN_PREVIOUS, (unsigned)ev));
			assert_memory_not_equal(cur.run_id, prev.run_id, 16);
			relstack_reader__close(r);
			relstack_recorder__close(rec);
		}
	}
}

static void a_partial_record_is_skipped_and_counted_never_returned(void **state)
{
	for (unsigned stage = 1; stage <= 2; stage++) {
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			struct relstack_recorder *rec = relstack_recorder__open(path, NULL);
			int ev = rs_seq_define(rec);
			uint64_t w[8];
			struct rs_seq_fields f = { 0, 8, 5 };
			struct rs_rec_in in = { .kind = RS_REC_STACK_REL, .event_id = (uint16_t)ev, .words = w,
						.nwords = 8, .fields = &f, .fields_size = sizeof(f) };

			for (uint64_t s = 0; s < 5; s++)
				write_seq(rec, ev, s, 8);
			for (unsigned i = 0; i < 8; i++)
				w[i] = rs_seq_payload(0, 5, i);
			rs_ring_write_partial(&rec->ring, &in, stage);
			write_seq(rec, ev, 6, 8);
			kill(getpid(), SIGKILL);
			_exit(1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		{
			struct relstack_reader *r = rs_seq_reader(path);
			struct relstack_run_info info;
			struct relstack_cursor *c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
			struct relstack_record rec;
			int64_t seqs[8];
			size_t n = 0;

			assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
			assert_int_equal(info.state, RELSTACK_RUN_ACTIVE);
			assert_false(info.writer_alive); /* killed: active, but nobody holds the file */
			assert_int_equal(info.skipped, 1);
			assert_int_equal(info.skipped_partial, 1);
			assert_null(relstack_reader__record_error(r, RELSTACK_RUN_CURRENT)); /* a crash, not damage */
			while (relstack_cursor__next(c, &rec) > 0 && n < 8)
				relstack_record__field_int(&rec, "seq", &seqs[n++]);
			assert_int_equal(n, 6);
			assert_int_equal(seqs[4], 4);
			assert_int_equal(seqs[5], 6); /* 5 was cut short, 6 after it is intact */
			relstack_cursor__free(c);
			relstack_reader__close(r);
		}
	}
}

static void event_schemas_are_stored_checked_and_decoded_by_name(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	static const struct relstack_event_field bad[] = { { "x", 6, 4, RELSTACK_FIELD_UNSIGNED } };
	static const struct relstack_event_field odd[] = { { "x", 0, 3, RELSTACK_FIELD_SIGNED } };
	static const struct relstack_event_field sig[] = { { "v", 0, 2, RELSTACK_FIELD_SIGNED },
							   { "name", 2, 6, RELSTACK_FIELD_STRING } };
	int ev = rs_seq_define(rec);
	int ev2 = relstack_recorder__define_event(rec, "small", sig, 2, 8);
	unsigned char f2[8] = { 0xfe, 0xff, 'a', 'b', 0, 0, 0, 0 };
	struct relstack_reader *r;
	const struct relstack_schema *s;
	struct relstack_cursor *c;
	struct relstack_record out;
	int64_t v;

	assert_int_equal(rs_seq_define(rec), ev);
	assert_int_equal(relstack_recorder__define_event(rec, "seq", sig, 1, sizeof(struct rs_seq_fields)), -EEXIST);
	assert_int_equal(relstack_recorder__define_event(rec, "bad", bad, 1, 8), -EINVAL);
	assert_int_equal(relstack_recorder__define_event(rec, "odd", odd, 1, 8), -EINVAL);
	assert_int_equal(relstack_recorder__define_event(rec, "with space", NULL, 0, 0), -EINVAL);
	assert_int_equal(relstack_recorder__record(rec, 63, NULL, 0, 0), -ENOENT);
	assert_int_equal(relstack_recorder__record(rec, (unsigned)ev2, f2, 4, 0), -E2BIG);
	assert_int_equal(relstack_recorder__record(rec, (unsigned)ev2, f2, 8, RELSTACK_RECORD_NO_STACK), 0);
	relstack_recorder__close(rec);

	r = rs_seq_reader(path);
	assert_int_equal(relstack_reader__schema_count(r, RELSTACK_RUN_CURRENT), 4);
	s = relstack_reader__schema_by_id(r, RELSTACK_RUN_CURRENT, RELSTACK_EVENT_CRASH);
	assert_string_equal(s->name, "crash");
	assert_int_equal(s->size, sizeof(struct relstack_crash_fields));
	s = relstack_reader__schema_by_id(r, RELSTACK_RUN_CURRENT, (unsigned)ev);
	assert_int_equal(s->nfields, 3);
	assert_string_equal(s->field[2].name, "seq");
	assert_int_equal(s->field[2].offset, 8);
	assert_int_equal(s->field[2].size, 8);
	assert_int_equal(s->field[2].type, RELSTACK_FIELD_UNSIGNED);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_int_equal(relstack_cursor__next(c, &out), 1);
	assert_false(out.has_stack);
	assert_string_equal(out.event_name, "small");
	assert_int_equal(relstack_record__field_int(&out, "v", &v), 0);
	assert_int_equal(v, -2);
	assert_int_equal(relstack_record__field_int(&out, "name", &v), -EINVAL);
	assert_int_equal(relstack_record__field_int(&out, "nope", &v), -ENOENT);
	assert_int_equal(relstack_cursor__next(c, &out), 0);
	relstack_cursor__free(c);
	relstack_reader__close(r);
}

static void new_files_are_0600_and_symlinks_and_foreign_files_are_refused(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	char link[160], other[160], buf[32];
	struct stat st;
	int fd;

	relstack_recorder__close(rec);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	snprintf(link, sizeof(link), "%s/link", tf.dir);
	assert_int_equal(symlink(path, link), 0);
	assert_null(relstack_recorder__open(link, NULL));
	assert_int_equal(errno, ELOOP);

	snprintf(other, sizeof(other), "%s/other", tf.dir);
	fd = open(other, O_CREAT | O_WRONLY, 0644);
	assert_int_equal(write(fd, "precious data, not a buffer", 27), 27);
	close(fd);
	assert_null(relstack_recorder__open(other, NULL));
	assert_int_equal(errno, RELSTACK_EMAGIC);
	fd = open(other, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 27);
	close(fd);
	assert_memory_equal(buf, "precious data, not a buffer", 27);

	/* one recorder per file */
	rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	assert_null(relstack_recorder__open(path, NULL));
	assert_int_equal(errno, EBUSY);
	relstack_recorder__close(rec);
}

static void options_of_a_newer_caller_are_refused_unless_zero(void **state)
{
	struct {
		struct relstack_recorder_opts o;
		uint64_t future;
	} big = { { .sz = sizeof(big) }, 0 };
	struct relstack_recorder *rec = relstack_recorder__open(path, &big.o);

	assert_non_null(rec);
	relstack_recorder__close(rec);
	big.future = 1;
	assert_null(relstack_recorder__open(path, &big.o));
	assert_int_equal(errno, EINVAL);
}


static void a_forked_child_records_into_the_same_run_with_its_own_thread_id(void **state)
{
	struct relstack_recorder *rec = open_rec(RELSTACK_MODE_OVERWRITE, 0, 0);
	int ev = rs_seq_define(rec);
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	uint32_t parent = (uint32_t)gettid(), child_tid = 0, seen = 0;
	int status;
	pid_t pid;

	for (uint64_t s = 0; s < 10; s++)
		assert_int_equal(write_seq(rec, ev, s, 8), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (uint64_t s = 10; s < 20; s++)
			if (write_seq(rec, ev, s, 8) != 0)
				_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (uint64_t s = 20; s < 30; s++)
		assert_int_equal(write_seq(rec, ev, s, 8), 0);
	relstack_recorder__close(rec);

	r = rs_seq_reader(path);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &out) > 0) {
		int64_t seq;

		relstack_record__field_int(&out, "seq", &seq);
		assert_true(seq >= 0 && seq < 30 && !(seen & 1u << seq));
		seen |= 1u << seq;
		for (size_t i = 0; i < out.nwords; i++)
			assert_true(out.words[i] == rs_seq_payload(0, (uint64_t)seq, (unsigned)i));
		if (seq >= 10 && seq < 20)
			child_tid = out.tid;
		else
			assert_int_equal(out.tid, parent);
	}
	relstack_cursor__free(c);
	assert_int_equal(child_tid, (uint32_t)pid); /* the child's cached thread id was reset */
	assert_int_equal(seen, (1u << 30) - 1);     /* all 30, each once: the child took a chunk of its own */
	relstack_reader__close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(records_come_back_with_words_fields_tid_and_event_name, setup, teardown),
		cmocka_unit_test_setup_teardown(recorded_stack_is_relative_reliable_and_checks_against_the_runs_object_table,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			absolute_stacks_need_the_option_and_then_the_file_says_it_holds_addresses, setup, teardown),
		cmocka_unit_test_setup_teardown(overwrite_mode_keeps_the_newest_records_and_counts_the_overwritten,
						setup, teardown),
		cmocka_unit_test_setup_teardown(stop_mode_keeps_the_oldest_records_and_counts_the_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(a_new_run_keeps_the_previous_run_decodable_and_drops_the_one_before,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_partial_record_is_skipped_and_counted_never_returned, setup, teardown),
		cmocka_unit_test_setup_teardown(event_schemas_are_stored_checked_and_decoded_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(new_files_are_0600_and_symlinks_and_foreign_files_are_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(options_of_a_newer_caller_are_refused_unless_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(a_forked_child_records_into_the_same_run_with_its_own_thread_id, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
