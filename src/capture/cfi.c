// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Compiled CFI tables (cfi.h).
 *
 * Building (scan time, one writer: the object table's): for every FDE
 * .eh_frame_hdr lists, its CIE's and its own instructions are run from
 * the FDE's first address to its last, and each location they advance to
 * closes a row holding the rules so far (struct run, emit()).  Only the
 * CFA, the return address and the frame pointer are kept; rows equal to
 * the one before are merged, and the end of an FDE not followed at once
 * by another is a gap row.  The rows are compiled into a heap buffer,
 * then copied into the table's region with relaxed stores (readers may
 * still be reading a region given back and reused: see cfi.h).
 *
 * Looking up (the capture path): a binary search of the code offsets,
 * relaxed loads only, every index below the region's capacity.  No lock,
 * no allocation, no system call.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <link.h>
#include <sys/mman.h>

#include "capture/cfi-local.h"
#include "capture/cfi-parse.h"
#include "capture/unwind-local.h"

/* DW_EH_PE_datarel | DW_EH_PE_sdata4: the table encoding every linker writes. */
#define RS_EH_TABLE_ENC 0x3b

/*
 * A register rule while the instructions run; NONE: not mentioned yet;
 * AT_FP: saved at the address the frame pointer holds (the expression
 * DW_OP_breg<fp> 0, which GCC writes for the frame pointer of a function
 * that realigns its stack through a DRAP).
 */
enum { RULE_NONE = 3, RULE_UNSUPPORTED = 4, RULE_AT_FP = 5 };

struct rule {
	uint8_t kind; /* enum rs_cfi_rule, RULE_NONE or RULE_UNSUPPORTED */
	int64_t off;
};

struct state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	bool cfa_deref; /* the CFA is the word at cfa_reg + cfa_off (a stack realigned through a DRAP) */
	struct rule fp, ra;
};

/* remember_state nesting; GCC and glibc's assembly use one level. */
#define STATE_DEPTH 4

struct rs_cfi_builder;

struct run {
	struct state st, initial, saved[STATE_DEPTH];
	unsigned depth;
	uintptr_t loc, end; /* end: the FDE's; no row starts at or past it */
	const struct cie *cie;
	struct rs_cfi_builder *b; /* where each row closed by an advance goes; NULL: a lookup */
	uintptr_t pc;             /* a lookup's address: the run stops once a row covers it */
	bool in_fde; /* restore takes the CIE's rules (only in an FDE) */
};

static void emit(struct rs_cfi_builder *b, uintptr_t loc, const struct state *st);

static void set_rule(struct run *r, uint64_t reg, uint8_t kind, int64_t off)
{
	struct rule *x = reg == RS_ARCH_DWARF_FP ? &r->st.fp : reg == RS_ARCH_DWARF_RA ? &r->st.ra : NULL;

	if (x) {
		x->kind = kind;
		x->off = off;
	}
}

static void restore_rule(struct run *r, uint64_t reg)
{
	struct rule none = { RULE_NONE, 0 };

	if (reg == RS_ARCH_DWARF_FP)
		r->st.fp = r->in_fde ? r->initial.fp : none;
	else if (reg == RS_ARCH_DWARF_RA)
		r->st.ra = r->in_fde ? r->initial.ra : none;
}

/* A factored offset, wrapping as hostile CFI may make it (a rule then fails the window checks). */
static inline int64_t factored(uint64_t v, int64_t factor)
{
	return (int64_t)(v * (uint64_t)factor);
}

/*
 * Move to @loc: the rules so far hold from the current location up to
 * it.  True when a lookup's row is complete (loc passed its pc).
 */
static inline bool advance(struct run *r, uintptr_t loc)
{
	if (!r->b) {
		r->loc = loc;
		return loc > r->pc;
	}
	if (loc > r->loc && r->loc < r->end)
		emit(r->b, r->loc, &r->st);
	r->loc = loc;
	return false;
}

/*
 * A CFA given by an expression: the one form kept is what GCC writes for
 * a function that realigns its stack through a DRAP (every i386 main(),
 * whose incoming stack the ABI does not align), DW_OP_breg<fp> off;
 * DW_OP_deref: the CFA is the word at fp + off.  Any other expression
 * makes the rows unsupported.
 */
static void def_cfa_expression(struct state *st, struct cursor *c)
{
	uint64_t len = get_uleb(c);
	struct cursor e = { c->p, c->p + (len < (uint64_t)(c->end - c->p) ? len : (uint64_t)(c->end - c->p)), false };
	int64_t off;

	skip(c, len);
	st->cfa_expr = true;
	st->cfa_deref = false;
	if (get_byte(&e) != 0x70 + RS_ARCH_DWARF_FP) /* DW_OP_breg<fp> */
		return;
	off = get_sleb(&e);
	if (get_byte(&e) != 0x06 || e.bad || e.p != e.end) /* DW_OP_deref, and nothing more */
		return;
	st->cfa_reg = RS_ARCH_DWARF_FP;
	st->cfa_off = off;
	st->cfa_expr = false;
	st->cfa_deref = true;
}

/* Is the expression block at @c (consumed) exactly DW_OP_breg<fp> 0? */
static bool expression_at_fp(struct cursor *c)
{
	uint64_t len = get_uleb(c);
	struct cursor e = { c->p, c->p + (len < (uint64_t)(c->end - c->p) ? len : (uint64_t)(c->end - c->p)), false };
	bool at_fp;

	skip(c, len);
	at_fp = get_byte(&e) == 0x70 + RS_ARCH_DWARF_FP && get_sleb(&e) == 0;
	return at_fp && !e.bad && e.p == e.end;
}

