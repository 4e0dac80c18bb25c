// SPDX-License-Identifier: LGPL-2.1-or-later
/* The sorted symbol index and the nm-file parser, on hand-written input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <gelf.h>

#include "decode/symindex.h"
#include "decode/symsrc.h"

static void add(struct rs_symindex *ix, uint64_t addr, uint64_t size, const char *name, unsigned rank)
{
	assert_int_equal(rs_symindex_add(ix, addr, size, name, strlen(name), rank), 0);
}

static const char *name_at(const struct rs_symindex *ix, uint64_t addr)
{
	struct rs_symhit hit;

	return rs_symindex_lookup(ix, addr, &hit) == 0 ? hit.name : NULL;
}

static void lookup_finds_the_symbol_holding_each_address(void **state)
{
	struct rs_symindex ix;
	struct rs_symhit hit;

	rs_symindex_init(&ix);
	add(&ix, 0x2000, 0x10, "b", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1000, 0x100, "a", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x3000, 0x8, "c", RS_SYMRANK_LOCAL + 4);
	assert_int_equal(rs_symindex_seal(&ix, 0), 3);

	assert_int_equal(rs_symindex_lookup(&ix, 0x1080, &hit), 0);
	assert_string_equal(hit.name, "a");
	assert_int_equal(hit.start, 0x1000);
	assert_int_equal(hit.size, 0x100);
	assert_true(hit.sized);
	assert_string_equal(name_at(&ix, 0x1000), "a");
	assert_string_equal(name_at(&ix, 0x10ff), "a");
	assert_null(name_at(&ix, 0x1100)); /* the gap after a sized symbol is no symbol */
	assert_null(name_at(&ix, 0xfff));
	assert_string_equal(name_at(&ix, 0x200f), "b");
	assert_string_equal(name_at(&ix, 0x3007), "c");
	assert_null(name_at(&ix, 0x3008));
	rs_symindex_fini(&ix);
	(void)state;
}

static void aliases_collapse_to_the_global_unversioned_function(void **state)
{
	struct rs_symindex ix;

	rs_symindex_init(&ix);
	add(&ix, 0x1000, 0x40, "__local_alias", RS_SYMRANK_LOCAL + 4);
	add(&ix, 0x1000, 0x40, "fopen@@GLIBC_2.2.5", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1000, 0x40, "fopen", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1000, 0, "label", RS_SYMRANK_GLOBAL);
	add(&ix, 0x1000, 0x40, "weak_fopen", RS_SYMRANK_WEAK + 4);
	assert_int_equal(rs_symindex_seal(&ix, 0), 1);
	assert_string_equal(name_at(&ix, 0x1010), "fopen");
	rs_symindex_fini(&ix);
	(void)state;
}

static void a_symbol_version_is_cut_from_the_name(void **state)
{
	struct rs_symindex ix;

	rs_symindex_init(&ix);
	add(&ix, 0x1000, 0x40, "_IO_file_underflow@@GLIBC_2.2.5", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x2000, 0x40, "memcpy@GLIBC_2.2.5", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x3000, 0x40, "@odd", RS_SYMRANK_GLOBAL + 4);
	assert_int_equal(rs_symindex_seal(&ix, 0), 3);
	assert_string_equal(name_at(&ix, 0x1010), "_IO_file_underflow");
	assert_string_equal(name_at(&ix, 0x2010), "memcpy");
	assert_string_equal(name_at(&ix, 0x3010), "@odd"); /* nothing before the '@': not a version */
	rs_symindex_fini(&ix);
	(void)state;
}

/* The starts of the symbols named @name, in the order found, 0-terminated; the size of each checked. */
static void find_all(const struct rs_symindex *ix, const char *name, uint64_t *starts, size_t max)
{
	struct rs_symhit hit;
	size_t pos = 0, n = 0;

	while (rs_symindex_find(ix, name, &pos, &hit) == 0) {
		assert_true(n + 1 < max);
		assert_int_equal(rs_symindex_lookup(ix, hit.start, &(struct rs_symhit){ 0 }), 0);
		starts[n++] = hit.start;
	}
	starts[n] = 0;
}

