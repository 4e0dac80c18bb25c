// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CFI tables from .debug_frame: for an object that carries no .eh_frame
 * (built with -fno-asynchronous-unwind-tables, as some runtimes and
 * kernels-style code are) but keeps its DWARF call-frame information in
 * .debug_frame, in its own file or in the separate debug file named by
 * its build-id (/usr/lib/debug/.build-id/xx/yyyy.debug, where Debian's
 * -dbgsym packages put it).
 *
 * .debug_frame is not loaded: the section is read from the file at scan
 * time (never on the capture path).  Its layout differs from .eh_frame's
 * in what this file handles: a CIE is marked by an all-ones id, an FDE
 * names its CIE by offset from the section's start, addresses are
 * link-time addresses of the CIE's address size, there is no search
 * table (the FDEs are sorted here) and augmentations are rare (a CIE
 * with one is not used).  The rules themselves are run by cfi.c.
 *
 * A file is used only if its GNU build-id note is the object's: a debug
 * file of another build, or a library replaced on disk since it was
 * loaded, would describe other code.  (An object without a build-id can
 * only use its own file, unchecked.)  The ELF headers are read by hand,
 * as the rest of the capture side depends on the C library only.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/cfi-local.h"

/* Bounds on what a file may make the scan read (e_shnum is 16 bits: 64 Ki sections at most). */
#define MAX_NAMES (4u << 20)
#define MAX_DEBUG_FRAME (256u << 20)

/* A CIE of .debug_frame at [p, end) (after its length and id); false for one the walk cannot use. */
static bool parse_debug_cie(const unsigned char *p, const unsigned char *end, struct cie *cie)
{
	struct cursor c = { p, end, false };
	uint8_t version;

	memset(cie, 0, sizeof(*cie));
	version = get_byte(&c);
	if (c.bad || (version != 1 && version != 3 && version != 4))
		return false;
	if (get_byte(&c) != 0) /* an augmentation: not used */
		return false;
	if (version == 4 && (get_byte(&c) != sizeof(uintptr_t) || get_byte(&c) != 0))
		return false; /* another address size, or segments */
	cie->code_align = get_uleb(&c);
	cie->data_align = get_sleb(&c);
	cie->ra_reg = version == 1 ? get_byte(&c) : get_uleb(&c);
	cie->fde_enc = 0; /* DW_EH_PE_absptr: link-time addresses of the address size */
	if (c.bad)
		return false;
	cie->insns = c.p;
	cie->insns_end = c.end;
	return true;
}

struct fde_ref {
	uint64_t begin, range;
	const unsigned char *cie_body, *cie_end; /* after the CIE's id */
	const unsigned char *insns, *end;
};

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* An entry's length at @p: 32-bit, or 0xffffffff and 64-bit (*wide set). */
static uint64_t debug_length(struct cursor *c, bool *wide)
{
	uint64_t len = get_u(c, 4);

	*wide = len == 0xffffffffu;
	if (*wide)
		len = get_u(c, 8);
	return len;
}

struct rs_cfi_table *rs_cfi_table_from_debug_frame(const unsigned char *sec, size_t size, uintptr_t bias,
						   uint64_t span)
{
	/* rows keyed by link-time address, which is pc - bias */
	struct rs_cfi_builder b = { .bias = 0, .span = span };
	const unsigned char *end = sec + size;
	struct fde_ref *fdes = NULL;
	size_t nfdes = 0, cap = 0;
	struct rs_cfi_table *t;

	for (const unsigned char *p = sec; end - p >= 4;) {
		struct cursor c = { p, end, false };
		const unsigned char *body, *next;
		uint64_t len, id;
		bool wide;

		len = debug_length(&c, &wide);
		if (c.bad || len == 0 || len > (uint64_t)(end - c.p))
			break;
		body = c.p;
		next = body + len;
		c.end = next;
		id = wide ? get_u(&c, 8) : get_u(&c, 4);
		if (!c.bad && id != (wide ? UINT64_MAX : 0xffffffffu) && id < size) {
			/* an FDE: its CIE at offset id */
			struct cursor cc = { sec + id, end, false };
			bool cwide;
			uint64_t clen = debug_length(&cc, &cwide), cid;
			struct fde_ref f;

			f.cie_body = cc.p;
			if (!cc.bad && clen <= (uint64_t)(end - cc.p)) {
				cc.end = cc.p + clen;
				cid = cwide ? get_u(&cc, 8) : get_u(&cc, 4);
				f.cie_body = cc.p;
				f.cie_end = cc.end;
				f.begin = get_u(&c, sizeof(uintptr_t));
				f.range = get_u(&c, sizeof(uintptr_t));
				f.insns = c.p;
				f.end = next;
				if (!cc.bad && !c.bad && cid == (cwide ? UINT64_MAX : 0xffffffffu) && f.range &&
				    f.begin + f.range > f.begin) {
					if (nfdes == cap) {
						size_t ncap = cap ? cap * 2 : 256;
						struct fde_ref *n = realloc(fdes, ncap * sizeof(*n));

						if (!n) {
							free(fdes);
							errno = ENOMEM;
							return NULL;
						}
						fdes = n;
						cap = ncap;
					}
					fdes[nfdes++] = f;
					b.stats.cfi_bytes += (uint64_t)(next - p);
				}
			}
		} else if (!c.bad) {
			b.stats.cfi_bytes += (uint64_t)(next - p);
		}
		p = next;
	}
	if (!nfdes) {
		free(fdes);
		errno = ENOENT;
		return NULL;
	}
	qsort(fdes, nfdes, sizeof(*fdes), cmp_fde);
	for (size_t i = 0; i < nfdes && !b.nomem; i++) {
		struct cie cie;

		if (!parse_debug_cie(fdes[i].cie_body, fdes[i].cie_end, &cie)) {
			/* no return-address column the walk knows: unsupported rows over the FDE */
			memset(&cie, 0, sizeof(cie));
			cie.ra_reg = UINT64_MAX;
		} else {
			b.stats.fdes++;
		}
		rs_cfi_build_rows(&b, &cie, (uintptr_t)fdes[i].begin, (uintptr_t)fdes[i].range, fdes[i].insns,
				  fdes[i].end);
	}
	free(fdes);
	t = rs_cfi_build_finish(&b, bias);
	return t;
}

