// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel object table on a fixture tree (proc/modules, sys/module/),
 * and kernel stacks made relative with their verdict, on hand-made
 * stacks.  The machine these tests run on needs no modules, nor root.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/objtab.h"
#include "kernel/kernel.h"
#include "kfiles.h"
#include "relstack/entry.h"

/*
 * A kernel laid out as on x86-64, KASLR'd: text from _stext, init text
 * above it.  Each function runs to the next symbol.
 */
#define STEXT 0xffffffffa1000000ull
static const char kallsyms[] =
	"ffffffffa1000000 T _text\n"
	"ffffffffa1000000 T _stext\n"
	"ffffffffa1000080 T entry_SYSCALL_64\n"
	"ffffffffa10000c0 T entry_SYSCALL_64_after_hwframe\n"
	"ffffffffa1000200 T asm_sysvec_apic_timer_interrupt\n"
	"ffffffffa1000240 T asm_exc_page_fault\n"
	"ffffffffa1001000 T do_syscall_64\n"
	"ffffffffa1001100 T __schedule\n"
	"ffffffffa1001800 T schedule\n"
	"ffffffffa1001900 t ret_from_fork\n"
	"ffffffffa1001a00 T ret_from_fork_asm\n"
	"ffffffffa1001a40 T kthread\n"
	"ffffffffa1002000 T _etext\n"
	"ffffffffa1002000 D some_data\n"
	"ffffffffa2000000 T _sinittext\n"
	"ffffffffa2000000 T start_kernel\n"
	"ffffffffa2000100 T _einittext\n"
	"ffffffffc0001000 t foo_fn\t[foo]\n"
	"this line is not a symbol\n";

/* A module "foo": .text at 0xffffffffc0001000, .rodata at +0x800 ends its text. */
#define FOO_TEXT 0xffffffffc0001000ull
#define BAR_TEXT 0xffffffffc0100000ull

struct fixture {
	char root[64];
	struct rs_ksyms syms;
	struct rs_ktab *kt;
};

/* An ELF note: GNU build-id @id. */
static size_t build_id_note(uint8_t *buf, uint8_t id)
{
	uint32_t h[3] = { 4, 20, 3 };

	memcpy(buf, h, 12);
	memcpy(buf + 12, "GNU", 4);
	memset(buf + 16, id, 20);
	return 36;
}