/* Run instructions [p, end).  Returns false for malformed CFI. */
static bool run_insns(struct run *r, const unsigned char *p, const unsigned char *end)
{
	struct cursor c = { p, end, false };
	const int64_t da = r->cie->data_align;
	const uint64_t ca = r->cie->code_align;

	while (!c.bad && c.p < c.end) {
		uint8_t op = get_byte(&c);
		uint64_t reg;
		size_t n;

		switch (op >> 6) {
		case 1: /* advance_loc */
			if (advance(r, r->loc + (op & 0x3f) * ca))
				return true;
			continue;
		case 2: /* offset */
			set_rule(r, op & 0x3f, RS_CFI_OFFSET, factored(get_uleb(&c), da));
			continue;
		case 3: /* restore */
			restore_rule(r, op & 0x3f);
			continue;
		}
		switch (op) {
		case 0x00: break; /* nop */
		case 0x01:        /* set_loc */
			n = encoded_size(r->cie->fde_enc);
			if (!n)
				return false;
			if (advance(r, get_encoded(&c, r->cie->fde_enc, 0)))
				return !c.bad;
			break;
		case 0x02: if (advance(r, r->loc + get_u(&c, 1) * ca)) return !c.bad; break;
		case 0x03: if (advance(r, r->loc + get_u(&c, 2) * ca)) return !c.bad; break;
		case 0x04: if (advance(r, r->loc + get_u(&c, 4) * ca)) return !c.bad; break;
		case 0x05: /* offset_extended */
			reg = get_uleb(&c);
			set_rule(r, reg, RS_CFI_OFFSET, factored(get_uleb(&c), da));
			break;
		case 0x06: restore_rule(r, get_uleb(&c)); break;                      /* restore_extended */
		case 0x07: set_rule(r, get_uleb(&c), RS_CFI_UNDEFINED, 0); break;      /* undefined */
		case 0x08: set_rule(r, get_uleb(&c), RS_CFI_SAME, 0); break;           /* same_value */
		case 0x09: /* register */
			reg = get_uleb(&c);
			get_uleb(&c);
			set_rule(r, reg, RULE_UNSUPPORTED, 0);
			break;
		case 0x0a: /* remember_state */
			if (r->depth == STATE_DEPTH)
				return false;
			r->saved[r->depth++] = r->st;
			break;
		case 0x0b: /* restore_state: the CFA too, as GCC's unwinder does */
			if (!r->depth)
				return false;
			r->st = r->saved[--r->depth];
			break;
		case 0x0c: /* def_cfa */
			r->st.cfa_reg = get_uleb(&c);
			r->st.cfa_off = (int64_t)get_uleb(&c);
			r->st.cfa_expr = r->st.cfa_deref = false;
			break;
		case 0x0d: /* def_cfa_register */
			r->st.cfa_reg = get_uleb(&c);
			r->st.cfa_expr = r->st.cfa_deref = false;
			break;
		case 0x0e: r->st.cfa_off = (int64_t)get_uleb(&c); break; /* def_cfa_offset */
		case 0x0f: /* def_cfa_expression */
			def_cfa_expression(&r->st, &c);
			break;
		case 0x10: /* expression */
			reg = get_uleb(&c);
			set_rule(r, reg, expression_at_fp(&c) ? RULE_AT_FP : RULE_UNSUPPORTED, 0);
			break;
		case 0x16: /* val_expression */
			reg = get_uleb(&c);
			skip(&c, get_uleb(&c));
			set_rule(r, reg, RULE_UNSUPPORTED, 0);
			break;
		case 0x11: /* offset_extended_sf */
			reg = get_uleb(&c);
			set_rule(r, reg, RS_CFI_OFFSET, factored((uint64_t)get_sleb(&c), da));
			break;
		case 0x12: /* def_cfa_sf */
			r->st.cfa_reg = get_uleb(&c);
			r->st.cfa_off = factored((uint64_t)get_sleb(&c), da);
			r->st.cfa_expr = r->st.cfa_deref = false;
			break;
		case 0x13: r->st.cfa_off = factored((uint64_t)get_sleb(&c), da); break; /* def_cfa_offset_sf */
		case 0x14: /* val_offset */
			reg = get_uleb(&c);
			get_uleb(&c);
			set_rule(r, reg, RULE_UNSUPPORTED, 0);
			break;
		case 0x15: /* val_offset_sf */
			reg = get_uleb(&c);
			get_sleb(&c);
			set_rule(r, reg, RULE_UNSUPPORTED, 0);
			break;
		case 0x2e: get_uleb(&c); break; /* GNU_args_size */
		case 0x2f:                      /* GNU_negative_offset_extended */
			reg = get_uleb(&c);
			set_rule(r, reg, RS_CFI_OFFSET, factored(0 - get_uleb(&c), da));
			break;
		default:
			return false;
		}
	}
	return !c.bad;
}

