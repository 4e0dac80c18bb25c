// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The decoder and every presenter through the public API of
 * librelstack-decode, without the command: a file recorded here is
 * decoded here, its frames named after this file's functions.
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
#include <zlib.h>

#include <cmocka.h>

#include <relstack/decode.h>
#include <relstack/relstack.h>
#include <relstack/unwind.h>

static char dir[64], path[128];
static int ev_lock, ev_other, ev_guess;

struct lock_event {
	uint64_t lock;
};

__attribute__((noinline)) static int decode_api_contended(struct relstack_recorder *rec, int ev, uint64_t lock)
{
	struct lock_event e = { lock };
	int ret = relstack_recorder__record(rec, (unsigned)ev, ev == ev_other ? NULL : &e, ev == ev_other ? 0 : sizeof(e), 0);

	__asm__ volatile("" ::: "memory");
	return ret;
}

/* Functions under mangled names, as a C++ and a Rust compiler would emit them. */
__attribute__((noinline)) int decode_api_cxx(struct relstack_recorder *r, int ev) __asm__("_ZN4demo7contendEPvi");
__attribute__((noinline)) int decode_api_rust(struct relstack_recorder *r, int ev)
	__asm__("_ZN4demo4rust7contend17h0123456789abcdefE");

int decode_api_cxx(struct relstack_recorder *r, int ev)
{
	int ret = decode_api_contended(r, ev, 0);

	__asm__ volatile("" ::: "memory");
	return ret;
}

int decode_api_rust(struct relstack_recorder *r, int ev)
{
	int ret = decode_api_cxx(r, ev);

	__asm__ volatile("" ::: "memory");
	return ret;
}

static int setup(void **state)
{
	static const struct relstack_event_field fields[] = {
		{ "lock", offsetof(struct lock_event, lock), 8, RELSTACK_FIELD_HEX },
	};
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;

	strcpy(dir, "/tmp/rs-decode-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/buf", dir);
	o.mode = RELSTACK_MODE_STOP;
	rec = relstack_recorder__open(path, &o);
	if (!rec)
		return -1;
	ev_lock = relstack_recorder__define_event(rec, "lock_contended", fields, 1, sizeof(struct lock_event));
	ev_other = relstack_recorder__define_event(rec, "other", NULL, 0, 0);
	relstack_recorder__thread_init();
	for (int i = 0; i < 3; i++)
		if (decode_api_contended(rec, ev_lock, 0xabc0 + (unsigned)i) != 0)
			return -1;
	if (decode_api_rust(rec, ev_other) != 0)
		return -1;
	/* a stack with a verdict of unreliable, as an unwinder that lost its way writes it */
	{
		uint64_t words[64];
		struct relstack_verdict v;
		int n = relstack_capture(words, 64, 0, 0, &v);

		ev_guess = relstack_recorder__define_event(rec, "guess", NULL, 0, 0);
		v.reasons |= RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
		if (n < 1 || relstack_recorder__write(rec, (unsigned)ev_guess, words, (size_t)n, &v, NULL, 0, 0) != 0)
			return -1;
	}
	return relstack_recorder__close(rec) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	unlink(path);
	rmdir(dir);
	return 0;
}

static struct relstack_decoder *open_decoder(struct relstack_reader **r, const char *const *events, size_t n)
{
	struct relstack_decode_opts o = {
		.sz = sizeof(o), .name = path, .symbolize = true, .lines = true, .inlines = true, .demangle = true,
		.events = events, .n_events = n,
	};
	struct relstack_decoder *d = NULL;
	char err[256] = "";

	*r = relstack_reader__open(path, NULL);
	assert_non_null(*r);
	assert_int_equal(relstack_decoder__new(*r, &o, &d, err, sizeof(err)), 0);
	return d;
}

