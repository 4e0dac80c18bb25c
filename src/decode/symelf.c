// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ELF symbol tables as a symbol source, read with libelf.
 *
 * Code symbols enter the index: STT_FUNC and STT_GNU_IFUNC, and STT_NOTYPE
 * symbols defined in an executable section (assembly often leaves the type
 * out).  Section, file, undefined and absolute symbols, mapping symbols
 * ("$x") and empty names are skipped.  Every index read from the file (the
 * string table link, a symbol's section) is checked against the section
 * count before use; libelf checks the data bounds.  Compressed sections
 * are decompressed in place by elf_compress().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relstack/relstack.h"
#include "relstack-local.h"
#include "symsrc.h"

static Elf_Scn *find_type(Elf *elf, unsigned sh_type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == sh_type)
			return scn;
	}
	return NULL;
}

bool rs_symelf_has_type(Elf *elf, unsigned sh_type)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_type(elf, sh_type, &shdr);

	return scn && shdr.sh_size > 0;
}

bool rs_symelf_has_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

static Elf_Data *section_data(Elf_Scn *scn, GElf_Shdr *shdr)
{
	if ((shdr->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	return elf_getdata(scn, NULL);
}

/*
 * The code symbols of @sh_type into @ix: at their st_value, or, with
 * @base, only those of the sections it places, at base[section] +
 * st_value, unsized (as the kernel sizes a module's symbols: up to the
 * next one).
 */
static int load(Elf *elf, unsigned sh_type, const uint64_t *base, const uint8_t *placed, struct rs_symindex *ix)
{
	GElf_Shdr shdr, strshdr;
	Elf_Scn *scn, *strscn;
	Elf_Data *data, *strdata;
	size_t nscn, nsym;
	uint8_t *exec = NULL;
	int added = 0, err = 0;

	scn = find_type(elf, sh_type, &shdr);
	if (!scn)
		return -ENOENT;
	if (elf_getshdrnum(elf, &nscn) < 0 || shdr.sh_link == 0 || shdr.sh_link >= nscn)
		return -RELSTACK_ECORRUPT;
	strscn = elf_getscn(elf, shdr.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strshdr) || strshdr.sh_type != SHT_STRTAB)
		return -RELSTACK_ECORRUPT;
	data = section_data(scn, &shdr);
	strdata = section_data(strscn, &strshdr);
	if (!data || !strdata || !data->d_buf || !strdata->d_buf || strdata->d_size == 0)
		return -RELSTACK_ECORRUPT;

	/* which sections hold code: one byte per section, so NOTYPE symbols cost no lookup */
	exec = calloc(nscn ? nscn : 1, 1);
	if (!exec)
		return -ENOMEM;
	for (size_t i = 1; i < nscn; i++) {
		Elf_Scn *s = elf_getscn(elf, i);
		GElf_Shdr sh;

		if (s && gelf_getshdr(s, &sh) && (sh.sh_flags & SHF_EXECINSTR))
			exec[i] = 1;
	}

	const char *strs = strdata->d_buf;
	size_t strsz = strdata->d_size;

	nsym = data->d_size / gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	for (size_t i = 1; i < nsym; i++) {
		GElf_Sym sym;
		unsigned type, bind, rank;
		const char *name;
		size_t len;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE || sym.st_shndx >= nscn)
			continue;
		if (base) {
			if (!placed[sym.st_shndx] || sym.st_value > UINT64_MAX - base[sym.st_shndx])
				continue;
			sym.st_value += base[sym.st_shndx];
			sym.st_size = 0;
		}
		if (type == STT_NOTYPE) {
			if (!exec[sym.st_shndx])
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		if (sym.st_name == 0 || sym.st_name >= strsz)
			continue;
		name = strs + sym.st_name;
		len = strnlen(name, strsz - sym.st_name);
		if (len == 0 || len == strsz - sym.st_name || name[0] == '$')
			continue; /* empty, unterminated, or a mapping symbol */
		rank = bind == STB_GLOBAL ? RS_SYMRANK_GLOBAL : bind == STB_WEAK ? RS_SYMRANK_WEAK : RS_SYMRANK_LOCAL;
		if (type != STT_NOTYPE)
			rank += 4;
		err = rs_symindex_add(ix, sym.st_value, sym.st_size, name, len, rank);
		if (err)
			break;
		added++;
	}
	free(exec);
	return err ? err : added;
}

int rs_symelf_load(Elf *elf, unsigned sh_type, struct rs_symindex *ix)
{
	return load(elf, sh_type, NULL, NULL, ix);
}

bool rs_symelf_relocatable(Elf *elf)
{
	GElf_Ehdr eh;

	return gelf_getehdr(elf, &eh) && eh.e_type == ET_REL;
}

/* "NAME=HEX": the name's length and the value, or 0 when the item is not that. */
static size_t layout_item(const char *p, size_t len, uint64_t *value)
{
	const char *eq = memchr(p, '=', len), *h;
	uint64_t v = 0;

	if (!eq || eq == p)
		return 0;
	h = eq + 1;
	if (h + 2 <= p + len && h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
		h += 2;
	if (h == p + len)
		return 0;
	for (; h < p + len; h++) {
		int d = rs_hexval(*h);

		if (d < 0 || v >> 56)
			return 0;
		v = v << 4 | (unsigned)d;
	}
	*value = v;
	return (size_t)(eq - p);
}

int rs_symelf_load_placed(Elf *elf, const char *layout, struct rs_symindex *ix)
{
	size_t nscn, shstrndx;
	uint64_t *base;
	uint8_t *placed;
	int ret, nplaced = 0;

	if (elf_getshdrnum(elf, &nscn) < 0 || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return -RELSTACK_ECORRUPT;
	base = calloc(nscn ? nscn : 1, sizeof(*base));
	placed = calloc(nscn ? nscn : 1, 1);
	if (!base || !placed) {
		free(base);
		free(placed);
		return -ENOMEM;
	}
	for (const char *p = layout; *p;) {
		size_t len = strcspn(p, " \t"), nl;
		uint64_t v;

		if (len && (nl = layout_item(p, len, &v))) {
			for (size_t i = 1; i < nscn; i++) {
				Elf_Scn *scn = elf_getscn(elf, i);
				GElf_Shdr sh;
				const char *name;

				if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
				    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) || strlen(name) != nl ||
				    memcmp(name, p, nl))
					continue;
				base[i] = v;
				placed[i] = 1;
				nplaced++;
			}
		}
		p += len;
		p += strspn(p, " \t");
	}
	ret = nplaced ? load(elf, SHT_SYMTAB, base, placed, ix) : 0;
	free(base);
	free(placed);
	return ret;
}