static inline int32_t table_word(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* ---- rows ---- */

/*
 * A compiled row, three 16-bit words:
 *   0: bits 0-2 the kind (enum kind), 3-4 the frame pointer's rule,
 *      5 "scaled" (the two offsets below count words, not bytes),
 *      6 "pair": the return address is one word above the frame pointer
 *        (a frame record), too far from the CFA for the byte below
 *        (aarch64 keeps its record at the bottom of the frame),
 *      8-15 the return address's offset from the CFA, in bytes (int8), 0 with "pair"
 *   1: the CFA's offset from its register (int16)
 *   2: the frame pointer's offset from the CFA (int16)
 * All zero is a gap: a region emptied reads as no rows.
 */
enum kind {
	KIND_GAP = 0, KIND_UNSUPPORTED = 1, KIND_OUTERMOST = 2, KIND_CFA_SP = 3, KIND_CFA_FP = 4, KIND_CFA_FP_DEREF = 5,
	/* the return address in its register (RS_ARCH_RA_IN_REGISTER), the offset byte 0 */
	KIND_LR_CFA_SP = 6, KIND_LR_CFA_FP = 7,
};

#define ROW_SCALED 0x20u
#define ROW_PAIR 0x40u

static const struct packed row_gap = { { KIND_GAP, 0, 0 } };
static const struct packed row_unsupported = { { KIND_UNSUPPORTED, 0, 0 } };

/* The rules of @st as a row the walk can use; -ENOTSUP if it cannot. */
static int row_of(const struct state *st, struct rs_cfi_row *row)
{
	memset(row, 0, sizeof(*row));
	if (st->ra.kind == RS_CFI_UNDEFINED) {
		row->ra_rule = RS_CFI_UNDEFINED; /* the outermost frame: no CFA needed */
		return 0;
	}
	if (st->cfa_deref) {
		/* the caller's frame pointer saved where the frame pointer points (AT_FP): implied by the kind */
		if (st->ra.kind != RS_CFI_OFFSET || st->fp.kind != RULE_AT_FP)
			return -ENOTSUP;
		row->cfa_deref = row->cfa_on_fp = true;
		row->cfa_off = st->cfa_off;
		row->ra_rule = RS_CFI_OFFSET;
		row->ra_off = st->ra.off;
		row->fp_rule = RS_CFI_UNDEFINED;
		return 0;
	}
	/* a return address still in its register (aarch64's x30 in a leaf): RS_CFI_SAME */
	if (RS_ARCH_RA_IN_REGISTER && (st->ra.kind == RULE_NONE || st->ra.kind == RS_CFI_SAME))
		row->ra_rule = RS_CFI_SAME;
	else if (st->ra.kind != RS_CFI_OFFSET)
		return -ENOTSUP;
	else
		row->ra_rule = RS_CFI_OFFSET;
	if (st->cfa_expr ||
	    (st->cfa_reg != RS_ARCH_DWARF_SP && st->cfa_reg != RS_ARCH_DWARF_FP) || st->fp.kind == RULE_UNSUPPORTED ||
	    st->fp.kind == RULE_AT_FP)
		return -ENOTSUP;
	row->cfa_on_fp = st->cfa_reg == RS_ARCH_DWARF_FP;
	row->cfa_off = st->cfa_off;
	row->ra_off = row->ra_rule == RS_CFI_OFFSET ? st->ra.off : 0;
	row->fp_rule = st->fp.kind == RULE_NONE ? RS_CFI_SAME : st->fp.kind;
	row->fp_off = st->fp.off;
	return 0;
}

static inline bool fits16(int64_t v)
{
	return v == (int16_t)v;
}

/* @row packed; unsupported where an offset does not fit the form. */
static struct packed pack(int err, const struct rs_cfi_row *row)
{
	struct packed p = row_unsupported;
	int64_t cfa = row->cfa_off, fp = row->fp_rule == RS_CFI_OFFSET ? row->fp_off : 0, ra = row->ra_off;
	unsigned scaled = 0, pair = 0;

	if (err)
		return p;
	if (row->ra_rule == RS_CFI_UNDEFINED) {
		p.w[0] = KIND_OUTERMOST;
		return p;
	}
	if (ra != (int8_t)ra) {
		if (row->fp_rule != RS_CFI_OFFSET || ra != fp + (int64_t)sizeof(uintptr_t))
			return p;
		pair = ROW_PAIR;
		ra = 0;
	}
	if (!fits16(cfa) || !fits16(fp)) {
		/* a large frame: its offsets in words, if they are whole words */
		if (cfa % (int64_t)sizeof(uintptr_t) || fp % (int64_t)sizeof(uintptr_t) || !fits16(cfa / (int64_t)sizeof(uintptr_t)) ||
		    !fits16(fp / (int64_t)sizeof(uintptr_t)))
			return p;
		cfa /= (int64_t)sizeof(uintptr_t);
		fp /= (int64_t)sizeof(uintptr_t);
		scaled = ROW_SCALED;
	}
	p.w[0] = (uint16_t)((row->cfa_deref ? KIND_CFA_FP_DEREF
			     : row->ra_rule == RS_CFI_SAME ? (row->cfa_on_fp ? KIND_LR_CFA_FP : KIND_LR_CFA_SP)
			     : row->cfa_on_fp ? KIND_CFA_FP : KIND_CFA_SP) |
			    (unsigned)row->fp_rule << 3 | scaled | pair | (unsigned)(uint8_t)(int8_t)ra << 8);
	p.w[1] = (uint16_t)(int16_t)cfa;
	p.w[2] = (uint16_t)(int16_t)fp;
	return p;
}

static int unpack(const struct packed *p, struct rs_cfi_row *row)
{
	unsigned kind = p->w[0] & 7;
	int64_t scale = 1 + (int64_t)(sizeof(uintptr_t) - 1) * !!(p->w[0] & ROW_SCALED);

	memset(row, 0, sizeof(*row));
	switch (kind) {
	case KIND_GAP:
		return -ENOENT;
	case KIND_OUTERMOST:
		row->ra_rule = RS_CFI_UNDEFINED;
		return 0;
	case KIND_CFA_FP_DEREF:
		/* filled, but not a row a walk follows: only a frame record's owner is read so (unwind.c) */
		row->cfa_deref = row->cfa_on_fp = true;
		row->ra_rule = RS_CFI_OFFSET;
		row->ra_off = (int8_t)(uint8_t)(p->w[0] >> 8);
		row->fp_rule = RS_CFI_UNDEFINED;
		row->cfa_off = (int16_t)p->w[1] * scale;
		return -ENOTSUP;
	case KIND_CFA_SP:
	case KIND_CFA_FP:
	case KIND_LR_CFA_SP:
	case KIND_LR_CFA_FP:
		row->cfa_on_fp = kind == KIND_CFA_FP || kind == KIND_LR_CFA_FP;
		row->ra_rule = kind >= KIND_LR_CFA_SP ? RS_CFI_SAME : RS_CFI_OFFSET;
		row->ra_off = (int8_t)(uint8_t)(p->w[0] >> 8);
		row->fp_rule = (p->w[0] >> 3) & 3;
		row->cfa_off = (int16_t)p->w[1] * scale;
		row->fp_off = row->fp_rule == RS_CFI_OFFSET ? (int16_t)p->w[2] * scale : 0;
		if (p->w[0] & ROW_PAIR)
			row->ra_off = row->fp_off + (int64_t)sizeof(uintptr_t);
		if (row->fp_rule > RS_CFI_UNDEFINED)
			return -ENOTSUP;
		return 0;
	default:
		return -ENOTSUP;
	}
}

/* ---- building ---- */

/* Append a row from code offset loc - bias on; rows only go forwards. */
static void add(struct rs_cfi_builder *b, uintptr_t loc, struct packed p)
{
	uint64_t off = (uint64_t)(loc - b->bias);

	if (loc < b->bias || off > UINT32_MAX || off > b->span || b->nomem)
		return; /* (off == span: the gap where the last FDE ends) */
	if (b->n && off < b->ip[b->n - 1]) {
		b->overlap = true;
		return; /* overlapping FDEs: the first one's rows stand */
	}
	if (b->n && off == b->ip[b->n - 1]) {
		b->n--; /* an FDE starting where the last one ended: its row, not the gap */
		if (b->n && memcmp(&b->row[b->n - 1], &p, sizeof(p)) == 0)
			return;
	} else if (b->n && memcmp(&b->row[b->n - 1], &p, sizeof(p)) == 0) {
		return; /* the same rules go on */
	}
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? b->cap * 2 : 1024;
		uint32_t *ip = realloc(b->ip, (size_t)cap * sizeof(*ip));
		struct packed *row;

		if (ip)
			b->ip = ip;
		row = ip ? realloc(b->row, (size_t)cap * sizeof(*row)) : NULL;
		if (!row) {
			b->nomem = true;
			return;
		}
		b->row = row;
		b->cap = cap;
	}
	b->ip[b->n] = (uint32_t)off;
	b->row[b->n++] = p;
}