static void decoded_frames_name_the_recording_function_with_its_object_build_id_and_line(void **state)
{
	const struct relstack_decoded_record *dr;
	struct relstack_reader *r;
	struct relstack_decoder *d = open_decoder(&r, NULL, 0);
	const struct relstack_decoded_frame *fr;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	assert_true(n > 0);
	self[n] = '\0';
	assert_int_equal(relstack_decoder__count(d), 5);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_string_equal(dr->event, "lock_contended");
	assert_true(dr->reliable);
	assert_true(dr->nframes >= 2);
	fr = &dr->frames[0];
	assert_int_equal(fr->kind, RELSTACK_ENTRY_OBJECT);
	assert_string_equal(fr->object->path, self);
	assert_true(fr->object->build_id_len > 0);
	assert_true(fr->return_address);
	assert_non_null(fr->symbol);
	assert_string_equal(fr->symbol, "decode_api_contended");
	assert_null(fr->unnamed);
	assert_non_null(fr->file);
	assert_non_null(strstr(fr->file, "test_decode_api.c"));
	assert_true(fr->line > 0);
	/* the records come in the order they were written, and end */
	for (int i = 1; i < 4; i++)
		assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_string_equal(dr->event, "other");
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_string_equal(dr->event, "guess");
	assert_false(dr->reliable);
	assert_int_equal(relstack_decoder__next(d, &dr), 0);
	relstack_decoder__rewind(d);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_string_equal(dr->event, "lock_contended");
	relstack_decoder__free(d);
	relstack_reader__close(r);
}

static void an_interrupted_pc_at_a_functions_first_instruction_is_named_as_that_function(void **state)
{
	struct relstack_decode_opts o = { .sz = sizeof(o), .symbolize = true, .demangle = true };
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	const struct relstack_decoded_record *dr;
	struct relstack_recorder *rec;
	struct relstack_reader *r;
	struct relstack_decoder *d;
	struct relstack_verdict v = { 0 };
	uintptr_t pc = (uintptr_t)&decode_api_cxx; /* its first instruction: pc - 1 is another function's */
	char file[160], err[256] = "";
	uint64_t w;

	snprintf(file, sizeof(file), "%s/interrupted", dir);
	rec = relstack_recorder__open(file, &ro);
	assert_non_null(rec);
	assert_int_equal(relstack_encode(&pc, &w, 1, 0, NULL), 1);
	/* as a context's first word, then as a return address */
	assert_int_equal(relstack_recorder__write(rec, RELSTACK_EVENT_STACK, &w, 1, &v, NULL, 0,
						  RELSTACK_RECORD_INTERRUPTED), 0);
	assert_int_equal(relstack_recorder__write(rec, RELSTACK_EVENT_STACK, &w, 1, &v, NULL, 0, 0), 0);
	assert_int_equal(relstack_recorder__close(rec), 0);
	r = relstack_reader__open(file, NULL);
	assert_non_null(r);
	o.name = file;
	assert_int_equal(relstack_decoder__new(r, &o, &d, err, sizeof(err)), 0);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_false(dr->frames[0].return_address);
	assert_non_null(dr->frames[0].symbol);
	assert_non_null(strstr(dr->frames[0].symbol, "demo::contend"));
	assert_int_equal(dr->frames[0].symoff, 0);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_true(dr->frames[0].return_address);
	/* named at pc - 1: not the function at pc's offset 0 */
	assert_true(!dr->frames[0].symbol || !strstr(dr->frames[0].symbol, "demo::contend") ||
		    dr->frames[0].symoff != 0);
	relstack_decoder__free(d);
	relstack_reader__close(r);
	unlink(file);
}

static void without_symbols_a_frame_keeps_object_and_offset_and_no_name(void **state)
{
	struct relstack_decode_opts o = { .sz = sizeof(o), .name = path };
	const struct relstack_decoded_record *dr;
	struct relstack_reader *r = relstack_reader__open(path, NULL);
	struct relstack_decoder *d;
	char err[256];

	assert_int_equal(relstack_decoder__new(r, &o, &d, err, sizeof(err)), 0);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_int_equal(dr->frames[0].kind, RELSTACK_ENTRY_OBJECT);
	assert_true(dr->frames[0].offset > 0);
	assert_false(dr->frames[0].symbolized);
	assert_null(dr->frames[0].symbol);
	relstack_decoder__free(d);
	relstack_reader__close(r);
}

