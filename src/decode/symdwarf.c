// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * DWARF as a source of file:line and inlined frames, read with libdw.
 *
 * libdw parses everything (units, line programs, DIEs, range lists); this
 * file only keeps two sorted indexes so that a lookup never walks the DIE
 * tree, which is where eu-addr2line spends its time (dwarf_getscopes per
 * address, see the peer baseline):
 *
 *   units    every address range of every compile unit, sorted by start,
 *            built once when the reader opens; lines then come from
 *            dwarf_getsrc_die(), which parses a unit's line program once
 *            and binary-searches it;
 *   scopes   per unit, built on its first inline query: the subprograms
 *            and inlined subroutines with their ranges, in DIE pre-order
 *            with parent links, and their range pieces sorted by start.
 *
 * Scopes nest, so the innermost scope holding an address is found from
 * the last piece starting at or below it by walking parent links until a
 * scope covers the address (a parent always has a lower index, so the walk
 * ends on any input).  The DIE walk is bounded in depth.
 *
 * Split DWARF (-gsplit-dwarf): the object keeps a skeleton unit per
 * compile unit, with its ranges and line table, so units and lines come
 * from the skeleton; the DIE tree, and with it the inlined frames, lives
 * in the unit's .dwo file, which libdw opens by the skeleton's dwo name
 * (under its compilation directory, or next to the object).  When libdw
 * cannot find it, lines still work and the frame says why it has no
 * inlined frames (rs_symdwarf_inlines_missing()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "relstack-local.h"
#include "symsrc.h"

#define MAX_DEPTH 128
#define MAX_RANGES_PER_DIE 4096

struct urange {
	uint64_t lo, hi;
	uint32_t unit;
};

struct scope {
	int32_t parent;
	uint32_t first, count;  /* its pieces in scopes.ranges[] */
	bool inlined;
	bool resolved;          /* name and call are read on first use */
	Dwarf_Off die;
	const char *name;
	struct rs_dwloc call;
};

struct piece {
	uint64_t lo, hi;
	int32_t scope;
};

struct scopes {
	struct scope *s;
	size_t n;
	struct piece *ranges;   /* by scope, contiguous */
	struct piece *sorted;   /* by start */
	size_t nr;
};

/* A unit's file table, its names joined to the unit's directory once each. */
struct filetab {
	bool read;
	Dwarf_Files *files;
	size_t nfiles;
	char **paths;           /* by file index */
	const char *comp_dir;
};

struct unit {
	Dwarf_Die die;          /* the compile unit, or the skeleton of a split one */
	Dwarf_Die tree;         /* where its DIEs are: die, or the split unit */
	Dwarf *tree_dw;         /* the Dwarf that holds tree */
	char *split_missing;    /* why a skeleton's DIEs are missing (its split unit was not found), or NULL */
	struct scopes *scopes;  /* NULL until the first inline query */
	bool scopes_failed;
	struct filetab lines;   /* file table of die's line program */
	struct filetab decls;   /* file table DW_AT_call_file of tree's DIEs refers to */
};

struct rs_symdwarf {
	Dwarf *dw;
	struct unit *units;
	size_t nunits;
	struct urange *ur;
	size_t nur;
};

static int urange_cmp(const void *pa, const void *pb)
{
	const struct urange *a = pa, *b = pb;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static int push_range(struct urange **v, size_t *n, size_t *cap, uint64_t lo, uint64_t hi, uint32_t unit)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct urange *nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = (struct urange){ lo, hi, unit };
	return 0;
}

/*
 * dwarf_begin_elf() decompresses every compressed debug section up front;
 * in Debian's debug files that is most of the start-up time, and location
 * lists, frame tables, macros and the name indexes are never read here.
 * Marking them SHT_NOBITS in the in-memory section headers makes libdw
 * skip them.  Only done on an Elf opened ELF_C_READ_MMAP_PRIVATE (or from
 * memory), whose headers are private to this process.
 */
static void skip_unused_sections(Elf *elf)
{
	static const char *const unused[] = {
		".debug_loclists", ".debug_loc", ".debug_frame", ".debug_macro", ".debug_macinfo",
		".debug_pubnames", ".debug_pubtypes", ".debug_names", ".debug_aranges",
	};
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++) {
			if (!strcmp(name, unused[i])) {
				shdr.sh_type = SHT_NOBITS;
				gelf_update_shdr(scn, &shdr);
				break;
			}
		}
	}
}

static const char *attr_string(Dwarf_Die *die, unsigned at)
{
	Dwarf_Attribute a;

	return dwarf_attr_integrate(die, at, &a) ? dwarf_formstring(&a) : NULL;
}