static void emit(struct rs_cfi_builder *b, uintptr_t loc, const struct state *st)
{
	struct rs_cfi_row row;
	int err = row_of(st, &row);

	add(b, loc, pack(err, &row));
}

void rs_cfi_build_unsupported(struct rs_cfi_builder *b, uintptr_t loc)
{
	add(b, loc, row_unsupported);
}

void rs_cfi_build_row(struct rs_cfi_builder *b, uintptr_t loc, uintptr_t end, const struct rs_cfi_row *row)
{
	add(b, loc, row ? pack(0, row) : row_unsupported);
	add(b, end, row_gap);
}

void rs_cfi_build_rows(struct rs_cfi_builder *b, const struct cie *cie, uintptr_t begin, uintptr_t range,
		       const unsigned char *insns, const unsigned char *end)
{
	struct run r;

	if (!range)
		return;
	if (cie->signal || cie->ra_reg != RS_ARCH_DWARF_RA) {
		/* a signal trampoline's FDE: the walk knows the trampoline by its address */
		add(b, begin, row_unsupported);
		add(b, begin + range, row_gap);
		return;
	}
	memset(&r, 0, sizeof(r));
	r.st.cfa_reg = UINT64_MAX;
	r.st.fp.kind = r.st.ra.kind = RULE_NONE;
	r.loc = begin;
	r.end = begin + range;
	r.cie = cie;
	r.b = b;
	if (!run_insns(&r, cie->insns, cie->insns_end))
		goto malformed;
	r.initial = r.st;
	r.in_fde = true;
	r.depth = 0;
	if (!run_insns(&r, insns, end))
		goto malformed;
	if (r.loc < begin + range)
		emit(b, r.loc, &r.st);
	add(b, begin + range, row_gap);
	return;
malformed:
	/* the rows up to where the instructions went wrong stand (as far as they reached) */
	if (r.loc < begin + range)
		add(b, r.loc < begin ? begin : r.loc, row_unsupported);
	add(b, begin + range, row_gap);
}

/* An FDE read: what it covers, its CIE and its own instructions. */
struct fde {
	uintptr_t begin, range;
	struct cie cie;
	const unsigned char *insns, *end;
	uintptr_t cie_at;
	uint64_t fde_bytes, cie_bytes;
};

/* The FDE at @fde, every read inside [lo, hi); false if it cannot be read. */
static bool parse_fde(uintptr_t fde, uintptr_t lo, uintptr_t hi, struct fde *f)
{
	const unsigned char *seg_end = (const unsigned char *)hi, *body, *cbody;
	uint64_t len, clen;
	struct cursor c;

	len = entry_length((const unsigned char *)fde, seg_end, &body);
	if (!len)
		return false;
	c = (struct cursor){ body, body + len, false };
	f->cie_at = (uintptr_t)body - (uint32_t)get_u(&c, 4);
	if (c.bad || f->cie_at == (uintptr_t)body || f->cie_at < lo || f->cie_at >= hi)
		return false;
	clen = entry_length((const unsigned char *)f->cie_at, seg_end, &cbody);
	if (!clen || table_word(cbody) != 0 || !parse_cie(cbody + 4, cbody + clen, &f->cie))
		return false;
	f->begin = get_encoded(&c, f->cie.fde_enc, 0);
	f->range = get_encoded(&c, f->cie.fde_enc & 0x0f, 0);
	if (f->cie.has_z)
		skip(&c, get_uleb(&c));
	if (c.bad || f->begin + f->range < f->begin)
		return false;
	f->insns = c.p;
	f->end = c.end;
	f->fde_bytes = (uint64_t)(c.end - (const unsigned char *)fde);
	f->cie_bytes = (uint64_t)(cbody + clen - (const unsigned char *)f->cie_at);
	return true;
}

/* The FDE at @fde (inside [lo, hi)): its rows, then a gap where it ends. */
static void compile_fde(struct rs_cfi_builder *b, uintptr_t fde, uintptr_t lo, uintptr_t hi, uintptr_t listed_pc,
			uintptr_t *last_cie)
{
	struct fde f;

	if (!parse_fde(fde, lo, hi, &f)) {
		/* where the FDE ends is unknown: unsupported up to the next one */
		rs_cfi_build_unsupported(b, listed_pc);
		return;
	}
	b->stats.fdes++;
	b->stats.cfi_bytes += f.fde_bytes;
	if (f.cie_at != *last_cie)
		b->stats.cfi_bytes += f.cie_bytes;
	*last_cie = f.cie_at;
	rs_cfi_build_rows(b, &f.cie, f.begin, f.range, f.insns, f.end);
}

/* ---- regions ---- */

/*
 * Regions given back, emptied, for the next tables: never unmapped (see
 * "Lifetime" in cfi.h).  A region that does not fit this list is kept
 * mapped and empty, unused.
 */
#define FREE_REGIONS 64

static struct {
	pthread_mutex_t lock;
	struct {
		void *mem;
		size_t size;
	} free[FREE_REGIONS];
	unsigned nfree;
} R = { .lock = PTHREAD_MUTEX_INITIALIZER };

