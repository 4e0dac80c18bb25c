// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The symbolizer against real files: the fixture library built -O2 -g
 * (tests/lib/decode/symfix.c), copies of it made here with objcopy
 * (stripped, debug-only, debuglinked, under a build-id directory), nm
 * output, another build of the same source, and the system's libc with
 * its Debian debug file.  Expected names and sizes come from nm(1) and
 * addr2line(1), never from the code under test.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "decode/symbolize.h"
#include "relstack/relstack.h"

/* The binutils of the objects under test (a cross build's own). */
#ifndef OBJCOPY
#define OBJCOPY "objcopy"
#endif

static char tmp[1024];

/* ---- helpers ---- */

static void sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

static const char *tpath(const char *name)
{
	static char buf[8][2048];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmp, name);
	return buf[i];
}

/* Address and size of @name in @file, from nm -S. */
static void nm_symbol(const char *file, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[8192], line[4096];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	*addr = *size = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, s;
		char t, n[1024];

		if (sscanf(line, "%llx %llx %c %1023s", &a, &s, &t, n) == 4 && !strcmp(n, name)) {
			*addr = a;
			*size = s;
		}
	}
	pclose(p);
	if (!*size)
		fail_msg("nm found no %s in %s", name, file);
}

static unsigned fixture_const(const char *name)
{
	void *h = dlopen(SYMFIX_PATH, RTLD_NOW | RTLD_LOCAL);
	const unsigned *v;
	unsigned r;

	assert_non_null(h);
	v = dlsym(h, name);
	assert_non_null(v);
	r = *v;
	dlclose(h);
	return r;
}

static struct rs_symbolizer *new_symbolizer(bool lines, bool inlines, const char *debug_dir)
{
	const char *dirs[1] = { debug_dir };
	struct rs_symbolizer_opts o = {
		.sz = sizeof(o),
		.lines = lines,
		.inlines = inlines,
		.debug_dirs = dirs,
		.n_debug_dirs = debug_dir ? 1 : 0,
		.no_system_debug_dir = true,
	};
	struct rs_symbolizer *s = rs_symbolizer_new(&o);

	assert_non_null(s);
	return s;
}

static struct relstack_object fixture_record(const char *file)
{
	struct relstack_object obj;

	assert_int_equal(rs_object_from_file(file, &obj), 0);
	assert_true(obj.build_id_len > 0);
	return obj;
}

static int add_object(struct rs_symbolizer *s, const struct relstack_object *obj)
{
	int h = rs_symbolizer_object(s, obj);

	assert_true(h >= 0);
	return h;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && !strcmp(s + a - b, suffix);
}

static void build_id_hex(const struct relstack_object *obj, char *out)
{
	for (uint32_t i = 0; i < obj->build_id_len; i++)
		sprintf(out + 2 * i, "%02x", obj->build_id[i]);
}

static int setup(void **state)
{
	snprintf(tmp, sizeof(tmp), "%s/relstack-symtest-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmp))
		return -1;
	(void)state;
	return 0;
}

static int teardown(void **state)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	(void)state;
	return system(cmd) == 0 ? 0 : -1;
}

static const char *const fixture_functions[] = {
	"symfix_leaf", "symfix_outer", "symfix_lines", "symfix_big", "symfix_nested",
};

/* ---- names from the file at the recorded path ---- */

static void names_symoff_and_symsize_agree_with_nm(void **state)
{
	struct rs_symbolizer *s = new_symbolizer(false, false, NULL);
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	int h = add_object(s, &obj);

	for (size_t i = 0; i < sizeof(fixture_functions) / sizeof(fixture_functions[0]); i++) {
		uint64_t addr, size;
		struct rs_sym sym;

		nm_symbol(SYMFIX_PATH, fixture_functions[i], &addr, &size);
		for (uint64_t off = 0; off < size; off += size / 3 + 1) {
			assert_int_equal(rs_symbolize(s, h, addr + off, &sym), 0);
			assert_int_equal(sym.reason, RS_SYM_OK);
			assert_string_equal(sym.name, fixture_functions[i]);
			assert_int_equal(sym.symoff, off);
			assert_int_equal(sym.symsize, size);
			assert_true(sym.size_exact);
			assert_string_equal(sym.source, SYMFIX_PATH);
			assert_null(sym.file); /* lines were not asked for */
		}
	}
	assert_null(rs_symbolizer_object_error(s, h));
	rs_symbolizer_free(s);
	(void)state;
}

static void functions_are_found_by_name_where_nm_has_them(void **state)
{
	struct rs_symbolizer *s = new_symbolizer(false, false, NULL);
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	struct relstack_object gone = obj;
	struct rs_symextent e[2];
	int h = add_object(s, &obj), hg;

	for (size_t i = 0; i < sizeof(fixture_functions) / sizeof(fixture_functions[0]); i++) {
		uint64_t addr, size;
		struct rs_sym sym;

		nm_symbol(SYMFIX_PATH, fixture_functions[i], &addr, &size);
		assert_int_equal(rs_symbolizer_find(s, h, fixture_functions[i], e, 2), 1);
		assert_int_equal(e[0].offset, addr);
		assert_int_equal(e[0].size, size);
		/* the extent is where rs_symbolize() gives the name */
		assert_int_equal(rs_symbolize(s, h, e[0].offset + e[0].size - 1, &sym), 0);
		assert_string_equal(sym.name, fixture_functions[i]);
	}
	assert_int_equal(rs_symbolizer_find(s, h, "symfix_no_such_function", e, 2), 0);
	assert_int_equal(rs_symbolizer_find(s, h, "symfix", e, 2), 0);
	/* an object without names cannot say */
	snprintf(gone.path, sizeof(gone.path), "/nonexistent/libgone.so");
	hg = add_object(s, &gone);
	assert_int_equal(rs_symbolizer_find(s, hg, "symfix_leaf", e, 2), -RELSTACK_ENOSYMBOLS);
	rs_symbolizer_free(s);
	(void)state;
}