static void every_name_of_a_function_finds_it_aliases_versions_and_locals_included(void **state)
{
	struct rs_symindex ix;
	struct rs_symhit hit;
	uint64_t at[8];
	size_t pos = 0;

	rs_symindex_init(&ix);
	add(&ix, 0x1000, 0x40, "__read", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1000, 0x40, "read@@GLIBC_2.2.5", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1000, 0x40, "__libc_read", RS_SYMRANK_LOCAL + 4);
	add(&ix, 0x2000, 0x20, "memcpy@GLIBC_2.2.5", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x3000, 0x30, "memcpy@@GLIBC_2.14", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x4000, 0x10, "helper", RS_SYMRANK_LOCAL + 4);
	add(&ix, 0x5000, 0x10, "helper", RS_SYMRANK_LOCAL + 4);
	assert_int_equal(rs_symindex_seal(&ix, 0), 5);

	/* each name of the one function gives the entry kept for it: its start and size */
	for (const char *const *n = (const char *const[]){ "__read", "read", "__libc_read", NULL }; *n; n++) {
		pos = 0;
		assert_int_equal(rs_symindex_find(&ix, *n, &pos, &hit), 0);
		assert_int_equal(hit.start, 0x1000);
		assert_int_equal(hit.size, 0x40);
		assert_string_equal(hit.name, name_at(&ix, 0x1000));
		assert_int_equal(rs_symindex_find(&ix, *n, &pos, &hit), -ENOENT);
	}
	find_all(&ix, "memcpy", at, 8);
	assert_int_equal(at[0], 0x2000);
	assert_int_equal(at[1], 0x3000);
	assert_int_equal(at[2], 0);
	find_all(&ix, "helper", at, 8);
	assert_int_equal(at[0], 0x4000);
	assert_int_equal(at[1], 0x5000);
	assert_int_equal(at[2], 0);
	/* a name no symbol has, a prefix of one, a version written out */
	find_all(&ix, "reed", at, 8);
	assert_int_equal(at[0], 0);
	find_all(&ix, "mem", at, 8);
	assert_int_equal(at[0], 0);
	find_all(&ix, "read@@GLIBC_2.2.5", at, 8);
	assert_int_equal(at[0], 0);
	rs_symindex_fini(&ix);
	(void)state;
}

static void unsized_symbols_extend_to_the_next_symbol_or_the_limit(void **state)
{
	struct rs_symindex ix;
	struct rs_symhit hit;

	rs_symindex_init(&ix);
	add(&ix, 0x100, 0, "first", RS_SYMRANK_GLOBAL);
	add(&ix, 0x180, 0, "second", RS_SYMRANK_GLOBAL);
	rs_symindex_seal(&ix, 0x200);
	assert_int_equal(rs_symindex_lookup(&ix, 0x17f, &hit), 0);
	assert_string_equal(hit.name, "first");
	assert_int_equal(hit.size, 0x80);
	assert_false(hit.sized);
	assert_string_equal(name_at(&ix, 0x1ff), "second");
	assert_null(name_at(&ix, 0x200));
	rs_symindex_fini(&ix);
	(void)state;
}

static void an_address_past_a_nested_symbol_belongs_to_the_enclosing_one(void **state)
{
	struct rs_symindex ix;

	rs_symindex_init(&ix);
	add(&ix, 0x1000, 0x100, "outer", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1010, 0x10, "inner", RS_SYMRANK_LOCAL + 4);
	add(&ix, 0x1040, 0x8, "inner2", RS_SYMRANK_LOCAL + 4);
	rs_symindex_seal(&ix, 0);
	assert_string_equal(name_at(&ix, 0x1018), "inner");
	assert_string_equal(name_at(&ix, 0x1030), "outer");
	assert_string_equal(name_at(&ix, 0x1044), "inner2");
	assert_string_equal(name_at(&ix, 0x10f0), "outer");
	assert_null(name_at(&ix, 0x1100));
	rs_symindex_fini(&ix);
	(void)state;
}

static void a_sized_function_names_its_addresses_past_a_sizeless_label_inside_it(void **state)
{
	struct rs_symindex ix;
	struct rs_symhit hit;

	rs_symindex_init(&ix);
	/* as symelf.c ranks them: a FUNC, and a NOTYPE local label of an executable section */
	add(&ix, 0x1000, 0x100, "outer", RS_SYMRANK_GLOBAL + 4);
	add(&ix, 0x1040, 0, ".L15", RS_SYMRANK_LOCAL);
	add(&ix, 0x1200, 0x10, "next", RS_SYMRANK_GLOBAL + 4);
	rs_symindex_seal(&ix, 0);
	assert_int_equal(rs_symindex_lookup(&ix, 0x1080, &hit), 0);
	assert_string_equal(hit.name, "outer");
	assert_int_equal(hit.start, 0x1000);
	assert_int_equal(hit.size, 0x100);
	assert_true(hit.sized);
	assert_string_equal(name_at(&ix, 0x1040), "outer"); /* the label's own address */
	/* past the function, nothing sized holds the address: the label's implied extent does */
	assert_int_equal(rs_symindex_lookup(&ix, 0x1100, &hit), 0);
	assert_string_equal(hit.name, ".L15");
	assert_false(hit.sized);
	rs_symindex_fini(&ix);
	(void)state;
}