_Static_assert(sizeof(struct rs_cfi_table) % sizeof(uint32_t) == 0, "the block index follows the head");

/* Bytes a table of @nblocks blocks and @rows rows needs. */
static inline uint64_t table_bytes(uint64_t nblocks, uint64_t rows)
{
	return sizeof(struct rs_cfi_table) + (nblocks + 1) * sizeof(uint32_t) + rows * RS_CFI_ROW_BYTES;
}

/* A region of at least @need bytes: an emptied one that fits without wasting half of it, or a new one. */
static struct rs_cfi_table *region_get(size_t need)
{
	size_t page = 4096, size = 0;
	struct rs_cfi_table *t = NULL;
	unsigned best = FREE_REGIONS;

	need = (need + page - 1) & ~(page - 1);
	pthread_mutex_lock(&R.lock);
	for (unsigned i = 0; i < R.nfree; i++)
		if (R.free[i].size >= need && R.free[i].size / 2 <= need &&
		    (best == FREE_REGIONS || R.free[i].size < R.free[best].size))
			best = i;
	if (best != FREE_REGIONS) {
		t = R.free[best].mem;
		size = R.free[best].size;
		R.free[best] = R.free[--R.nfree];
	}
	pthread_mutex_unlock(&R.lock);
	if (!t) {
		void *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		t = m;
		size = need;
	}
	atomic_store_explicit(&t->n, 0, memory_order_relaxed);
	atomic_store_explicit(&t->bytes, size, memory_order_relaxed);
	return t;
}

void rs_cfi_table_free(struct rs_cfi_table *t)
{
	size_t size;

	if (!t)
		return;
	size = (size_t)atomic_load_explicit(&t->bytes, memory_order_relaxed);
	/* the pages read as zero from now on: a region of no bytes, no rows */
	madvise(t, size, MADV_DONTNEED);
	pthread_mutex_lock(&R.lock);
	if (R.nfree < FREE_REGIONS) {
		R.free[R.nfree].mem = t;
		R.free[R.nfree++].size = size;
	}
	pthread_mutex_unlock(&R.lock);
}

/* ---- tables ---- */

/* DW_EH_PE_datarel | DW_EH_PE_sdata4: the table encoding every linker writes. */
#define RS_EH_TABLE_ENC 0x3b

/* .eh_frame_hdr at @hdr: its search table and entry count; false if the walk cannot use it. */
static bool search_table(uintptr_t hdr, uintptr_t lo, uintptr_t hi, const unsigned char **table, uint32_t *count)
{
	struct cursor c = { (const unsigned char *)hdr, (const unsigned char *)hi, false };
	uint8_t enc, count_enc, table_enc;
	uintptr_t n;

	if (hdr < lo || hdr >= hi || get_byte(&c) != 1)
		return false;
	enc = get_byte(&c);
	count_enc = get_byte(&c);
	table_enc = get_byte(&c);
	get_encoded(&c, enc, hdr);
	if (c.bad || table_enc != RS_EH_TABLE_ENC || count_enc == 0xff || (count_enc & 0x70))
		return false;
	n = get_encoded(&c, count_enc, 0);
	if (c.bad || n > UINT32_MAX || n > (uintptr_t)(c.end - c.p) / 8)
		return false;
	*table = c.p;
	*count = (uint32_t)n;
	return true;
}

/* ---- the record map ---- */

/* Is the builder's row @i one rs_cfi_row_is_record() accepts? */
static bool built_record(const struct rs_cfi_builder *b, uint32_t i)
{
	struct rs_cfi_row row;

	/* (the kind first: most rows are on the stack pointer) */
	return (b->row[i].w[0] & 7) == KIND_CFA_FP && unpack(&b->row[i], &row) == 0 && rs_cfi_row_is_record(&row);
}

/* Set bits [lo, hi) of @map, a word at a time where it can. */
static void map_set(uint64_t *map, uint64_t lo, uint64_t hi)
{
	while (lo < hi && lo % 64) {
		map[lo / 64] |= 1ull << (lo % 64);
		lo++;
	}
	for (; lo + 64 <= hi; lo += 64)
		map[lo / 64] = ~0ull;
	for (; lo < hi; lo++)
		map[lo / 64] |= 1ull << (lo % 64);
}

/*
 * The extent of the builder's record map: the code offset its first grain
 * starts at in *base, and its bits (0: no grain is wholly under record
 * rows).  A row holds up to the next one's start; the last row's end is
 * not known, so it is left out.
 */
static uint64_t map_extent(const struct rs_cfi_builder *b, uint64_t *base)
{
	uint32_t first = UINT32_MAX, last = 0;

	*base = 0;
	if (b->overlap)
		return 0;
	for (uint32_t i = 0; i + 1 < b->n; i++) {
		if (!built_record(b, i))
			continue;
		if (first == UINT32_MAX)
			first = i;
		last = i;
	}
	if (first == UINT32_MAX)
		return 0;
	*base = b->ip[first] & ~(uint64_t)(RS_CFI_MAP_GRAIN - 1);
	return (b->ip[last + 1] - *base) >> RS_CFI_MAP_SHIFT;
}

/*
 * Bytes of a map of @bits bits, in whole words, and a spare word after
 * them: the fast walk reads a word at any byte of the map (x86-64's bt).
 */
static inline uint64_t map_bytes(uint64_t bits)
{
	return ((bits + 63) / 64 + 1) * sizeof(uint64_t);
}

/*
 * Write the builder's record map (map_extent()'s @base and @bits) at
 * @off bytes into @t: a bit for each grain wholly under record rows.
 */
static void map_write(struct rs_cfi_table *t, uint64_t off, const struct rs_cfi_builder *b, uint64_t base,
		      uint64_t bits)
{
	uint64_t *map = (uint64_t *)(void *)((unsigned char *)t + off);

	memset(map, 0, map_bytes(bits));
	for (uint32_t i = 0; bits && i + 1 < b->n; i++) {
		uint64_t lo, hi;

		if (b->ip[i + 1] <= base || !built_record(b, i))
			continue;
		/* the grains wholly inside [ip[i], ip[i + 1]) */
		lo = (b->ip[i] - base + RS_CFI_MAP_GRAIN - 1) >> RS_CFI_MAP_SHIFT;
		hi = (b->ip[i + 1] - base) >> RS_CFI_MAP_SHIFT;
		map_set(map, lo, hi < bits ? hi : bits);
	}
	atomic_store_explicit(&t->map_base, base, memory_order_relaxed);
	atomic_store_explicit(&t->map_off, off, memory_order_relaxed);
	atomic_store_explicit(&t->map_bits, bits, memory_order_relaxed);
}