static void the_event_filter_keeps_only_the_named_events_and_cxx_and_rust_names_are_demangled(void **state)
{
	static const char *const only[] = { "other" };
	const struct relstack_decoded_record *dr;
	struct relstack_reader *r;
	struct relstack_decoder *d = open_decoder(&r, only, 1);
	struct relstack_decode_opts raw = { .sz = sizeof(raw), .name = path, .symbolize = true, .events = only,
					    .n_events = 1 };
	char err[256];

	assert_int_equal(relstack_decoder__count(d), 1);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_string_equal(dr->event, "other");
	assert_string_equal(dr->frames[0].symbol, "decode_api_contended");
	assert_string_equal(dr->frames[1].symbol, "demo::contend(void*, int)");
	/* a legacy Rust name without its hash, as rustfilt shows it */
	assert_string_equal(dr->frames[2].symbol, "demo::rust::contend");
	relstack_decoder__free(d);
	/* without demangling, the symbol table's names */
	assert_int_equal(relstack_decoder__new(r, &raw, &d, err, sizeof(err)), 0);
	assert_int_equal(relstack_decoder__next(d, &dr), 1);
	assert_string_equal(dr->frames[1].symbol, "_ZN4demo7contendEPvi");
	relstack_decoder__free(d);
	relstack_reader__close(r);
}

static void bad_requests_come_back_as_errors_with_a_line_naming_the_problem(void **state)
{
	static const char *const unknown[] = { "no_such_event" };
	static const char *const bad_map[] = { "no_such_object=/dev/null" };
	struct relstack_decode_opts o = { .sz = sizeof(o), .name = path, .events = unknown, .n_events = 1 };
	struct relstack_reader *r = relstack_reader__open(path, NULL);
	struct relstack_decoder *d = (void *)1;
	char err[512] = "";

	assert_int_equal(relstack_decoder__new(r, &o, &d, err, sizeof(err)), -EINVAL);
	assert_null(d);
	assert_non_null(strstr(err, "no_such_event"));
	assert_non_null(strstr(err, path));
	o.n_events = 0;
	o.run = RELSTACK_RUN_PREVIOUS;
	assert_int_equal(relstack_decoder__new(r, &o, &d, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no previous run"));
	o.run = RELSTACK_RUN_CURRENT;
	o.symbolize = true;
	o.symbols = bad_map;
	o.n_symbols = 1;
	assert_int_equal(relstack_decoder__new(r, &o, &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "has no object 'no_such_object'"));
	o.sz = 1;
	assert_int_equal(relstack_decoder__new(r, &o, &d, err, sizeof(err)), -EINVAL);
	relstack_reader__close(r);
}

/* Every record of the file through the presenter for @format, into a malloc'd buffer. */
static char *present(const char *format, size_t *size)
{
	enum relstack_present_format fmt;
	struct relstack_present_opts po = { .sz = sizeof(po), .top = 1 };
	const struct relstack_decoded_record *dr;
	struct relstack_presenter *p;
	struct relstack_reader *r;
	struct relstack_decoder *d = open_decoder(&r, NULL, 0);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);

	assert_non_null(f);
	assert_int_equal(relstack_present_format_parse(format, &fmt), 0);
	po.format = fmt;
	po.run = relstack_decoder__run_info(d);
	assert_int_equal(relstack_presenter__new(&po, f, &p), 0);
	while (relstack_decoder__next(d, &dr) > 0)
		assert_int_equal(relstack_presenter__record(p, dr), 0);
	assert_int_equal(relstack_presenter__finish(p), 0);
	relstack_presenter__free(p);
	fclose(f);
	relstack_decoder__free(d);
	relstack_reader__close(r);
	return buf;
}

/* The file's records through @format twice, as two files named "a" and "b" (relstack_presenter__begin_file()). */
static char *present_twice(const char *format, size_t *size)
{
	enum relstack_present_format fmt;
	struct relstack_present_opts po = { .sz = sizeof(po) };
	const struct relstack_decoded_record *dr;
	struct relstack_presenter *p;
	struct relstack_reader *r;
	struct relstack_decoder *d = open_decoder(&r, NULL, 0);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);

	assert_non_null(f);
	assert_int_equal(relstack_present_format_parse(format, &fmt), 0);
	po.format = fmt;
	assert_int_equal(relstack_presenter__new(&po, f, &p), 0);
	for (const char *name = "a"; name; name = name[0] == 'a' ? "b" : NULL) {
		assert_int_equal(relstack_presenter__begin_file(p, name, relstack_decoder__run_info(d)), 0);
		relstack_decoder__rewind(d);
		while (relstack_decoder__next(d, &dr) > 0)
			assert_int_equal(relstack_presenter__record(p, dr), 0);
	}
	assert_int_equal(relstack_presenter__finish(p), 0);
	relstack_presenter__free(p);
	fclose(f);
	relstack_decoder__free(d);
	relstack_reader__close(r);
	return buf;
}