/*
 * A crafted ELF32 symbol table with the shape of i386 libc's debug file
 * around iconv: the sized FUNC iconv and, inside it, the sizeless NOTYPE
 * local label .L15 (values as in Debian's libc6-dbg for i386).
 */
static void a_sized_func_in_an_elf_symbol_table_wins_over_the_sizeless_local_label_inside_it(void **state)
{
	enum { TEXT = 1, SYMTAB, STRTAB, NSEC };
	static const char strtab[] = "\0iconv\0.L15";
	struct {
		Elf32_Ehdr eh;
		Elf32_Shdr sh[NSEC];
		Elf32_Sym sym[3];
		char str[sizeof(strtab)];
	} im;
	struct rs_symindex ix;
	struct rs_symhit hit;
	Elf *elf;

	memset(&im, 0, sizeof(im));
	memcpy(im.eh.e_ident, ELFMAG, SELFMAG);
	im.eh.e_ident[EI_CLASS] = ELFCLASS32;
	im.eh.e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	im.eh.e_ident[EI_VERSION] = EV_CURRENT;
	im.eh.e_type = ET_DYN;
	im.eh.e_machine = EM_386;
	im.eh.e_version = EV_CURRENT;
	im.eh.e_ehsize = sizeof(im.eh);
	im.eh.e_shoff = offsetof(__typeof__(im), sh);
	im.eh.e_shentsize = sizeof(im.sh[0]);
	im.eh.e_shnum = NSEC;
	im.eh.e_shstrndx = SHN_UNDEF; /* unnamed sections: symbols are found by section type */
	/* .text: executable, NOBITS (no bytes needed), where iconv lies */
	im.sh[TEXT] = (Elf32_Shdr){ .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				    .sh_addr = 0x23c20, .sh_size = 0x200, .sh_addralign = 16 };
	/* .symtab: sh_link its string table, sh_info the first global (locals first) */
	im.sh[SYMTAB] = (Elf32_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = offsetof(__typeof__(im), sym),
				      .sh_size = sizeof(im.sym), .sh_link = STRTAB, .sh_info = 2,
				      .sh_addralign = 4, .sh_entsize = sizeof(im.sym[0]) };
	im.sh[STRTAB] = (Elf32_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = offsetof(__typeof__(im), str),
				      .sh_size = sizeof(strtab), .sh_addralign = 1 };
	/* [0] the null symbol; [1] .L15: local, no type, no size; [2] iconv: global function, 439 bytes */
	im.sym[1] = (Elf32_Sym){ .st_name = 7, .st_value = 0x23cd0, .st_size = 0,
				 .st_info = ELF32_ST_INFO(STB_LOCAL, STT_NOTYPE), .st_shndx = TEXT };
	im.sym[2] = (Elf32_Sym){ .st_name = 1, .st_value = 0x23c20, .st_size = 439,
				 .st_info = ELF32_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = TEXT };
	memcpy(im.str, strtab, sizeof(strtab));

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_memory((char *)&im, sizeof(im));
	assert_non_null(elf);
	rs_symindex_init(&ix);
	assert_int_equal(rs_symelf_load(elf, SHT_SYMTAB, &ix), 2);
	assert_int_equal(rs_symindex_seal(&ix, 0), 2);
	/* the address addr2line names iconv, 0x3e bytes past the label */
	assert_int_equal(rs_symindex_lookup(&ix, 0x23d0e, &hit), 0);
	assert_string_equal(hit.name, "iconv");
	assert_int_equal(hit.start, 0x23c20);
	assert_int_equal(hit.size, 439);
	assert_true(hit.sized);
	assert_string_equal(name_at(&ix, 0x23cd0), "iconv");
	assert_string_equal(name_at(&ix, 0x23c20 + 438), "iconv");
	rs_symindex_fini(&ix);
	elf_end(elf);
	(void)state;
}

static void an_empty_index_finds_nothing(void **state)
{
	struct rs_symindex ix;

	rs_symindex_init(&ix);
	assert_int_equal(rs_symindex_seal(&ix, 0), 0);
	assert_null(name_at(&ix, 0));
	assert_null(name_at(&ix, UINT64_MAX));
	rs_symindex_fini(&ix);
	(void)state;
}