const uint64_t *rs_cfi_table_record_map(const struct rs_cfi_table *t, uintptr_t *origin, uint64_t *bits)
{
	uint64_t bytes = atomic_load_explicit(&t->bytes, memory_order_relaxed);
	uint64_t off = atomic_load_explicit(&t->map_off, memory_order_relaxed);
	uint64_t nb = atomic_load_explicit(&t->map_bits, memory_order_relaxed);

	if (!nb || off < sizeof(*t) || off % sizeof(uint64_t) || off > bytes || (bytes - off) < map_bytes(nb))
		return NULL;
	*origin = atomic_load_explicit(&t->bias, memory_order_relaxed) +
		  (uintptr_t)atomic_load_explicit(&t->map_base, memory_order_relaxed);
	*bits = nb;
	return (const uint64_t *)(const void *)((const unsigned char *)t + off);
}

int rs_cfi_table_records(const struct rs_cfi_table *t)
{
	uintptr_t origin;
	uint64_t bits;
	const uint64_t *map = rs_cfi_table_record_map(t, &origin, &bits);

	if (!map)
		return atomic_load_explicit(&t->map_off, memory_order_relaxed) ? 0 : -1;
	for (uint64_t i = 0; i < (bits + 63) / 64; i++)
		if (map[i])
			return 1;
	return 0;
}

/* Round @n up to a whole word. */
static inline uint64_t word_up(uint64_t n)
{
	return (n + sizeof(uint64_t) - 1) & ~(uint64_t)(sizeof(uint64_t) - 1);
}

struct rs_cfi_table *rs_cfi_build_finish(struct rs_cfi_builder *b, uintptr_t bias)
{
	struct rs_cfi_table *t = NULL;
	_Atomic uint32_t *first;
	_Atomic uint16_t *rows;
	_Atomic uint8_t *ip;
	uint32_t base = 0, nblocks = 0;
	uint64_t map_base, bits = b->nomem ? 0 : map_extent(b, &map_base);

	if (b->n) {
		base = b->ip[0] & ~(RS_CFI_BLOCK - 1);
		nblocks = ((b->ip[b->n - 1] - base) >> RS_CFI_BLOCK_SHIFT) + 1;
	}
	if (!b->nomem)
		t = region_get(word_up(table_bytes(nblocks, b->n)) + map_bytes(bits));
	if (!t) {
		free(b->ip);
		free(b->row);
		errno = ENOMEM;
		return NULL;
	}
	first = table_first(t);
	rows = table_rows(t, nblocks);
	ip = table_ip(t, nblocks, b->n);
	/* first[k]: the first row starting in block k or later */
	for (uint32_t k = 0, i = 0; k <= nblocks; k++) {
		while (i < b->n && b->ip[i] - base < (uint64_t)k << RS_CFI_BLOCK_SHIFT)
			i++;
		atomic_store_explicit(&first[k], i, memory_order_relaxed);
	}
	for (uint32_t i = 0; i < b->n; i++) {
		atomic_store_explicit(&ip[i], (uint8_t)((b->ip[i] - base) & (RS_CFI_BLOCK - 1)), memory_order_relaxed);
		for (unsigned w = 0; w < 3; w++)
			atomic_store_explicit(&rows[(size_t)i * 3 + w], b->row[i].w[w], memory_order_relaxed);
		b->stats.unsupported += (b->row[i].w[0] & 7) == KIND_UNSUPPORTED;
	}
	b->stats.rows = b->n;
	t->stats = b->stats;
	map_write(t, word_up(table_bytes(nblocks, b->n)), b, map_base, bits);
	atomic_store_explicit(&t->bias, bias, memory_order_relaxed);
	atomic_store_explicit(&t->base, base, memory_order_relaxed);
	atomic_store_explicit(&t->nblocks, nblocks, memory_order_relaxed);
	/* the rows before their count; the index's publication orders both before any reader */
	atomic_store_explicit(&t->n, b->n, memory_order_release);
	free(b->ip);
	free(b->row);
	return t;
}

/* The rows of every FDE @table (@count entries, of the header at @hdr) lists, into @b. */
static void build_listed(struct rs_cfi_builder *b, uintptr_t hdr, uintptr_t lo, uintptr_t hi,
			 const unsigned char *table, uint32_t count)
{
	uintptr_t last_cie = 0;

	for (uint32_t i = 0; i < count && !b->nomem; i++) {
		uintptr_t pc = hdr + (intptr_t)table_word(table + (size_t)i * 8);
		uintptr_t fde = hdr + (intptr_t)table_word(table + (size_t)i * 8 + 4);

		if (fde < lo || fde >= hi)
			add(b, pc, row_unsupported);
		else
			compile_fde(b, fde, lo, hi, pc, &last_cie);
	}
}

struct rs_cfi_table *rs_cfi_table_compile(uintptr_t hdr, uintptr_t lo, uintptr_t hi, uintptr_t bias, uint64_t span)
{
	struct rs_cfi_builder b = { .bias = bias, .span = span };
	const unsigned char *table;
	uint32_t count;

	if (!search_table(hdr, lo, hi, &table, &count)) {
		errno = ENOENT;
		return NULL;
	}
	build_listed(&b, hdr, lo, hi, table, count);
	return rs_cfi_build_finish(&b, bias);
}