static void file_and_line_come_from_the_dwarf_of_the_file(void **state)
{
	struct rs_symbolizer *s = new_symbolizer(true, false, NULL);
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	int h = add_object(s, &obj);
	unsigned first = fixture_const("symfix_line_lines_first");
	uint64_t addr, size;
	struct rs_sym sym;

	nm_symbol(SYMFIX_PATH, "symfix_lines", &addr, &size);
	for (uint64_t off = 0; off < size; off++) {
		assert_int_equal(rs_symbolize(s, h, addr + off, &sym), 0);
		assert_true(ends_with(sym.file, "/symfix.c"));
		assert_in_range(sym.line, first, first + 4);
		assert_string_equal(sym.line_source, SYMFIX_PATH);
	}
	rs_symbolizer_free(s);
	(void)state;
}

static void inlined_frames_name_the_inlined_function_innermost_first(void **state)
{
	struct rs_symbolizer *s = new_symbolizer(true, true, NULL);
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	int h = add_object(s, &obj);
	unsigned inner_first = fixture_const("symfix_line_inner_first");
	unsigned inner_last = fixture_const("symfix_line_inner_last");
	unsigned call = fixture_const("symfix_line_call");
	uint64_t addr, size;
	unsigned seen = 0;

	nm_symbol(SYMFIX_PATH, "symfix_outer", &addr, &size);
	for (uint64_t off = 0; off < size; off++) {
		struct rs_sym sym;

		assert_int_equal(rs_symbolize(s, h, addr + off, &sym), 0);
		assert_string_equal(sym.name, "symfix_outer");
		if (sym.n_inlined == 0)
			continue;
		seen++;
		assert_int_equal(sym.n_inlined, 1);
		assert_string_equal(sym.inlined[0].name, "symfix_inner");
		assert_true(ends_with(sym.inlined[0].file, "/symfix.c"));
		assert_in_range(sym.inlined[0].line, inner_first, inner_last);
		/* the function's own location is the call site */
		assert_int_equal(sym.line, call);
		assert_true(ends_with(sym.file, "/symfix.c"));
	}
	assert_true(seen > 0);
	rs_symbolizer_free(s);
	(void)state;
}

static void nested_inlined_frames_chain_each_call_site(void **state)
{
	struct rs_symbolizer *s = new_symbolizer(true, true, NULL);
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	int h = add_object(s, &obj);
	unsigned inner_first = fixture_const("symfix_line_inner_first");
	unsigned inner_last = fixture_const("symfix_line_inner_last");
	unsigned middle_call = fixture_const("symfix_line_middle_call");
	unsigned nested_call = fixture_const("symfix_line_nested_call");
	uint64_t addr, size;
	unsigned seen = 0;

	nm_symbol(SYMFIX_PATH, "symfix_nested", &addr, &size);
	for (uint64_t off = 0; off < size; off++) {
		struct rs_sym sym;

		assert_int_equal(rs_symbolize(s, h, addr + off, &sym), 0);
		assert_string_equal(sym.name, "symfix_nested");
		if (sym.n_inlined < 2)
			continue;
		seen++;
		assert_int_equal(sym.n_inlined, 2);
		assert_string_equal(sym.inlined[0].name, "symfix_inner");
		assert_in_range(sym.inlined[0].line, inner_first, inner_last);
		/* symfix_middle, at the line where it calls symfix_inner */
		assert_string_equal(sym.inlined[1].name, "symfix_middle");
		assert_int_equal(sym.inlined[1].line, middle_call);
		assert_true(ends_with(sym.inlined[1].file, "/symfix.c"));
		/* symfix_nested itself, at the line where it calls symfix_middle */
		assert_int_equal(sym.line, nested_call);
	}
	assert_true(seen > 0);
	rs_symbolizer_free(s);
	(void)state;
}

/* ---- stripped files and their debug files ---- */

static void a_stripped_file_finds_its_debug_file_by_build_id(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	char hexid[2 * RELSTACK_BUILD_ID_MAX + 1], dbg[4096];
	struct rs_symbolizer *s;
	uint64_t addr, size;
	struct rs_sym sym;
	int h;

	build_id_hex(&obj, hexid);
	snprintf(dbg, sizeof(dbg), "%s/debug/.build-id/%.2s/%s.debug", tmp, hexid, hexid + 2);
	sh("mkdir -p '%s/debug/.build-id/%.2s'", tmp, hexid);
	sh(OBJCOPY " --only-keep-debug '%s' '%s'", SYMFIX_PATH, dbg);
	sh(OBJCOPY " --strip-all '%s' '%s'", SYMFIX_PATH, tpath("stripped.so"));
	snprintf(obj.path, sizeof(obj.path), "%s", tpath("stripped.so"));

	s = new_symbolizer(true, false, tpath("debug"));
	h = add_object(s, &obj);
	nm_symbol(SYMFIX_PATH, "symfix_lines", &addr, &size);
	assert_int_equal(rs_symbolize(s, h, addr + 1, &sym), 0);
	assert_string_equal(sym.name, "symfix_lines");
	assert_int_equal(sym.symoff, 1);
	assert_string_equal(sym.source, dbg);
	assert_string_equal(sym.line_source, dbg);
	assert_in_range(sym.line, fixture_const("symfix_line_lines_first"),
			fixture_const("symfix_line_lines_first") + 4);
	rs_symbolizer_free(s);

	/* without the debug directory only the dynamic symbols of the file remain */
	s = new_symbolizer(true, false, NULL);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr + 1, &sym), 0);
	assert_string_equal(sym.name, "symfix_lines");
	assert_string_equal(sym.source, obj.path);
	assert_null(sym.file);
	rs_symbolizer_free(s);
	(void)state;
}

