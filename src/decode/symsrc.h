/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symsrc.h - the symbol sources behind symbolize.c: nm text files
 * (nmfile.c), ELF symbol tables (symelf.c) and DWARF (symdwarf.c).  Each
 * treats its input as hostile: every length and index is checked, and a
 * bad record is skipped or reported, never trusted.
 */
#ifndef RS_SYMSRC_H
#define RS_SYMSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gelf.h>

#include "symindex.h"

/* ---- nm(1) / System.map text ---- */

struct rs_nminfo {
	uint8_t build_id[64];   /* from a "# build-id: HEX" line, if any */
	size_t build_id_len;
	size_t lines;           /* lines read */
	size_t symbols;         /* code symbols added */
	size_t bad_lines;       /* lines that are neither a symbol nor a comment */
	size_t first_bad_line;  /* 1-based, 0 if none */
	uint64_t etext;         /* address of _etext/etext, 0 if absent */
};

/*
 * Parse nm output (ADDR TYPE NAME, or ADDR SIZE TYPE NAME from nm -S) and
 * add the code symbols (types t T w W i) to @ix, which the caller seals.
 * Returns the number of symbols added, or -errno.
 */
int rs_nmfile_parse(const char *buf, size_t len, struct rs_symindex *ix, struct rs_nminfo *info);
/* The same for the kernel's System.map: of aliases, the symbol the kernel's kallsyms names. */
int rs_nmfile_parse_kernel(const char *buf, size_t len, struct rs_symindex *ix, struct rs_nminfo *info);

/* Read a whole file (at most @max bytes) into a NUL-terminated buffer. */
int rs_read_file(const char *path, size_t max, char **buf, size_t *len);

/* ---- ELF ---- */

/*
 * Add the code symbols of @elf's section of type @sh_type (SHT_SYMTAB or
 * SHT_DYNSYM) to @ix.  Returns the number added, -ENOENT if there is no
 * such section, or -errno.
 */
int rs_symelf_load(Elf *elf, unsigned sh_type, struct rs_symindex *ix);

/*
 * A relocatable file (a kernel module's .ko): its executable sections
 * placed as @layout says ("SECTION=OFFSET_HEX ...", the kernel's module
 * table), the .symtab code symbols of those sections added at their
 * section's offset plus their value, unsized.  Sections the layout does
 * not name are left out.  Returns the number added, or -errno.
 */
int rs_symelf_load_placed(Elf *elf, const char *layout, struct rs_symindex *ix);
bool rs_symelf_relocatable(Elf *elf);

/* Whether @elf has a section of type @sh_type / a .debug_info section. */
bool rs_symelf_has_type(Elf *elf, unsigned sh_type);
bool rs_symelf_has_dwarf(Elf *elf);

/* ---- DWARF ---- */

struct rs_symdwarf;

struct rs_dwloc {
	const char *file;
	unsigned line, column;
};

struct rs_dwinline {
	const char *name;
	struct rs_dwloc call;   /* where it was inlined into its caller */
};

/*
 * A DWARF reader over @elf, which must outlive it and be opened
 * ELF_C_READ_MMAP_PRIVATE or from memory: the section headers of debug
 * sections never read here are edited so that libdw skips them.  NULL if
 * @elf has no usable DWARF.
 */
struct rs_symdwarf *rs_symdwarf_new(Elf *elf);
void rs_symdwarf_free(struct rs_symdwarf *d);

/* The line-table location of @addr: 0 or -ENOENT. */
int rs_symdwarf_line(struct rs_symdwarf *d, uint64_t addr, struct rs_dwloc *loc);

/*
 * The inlined functions at @addr, innermost first, at most @max.  Returns
 * their number (0: none) or -ENOENT when no unit covers @addr.
 */
int rs_symdwarf_inlines(struct rs_symdwarf *d, uint64_t addr, struct rs_dwinline *out, unsigned max);

/*
 * Why the inlined functions at @addr are unknown: a message naming the
 * .dwo file of the split unit covering @addr that libdw could not find.
 * NULL otherwise.
 */
const char *rs_symdwarf_inlines_missing(struct rs_symdwarf *d, uint64_t addr);

#endif