static void add_module(const char *root, const char *name, uint64_t text, uint64_t next_section, uint8_t id)
{
	char rel[128], val[32];
	uint8_t note[64];

	snprintf(rel, sizeof(rel), "sys/module/%s/sections/.text", name);
	snprintf(val, sizeof(val), "0x%llx\n", (unsigned long long)text);
	kfix_put_text(root, rel, val);
	snprintf(rel, sizeof(rel), "sys/module/%s/sections/.rodata", name);
	snprintf(val, sizeof(val), "0x%llx\n", (unsigned long long)next_section);
	kfix_put_text(root, rel, val);
	snprintf(rel, sizeof(rel), "sys/module/%s/notes/.note.gnu.build-id", name);
	kfix_put(root, rel, note, build_id_note(note, id));
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char line[256];

	strcpy(f->root, "/tmp/relstack-ktab-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	add_module(f->root, "foo", FOO_TEXT, FOO_TEXT + 0x800, 0xf0);
	snprintf(line, sizeof(line), "foo 16384 0 - Live 0x%llx\n", (unsigned long long)FOO_TEXT);
	kfix_put_text(f->root, "proc/modules", line);
	assert_true(rs_ksyms_parse(kallsyms, sizeof(kallsyms) - 1, &f->syms) > 0);
	f->kt = rs_ktab_new(&f->syms, (const uint8_t *)"\x4a\x5a", 2, f->root);
	assert_non_null(f->kt);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	rs_ktab_free(f->kt);
	rs_ksyms_free(&f->syms);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->root);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void kallsyms_text_gives_the_core_kernel_and_skips_modules_and_bad_lines(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(f->syms.stext, STEXT);
	assert_int_equal(f->syms.etext, STEXT + 0x2000);
	assert_int_equal(f->syms.einittext, 0xffffffffa2000100ull);
	assert_int_equal(f->syms.bad_lines, 1);
	for (size_t i = 0; i < f->syms.n; i++)
		assert_string_not_equal(f->syms.v[i].name, "foo_fn");
}

static void hidden_kallsyms_are_refused(void **state)
{
	static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 T schedule\n";
	struct rs_ksyms s;

	(void)state;
	assert_int_equal(rs_ksyms_parse(hidden, sizeof(hidden) - 1, &s), -ENOENT);
	assert_true(s.hidden);
	rs_ksyms_free(&s);
}

static void the_core_is_slot_0_from_stext_and_a_module_gets_a_slot_from_its_text(void **state)
{
	struct fixture *f = *state;
	const struct relstack_object *core = rs_ktab_object(f->kt, 0), *foo = rs_ktab_object(f->kt, 1);

	assert_int_equal(rs_ktab_count(f->kt), 2);
	assert_string_equal(core->path, "vmlinux");
	assert_int_equal(core->base, RELSTACK_BASE_STEXT);
	assert_true(core->flags & RELSTACK_OBJECT_KERNEL);
	assert_int_equal(core->text_size, 0x1000100);
	assert_string_equal(foo->path, "foo");
	assert_int_equal(foo->text_size, 0x800); /* up to .rodata, not the module's whole size */
	assert_int_equal(foo->build_id_len, 20);
	assert_int_equal(foo->build_id[0], 0xf0);
}

static void expect_word(const struct rs_ktab *kt, uint64_t word, uint32_t slot, uint64_t offset)
{
	struct relstack_format fmt;
	struct relstack_entry e;

	(void)kt;
	relstack_format_native(&fmt);
	relstack_word_decode(&fmt, word, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, slot);
	assert_int_equal(e.offset, offset);
}

/* Is @word the marker @m in the native format (words of this build's size)? */
static bool is_marker(uint64_t word, enum relstack_marker m)
{
	struct relstack_format fmt;
	struct relstack_entry e;

	relstack_format_native(&fmt);
	relstack_word_decode(&fmt, word, &e);
	return e.kind == RELSTACK_ENTRY_MARKER && e.marker == m;
}

static void a_system_call_stack_ending_at_its_entry_is_reliable_and_relative(void **state)
{
	struct fixture *f = *state;
	uint64_t st[] = { STEXT + 0x1110, STEXT + 0x1808, FOO_TEXT + 0x40, STEXT + 0x1010, STEXT + 0xd0 };
	uint64_t w[8];
	struct relstack_verdict v;
	size_t n = rs_kstack_encode(f->kt, st, 5, false, w, 8, &v);

	assert_int_equal(v.reasons, 0);
	assert_int_equal(n, 6);
	expect_word(f->kt, w[0], 0, 0x1110);
	expect_word(f->kt, w[2], 1, 0x40);
	expect_word(f->kt, w[4], 0, 0xd0);
	assert_true(is_marker(w[5], RELSTACK_MARKER_END));
	for (size_t i = 0; i < n; i++)
		assert_false(w[i] >= STEXT && w[i] < 0xffffffffffff0000ull);
}

static void a_kernel_thread_ending_at_ret_from_fork_asm_is_reliable(void **state)
{
	struct fixture *f = *state;
	uint64_t st[] = { STEXT + 0x1808, STEXT + 0x1a50, STEXT + 0x1920, STEXT + 0x1a1a };
	uint64_t w[8];
	struct relstack_verdict v;

	rs_kstack_encode(f->kt, st, 4, false, w, 8, &v);
	assert_int_equal(v.reasons, 0);
	/* ret_from_fork is not a base where ret_from_fork_asm exists: a stack ending there is not proven */
	rs_kstack_encode(f->kt, st, 3, false, w, 8, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_END_UNPROVEN);
}

static void a_crossed_interrupt_entry_makes_the_stack_unreliable(void **state)
{
	struct fixture *f = *state;
	uint64_t st[] = { STEXT + 0x1808, STEXT + 0x210, STEXT + 0x1110, STEXT + 0x1010, STEXT + 0xd0 };
	uint64_t w[8];
	struct relstack_verdict v;

	rs_kstack_encode(f->kt, st, 5, false, w, 8, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_INTERRUPT_FRAME);
	assert_false(is_marker(w[4], RELSTACK_MARKER_END));
}

static void an_interrupt_taken_from_user_mode_ends_a_whole_stack(void **state)
{
	struct fixture *f = *state;
	uint64_t st[] = { STEXT + 0x1110, STEXT + 0x1808, STEXT + 0x250 };
	uint64_t w[8];
	struct relstack_verdict v;

	rs_kstack_encode(f->kt, st, 3, false, w, 8, &v);
	assert_int_equal(v.reasons, 0);
}

static void an_address_in_no_text_is_the_unknown_marker(void **state)
{
	struct fixture *f = *state;
	/* a BPF program, an ftrace trampoline, kernel data, the module's rodata */
	uint64_t st[] = { 0xffffffffc1234000ull, STEXT + 0x2008, FOO_TEXT + 0x900, STEXT + 0xd0 };
	uint64_t w[8];
	struct relstack_verdict v;
	size_t n = rs_kstack_encode(f->kt, st, 4, false, w, 8, &v);

	assert_int_equal(n, 4);
	for (int i = 0; i < 3; i++)
		assert_true(is_marker(w[i], RELSTACK_MARKER_UNKNOWN));
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
}

static void a_stack_cut_by_the_depth_limit_is_truncated(void **state)
{
	struct fixture *f = *state;
	uint64_t st[] = { STEXT + 0x1110, STEXT + 0x1808, STEXT + 0xd0 };
	uint64_t w[8];
	struct relstack_verdict v;

	rs_kstack_encode(f->kt, st, 3, true, w, 8, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_TRUNCATED);
	/* words for only two addresses: the third does not fit beside END */
	rs_kstack_encode(f->kt, st, 3, false, w, 3, &v);
	assert_int_equal(v.reasons, RELSTACK_UNRELIABLE_TRUNCATED);
}

static void an_unloaded_module_keeps_its_slot_and_a_new_one_takes_the_next(void **state)
{
	struct fixture *f = *state;
	char line[256];
	uint64_t st[] = { FOO_TEXT + 0x10 }, w[4];
	struct relstack_verdict v;
	uint64_t epoch = rs_ktab_epoch(f->kt);

	add_module(f->root, "bar", BAR_TEXT, BAR_TEXT + 0x2000, 0xb0);
	snprintf(line, sizeof(line), "bar 32768 0 - Live 0x%llx\n", (unsigned long long)BAR_TEXT);
	kfix_put_text(f->root, "proc/modules", line); /* foo is gone, bar came */
	assert_int_equal(rs_ktab_scan_modules(f->kt), 2);
	assert_int_equal(rs_ktab_count(f->kt), 3);
	assert_int_equal(rs_ktab_object(f->kt, 1)->state, RELSTACK_OBJECT_UNLOADED);
	assert_true(rs_ktab_object(f->kt, 1)->unload_epoch > epoch);
	assert_string_equal(rs_ktab_object(f->kt, 2)->path, "bar");
	/* foo's text is nobody's now */
	rs_kstack_encode(f->kt, st, 1, false, w, 4, &v);
	assert_true(is_marker(w[0], RELSTACK_MARKER_UNKNOWN));
	st[0] = BAR_TEXT + 0x20;
	rs_kstack_encode(f->kt, st, 1, false, w, 4, &v);
	expect_word(f->kt, w[0], 2, 0x20);
	/* nothing changed: no slot moves */
	assert_int_equal(rs_ktab_scan_modules(f->kt), 0);
}

static void the_published_image_reads_back_slot_by_slot(void **state)
{
	struct fixture *f = *state;
	size_t size = rs_objtab_image_size(8);
	void *img = calloc(1, size);
	struct relstack_object o;
	uint64_t load;
	const char *why = NULL;

	rs_ktab_publish(f->kt, img, 8);
	assert_int_equal(rs_objtab_image_check(img, size, &why), 0);
	assert_int_equal(rs_objtab_image_record(img, size, 0, &o, &load, &why), 0);
	assert_string_equal(o.path, "vmlinux");
	assert_int_equal(o.base, RELSTACK_BASE_STEXT);
	assert_int_equal(load, 0);
	assert_int_equal(rs_objtab_image_record(img, size, 1, &o, &load, &why), 0);
	assert_string_equal(o.path, "foo");
	assert_int_equal(rs_objtab_image_record(img, size, 2, &o, &load, &why), -ENOENT);
	free(img);
}

static void a_system_map_has_link_time_addresses_the_build_id_and_one_name_per_address(void **state)
{
	struct fixture *f = *state;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	assert_int_equal(rs_ksyms_write_map(&f->syms, STEXT - 0xffffffff81000000ull, (const uint8_t *)"\x4a\x5a", 2, m), 0);
	fclose(m);
	assert_non_null(strstr(buf, "# build-id: 4a5a\n"));
	assert_non_null(strstr(buf, "ffffffff81000000 T _text\n"));
	assert_non_null(strstr(buf, "ffffffff81000000 T _stext\n"));
	assert_non_null(strstr(buf, "ffffffff81001100 T __schedule\n"));
	assert_null(strstr(buf, "start_kernel")); /* an alias of _sinittext: the kernel names it _sinittext */
	assert_null(strstr(buf, "ffffffffa1"));
	free(buf);
}

static void build_ids_come_from_elf_notes_and_bad_notes_give_none(void **state)
{
	uint8_t note[64], id[40];

	(void)state;
	build_id_note(note, 0x11);
	assert_int_equal(rs_knotes_build_id(note, 36, id, sizeof(id)), 20);
	assert_int_equal(id[19], 0x11);
	assert_int_equal(rs_knotes_build_id(note, 30, id, sizeof(id)), -ENOENT); /* cut */
	note[4] = 0xff;
	assert_int_equal(rs_knotes_build_id(note, 36, id, sizeof(id)), -ENOENT); /* descsz beyond */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(kallsyms_text_gives_the_core_kernel_and_skips_modules_and_bad_lines, setup, teardown),
		cmocka_unit_test(hidden_kallsyms_are_refused),
		cmocka_unit_test_setup_teardown(the_core_is_slot_0_from_stext_and_a_module_gets_a_slot_from_its_text, setup, teardown),
		cmocka_unit_test_setup_teardown(a_system_call_stack_ending_at_its_entry_is_reliable_and_relative, setup, teardown),
		cmocka_unit_test_setup_teardown(a_kernel_thread_ending_at_ret_from_fork_asm_is_reliable, setup, teardown),
		cmocka_unit_test_setup_teardown(a_crossed_interrupt_entry_makes_the_stack_unreliable, setup, teardown),
		cmocka_unit_test_setup_teardown(an_interrupt_taken_from_user_mode_ends_a_whole_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(an_address_in_no_text_is_the_unknown_marker, setup, teardown),
		cmocka_unit_test_setup_teardown(a_stack_cut_by_the_depth_limit_is_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(an_unloaded_module_keeps_its_slot_and_a_new_one_takes_the_next, setup, teardown),
		cmocka_unit_test_setup_teardown(the_published_image_reads_back_slot_by_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(a_system_map_has_link_time_addresses_the_build_id_and_one_name_per_address, setup, teardown),
		cmocka_unit_test(build_ids_come_from_elf_notes_and_bad_notes_give_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