static void debuglink_targets_are_found_next_to_the_file_and_in_dot_debug(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	uint64_t addr, size;
	struct rs_sym sym;

	nm_symbol(SYMFIX_PATH, "symfix_big", &addr, &size);
	sh("mkdir -p '%s/a' '%s/b/.debug'", tmp, tmp);
	sh(OBJCOPY " --only-keep-debug '%s' '%s/a/libsymfix.debug'", SYMFIX_PATH, tmp);
	sh(OBJCOPY " --strip-all --add-gnu-debuglink='%s/a/libsymfix.debug' '%s' '%s/a/libsymfix.so'", tmp,
	   SYMFIX_PATH, tmp);
	sh("cp '%s/a/libsymfix.so' '%s/b/libsymfix.so' && cp '%s/a/libsymfix.debug' '%s/b/.debug/'", tmp, tmp,
	   tmp, tmp);

	const char *where[2][2] = {
		{ "a/libsymfix.so", "a/libsymfix.debug" },
		{ "b/libsymfix.so", "b/.debug/libsymfix.debug" },
	};

	for (int i = 0; i < 2; i++) {
		struct rs_symbolizer *s = new_symbolizer(true, false, NULL);
		int h;

		snprintf(obj.path, sizeof(obj.path), "%s", tpath(where[i][0]));
		h = add_object(s, &obj);
		assert_int_equal(rs_symbolize(s, h, addr + 3, &sym), 0);
		assert_string_equal(sym.name, "symfix_big");
		assert_string_equal(sym.source, tpath(where[i][1]));
		assert_true(ends_with(sym.file, "/symfix.c"));
		rs_symbolizer_free(s);
	}
	(void)state;
}

static void a_debuglink_target_without_build_id_is_held_to_its_crc(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	struct rs_symbolizer *s;
	uint64_t addr, size;
	struct rs_sym sym;
	int h;

	nm_symbol(SYMFIX_PATH, "symfix_lines", &addr, &size);
	sh("mkdir -p '%s/crc'", tmp);
	sh(OBJCOPY " --only-keep-debug --remove-section=.note.gnu.build-id '%s' '%s/crc/libsymfix.debug'",
	   SYMFIX_PATH, tmp);
	sh(OBJCOPY " --strip-all --add-gnu-debuglink='%s/crc/libsymfix.debug' '%s' '%s/crc/libsymfix.so'", tmp,
	   SYMFIX_PATH, tmp);
	snprintf(obj.path, sizeof(obj.path), "%s", tpath("crc/libsymfix.so"));

	/* the CRC matches: the debug file is used */
	s = new_symbolizer(true, false, NULL);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr, &sym), 0);
	assert_string_equal(sym.source, tpath("crc/libsymfix.debug"));
	assert_string_equal(sym.line_source, tpath("crc/libsymfix.debug"));
	rs_symbolizer_free(s);

	/* another build's debug file under the same name: refused, the dynamic symbols remain */
	sh(OBJCOPY " --only-keep-debug --remove-section=.note.gnu.build-id '%s' '%s/crc/libsymfix.debug'",
	   SYMFIX_OTHER_PATH, tmp);
	s = new_symbolizer(true, false, NULL);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr, &sym), 0);
	assert_string_equal(sym.source, obj.path);
	assert_null(sym.line_source);
	assert_null(sym.file);
	rs_symbolizer_free(s);
	(void)state;
}

/* ---- another build ---- */

static void a_build_id_mismatch_yields_no_name_and_names_the_file(void **state)
{
	struct rs_symbolizer *s = new_symbolizer(true, false, NULL);
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	uint64_t addr, size;
	struct rs_sym sym;
	const char *err;
	int h;

	/* the recorded build-id is symfix's, the file at the path is the other build */
	snprintf(obj.path, sizeof(obj.path), "%s", SYMFIX_OTHER_PATH);
	h = add_object(s, &obj);
	nm_symbol(SYMFIX_PATH, "symfix_leaf", &addr, &size);
	assert_int_equal(rs_symbolize(s, h, addr, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BUILD_ID_MISMATCH);
	assert_null(sym.name);
	assert_null(sym.file);
	assert_int_equal(rs_symbolizer_load(s, h), -RELSTACK_EBUILDID);
	err = rs_symbolizer_object_error(s, h);
	assert_non_null(err);
	assert_non_null(strstr(err, SYMFIX_OTHER_PATH));
	assert_non_null(strstr(err, "does not match"));
	assert_string_equal(rs_sym_reason_str(sym.reason), "build-id mismatch");
	rs_symbolizer_free(s);
	(void)state;
}

static void a_debug_file_of_another_build_under_the_build_id_path_is_refused(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	char hexid[2 * RELSTACK_BUILD_ID_MAX + 1], dbg[4096];
	struct rs_symbolizer *s;
	struct rs_sym sym;
	int h;

	build_id_hex(&obj, hexid);
	snprintf(dbg, sizeof(dbg), "%s/evil/.build-id/%.2s/%s.debug", tmp, hexid, hexid + 2);
	sh("mkdir -p '%s/evil/.build-id/%.2s'", tmp, hexid);
	sh(OBJCOPY " --only-keep-debug '%s' '%s'", SYMFIX_OTHER_PATH, dbg);
	snprintf(obj.path, sizeof(obj.path), "%s", tpath("does-not-exist.so"));

	s = new_symbolizer(true, false, tpath("evil"));
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, 0x1000, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BUILD_ID_MISMATCH);
	assert_null(sym.name);
	assert_non_null(strstr(rs_symbolizer_object_error(s, h), dbg));
	rs_symbolizer_free(s);
	(void)state;
}

/* ---- options ---- */

struct grown_symbolizer_opts {
	struct rs_symbolizer_opts known;
	uint64_t newer_field;
};

