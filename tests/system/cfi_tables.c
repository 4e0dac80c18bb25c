// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Compile the CFI table (src/capture/cfi.c) of every ELF file named on
 * the command line, as the object table compiles a loaded object's, but
 * from the file mapped read-only: the .eh_frame_hdr and .eh_frame are
 * read where PT_GNU_EH_FRAME and the PT_LOAD segment holding it say,
 * which keeps their relative positions, so the rows come out keyed by
 * the same link-time offsets.
 *
 * A file with no .eh_frame_hdr has its .sframe compiled instead, where it
 * has one.  For each file it checks what every table must satisfy (rows
 * sorted, each found again at its start by the lookup) and prints one
 * line:
 *
 *	FILE fdes N rows N unsupported N cfi_bytes N table_bytes N us N
 *
 * then a total line.  Files that are not ELF of this program's class and
 * machine, or have neither, are counted and skipped.  Exit status 1 if any table broke a rule.  With --rows,
 * each row follows its file's line, as "ROW START KIND CFA RA FP" with
 * START the link-time address (for comparing tables of two builds).
 * Used by test_cfi_tables.sh (every object of this machine) and
 * bench/cfi.sh (build time per MB, bytes per row).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/cfi.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The machine this program is built for: CFI names that machine's registers. */
static unsigned own_machine(void)
{
	ElfW(Ehdr) eh = { 0 };
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &eh, sizeof(eh)) != (ssize_t)sizeof(eh))
		eh.e_machine = EM_NONE;
	if (fd >= 0)
		close(fd);
	return eh.e_machine;
}

/* The table of the ELF file at @m (@size bytes), of this program's class and machine; NULL if it has none. */
static struct rs_cfi_table *table_of(const unsigned char *m, size_t size, int repeat, double *us)
{
	static unsigned machine;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)m;
	const ElfW(Phdr) *ph, *hdr = NULL;
	struct rs_cfi_table *t = NULL;
	uint64_t span = 0;

	if (!machine)
		machine = own_machine();
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != RS_ELF_NATIVE_CLASS ||
	    eh->e_machine != machine ||
	    eh->e_phentsize != sizeof(*ph) || eh->e_phoff > size || (size - eh->e_phoff) / sizeof(*ph) < eh->e_phnum)
		return NULL;
	ph = (const ElfW(Phdr) *)(const void *)(m + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_GNU_EH_FRAME && ph[i].p_memsz)
			hdr = &ph[i];
	for (unsigned i = 0; i < eh->e_phnum && !hdr; i++)
		if (ph[i].p_type == RS_PT_GNU_SFRAME)
			hdr = &ph[i];
	if (!hdr)
		return NULL;
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > span)
			span = ph[i].p_vaddr + ph[i].p_memsz;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *l = &ph[i];
		uintptr_t base = (uintptr_t)m;

		if (l->p_type != PT_LOAD || hdr->p_vaddr < l->p_vaddr || hdr->p_vaddr - l->p_vaddr >= l->p_filesz ||
		    l->p_offset > size || size - l->p_offset < l->p_filesz)
			continue;
		/* the segment's bytes where the file has them: bias = base + offset - vaddr */
		{
			uintptr_t bias = base + l->p_offset - l->p_vaddr;
			double t0 = now_us();

			for (int r = 0; r < repeat; r++) {
				rs_cfi_table_free(t);
				if (hdr->p_type == PT_GNU_EH_FRAME)
					t = rs_cfi_table_compile(bias + hdr->p_vaddr, base + l->p_offset,
								 base + l->p_offset + l->p_filesz, bias, span);
				else if (hdr->p_filesz <= l->p_filesz - (hdr->p_vaddr - l->p_vaddr))
					t = rs_cfi_table_from_sframe(bias + hdr->p_vaddr, hdr->p_filesz, bias, span);
			}
			*us = (now_us() - t0) / repeat;
		}
		break;
	}
	return t;
}

/* Rows sorted, each found at its start and just before the next. */
static int check(const struct rs_cfi_table *t, const char *path)
{
	uint32_t n = rs_cfi_table_rows(t);
	uintptr_t prev = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct rs_cfi_row a, b;
		uintptr_t start;
		int e = rs_cfi_table_row(t, i, &start, &a);

		if (e == -ERANGE || (i && start <= prev) || rs_cfi_row_at(t, start, &b) != e ||
		    (e == 0 && memcmp(&a, &b, sizeof(a)))) {
			fprintf(stderr, "cfi_tables: %s: row %u at %#lx is out of order or not found again\n", path, i,
				(unsigned long)start);
			return -1;
		}
		prev = start;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long long fdes = 0, rows = 0, unsup = 0, bytes = 0, files = 0, skipped = 0;
	double us_all = 0;
	int repeat = 1, bad = 0, first = 1, rows_too = 0;

	if (argc > 1 && strcmp(argv[1], "--rows") == 0) {
		rows_too = 1;
		first = 2;
	} else if (argc > 2 && strcmp(argv[1], "--repeat") == 0) {
		repeat = atoi(argv[2]);
		first = 3;
		if (repeat < 1)
			repeat = 1;
	}
	for (int i = first; i < argc; i++) {
		struct rs_cfi_table *t;
		unsigned long long tb;
		struct stat st;
		double us = 0;
		void *m;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
			if (fd >= 0)
				close(fd);
			skipped++;
			continue;
		}
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED) {
			skipped++;
			continue;
		}
		t = table_of(m, (size_t)st.st_size, repeat, &us);
		if (t) {
			files++;
			bad |= check(t, argv[i]);
			/* what the table takes: its head, block index and rows (the region rounds it up to pages) */
			tb = sizeof(*t) + (t->nblocks + 1) * sizeof(uint32_t) + (uint64_t)t->n * RS_CFI_ROW_BYTES;
			printf("%s fdes %llu rows %llu unsupported %llu cfi_bytes %llu table_bytes %llu us %.1f\n",
			       argv[i], (unsigned long long)t->stats.fdes, (unsigned long long)t->stats.rows,
			       (unsigned long long)t->stats.unsupported, (unsigned long long)t->stats.cfi_bytes,
			       (unsigned long long)tb, us);
			for (uint32_t r = 0; rows_too && r < rs_cfi_table_rows(t); r++) {
				struct rs_cfi_row row;
				uintptr_t start;
				int e = rs_cfi_table_row(t, r, &start, &row);

				printf("ROW %#lx ", (unsigned long)(start - t->bias));
				if (e)
					printf("%s\n", e == -ENOENT ? "gap" : "unsupported");
				else if (row.ra_rule == RS_CFI_UNDEFINED)
					printf("outermost\n");
				else
					printf("%s%+ld c%+ld %s%+ld\n", row.cfa_on_fp ? "fp" : "sp", (long)row.cfa_off,
					       (long)row.ra_off,
					       row.fp_rule == RS_CFI_OFFSET ? "c" : row.fp_rule == RS_CFI_SAME ? "same" : "u",
					       row.fp_rule == RS_CFI_OFFSET ? (long)row.fp_off : 0L);
			}
			fdes += t->stats.fdes;
			rows += t->stats.rows;
			unsup += t->stats.unsupported;
			bytes += t->stats.cfi_bytes;
			us_all += us;
			rs_cfi_table_free(t);
		} else {
			skipped++;
		}
		munmap(m, (size_t)st.st_size);
	}
	printf("total files %llu skipped %llu fdes %llu rows %llu unsupported %llu cfi_bytes %llu us %.1f\n", files,
	       skipped, fdes, rows, unsup, bytes, us_all);
	return bad ? 1 : 0;
}