struct rs_cfi_table *rs_cfi_table_build(const struct dl_phdr_info *info, const char *path,
					const uint8_t *build_id, size_t build_id_len)
{
	uint64_t span = 0;

	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz > span)
			span = info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz;
	struct rs_cfi_table *t;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t hdr = info->dlpi_addr + ph->p_vaddr, lo, hi;

		if (ph->p_type == PT_GNU_EH_FRAME && ph->p_memsz >= 4 && load_segment(info, hdr, &lo, &hi) &&
		    (t = rs_cfi_table_compile(hdr, lo, hi, info->dlpi_addr, span)))
			return t;
	}
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t sec = info->dlpi_addr + ph->p_vaddr, lo, hi;

		if (ph->p_type == RS_PT_GNU_SFRAME && load_segment(info, sec, &lo, &hi) && ph->p_filesz <= hi - sec &&
		    (t = rs_cfi_table_from_sframe(sec, ph->p_filesz, info->dlpi_addr, span)))
			return t;
	}
	return rs_cfi_table_debug(path, build_id, build_id_len, info->dlpi_addr, span);
}

struct rs_cfi_table *rs_cfi_table_inplace(uintptr_t hdr, uintptr_t lo, uintptr_t hi, uintptr_t bias, bool record_map)
{
	const unsigned char *table;
	struct rs_cfi_table *t;
	uint32_t count;

	struct rs_cfi_builder b = { .bias = bias, .span = UINT32_MAX };
	uint64_t map_base = 0, bits;

	if (!search_table(hdr, lo, hi, &table, &count)) {
		errno = ENOENT;
		return NULL;
	}
	/*
	 * The rows are built once, for the record map only (the fast walk's
	 * proof of frame records, cfi.h), and dropped: lookups run the FDE.
	 */
	if (record_map)
		build_listed(&b, hdr, lo, hi, table, count);
	bits = b.nomem ? 0 : map_extent(&b, &map_base);
	t = region_get(word_up(table_bytes(0, 0)) + map_bytes(bits));
	if (!t) {
		free(b.ip);
		free(b.row);
		errno = ENOMEM;
		return NULL;
	}
	if (record_map) {
		map_write(t, word_up(table_bytes(0, 0)), &b, map_base, bits);
	} else {
		atomic_store_explicit(&t->map_bits, 0, memory_order_relaxed);
		atomic_store_explicit(&t->map_off, 0, memory_order_relaxed);
	}
	free(b.ip);
	free(b.row);
	memset(&t->stats, 0, sizeof(t->stats));
	t->stats.fdes = count;
	atomic_store_explicit(&t->bias, bias, memory_order_relaxed);
	atomic_store_explicit(&t->base, 0, memory_order_relaxed);
	atomic_store_explicit(&t->nblocks, 0, memory_order_relaxed);
	atomic_store_explicit(&t->eh_lo, lo, memory_order_relaxed);
	atomic_store_explicit(&t->eh_hi, hi, memory_order_relaxed);
	/* the header last: a reader that sees it sees its bounds (pairs with the acquire in rs_cfi_row_at()) */
	atomic_store_explicit(&t->eh_hdr, hdr, memory_order_release);
	return t;
}

/* ---- looking up ---- */

/*
 * The packed row at @pc of an in-place table: the search table's last
 * entry at or before pc, its FDE, and its instructions run up to pc.
 * Packed as a compiled row is, so that both forms give the same rows.
 */
static struct packed inplace_compute(const struct rs_cfi_table *t, uintptr_t hdr, uintptr_t pc)
{
	uintptr_t lo = atomic_load_explicit(&t->eh_lo, memory_order_relaxed);
	uintptr_t hi = atomic_load_explicit(&t->eh_hi, memory_order_relaxed);
	const unsigned char *table;
	uint32_t count, a = 0, b;
	struct rs_cfi_row r;
	struct fde f;
	struct run run;

	if (!search_table(hdr, lo, hi, &table, &count) || !count)
		return row_gap;
	b = count;
	while (b - a > 1) {
		uint32_t mid = a + (b - a) / 2;

		if (hdr + (intptr_t)table_word(table + (size_t)mid * 8) <= pc)
			a = mid;
		else
			b = mid;
	}
	if (hdr + (intptr_t)table_word(table + (size_t)a * 8) > pc)
		return row_gap;
	if (!parse_fde(hdr + (intptr_t)table_word(table + (size_t)a * 8 + 4), lo, hi, &f))
		return row_unsupported;
	if (pc - f.begin >= f.range)
		return row_gap;
	if (f.cie.signal || f.cie.ra_reg != RS_ARCH_DWARF_RA)
		return row_unsupported;
	memset(&run, 0, sizeof(run));
	run.st.cfa_reg = UINT64_MAX;
	run.st.fp.kind = run.st.ra.kind = RULE_NONE;
	run.loc = f.begin;
	run.end = f.begin + f.range;
	run.cie = &f.cie;
	run.pc = pc;
	if (!run_insns(&run, f.cie.insns, f.cie.insns_end))
		return row_unsupported;
	run.initial = run.st;
	run.in_fde = true;
	run.depth = 0;
	if (run.loc <= pc && !run_insns(&run, f.insns, f.end))
		return row_unsupported;
	return pack(row_of(&run.st, &r), &r);
}

/*
 * Rows of in-place tables already found, shared by every thread: an
 * in-place table is only ever made for an object that is never unloaded,
 * so the row at an address in it never changes, and finding one (the
 * search, the CIE, the instructions up to the address) costs far more
 * than a frame-pointer frame.  Direct-mapped by address; each entry is a
 * sequence lock taken by compare-and-swap:
 *
 *   fill:  F1  seq even and CAS seq -> seq + 1, else give up (another
 *              writer, maybe the code this signal handler interrupted)
 *          F2  store pc and the packed row (relaxed atomics)
 *          F3  seq + 2 (release)
 *   read:  R1  s = seq (acquire); odd or 0: a miss
 *          R2  load pc and the packed row
 *          R3  seq == s (after an acquire fence), and pc is the address
 *
 * R3 pairs with F1 and F3: a row read while a fill ran, or across one,
 * is not used.  A miss computes the row, as without the cache.
 */
#define ROW_CACHE 512u

static struct {
	_Atomic uint64_t seq;
	_Atomic uintptr_t pc;
	_Atomic uint64_t row; /* struct packed's three words */
} row_cache[ROW_CACHE];