static void symbolizer_options_follow_the_one_size_rule(void **state)
{
	struct rs_symbolizer_opts too_small = { .sz = 0 };
	struct rs_symbolizer_opts old = { .sz = sizeof(size_t) };
	struct grown_symbolizer_opts newer = { .known = { .sz = sizeof(newer), .lines = true } };
	struct rs_symbolizer *s;

	errno = 0;
	assert_null(rs_symbolizer_new(&too_small));
	assert_int_equal(errno, EINVAL);
	newer.newer_field = 1;
	errno = 0;
	assert_null(rs_symbolizer_new(&newer.known));
	assert_int_equal(errno, EINVAL);
	newer.newer_field = 0;
	s = rs_symbolizer_new(&newer.known);
	assert_non_null(s);
	rs_symbolizer_free(s);
	s = rs_symbolizer_new(&old);
	assert_non_null(s);
	rs_symbolizer_free(s);
	(void)state;
}

/* ---- split DWARF ---- */

static const char split_source[] =
	"extern int printf(const char *, ...);\n"
	"static inline __attribute__((always_inline)) int inner(int x)\n"
	"{\n"
	"	return x * 3 + printf(\"%d\\n\", x);\n"
	"}\n"
	"__attribute__((noinline)) int outer(int x)\n"
	"{\n"
	"	return inner(x) + 1;\n"
	"}\n";

/* The answers of @tool ("addr2line -i" or "eu-addr2line") for @addr of @file: names and file:line. */
static void addr2line_at(const char *tool, const char *file, uint64_t addr, char *out, size_t len)
{
	char cmd[8192];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s -f -e '%s' 0x%llx", tool, file, (unsigned long long)addr);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	pclose(p);
}

/*
 * Lines come from the skeleton in the object, inlined frames from the .dwo
 * file, found next to the object after both moved away from where they
 * were built; eu-addr2line gives the lines, addr2line on a build without
 * -gsplit-dwarf the inlined frames.  Without the .dwo file the lines stay
 * and each frame says why it has no inlined frames.
 */
static void split_dwarf_gives_lines_and_inlined_frames_or_says_why_not(void **state)
{
	struct rs_symbolizer_opts o = { .sz = sizeof(o), .lines = true, .inlines = true };
	struct relstack_object obj;
	struct rs_symbolizer *s;
	uint64_t addr, size;
	unsigned inlined = 0, lines = 0;
	FILE *f;
	int h;

	sh("mkdir -p '%s' '%s' '%s'", tpath("split"), tpath("split/moved"), tpath("plain"));
	f = fopen(tpath("split/sd.c"), "w");
	assert_non_null(f);
	fputs(split_source, f);
	fclose(f);
	sh("cd '%s' && cc -O2 -g -gsplit-dwarf -fPIC -c sd.c && cc -shared -o libsd.so sd.o && "
	   "mv libsd.so sd.dwo moved/",
	   tpath("split"));
	sh("cd '%s' && cc -O2 -g -fPIC -shared -o '%s' sd.c", tpath("split"), tpath("plain/libsd.so"));
	sh("rm '%s'", tpath("split/sd.c"));
	assert_int_equal(rs_object_from_file(tpath("split/moved/libsd.so"), &obj), 0);
	nm_symbol(tpath("split/moved/libsd.so"), "outer", &addr, &size);

	s = rs_symbolizer_new(&o);
	assert_non_null(s);
	h = add_object(s, &obj);
	for (uint64_t a = addr; a < addr + size; a++) {
		char want[4096], want_inl[4096], got[64];
		struct rs_sym sym;

		assert_int_equal(rs_symbolize(s, h, a, &sym), 0);
		assert_string_equal(sym.name, "outer");
		assert_null(sym.line_note);
		/* eu-addr2line: "outer\n/dir/sd.c:LINE:COL\n", the line-table row (the innermost location) */
		addr2line_at("eu-addr2line", tpath("split/moved/libsd.so"), a, want, sizeof(want));
		assert_non_null(sym.file);
		assert_true(ends_with(sym.file, "/sd.c"));
		snprintf(got, sizeof(got), "/sd.c:%u:", sym.n_inlined ? sym.inlined[0].line : sym.line);
		assert_non_null(strstr(want, got));
		lines++;
		/* addr2line -i on the plain build names "inner" first where it is inlined */
		addr2line_at("addr2line -i", tpath("plain/libsd.so"), a, want_inl, sizeof(want_inl));
		if (!strncmp(want_inl, "inner\n", 6)) {
			assert_int_equal(sym.n_inlined, 1);
			assert_string_equal(sym.inlined[0].name, "inner");
			assert_true(ends_with(sym.file, "/sd.c"));
			assert_int_equal(sym.line, 8); /* the call of inner() in outer() */
			inlined++;
		} else {
			assert_int_equal(sym.n_inlined, 0);
		}
	}
	rs_symbolizer_free(s);
	assert_true(lines > 4);
	assert_true(inlined > 0);

	/* the .dwo gone: lines stay, inlined frames are missing and the frame says why */
	sh("rm '%s'", tpath("split/moved/sd.dwo"));
	s = rs_symbolizer_new(&o);
	assert_non_null(s);
	h = add_object(s, &obj);
	for (uint64_t a = addr; a < addr + size; a++) {
		struct rs_sym sym;

		assert_int_equal(rs_symbolize(s, h, a, &sym), 0);
		assert_int_equal(sym.n_inlined, 0);
		assert_non_null(sym.file);
		assert_non_null(sym.line_note);
		assert_non_null(strstr(sym.line_note, "sd.dwo not found"));
	}
	rs_symbolizer_free(s);
	(void)state;
}

/* ---- nm files ---- */