/* pread exactly @n bytes at @off; false on a short read. */
static bool read_at(int fd, void *buf, size_t n, off_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, off + (off_t)done);

		if (r <= 0)
			return false;
		done += (size_t)r;
	}
	return true;
}

/* Does a note section [0, n) of @fd at @off hold the GNU build-id @id? */
static bool note_has_build_id(int fd, off_t off, uint64_t n, const uint8_t *id, size_t len)
{
	unsigned char buf[4096];
	size_t at = 0;

	if (n > sizeof(buf) || !read_at(fd, buf, (size_t)n, off))
		return false;
	while (n - at >= 12) {
		uint32_t namesz, descsz, type;

		memcpy(&namesz, buf + at, 4);
		memcpy(&descsz, buf + at + 4, 4);
		memcpy(&type, buf + at + 8, 4);
		at += 12;
		if (namesz > n - at || ((namesz + 3) & ~3u) > n - at)
			return false;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(buf + at, "GNU", 4) == 0) {
			at += 4;
			return descsz == len && descsz <= n - at && memcmp(buf + at, id, len) == 0;
		}
		at += (namesz + 3) & ~3u;
		if (descsz > n - at)
			return false;
		at += (descsz + 3) & ~3u;
	}
	return false;
}

/*
 * The .debug_frame section of the ELF file @path, in a buffer to free;
 * NULL if none, or if the file is not of the build @id names (@len 0:
 * no build-id to check).
 */
static unsigned char *read_debug_frame(const char *path, const uint8_t *id, size_t len, size_t *size)
{
	bool same_build = len == 0;
	unsigned char *sec = NULL;
	ElfW(Shdr) *sh = NULL;
	char *names = NULL;
	ElfW(Ehdr) eh;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !read_at(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != RS_ELF_NATIVE_CLASS ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(ElfW(Shdr)) || !eh.e_shnum ||
	    eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || !read_at(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff))
		goto out;
	if (sh[eh.e_shstrndx].sh_size > MAX_NAMES || sh[eh.e_shstrndx].sh_type != SHT_STRTAB)
		goto out;
	names = calloc(1, sh[eh.e_shstrndx].sh_size + 1);
	if (!names || !read_at(fd, names, sh[eh.e_shstrndx].sh_size, (off_t)sh[eh.e_shstrndx].sh_offset))
		goto out;
	/* the same build, or its rows describe other code: a stale debug file, a file replaced on disk */
	for (unsigned i = 0; i < eh.e_shnum && !same_build; i++)
		if (sh[i].sh_type == SHT_NOTE && note_has_build_id(fd, (off_t)sh[i].sh_offset, sh[i].sh_size, id, len))
			same_build = true;
	for (unsigned i = 0; i < eh.e_shnum && same_build; i++) {
		if (sh[i].sh_name >= sh[eh.e_shstrndx].sh_size || strcmp(names + sh[i].sh_name, ".debug_frame") ||
		    sh[i].sh_type != SHT_PROGBITS || (sh[i].sh_flags & SHF_COMPRESSED) || !sh[i].sh_size ||
		    sh[i].sh_size > MAX_DEBUG_FRAME)
			continue;
		sec = malloc(sh[i].sh_size);
		if (sec && !read_at(fd, sec, sh[i].sh_size, (off_t)sh[i].sh_offset)) {
			free(sec);
			sec = NULL;
		}
		*size = sh[i].sh_size;
		break;
	}
out:
	free(names);
	free(sh);
	close(fd);
	return sec;
}

struct rs_cfi_table *rs_cfi_table_debug(const char *path, const uint8_t *build_id, size_t build_id_len,
					uintptr_t bias, uint64_t span)
{
	char debug[64 + 2 * 64];
	unsigned char *sec = NULL;
	struct rs_cfi_table *t;
	size_t size = 0;

	if (path && path[0])
		sec = read_debug_frame(path, build_id, build_id_len, &size);
	if (!sec && build_id_len >= 2 && build_id_len <= 64) {
		int n = snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%02x/", build_id[0]);

		for (size_t i = 1; i < build_id_len; i++)
			n += snprintf(debug + n, sizeof(debug) - (size_t)n, "%02x", build_id[i]);
		snprintf(debug + n, sizeof(debug) - (size_t)n, ".debug");
		sec = read_debug_frame(debug, build_id, build_id_len, &size);
	}
	if (!sec) {
		errno = ENOENT;
		return NULL;
	}
	t = rs_cfi_table_from_debug_frame(sec, size, bias, span);
	free(sec);
	return t;
}