static void nm_output_with_and_without_sizes_is_parsed(void **state)
{
	static const char text[] =
		"# build-id: 0a0b0c\n"
		"0000000000001000 T main\n"
		"0000000000001040 0000000000000020 t helper\n"
		"0000000000002000 D data_not_code\n"
		"                 U printf\n"
		"0000000000001080 W weak_fn\n"
		"0000000000001100 i ifunc_fn\n"
		"0000000000001200 T _Z3fooi(int, char)\n"
		"ffffffffa0000000 t mod_fn\t[some_module]\n"
		"lib.o:\n"
		"\n"
		"0000000000001300 T _etext\n";
	struct rs_symindex ix;
	struct rs_nminfo info;
	struct rs_symhit hit;

	rs_symindex_init(&ix);
	assert_int_equal(rs_nmfile_parse(text, sizeof(text) - 1, &ix, &info), 6);
	assert_int_equal(info.bad_lines, 0);
	assert_int_equal(info.build_id_len, 3);
	assert_memory_equal(info.build_id, "\x0a\x0b\x0c", 3);
	assert_int_equal(info.etext, 0x1300);
	rs_symindex_seal(&ix, info.etext);
	assert_string_equal(name_at(&ix, 0x1010), "main");
	assert_int_equal(rs_symindex_lookup(&ix, 0x1050, &hit), 0);
	assert_string_equal(hit.name, "helper");
	assert_int_equal(hit.size, 0x20);
	assert_true(hit.sized);
	assert_null(name_at(&ix, 0x1060)); /* past helper's exact size */
	assert_string_equal(name_at(&ix, 0x1090), "weak_fn");
	assert_string_equal(name_at(&ix, 0x1104), "ifunc_fn");
	assert_string_equal(name_at(&ix, 0x1204), "_Z3fooi(int, char)");
	assert_string_equal(name_at(&ix, 0xffffffffa0000010), "mod_fn\t[some_module]");
	assert_null(name_at(&ix, 0x2000));
	rs_symindex_fini(&ix);
	(void)state;
}

static void damaged_nm_lines_are_counted_and_skipped(void **state)
{
	static const char text[] =
		"0000000000001000 T good\n"
		"zzzz T bad_address\n"
		"0000000000001100 TT bad_type\n"
		"00000000000011000000000000000000000 T too_long\n"
		"0000000000001200\n"
		"0000000000001300 0000000000000010 T\n"
		"0000000000001400 T also_good";  /* no final newline */
	struct rs_symindex ix;
	struct rs_nminfo info;

	rs_symindex_init(&ix);
	assert_int_equal(rs_nmfile_parse(text, sizeof(text) - 1, &ix, &info), 2);
	assert_int_equal(info.bad_lines, 5);
	assert_int_equal(info.first_bad_line, 2);
	rs_symindex_seal(&ix, 0);
	assert_string_equal(name_at(&ix, 0x1000), "good");
	assert_string_equal(name_at(&ix, 0x1400), "also_good");
	rs_symindex_fini(&ix);
	(void)state;
}

static void a_buffer_without_terminator_is_read_within_its_length(void **state)
{
	/* the length stops the parser in the middle of the second name */
	static const char text[] = "0000000000001000 T first\n0000000000001100 T secondXXXX";
	struct rs_symindex ix;
	struct rs_nminfo info;

	rs_symindex_init(&ix);
	assert_int_equal(rs_nmfile_parse(text, sizeof(text) - 1 - 4, &ix, &info), 2);
	rs_symindex_seal(&ix, 0);
	assert_string_equal(name_at(&ix, 0x1100), "second");
	rs_symindex_fini(&ix);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookup_finds_the_symbol_holding_each_address),
		cmocka_unit_test(aliases_collapse_to_the_global_unversioned_function),
		cmocka_unit_test(a_symbol_version_is_cut_from_the_name),
		cmocka_unit_test(every_name_of_a_function_finds_it_aliases_versions_and_locals_included),
		cmocka_unit_test(unsized_symbols_extend_to_the_next_symbol_or_the_limit),
		cmocka_unit_test(an_address_past_a_nested_symbol_belongs_to_the_enclosing_one),
		cmocka_unit_test(a_sized_function_names_its_addresses_past_a_sizeless_label_inside_it),
		cmocka_unit_test(a_sized_func_in_an_elf_symbol_table_wins_over_the_sizeless_local_label_inside_it),
		cmocka_unit_test(an_empty_index_finds_nothing),
		cmocka_unit_test(nm_output_with_and_without_sizes_is_parsed),
		cmocka_unit_test(damaged_nm_lines_are_counted_and_skipped),
		cmocka_unit_test(a_buffer_without_terminator_is_read_within_its_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
