/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symindex - the compact sorted address index behind every symbol lookup.
 *
 * Symbol sources (ELF symbol tables, nm text files) are parsed by elfutils
 * or by nmfile.c and pushed here with rs_symindex_add(); rs_symindex_seal()
 * then sorts, drops aliases, fills implied sizes and builds the containment
 * links.  After sealing the index is read-only and lookups are lock-free.
 */
#ifndef RS_SYMINDEX_H
#define RS_SYMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How strongly a symbol should win over an alias at the same address. */
enum rs_symrank {
	RS_SYMRANK_LOCAL = 1,
	RS_SYMRANK_WEAK = 2,
	RS_SYMRANK_GLOBAL = 3,
};

struct rs_symentry {
	uint64_t size;     /* bytes; after sealing, implied from the next symbol if unknown */
	uint32_t name;     /* offset in the string pool */
	int32_t parent;    /* nearest earlier entry whose range covers this one's start, or -1 */
	uint8_t rank;      /* (rs_symrank + 4 for a function) << 1, + 1 for an unversioned name */
	uint8_t sized;     /* size came from the source */
	uint8_t pad[6];
};

/* A symbol collapsed into the entry at its address (an alias of it). */
struct rs_symalias {
	uint64_t addr;
	uint32_t name;     /* offset in the string pool */
};

struct rs_symindex {
	uint64_t *addr;             /* sorted start addresses, parallel to ent[] */
	struct rs_symentry *ent;
	size_t n, cap;
	struct rs_symalias *alias;  /* after sealing: the collapsed aliases, for rs_symindex_find() */
	size_t nalias;
	char *pool;                 /* NUL-terminated names */
	size_t pool_len, pool_cap;
	uint64_t limit;             /* end of the last implied size; 0: unbounded */
	uint64_t stext;             /* address of _stext, the kernel's base, if has_stext */
	bool has_stext;
	bool sealed;
};

struct rs_symhit {
	const char *name;
	uint64_t start;
	uint64_t size;
	bool sized;                 /* false: size implied by the next symbol */
};

/* Whether @e was added with rank RS_SYMRANK_WEAK. */
static inline bool rs_symentry_weak(const struct rs_symentry *e)
{
	return (e->rank >> 1 & 3) == RS_SYMRANK_WEAK;
}

void rs_symindex_init(struct rs_symindex *ix);
void rs_symindex_fini(struct rs_symindex *ix);

/*
 * Add one symbol.  @size 0 means unknown.  @rank is an enum rs_symrank,
 * plus 4 for functions.  Returns 0 or -ENOMEM.
 */
int rs_symindex_add(struct rs_symindex *ix, uint64_t addr, uint64_t size, const char *name,
		    size_t name_len, unsigned rank);

/*
 * Sort and finish the index.  @limit (0: none), e.g. the end of the
 * object's text, bounds the implied sizes of unsized symbols below it.
 * Returns the number of symbols kept.
 */
size_t rs_symindex_seal(struct rs_symindex *ix, uint64_t limit);

/* The innermost sized symbol containing @addr, else the innermost unsized one: 0, or -ENOENT. */
int rs_symindex_lookup(const struct rs_symindex *ix, uint64_t addr, struct rs_symhit *hit);

/*
 * The symbols named @name, aliases included, one per call: set *@pos to
 * 0 before the first.  Each is given as the entry the index keeps at its
 * address (the name, start and size rs_symindex_lookup() gives there).
 * 0, or -ENOENT when there are no more.  Linear in the symbols: for a
 * tool that asks once, not for every frame.
 */
int rs_symindex_find(const struct rs_symindex *ix, const char *name, size_t *pos, struct rs_symhit *hit);


#endif