static void unit_init(struct rs_symdwarf *d, struct unit *u, uint8_t unit_type, Dwarf_Die *cudie,
		      Dwarf_Die *subdie)
{
	const char *dwo;

	u->die = *cudie;
	u->tree = *cudie;
	u->tree_dw = d->dw;
	if (unit_type != DW_UT_skeleton)
		return;
	/* dwarf_get_units() gives the split unit, or a zeroed DIE if it found none */
	if (subdie->addr && dwarf_tag(subdie) == DW_TAG_compile_unit && dwarf_cu_getdwarf(subdie->cu)) {
		u->tree = *subdie;
		u->tree_dw = dwarf_cu_getdwarf(subdie->cu);
		return;
	}
	dwo = attr_string(cudie, DW_AT_dwo_name);
	if (!dwo)
		dwo = attr_string(cudie, DW_AT_GNU_dwo_name);
	if (asprintf(&u->split_missing, "split DWARF unit %s not found: inlined frames unknown "
		     "(DWARF packages, .dwp, are not read)", dwo ? dwo : "(unnamed)") < 0)
		u->split_missing = NULL;
}

struct rs_symdwarf *rs_symdwarf_new(Elf *elf)
{
	struct rs_symdwarf *d = calloc(1, sizeof(*d));
	size_t ucap = 0, rcap = 0;
	Dwarf_CU *cu = NULL;

	if (!d)
		return NULL;
	skip_unused_sections(elf);
	d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		free(d);
		return NULL;
	}
	for (;;) {
		Dwarf_Die cudie, subdie;
		Dwarf_Half version;
		uint8_t unit_type;
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		int r;

		r = dwarf_get_units(d->dw, cu, &cu, &version, &unit_type, &cudie, &subdie);
		if (r != 0)
			break; /* 1: no more units; -1: damaged, keep what we have */
		if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
			continue;
		if (d->nunits == ucap) {
			size_t c = ucap ? ucap * 2 : 64;
			struct unit *nu = realloc(d->units, c * sizeof(*nu));

			if (!nu)
				goto fail;
			d->units = nu;
			ucap = c;
		}
		memset(&d->units[d->nunits], 0, sizeof(d->units[0]));
		unit_init(d, &d->units[d->nunits], unit_type, &cudie, &subdie);
		for (int k = 0; k < MAX_RANGES_PER_DIE * 16; k++) {
			off = dwarf_ranges(&cudie, off, &base, &lo, &hi);
			if (off <= 0)
				break;
			if (hi > lo && push_range(&d->ur, &d->nur, &rcap, lo, hi, (uint32_t)d->nunits))
				goto fail;
		}
		d->nunits++;
		if (d->nunits >= UINT32_MAX)
			break;
	}
	if (d->nur)
		qsort(d->ur, d->nur, sizeof(*d->ur), urange_cmp);
	return d;
fail:
	rs_symdwarf_free(d);
	return NULL;
}

static void scopes_free(struct scopes *sc)
{
	if (!sc)
		return;
	free(sc->s);
	free(sc->ranges);
	free(sc->sorted);
	free(sc);
}

static void filetab_free(struct filetab *t)
{
	for (size_t k = 0; t->paths && k < t->nfiles; k++)
		free(t->paths[k]);
	free(t->paths);
}

void rs_symdwarf_free(struct rs_symdwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nunits; i++) {
		scopes_free(d->units[i].scopes);
		filetab_free(&d->units[i].lines);
		filetab_free(&d->units[i].decls);
		free(d->units[i].split_missing);
	}
	free(d->units);
	free(d->ur);
	dwarf_end(d->dw);
	free(d);
}

/* The unit whose ranges hold @addr; units may overlap, so look a few back. */
static struct unit *unit_of(struct rs_symdwarf *d, uint64_t addr)
{
	size_t lo = 0, len = d->nur;

	if (!len || addr < d->ur[0].lo)
		return NULL;
	while (len > 1) {
		size_t half = len / 2;

		lo = d->ur[lo + half].lo <= addr ? lo + half : lo;
		len -= half;
	}
	for (size_t i = lo + 1, k = 0; i-- > 0 && k < 8; k++) {
		if (addr >= d->ur[i].lo && addr < d->ur[i].hi)
			return &d->units[d->ur[i].unit];
	}
	return NULL;
}

/*
 * File @idx of the file table of @die as a path: relative names are joined
 * to the unit's compilation directory, as addr2line and llvm-symbolizer
 * print them.  Joined once per file and kept in @t.
 */