static void an_nm_file_names_an_object_whose_file_is_gone(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	uint64_t addr, size;
	struct rs_sym sym;

	nm_symbol(SYMFIX_PATH, "symfix_outer", &addr, &size);
	sh("nm -S '%s' > '%s'", SYMFIX_PATH, tpath("sized.nm"));
	sh("nm -n '%s' > '%s'", SYMFIX_PATH, tpath("plain.nm"));
	snprintf(obj.path, sizeof(obj.path), "/nonexistent/dir/libsymfix.so");

	/* matched by basename, with exact sizes from nm -S */
	struct rs_symbolizer *s = new_symbolizer(true, false, NULL);

	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", tpath("sized.nm")), 0);
	int h = add_object(s, &obj);

	assert_int_equal(rs_symbolize(s, h, addr + 5, &sym), 0);
	assert_string_equal(sym.name, "symfix_outer");
	assert_int_equal(sym.symoff, 5);
	assert_int_equal(sym.symsize, size);
	assert_true(sym.size_exact);
	assert_string_equal(sym.source, tpath("sized.nm"));
	rs_symbolizer_free(s);

	/* matched by full path, sizes implied by the next symbol */
	char arg[8192];

	s = new_symbolizer(true, false, NULL);
	snprintf(arg, sizeof(arg), "%s=%s", obj.path, tpath("plain.nm"));
	assert_int_equal(rs_symbolizer_add_map_arg(s, arg), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr + 5, &sym), 0);
	assert_string_equal(sym.name, "symfix_outer");
	assert_false(sym.size_exact);
	assert_true(sym.symsize >= size);
	rs_symbolizer_free(s);

	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map_arg(s, "no-equals-sign"), -EINVAL);
	assert_int_equal(rs_symbolizer_add_map_arg(s, "=file"), -EINVAL);
	assert_int_equal(rs_symbolizer_add_map_arg(s, "object="), -EINVAL);
	rs_symbolizer_free(s);
	(void)state;
}

static void an_nm_file_of_another_build_is_refused_naming_the_file(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	struct relstack_object other = fixture_record(SYMFIX_OTHER_PATH);
	char hexid[2 * RELSTACK_BUILD_ID_MAX + 1];
	struct rs_symbolizer *s;
	struct rs_sym sym;
	int h;

	/* the nm file says which build it is */
	build_id_hex(&other, hexid);
	sh("(echo '# build-id: %s'; nm -S '%s') > '%s'", hexid, SYMFIX_OTHER_PATH, tpath("other.nm"));
	snprintf(obj.path, sizeof(obj.path), "/nonexistent/libsymfix.so");
	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", tpath("other.nm")), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, 0x1140, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BUILD_ID_MISMATCH);
	assert_non_null(strstr(rs_symbolizer_object_error(s, h), tpath("other.nm")));
	rs_symbolizer_free(s);

	/* no build-id in the file: symbols outside the recorded text give it away */
	/* (fine inside the recorded text, wherever the linker put it) */
	sh("printf '%016llx T fine\\n0000000070000000 T far_away\\n' > '%s'",
	   (unsigned long long)(obj.text_vaddr + obj.text_size / 2), tpath("far.nm"));
	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", tpath("far.nm")), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, obj.text_vaddr + obj.text_size / 2, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BUILD_ID_MISMATCH);
	assert_non_null(strstr(rs_symbolizer_object_error(s, h), tpath("far.nm")));
	assert_non_null(strstr(rs_symbolizer_object_error(s, h), "far_away"));
	rs_symbolizer_free(s);

	/*
	 * A weak symbol outside the text decides nothing: it may be data, as
	 * glibc's data_start ("W") in every executable is.
	 */
	sh("printf '%016llx T fine\\n0000000070000000 W data_start\\n"
	   "0000000070000008 V weak_object\\n' > '%s'", (unsigned long long)(obj.text_vaddr + obj.text_size / 2),
	   tpath("weak.nm"));
	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", tpath("weak.nm")), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, obj.text_vaddr + obj.text_size / 2 + 1, &sym), 0);
	assert_string_equal(sym.name, "fine");
	assert_null(rs_symbolizer_object_error(s, h));
	rs_symbolizer_free(s);

	/* not nm output at all */
	sh("printf 'hello world\\nthis is not a symbol file\\n' > '%s'", tpath("junk.nm"));
	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", tpath("junk.nm")), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, 0x1000, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BAD_SOURCE);
	assert_non_null(strstr(rs_symbolizer_object_error(s, h), tpath("junk.nm")));
	rs_symbolizer_free(s);
	(void)state;
}

static void an_elf_file_given_as_a_symbol_file_is_held_to_the_build_id_whatever_its_size(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	uint64_t addr, size;
	struct rs_symbolizer *s;
	struct rs_sym sym;
	int h;

	nm_symbol(SYMFIX_PATH, "symfix_outer", &addr, &size);
	snprintf(obj.path, sizeof(obj.path), "/nonexistent/libsymfix.so");
	/* larger than any nm file may be (a sparse tail): mapped, not read */
	sh("cp '%s' '%s' && truncate -s 300M '%s'", SYMFIX_PATH, tpath("big.debug"), tpath("big.debug"));
	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", tpath("big.debug")), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr + 5, &sym), 0);
	assert_string_equal(sym.name, "symfix_outer");
	assert_int_equal(sym.symoff, 5);
	assert_string_equal(sym.source, tpath("big.debug"));
	rs_symbolizer_free(s);

	/* the other build's file: refused, and named */
	s = new_symbolizer(true, false, NULL);
	assert_int_equal(rs_symbolizer_add_map(s, "libsymfix.so", SYMFIX_OTHER_PATH), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr + 5, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BUILD_ID_MISMATCH);
	assert_non_null(strstr(rs_symbolizer_object_error(s, h), SYMFIX_OTHER_PATH));
	rs_symbolizer_free(s);
	unlink(tpath("big.debug"));
	(void)state;
}

