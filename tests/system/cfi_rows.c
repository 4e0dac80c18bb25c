// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rows relstack's compiled CFI tables (src/capture/cfi.c) hold, for
 * test_cfi_readelf.py to compare with readelf's.  Reads lines
 * "OBJECT OFFSET" (OBJECT: libc or ldso; OFFSET: a link-time address in
 * hex) on standard input and writes, per line, "OFFSET CFA RA FP", each
 * column as readelf --debug-dump=frames-interp writes it ("sp+8",
 * "c-8", "u", with sp and fp for the machine's stack and frame pointer
 * registers, which test_cfi_readelf.py names), or "OFFSET error
 * ENOENT|ENOTSUP".
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "capture/cfi.h"
#include "capture/objtab.h"

static uintptr_t libc_bias, ldso_bias;

static int find_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t crt = (uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main");

	(void)size;
	(void)data;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && crt >= s && crt - s < ph->p_memsz)
			libc_bias = info->dlpi_addr;
	}
	if (info->dlpi_addr == getauxval(AT_BASE))
		ldso_bias = info->dlpi_addr;
	return 0;
}

int main(void)
{
	char obj[16];
	unsigned long off;

	if (rs_objtab_scan(false) < 0) {
		fprintf(stderr, "cfi_rows: the object table could not scan this process\n");
		return 1;
	}
	dl_iterate_phdr(find_bias, NULL);
	if (!libc_bias || !ldso_bias) {
		fprintf(stderr, "cfi_rows: the C library or ld.so not found\n");
		return 1;
	}
	while (scanf("%15s %lx", obj, &off) == 2) {
		uintptr_t pc = off + (strcmp(obj, "libc") ? ldso_bias : libc_bias);
		struct rs_lookup l;
		struct rs_cfi_row r;
		int err = rs_objtab_lookup(pc, &l) && l.cfi ? rs_cfi_row_at(l.cfi, pc, &r) : -ENOENT;

		if (err) {
			printf("%lx error %s\n", off, err == -ENOENT ? "ENOENT" : "ENOTSUP");
			continue;
		}
		if (r.ra_rule == RS_CFI_UNDEFINED) {
			printf("%lx - u -\n", off);
			continue;
		}
		printf("%lx %s%+ld c%+ld ", off, r.cfa_on_fp ? "fp" : "sp", (long)r.cfa_off, (long)r.ra_off);
		if (r.fp_rule == RS_CFI_OFFSET)
			printf("c%+ld\n", (long)r.fp_off);
		else
			printf("%s\n", r.fp_rule == RS_CFI_UNDEFINED ? "u" : "same");
	}
	return 0;
}