static const char *unit_file(struct filetab *t, Dwarf_Die *die, size_t idx)
{
	const char *name;
	char *p;

	if (!t->read) {
		t->read = true;
		if (dwarf_getsrcfiles(die, &t->files, &t->nfiles) != 0) {
			t->files = NULL;
			t->nfiles = 0;
		}
		if (t->nfiles)
			t->paths = calloc(t->nfiles, sizeof(*t->paths));
		if (!t->paths)
			t->nfiles = 0;
		/* integrated: a split unit takes it from its skeleton */
		t->comp_dir = attr_string(die, DW_AT_comp_dir);
	}
	if (idx >= t->nfiles)
		return NULL;
	if (t->paths[idx])
		return t->paths[idx];
	name = dwarf_filesrc(t->files, idx, NULL, NULL);
	if (!name)
		return NULL;
	if (name[0] == '/' || !t->comp_dir || !t->comp_dir[0])
		p = strdup(name);
	else if (asprintf(&p, "%s/%s", t->comp_dir, name) < 0)
		p = NULL;
	t->paths[idx] = p;
	return p ? p : name;
}

int rs_symdwarf_line(struct rs_symdwarf *d, uint64_t addr, struct rs_dwloc *loc)
{
	struct unit *u = unit_of(d, addr);
	Dwarf_Files *files;
	Dwarf_Line *line;
	size_t idx;
	int n = 0, col = 0;

	if (!u)
		return -ENOENT;
	line = dwarf_getsrc_die(&u->die, addr);
	if (!line)
		return -ENOENT;
	loc->file = NULL;
	if (dwarf_line_file(line, &files, &idx) == 0 && !u->lines.read)
		(void)unit_file(&u->lines, &u->die, 0);
	if (u->lines.files == files)
		loc->file = unit_file(&u->lines, &u->die, idx);
	if (!loc->file)
		loc->file = dwarf_linesrc(line, NULL, NULL);
	if (dwarf_lineno(line, &n) != 0)
		n = 0;
	if (dwarf_linecol(line, &col) != 0)
		col = 0;
	loc->line = n > 0 ? (unsigned)n : 0;
	loc->column = col > 0 ? (unsigned)col : 0;
	return loc->file || loc->line ? 0 : -ENOENT;
}

/* ---- scopes ---- */

static bool descend_into(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
		return true;
	}
	return false;
}

/*
 * The linkage name first, as addr2line and llvm-symbolizer print it: it
 * is the symbol-table spelling (mangled C++, or an asm label such as
 * glibc's __GI_ names), so it matches the names of the symbol index.
 */
static const char *die_name(Dwarf_Die *die)
{
	static const unsigned attrs[] = { DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name };
	Dwarf_Attribute a;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *name;

		if (dwarf_attr_integrate(die, attrs[i], &a) && (name = dwarf_formstring(&a)))
			return name;
	}
	return NULL;
}

static unsigned udata(Dwarf_Die *die, unsigned at)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_attr(die, at, &a) && dwarf_formudata(&a, &w) == 0 && w <= UINT32_MAX)
		return (unsigned)w;
	return 0;
}

struct builder {
	struct scopes *sc;
	size_t scap, rcap;
};