static void kernel_offsets_count_from_stext_in_a_system_map(void **state)
{
	struct relstack_object obj = { .base = RELSTACK_BASE_STEXT, .state = RELSTACK_OBJECT_LOADED };
	struct rs_symbolizer *s = new_symbolizer(false, false, NULL);
	struct rs_sym sym;
	int h;

	snprintf(obj.path, sizeof(obj.path), "vmlinux");
	sh("printf 'ffffffff81000000 T _text\\nffffffff81001000 T _stext\\nffffffff81001000 T first_fn\\n"
	   "ffffffff81001100 t second_fn\\nffffffff81002000 D some_data\\nffffffff81003000 T _etext\\n' > '%s'",
	   tpath("System.map"));
	assert_int_equal(rs_symbolizer_add_map(s, "vmlinux", tpath("System.map")), 0);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, 0x110, &sym), 0);
	assert_string_equal(sym.name, "second_fn");
	assert_int_equal(sym.symoff, 0x10);
	assert_false(sym.size_exact);
	assert_int_equal(rs_symbolize(s, h, 0x8, &sym), 0);
	assert_int_equal(sym.symoff, 0x8);
	rs_symbolizer_free(s);
	(void)state;
}

/* ---- frames without a name ---- */

static void frames_without_a_name_say_why(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	struct rs_symbolizer *s = new_symbolizer(true, false, NULL);
	struct relstack_object vdso = { .flags = RELSTACK_OBJECT_VDSO };
	struct relstack_object gone = obj;
	struct rs_sym sym;
	int h, hv, hg;

	snprintf(vdso.path, sizeof(vdso.path), "[vdso]");
	snprintf(gone.path, sizeof(gone.path), "/nonexistent/libgone.so");
	h = add_object(s, &obj);
	hv = add_object(s, &vdso);
	hg = add_object(s, &gone);

	assert_int_equal(rs_symbolize(s, h, 0, &sym), -ENOENT); /* the ELF header */
	assert_int_equal(sym.reason, RS_SYM_NO_SYMBOL);
	assert_int_equal(rs_symbolize(s, hv, 0x100, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_VDSO);
	assert_int_equal(rs_symbolize(s, hg, 0x1000, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_NO_SOURCE);
	assert_non_null(strstr(rs_symbolizer_object_error(s, hg), "libgone.so"));
	assert_int_equal(rs_symbolize(s, 99, 0x1000, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BAD_HANDLE);
	assert_int_equal(rs_symbolize(s, -1, 0x1000, &sym), -ENOENT);
	assert_int_equal(sym.reason, RS_SYM_BAD_HANDLE);

	/* every reason has its own string */
	for (int a = RS_SYM_OK; a <= RS_SYM_NO_BASE; a++)
		for (int b = a + 1; b <= RS_SYM_NO_BASE; b++)
			assert_string_not_equal(rs_sym_reason_str(a), rs_sym_reason_str(b));
	rs_symbolizer_free(s);
	(void)state;
}

static void the_vdso_is_named_from_a_debug_file_found_by_build_id(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	char hexid[2 * RELSTACK_BUILD_ID_MAX + 1];
	struct rs_symbolizer *s;
	uint64_t addr, size;
	struct rs_sym sym;
	int h;

	/* a vDSO record whose build-id happens to be the fixture's */
	obj.flags = RELSTACK_OBJECT_VDSO;
	snprintf(obj.path, sizeof(obj.path), "[vdso]");
	build_id_hex(&obj, hexid);
	sh("mkdir -p '%s/vdso-debug/.build-id/%.2s'", tmp, hexid);
	sh(OBJCOPY " --only-keep-debug '%s' '%s/vdso-debug/.build-id/%.2s/%s.debug'", SYMFIX_PATH, tmp, hexid,
	   hexid + 2);
	nm_symbol(SYMFIX_PATH, "symfix_leaf", &addr, &size);
	s = new_symbolizer(false, false, tpath("vdso-debug"));
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, addr, &sym), 0);
	assert_string_equal(sym.name, "symfix_leaf");
	rs_symbolizer_free(s);
	(void)state;
}

static void objects_of_one_build_share_one_load(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	struct rs_symbolizer *s = new_symbolizer(false, false, NULL);
	uint64_t addr, size;
	struct rs_sym a, b;
	int h1, h2;

	nm_symbol(SYMFIX_PATH, "symfix_leaf", &addr, &size);
	obj.slot = 3;
	h1 = add_object(s, &obj);
	obj.slot = 7;
	h2 = add_object(s, &obj);
	assert_int_not_equal(h1, h2);
	assert_int_equal(rs_symbolize(s, h1, addr, &a), 0);
	assert_int_equal(rs_symbolize(s, h2, addr, &b), 0);
	assert_ptr_equal(a.name, b.name);
	rs_symbolizer_free(s);
	(void)state;
}

static void a_truncated_elf_file_gives_no_name_and_no_crash(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	struct rs_sym sym;

	for (int len = 64; len < 20000; len = len * 3 / 2) {
		struct rs_symbolizer *s = new_symbolizer(true, true, NULL);
		int h;

		sh("head -c %d '%s' > '%s'", len, SYMFIX_PATH, tpath("trunc.so"));
		snprintf(obj.path, sizeof(obj.path), "%s", tpath("trunc.so"));
		h = add_object(s, &obj);
		if (rs_symbolize(s, h, 0x1140, &sym) == 0)
			assert_non_null(sym.name);
		else
			assert_int_not_equal(sym.reason, RS_SYM_OK);
		rs_symbolizer_free(s);
	}
	(void)state;
}

/* ---- agreement with addr2line ---- */

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * Sampled addresses inside the fixture's functions: our names (innermost
 * inlined function first, as addr2line -f prints) and lines must be
 * addr2line's, on the -g file and on a copy stripped to its symbol table.
 */