static int inplace_row_at(const struct rs_cfi_table *t, uintptr_t hdr, uintptr_t pc, struct rs_cfi_row *row)
{
	unsigned i = (unsigned)((pc ^ pc >> 9) % ROW_CACHE);
	struct packed p;
	uint64_t s, w;

	/* R1: pairs with F3 */
	s = atomic_load_explicit(&row_cache[i].seq, memory_order_acquire);
	if (s && !(s & 1)) {
		/* R2 */
		uintptr_t epc = atomic_load_explicit(&row_cache[i].pc, memory_order_relaxed);

		w = atomic_load_explicit(&row_cache[i].row, memory_order_relaxed);
		/* R3: pairs with F1 */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&row_cache[i].seq, memory_order_relaxed) == s && epc == pc) {
			p = (struct packed){ { (uint16_t)w, (uint16_t)(w >> 16), (uint16_t)(w >> 32) } };
			return unpack(&p, row);
		}
	}
	p = inplace_compute(t, hdr, pc);
	w = p.w[0] | (uint64_t)p.w[1] << 16 | (uint64_t)p.w[2] << 32;
	s = atomic_load_explicit(&row_cache[i].seq, memory_order_relaxed);
	/* F1 */
	if (!(s & 1) && atomic_compare_exchange_strong_explicit(&row_cache[i].seq, &s, s + 1, memory_order_acquire,
								 memory_order_relaxed)) {
		atomic_thread_fence(memory_order_release);
		/* F2 */
		atomic_store_explicit(&row_cache[i].pc, pc, memory_order_relaxed);
		atomic_store_explicit(&row_cache[i].row, w, memory_order_relaxed);
		/* F3: pairs with R1 */
		atomic_store_explicit(&row_cache[i].seq, s + 2, memory_order_release);
	}
	return unpack(&p, row);
}

/*
 * The table's shape as one reader saw it; false where it does not fit the
 * region (emptied, or being rewritten: the seq check throws the walk
 * away), so that every index below stays inside the region.
 */
struct shape {
	uint32_t base, nblocks, n;
	const _Atomic uint32_t *first;
	const _Atomic uint16_t *rows;
	const _Atomic uint8_t *ip;
};

static inline bool shape_of(const struct rs_cfi_table *t, struct shape *sh)
{
	uint64_t bytes = atomic_load_explicit(&t->bytes, memory_order_relaxed);

	sh->base = atomic_load_explicit(&t->base, memory_order_relaxed);
	sh->nblocks = atomic_load_explicit(&t->nblocks, memory_order_relaxed);
	sh->n = atomic_load_explicit(&t->n, memory_order_relaxed);
	if (!sh->n || !sh->nblocks || table_bytes(sh->nblocks, sh->n) > bytes)
		return false;
	sh->first = table_first(t);
	sh->rows = table_rows(t, sh->nblocks);
	sh->ip = table_ip(t, sh->nblocks, sh->n);
	return true;
}

static inline int row_read(const struct shape *sh, uint32_t i, struct rs_cfi_row *row)
{
	const _Atomic uint16_t *r = &sh->rows[(size_t)i * 3];
	struct packed p;

	p.w[0] = atomic_load_explicit(&r[0], memory_order_relaxed);
	p.w[1] = atomic_load_explicit(&r[1], memory_order_relaxed);
	p.w[2] = atomic_load_explicit(&r[2], memory_order_relaxed);
	return unpack(&p, row);
}

static inline uint32_t first_of(const struct shape *sh, uint32_t k)
{
	uint32_t f = atomic_load_explicit(&sh->first[k], memory_order_relaxed);

	return f < sh->n ? f : sh->n;
}

int rs_cfi_row_at(const struct rs_cfi_table *t, uintptr_t pc, struct rs_cfi_row *row)
{
	uint64_t off = (uint64_t)(pc - atomic_load_explicit(&t->bias, memory_order_relaxed));
	/* pairs with the release in rs_cfi_table_inplace() */
	uintptr_t hdr = atomic_load_explicit(&t->eh_hdr, memory_order_acquire);
	struct shape sh;
	uint32_t k, lo, hi, in;

	if (hdr)
		return inplace_row_at(t, hdr, pc, row);

	if (!shape_of(t, &sh) || off < sh.base || off > UINT32_MAX) {
		memset(row, 0, sizeof(*row));
		return -ENOENT;
	}
	off -= sh.base;
	k = (uint32_t)(off >> RS_CFI_BLOCK_SHIFT);
	if (k >= sh.nblocks)
		return row_read(&sh, sh.n - 1, row); /* past the last row's start */
	/* the rows starting in block k: [lo, hi); the last one starting at or before off */
	lo = first_of(&sh, k);
	hi = first_of(&sh, k + 1);
	in = (uint32_t)(off & (RS_CFI_BLOCK - 1));
	if (lo >= hi || atomic_load_explicit(&sh.ip[lo], memory_order_relaxed) > in) {
		/* none yet in this block: the row in effect is the one before */
		if (!lo) {
			memset(row, 0, sizeof(*row));
			return -ENOENT;
		}
		return row_read(&sh, lo - 1, row);
	}
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (atomic_load_explicit(&sh.ip[mid], memory_order_relaxed) <= in)
			lo = mid;
		else
			hi = mid;
	}
	return row_read(&sh, lo, row);
}

int rs_cfi_table_row(const struct rs_cfi_table *t, uint32_t i, uintptr_t *start, struct rs_cfi_row *row)
{
	struct shape sh;
	uint32_t k = 0;

	if (!shape_of(t, &sh) || i >= sh.n) {
		memset(row, 0, sizeof(*row));
		return -ERANGE;
	}
	/* the block holding row i: the last k with first[k] <= i */
	for (uint32_t lo = 0, hi = sh.nblocks; hi - lo > 1;) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (first_of(&sh, mid) <= i)
			lo = mid;
		else
			hi = mid;
		k = lo;
	}
	*start = atomic_load_explicit(&t->bias, memory_order_relaxed) + sh.base +
		 ((uintptr_t)k << RS_CFI_BLOCK_SHIFT) + atomic_load_explicit(&sh.ip[i], memory_order_relaxed);
	return row_read(&sh, i, row);
}

uint32_t rs_cfi_table_rows(const struct rs_cfi_table *t)
{
	struct shape sh;

	return shape_of(t, &sh) ? sh.n : 0;
}