static int add_scope(struct builder *b, Dwarf_Die *die, int tag, int32_t parent, int32_t *idx)
{
	struct scopes *sc = b->sc;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	struct scope *s;
	uint32_t first = (uint32_t)sc->nr;

	for (int k = 0; k < MAX_RANGES_PER_DIE; k++) {
		off = dwarf_ranges(die, off, &base, &lo, &hi);
		if (off <= 0)
			break;
		if (hi <= lo)
			continue;
		if (sc->nr == b->rcap) {
			size_t c = b->rcap ? b->rcap * 2 : 64;
			struct piece *np = realloc(sc->ranges, c * sizeof(*np));

			if (!np)
				return -ENOMEM;
			sc->ranges = np;
			b->rcap = c;
		}
		sc->ranges[sc->nr++] = (struct piece){ lo, hi, (int32_t)sc->n };
	}
	if (sc->nr == first) {
		*idx = parent; /* no code of its own: children hang off the parent */
		return 0;
	}
	if (sc->n == b->scap) {
		size_t c = b->scap ? b->scap * 2 : 64;
		struct scope *ns = realloc(sc->s, c * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		sc->s = ns;
		b->scap = c;
	}
	s = &sc->s[sc->n];
	memset(s, 0, sizeof(*s));
	s->parent = parent;
	s->first = first;
	s->count = (uint32_t)sc->nr - first;
	s->inlined = tag == DW_TAG_inlined_subroutine;
	s->die = dwarf_dieoffset(die);
	*idx = (int32_t)sc->n++;
	return 0;
}

static int piece_cmp(const void *pa, const void *pb)
{
	const struct piece *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->scope < b->scope ? -1 : a->scope > b->scope; /* outer first */
}

static struct scopes *build_scopes(struct unit *u)
{
	struct builder b = { 0 };
	Dwarf_Die stack[MAX_DEPTH];
	int32_t owner[MAX_DEPTH];
	int depth = 0;

	b.sc = calloc(1, sizeof(*b.sc));
	if (!b.sc)
		return NULL;
	/* iterative pre-order walk: stack[depth] is the current DIE at that level */
	if (dwarf_child(&u->tree, &stack[0]) != 0)
		goto done;
	owner[0] = -1;
	for (;;) {
		Dwarf_Die *die = &stack[depth];
		int tag = dwarf_tag(die);
		int32_t me = owner[depth];

		bool code = true;

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			if (add_scope(&b, die, tag, owner[depth], &me) < 0)
				goto fail;
			code = me != owner[depth];
		} else if (tag == DW_TAG_lexical_block) {
			code = dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
		}
		/*
		 * Abstract instances and declarations have no code, so nothing
		 * inlined can sit below them: their subtrees are skipped.
		 */
		if (code && descend_into(tag) && depth + 1 < MAX_DEPTH && dwarf_haschildren(die) > 0 &&
		    dwarf_child(die, &stack[depth + 1]) == 0) {
			owner[depth + 1] = me;
			depth++;
			continue;
		}
		/* next sibling, climbing up as levels end */
		while (dwarf_siblingof(&stack[depth], &stack[depth]) != 0) {
			if (depth == 0)
				goto done;
			depth--;
		}
	}
done:
	if (b.sc->nr) {
		b.sc->sorted = malloc(b.sc->nr * sizeof(*b.sc->sorted));
		if (!b.sc->sorted)
			goto fail;
		memcpy(b.sc->sorted, b.sc->ranges, b.sc->nr * sizeof(*b.sc->sorted));
		qsort(b.sc->sorted, b.sc->nr, sizeof(*b.sc->sorted), piece_cmp);
	}
	return b.sc;
fail:
	scopes_free(b.sc);
	return NULL;
}

static bool scope_holds(const struct scopes *sc, int32_t i, uint64_t addr)
{
	const struct scope *s = &sc->s[i];

	for (uint32_t k = 0; k < s->count; k++) {
		const struct piece *p = &sc->ranges[s->first + k];

		if (addr >= p->lo && addr < p->hi)
			return true;
	}
	return false;
}

const char *rs_symdwarf_inlines_missing(struct rs_symdwarf *d, uint64_t addr)
{
	struct unit *u = unit_of(d, addr);

	return u ? u->split_missing : NULL;
}

int rs_symdwarf_inlines(struct rs_symdwarf *d, uint64_t addr, struct rs_dwinline *out, unsigned max)
{
	struct unit *u = unit_of(d, addr);
	struct scopes *sc;
	size_t lo = 0, len;
	int32_t i;
	unsigned n = 0;

	if (!u)
		return -ENOENT;
	if (!u->scopes && !u->scopes_failed) {
		u->scopes = build_scopes(u);
		u->scopes_failed = !u->scopes;
	}
	sc = u->scopes;
	if (!sc || !sc->nr || addr < sc->sorted[0].lo)
		return 0;
	len = sc->nr;
	while (len > 1) {
		size_t half = len / 2;

		lo = sc->sorted[lo + half].lo <= addr ? lo + half : lo;
		len -= half;
	}
	i = sc->sorted[lo].scope;
	while (i >= 0 && !scope_holds(sc, i, addr))
		i = sc->s[i].parent;
	for (; i >= 0 && sc->s[i].inlined && n < max; i = sc->s[i].parent) {
		struct scope *s = &sc->s[i];

		if (!s->resolved) {
			/* attributes are read only for scopes a lookup returns */
			Dwarf_Die die;

			s->resolved = true;
			if (dwarf_offdie(u->tree_dw, s->die, &die)) {
				s->name = die_name(&die);
				s->call.file = unit_file(&u->decls, &u->tree, udata(&die, DW_AT_call_file));
				s->call.line = udata(&die, DW_AT_call_line);
				s->call.column = udata(&die, DW_AT_call_column);
			}
		}
		out[n].name = s->name;
		out[n].call = s->call;
		n++;
	}
	return (int)n;
}