static void names_and_lines_agree_with_addr2line(void **state)
{
	struct relstack_object obj = fixture_record(SYMFIX_PATH);
	const char *files[2] = { SYMFIX_PATH, NULL };
	uint64_t addrs[sizeof(fixture_functions) / sizeof(fixture_functions[0]) * 50];
	size_t n = 0;

	sh(OBJCOPY " --strip-debug '%s' '%s'", SYMFIX_PATH, tpath("symtab-only.so"));
	files[1] = tpath("symtab-only.so");
	for (size_t i = 0; i < sizeof(fixture_functions) / sizeof(fixture_functions[0]); i++) {
		uint64_t addr, size;

		nm_symbol(SYMFIX_PATH, fixture_functions[i], &addr, &size);
		for (int k = 0; k < 50; k++)
			addrs[n++] = addr + next_rand() % size;
	}
	for (int f = 0; f < 2; f++) {
		struct rs_symbolizer *s = new_symbolizer(true, true, NULL);
		struct rs_symbolizer *sl = new_symbolizer(true, false, NULL);
		char cmd[8192], name[1024], loc[4096];
		FILE *in, *p;
		int h, hl;

		snprintf(obj.path, sizeof(obj.path), "%s", files[f]);
		h = add_object(s, &obj);
		hl = add_object(sl, &obj);
		in = fopen(tpath("addrs"), "w");
		assert_non_null(in);
		for (size_t i = 0; i < n; i++)
			fprintf(in, "0x%llx\n", (unsigned long long)addrs[i]);
		fclose(in);
		snprintf(cmd, sizeof(cmd), "addr2line -f -e '%s' < '%s'", files[f], tpath("addrs"));
		p = popen(cmd, "r");
		assert_non_null(p);
		for (size_t i = 0; i < n; i++) {
			struct rs_sym sym, lsym;
			const char *ours;
			char *colon;

			assert_non_null(fgets(name, sizeof(name), p));
			assert_non_null(fgets(loc, sizeof(loc), p));
			name[strcspn(name, "\n")] = '\0';
			assert_int_equal(rs_symbolize(s, h, addrs[i], &sym), 0);
			assert_int_equal(rs_symbolize(sl, hl, addrs[i], &lsym), 0);
			ours = sym.n_inlined ? sym.inlined[0].name : sym.name;
			if (strcmp(ours, name))
				fail_msg("0x%llx in %s: relstack says %s, addr2line says %s",
					 (unsigned long long)addrs[i], files[f], ours, name);
			colon = strrchr(loc, ':');
			assert_non_null(colon);
			if (f == 0) {
				*colon = '\0';
				assert_int_equal(lsym.line, strtoul(colon + 1, NULL, 10));
				assert_true(ends_with(lsym.file, strrchr(loc, '/')));
			} else {
				assert_null(lsym.file); /* no DWARF left */
			}
		}
		pclose(p);
		rs_symbolizer_free(s);
		rs_symbolizer_free(sl);
	}
	(void)state;
}