static void records_of_several_files_say_which_file_and_aggregates_add_up(void **state)
{
	size_t n, one_n;
	char *one = present("text", &one_n), *two = present_twice("text", &n), *want;

	/* text: each file's records under its name, the records as one file's */
	assert_int_not_equal(asprintf(&want, "==> a <==\n%s==> b <==\n%s", one, one), -1);
	assert_string_equal(two, want);
	free(want);
	free(two);
	free(one);
	/* json: a "file" key first in every record */
	two = present_twice("json", &n);
	assert_int_equal(strncmp(two, "{\"file\":\"a\",\"run\":", strlen("{\"file\":\"a\",\"run\":")), 0);
	assert_non_null(strstr(two, "\n{\"file\":\"b\",\"run\":"));
	free(two);
	/* folded: the stacks of both, added up */
	one = present("folded", &one_n);
	two = present_twice("folded", &n);
	assert_non_null(strstr(one, " 1\n"));
	assert_null(strstr(two, " 1\n"));
	free(two);
	free(one);
}

static void text_shows_the_verdict_the_fields_and_the_named_frame(void **state)
{
	size_t n;
	char *s = present("text", &n);

	assert_non_null(strstr(s, " lock_contended reliable lock=0xabc0\n => decode_api_contended+0x"));
	assert_non_null(strstr(s, "test_decode_api.c:"));
	free(s);
}

static void json_lines_hold_one_object_per_record_with_the_symbol(void **state)
{
	size_t n, lines = 0;
	char *s = present("json", &n);

	for (size_t i = 0; i < n; i++)
		lines += s[i] == '\n';
	assert_int_equal(lines, 5);
	assert_non_null(strstr(s, "\"event\":\"guess\",\"has_stack\":true,\"absolute\":false,\"reliable\":false"));
	assert_non_null(strstr(s, "\"reliable\":true"));
	assert_non_null(strstr(s, "\"symbol\":\"decode_api_contended\""));
	free(s);
}

static void folded_counts_identical_stacks_and_top_ranks_them(void **state)
{
	size_t n;
	char *s = present("folded", &n), *t;

	/* the three lock_contended stacks are one line, innermost frame last */
	assert_non_null(strstr(s, ";decode_api_contended 3\n"));
	assert_non_null(strstr(s, ";decode_api_contended 1\n"));
	/* sorted: the event first on each line */
	assert_int_equal(strncmp(s, "guess;", 6), 0);
	assert_non_null(strstr(s, "\nlock_contended;"));
	free(s);
	t = present("top", &n);
	assert_non_null(strstr(t, "#1 lock_contended 3 of 5 (60.0%)\n => decode_api_contended\n"));
	assert_null(strstr(t, "#2"));
	free(t);
}

static void pprof_is_gzip_holding_the_function_and_the_object(void **state)
{
	size_t n;
	char *s = present("pprof", &n);
	uint8_t out[1 << 16];
	z_stream z = { 0 };
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[len] = '\0';
	assert_true(n > 18);
	assert_int_equal((uint8_t)s[0], 0x1f);
	assert_int_equal((uint8_t)s[1], 0x8b);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)s;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = sizeof(out);
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	inflateEnd(&z);
	/* the string table holds the names, the count unit and the mapping's file */
	assert_non_null(memmem(out, z.total_out, "decode_api_contended", 20));
	assert_non_null(memmem(out, z.total_out, "samples", 7));
	assert_non_null(memmem(out, z.total_out, self, strlen(self)));
	free(s);
}

