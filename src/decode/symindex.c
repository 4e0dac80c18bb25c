// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The compact sorted symbol index.
 *
 * This is the one piece of symbol handling written by hand rather than
 * taken from elfutils: libdwfl's dwfl_module_addrname() scans the symbol
 * table linearly on every call (see the peer baseline), which is what makes
 * eu-addr2line slow.  Here the symbols are sorted once and every lookup is
 * a binary search over a dense array of start addresses, with the rest of
 * the entry touched only on a hit.
 *
 * Layout after rs_symindex_seal():
 *
 *   addr[]  u64 start addresses, ascending, unique
 *   ent[]   size, name offset in pool, parent link, rank
 *   pool    the names, NUL-terminated, referenced by offset so the pool
 *           may move while it grows
 *
 * Aliases (several symbols at one address) collapse into one entry: the
 * sized one, then the function, then global over weak over local, then
 * the name without a symbol version, then the first seen; the version itself
 * is cut from every name.  The other names stay in alias[], so that a
 * function can be found by any of its names (rs_symindex_find()).  Unsized symbols (nm files without -S, some assembly)
 * extend to the next symbol.  Symbols may nest (a sized function with a
 * label inside it); parent[] links each entry to the nearest earlier one
 * whose range covers its start, so a lookup that lands past the end of the
 * inner symbol walks out to the enclosing one.  parent[i] < i always, so
 * the walk ends even on hostile input.
 *
 * An address held by several symbols is named by the innermost sized one:
 * a size is the source's word on where a symbol ends, an implied size only
 * a guess from where the next one starts.  So a sizeless label inside a
 * function (i386 libc's debug file keeps local labels such as ".L15") never
 * names an address its function holds: addr2line names the function there
 * too.  An unsized symbol is never a parent (its range ends where the next
 * entry starts), so the walk past it costs only the sized symbols
 * enclosing it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "relstack-local.h"
#include "symindex.h"

void rs_symindex_init(struct rs_symindex *ix)
{
	memset(ix, 0, sizeof(*ix));
}

void rs_symindex_fini(struct rs_symindex *ix)
{
	free(ix->addr);
	free(ix->ent);
	free(ix->alias);
	free(ix->pool);
	memset(ix, 0, sizeof(*ix));
}

int rs_symindex_add(struct rs_symindex *ix, uint64_t addr, uint64_t size, const char *name,
		    size_t name_len, unsigned rank)
{
	if (ix->sealed)
		return -EINVAL;
	if (name_len >= UINT32_MAX / 2 || ix->pool_len >= UINT32_MAX / 2)
		return -ENOMEM;
	if (ix->n == ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 1024;
		uint64_t *a = realloc(ix->addr, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		ix->addr = a;
		struct rs_symentry *e = realloc(ix->ent, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		ix->ent = e;
		ix->cap = cap;
	}
	if (ix->pool_len + name_len + 1 > ix->pool_cap) {
		size_t cap = ix->pool_cap ? ix->pool_cap : 16384;

		while (cap < ix->pool_len + name_len + 1)
			cap *= 2;
		char *p = realloc(ix->pool, cap);

		if (!p)
			return -ENOMEM;
		ix->pool = p;
		ix->pool_cap = cap;
	}
	/*
	 * A symbol version ("fopen@@GLIBC_2.2.5") is not part of the function's
	 * name: it goes, as addr2line drops it, once it has ranked the alias.
	 */
	const char *at = name_len > 1 ? memchr(name + 1, '@', name_len - 1) : NULL;
	bool versioned = at != NULL;

	if (at)
		name_len = (size_t)(at - name);
	if (name_len == 6 && !memcmp(name, "_stext", 6)) {
		ix->stext = addr;
		ix->has_stext = true;
	}
	memcpy(ix->pool + ix->pool_len, name, name_len);
	ix->pool[ix->pool_len + name_len] = '\0';

	struct rs_symentry *e = &ix->ent[ix->n];

	memset(e, 0, sizeof(*e));
	e->size = size;
	e->name = (uint32_t)ix->pool_len;
	e->parent = (int32_t)ix->n; /* insertion order until sealed: the tie-breaker */
	/* between equals, a plain name beats a versioned one ("fopen@@GLIBC_2.2.5") */
	e->rank = (uint8_t)(rank << 1 | !versioned);
	e->sized = size != 0;
	ix->addr[ix->n] = addr;
	ix->n++;
	ix->pool_len += name_len + 1;
	return 0;
}

struct sortrec {
	uint64_t addr;
	struct rs_symentry e;
};

static int sortrec_cmp(const void *pa, const void *pb)
{
	const struct sortrec *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->e.sized != b->e.sized)
		return a->e.sized ? -1 : 1;
	if (a->e.rank != b->e.rank)
		return a->e.rank > b->e.rank ? -1 : 1;
	return a->e.parent < b->e.parent ? -1 : a->e.parent > b->e.parent;
}

static inline uint64_t end_of(uint64_t addr, uint64_t size)
{
	return addr + size < addr ? UINT64_MAX : addr + size;
}

size_t rs_symindex_seal(struct rs_symindex *ix, uint64_t limit)
{
	size_t n = ix->n, m = 0;

	ix->sealed = true;
	ix->limit = limit;
	if (n == 0)
		return 0;

	struct sortrec *r = malloc(n * sizeof(*r));

	if (!r) {
		ix->n = 0;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		r[i].addr = ix->addr[i];
		r[i].e = ix->ent[i];
	}
	qsort(r, n, sizeof(*r), sortrec_cmp);

	size_t naliases = 0;

	for (size_t i = 1; i < n; i++)
		naliases += r[i - 1].addr == r[i].addr;
	ix->alias = naliases ? malloc(naliases * sizeof(*ix->alias)) : NULL;
	if (naliases && !ix->alias) {
		/* an index without its aliases would not find every name: none at all */
		free(r);
		ix->n = 0;
		return 0;
	}
	/* collapse aliases: the first of each address is the best by sortrec_cmp */
	for (size_t i = 0; i < n; i++) {
		if (m && r[m - 1].addr == r[i].addr) {
			if (r[m - 1].e.size < r[i].e.size && r[i].e.sized)
				r[m - 1].e.size = r[i].e.size;
			ix->alias[ix->nalias++] = (struct rs_symalias){ r[i].addr, r[i].e.name };
			continue;
		}
		r[m++] = r[i];
	}

	/* implied sizes, then the containment links (a stack of open ranges) */
	int32_t *stack = malloc(m * sizeof(*stack));
	size_t depth = 0;

	for (size_t i = 0; i < m; i++) {
		struct rs_symentry *e = &r[i].e;

		if (!e->sized) {
			/* to the next symbol, never across the limit (end of text) */
			uint64_t end = i + 1 < m ? r[i + 1].addr : UINT64_MAX;

			if (limit > r[i].addr && limit < end)
				end = limit;
			e->size = end - r[i].addr;
		}
		e->parent = -1;
		if (stack) {
			while (depth && end_of(r[stack[depth - 1]].addr, r[stack[depth - 1]].e.size) <= r[i].addr)
				depth--;
			if (depth)
				e->parent = stack[depth - 1];
			stack[depth++] = (int32_t)i;
		}
		ix->addr[i] = r[i].addr;
		ix->ent[i] = *e;
	}
	free(stack);
	free(r);
	ix->n = m;
	return m;
}

int rs_symindex_lookup(const struct rs_symindex *ix, uint64_t addr, struct rs_symhit *hit)
{
	const uint64_t *a = ix->addr;
	size_t lo = 0, len = ix->n;

	/* branch-free lower half search: lo ends at the last start <= addr */
	if (!len || addr < a[0])
		return -ENOENT;
	while (len > 1) {
		size_t half = len / 2;

		lo = a[lo + half] <= addr ? lo + half : lo;
		len -= half;
	}
	/* the innermost sized symbol holding addr, else the innermost unsized one */
	int32_t found = -1;

	for (int32_t i = (int32_t)lo; i >= 0; i = ix->ent[i].parent) {
		if (addr - a[i] >= ix->ent[i].size)
			continue;
		if (found < 0 || ix->ent[i].sized)
			found = i;
		if (ix->ent[i].sized)
			break;
	}
	if (found < 0)
		return -ENOENT;
	hit->name = ix->pool + ix->ent[found].name;
	hit->start = a[found];
	hit->size = ix->ent[found].size;
	hit->sized = ix->ent[found].sized;
	return 0;
}

int rs_symindex_find(const struct rs_symindex *ix, const char *name, size_t *pos, struct rs_symhit *hit)
{
	for (; *pos < ix->n + ix->nalias; (*pos)++) {
		size_t i = *pos;

		if (i < ix->n) {
			if (strcmp(ix->pool + ix->ent[i].name, name) != 0)
				continue;
			*hit = (struct rs_symhit){ ix->pool + ix->ent[i].name, ix->addr[i], ix->ent[i].size,
						   ix->ent[i].sized };
		} else {
			const struct rs_symalias *a = &ix->alias[i - ix->n];

			/* the kept entry at an alias's address starts there */
			if (strcmp(ix->pool + a->name, name) != 0 || rs_symindex_lookup(ix, a->addr, hit) < 0 ||
			    hit->start != a->addr)
				continue;
		}
		(*pos)++;
		return 0;
	}
	return -ENOENT;
}