/* ---- the system's libc ---- */

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so.")) {
		snprintf(data, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

static void libc_is_named_from_its_debian_debug_file_found_by_build_id(void **state)
{
	struct rs_symbolizer_opts o = { .sz = sizeof(o), .lines = true };
	char libc[4096] = "", hexid[2 * RELSTACK_BUILD_ID_MAX + 1], dbg[4096];
	struct relstack_object obj;
	struct rs_symbolizer *s;
	struct rs_sym sym;
	Dl_info info;
	int h;

	dl_iterate_phdr(find_libc, libc);
	assert_true(libc[0]);
	assert_int_equal(rs_object_from_file(libc, &obj), 0);
	build_id_hex(&obj, hexid);
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", hexid, hexid + 2);
	if (access(dbg, R_OK) != 0) {
		print_message("skipped: %s is missing (Debian package libc6-dbg)\n", dbg);
		skip();
	}
	/* libc's own getpid, not a sanitizer's interceptor */
	void *lh = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	assert_non_null(lh);
	assert_int_not_equal(dladdr(dlsym(lh, "getpid"), &info), 0);
	dlclose(lh);

	s = rs_symbolizer_new(&o);
	assert_non_null(s);
	h = add_object(s, &obj);
	assert_int_equal(rs_symbolize(s, h, (uintptr_t)info.dli_saddr - (uintptr_t)info.dli_fbase + 4, &sym), 0);
	assert_non_null(strstr(sym.name, "getpid"));
	assert_int_equal(sym.symoff, 4);
	assert_true(sym.size_exact && sym.symsize > 4);
	assert_string_equal(sym.source, dbg);
	assert_string_equal(sym.line_source, dbg);
	assert_non_null(sym.file);
	assert_true(sym.line > 0);
	rs_symbolizer_free(s);
	(void)state;
}

struct nmsym {
	uint64_t addr, size;
	char type;
	char *name;
};

static int nmsym_cmp(const void *pa, const void *pb)
{
	const struct nmsym *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Every defined symbol of @file, sorted by address. */
static struct nmsym *nm_all(const char *file, size_t *n)
{
	char cmd[8192], line[4096];
	struct nmsym *v = NULL;
	size_t cap = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S --defined-only '%s'", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	*n = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, sz = 0;
		char t, name[2048];

		if (sscanf(line, "%llx %llx %c %2047s", &a, &sz, &t, name) != 4 &&
		    sscanf(line, "%llx %c %2047s", &a, &t, name) != 3)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 4096;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		v[(*n)++] = (struct nmsym){ a, sz, t, strdup(name) };
	}
	pclose(p);
	qsort(v, *n, sizeof(*v), nmsym_cmp);
	return v;
}

/* A symbol name as DWARF would give it: no symbol version, no GCC clone suffix. */
static void base_symbol(const char *in, char *out, size_t len)
{
	static const char *const clones[] = { ".part.", ".constprop.", ".isra.", ".cold" };

	snprintf(out, len, "%s", in);
	out[strcspn(out, "@")] = '\0';
	for (size_t i = 0; i < sizeof(clones) / sizeof(clones[0]); i++) {
		char *c = strstr(out, clones[i]);

		if (c)
			*c = '\0';
	}
}

/*
 * addr2line -f prints the DWARF name of the innermost function at an
 * address: ours for inlined code, otherwise one of the symbol-table
 * aliases at the start of our function, as DWARF spells it.
 */
static void libc_names_agree_with_addr2line_on_sampled_addresses(void **state)
{
	struct rs_symbolizer_opts o = { .sz = sizeof(o), .lines = true, .inlines = true };
	char libc[4096] = "", hexid[2 * RELSTACK_BUILD_ID_MAX + 1], dbg[4096], cmd[16384];
	struct relstack_object obj;
	struct rs_symbolizer *s;
	struct nmsym *syms, **fns;
	size_t n, nfn = 0;
	uint64_t addrs[2000];
	FILE *in, *p;
	int h;

	dl_iterate_phdr(find_libc, libc);
	assert_int_equal(rs_object_from_file(libc, &obj), 0);
	build_id_hex(&obj, hexid);
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", hexid, hexid + 2);
	if (access(dbg, R_OK) != 0) {
		print_message("skipped: %s is missing (Debian package libc6-dbg)\n", dbg);
		skip();
	}
	syms = nm_all(dbg, &n);
	fns = calloc(n, sizeof(*fns));
	assert_non_null(fns);
	for (size_t i = 0; i < n; i++)
		if (syms[i].size && strchr("tTwWi", syms[i].type))
			fns[nfn++] = &syms[i];
	assert_true(nfn > 1000);

	in = fopen(tpath("libc.addrs"), "w");
	assert_non_null(in);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		struct nmsym *f = fns[next_rand() % nfn];

		addrs[i] = f->addr + next_rand() % f->size;
		fprintf(in, "0x%llx\n", (unsigned long long)addrs[i]);
	}
	fclose(in);
	snprintf(cmd, sizeof(cmd), "addr2line -f -e '%s' < '%s'", libc, tpath("libc.addrs"));
	p = popen(cmd, "r");
	assert_non_null(p);
	s = rs_symbolizer_new(&o);
	assert_non_null(s);
	h = add_object(s, &obj);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		char want[2048], loc[4096], base[2048];
		struct rs_sym sym;
		bool ok = false;

		assert_non_null(fgets(want, sizeof(want), p));
		assert_non_null(fgets(loc, sizeof(loc), p));
		want[strcspn(want, "\n")] = '\0';
		assert_int_equal(rs_symbolize(s, h, addrs[i], &sym), 0);
		assert_string_equal(sym.source, dbg);
		if (sym.n_inlined) {
			ok = !strcmp(sym.inlined[0].name, want);
		} else {
			/* the aliases at our function's start */
			struct nmsym key = { .addr = addrs[i] - sym.symoff };
			struct nmsym *hit = bsearch(&key, syms, n, sizeof(*syms), nmsym_cmp);

			while (hit && hit > syms && hit[-1].addr == key.addr)
				hit--;
			for (; hit && hit < syms + n && hit->addr == key.addr && !ok; hit++) {
				base_symbol(hit->name, base, sizeof(base));
				ok = !strcmp(base, want);
			}
		}
		if (!ok)
			fail_msg("libc 0x%llx: relstack says %s (%u inlined: %s), addr2line says %s",
				 (unsigned long long)addrs[i], sym.name, sym.n_inlined,
				 sym.n_inlined ? sym.inlined[0].name : "-", want);
	}
	pclose(p);
	rs_symbolizer_free(s);
	for (size_t i = 0; i < n; i++)
		free(syms[i].name);
	free(syms);
	free(fns);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_symoff_and_symsize_agree_with_nm),
		cmocka_unit_test(functions_are_found_by_name_where_nm_has_them),
		cmocka_unit_test(file_and_line_come_from_the_dwarf_of_the_file),
		cmocka_unit_test(inlined_frames_name_the_inlined_function_innermost_first),
		cmocka_unit_test(nested_inlined_frames_chain_each_call_site),
		cmocka_unit_test(a_stripped_file_finds_its_debug_file_by_build_id),
		cmocka_unit_test(debuglink_targets_are_found_next_to_the_file_and_in_dot_debug),
		cmocka_unit_test(a_debuglink_target_without_build_id_is_held_to_its_crc),
		cmocka_unit_test(a_build_id_mismatch_yields_no_name_and_names_the_file),
		cmocka_unit_test(a_debug_file_of_another_build_under_the_build_id_path_is_refused),
		cmocka_unit_test(an_nm_file_names_an_object_whose_file_is_gone),
		cmocka_unit_test(an_nm_file_of_another_build_is_refused_naming_the_file),
		cmocka_unit_test(an_elf_file_given_as_a_symbol_file_is_held_to_the_build_id_whatever_its_size),
		cmocka_unit_test(kernel_offsets_count_from_stext_in_a_system_map),
		cmocka_unit_test(frames_without_a_name_say_why),
		cmocka_unit_test(the_vdso_is_named_from_a_debug_file_found_by_build_id),
		cmocka_unit_test(objects_of_one_build_share_one_load),
		cmocka_unit_test(a_truncated_elf_file_gives_no_name_and_no_crash),
		cmocka_unit_test(names_and_lines_agree_with_addr2line),
		cmocka_unit_test(split_dwarf_gives_lines_and_inlined_frames_or_says_why_not),
		cmocka_unit_test(symbolizer_options_follow_the_one_size_rule),
		cmocka_unit_test(libc_is_named_from_its_debian_debug_file_found_by_build_id),
		cmocka_unit_test(libc_names_agree_with_addr2line_on_sampled_addresses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