static void perf_script_has_a_header_per_stack_and_a_line_per_frame(void **state)
{
	size_t n;
	char *s = present("perf-script", &n);
	char *frame = strstr(s, "\n\t");

	assert_non_null(strstr(s, " [000] "));
	assert_non_null(strstr(s, ": 1 lock_contended:\n\t"));
	assert_non_null(frame);
	assert_non_null(strstr(frame, " decode_api_contended+0x"));
	/* a blank line ends each stack */
	assert_int_equal(memcmp(s + n - 2, "\n\n", 2), 0);
	free(s);
}

static void speedscope_names_its_schema_and_has_a_sampled_profile(void **state)
{
	size_t n;
	char *s = present("speedscope", &n);

	assert_non_null(strstr(s, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
	assert_non_null(strstr(s, "\"type\":\"sampled\""));
	assert_non_null(strstr(s, "{\"name\":\"decode_api_contended\",\"file\":"));
	assert_non_null(strstr(s, "\"weights\":[1,1,1,1,1]"));
	/* the unreliable stack's root says so */
	assert_non_null(strstr(s, "{\"name\":\"guess [unreliable]\"}"));
	free(s);
}

static void html_is_one_page_with_the_stacks_and_no_network_reference(void **state)
{
	size_t n;
	char *s = present("html", &n);

	assert_int_equal(strncmp(s, "<!DOCTYPE html>", 15), 0);
	/* the page's data (docs/format.md): the functions, the events, and
	 * the stacks counted reliable, unreliable */
	assert_non_null(strstr(s, "[\"decode_api_contended\","));
	assert_non_null(strstr(s, "[\"guess\",0,0]"));
	assert_non_null(strstr(s, "],3,0]"));
	assert_non_null(strstr(s, "],0,1]"));
	assert_null(strstr(s, "src="));
	assert_null(strstr(s, "://"));
	assert_non_null(strstr(s, "</html>\n"));
	free(s);
}

static void an_unknown_format_is_refused(void **state)
{
	enum relstack_present_format fmt;
	struct relstack_present_opts po = { .sz = sizeof(po), .format = (enum relstack_present_format)99 };
	struct relstack_presenter *p;

	assert_int_equal(relstack_present_format_parse("svg", &fmt), -EINVAL);
	assert_int_equal(relstack_presenter__new(&po, stdout, &p), -EINVAL);
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decoded_frames_name_the_recording_function_with_its_object_build_id_and_line),
		cmocka_unit_test(an_interrupted_pc_at_a_functions_first_instruction_is_named_as_that_function),
		cmocka_unit_test(without_symbols_a_frame_keeps_object_and_offset_and_no_name),
		cmocka_unit_test(the_event_filter_keeps_only_the_named_events_and_cxx_and_rust_names_are_demangled),
		cmocka_unit_test(bad_requests_come_back_as_errors_with_a_line_naming_the_problem),
		cmocka_unit_test(text_shows_the_verdict_the_fields_and_the_named_frame),
		cmocka_unit_test(json_lines_hold_one_object_per_record_with_the_symbol),
		cmocka_unit_test(folded_counts_identical_stacks_and_top_ranks_them),
		cmocka_unit_test(pprof_is_gzip_holding_the_function_and_the_object),
		cmocka_unit_test(perf_script_has_a_header_per_stack_and_a_line_per_frame),
		cmocka_unit_test(speedscope_names_its_schema_and_has_a_sampled_profile),
		cmocka_unit_test(html_is_one_page_with_the_stacks_and_no_network_reference),
		cmocka_unit_test(an_unknown_format_is_refused),
		cmocka_unit_test(records_of_several_files_say_which_file_and_aggregates_add_up),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
