// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Rows of the CFI of the objects that are never unloaded (cfi.h).
 *
 * Owns rs_cfi_objects[], written once by the library's constructor before
 * any capture can run, read-only afterwards.  A lookup is the binary
 * search of .eh_frame_hdr's table, then the FDE's CIE and the two
 * instruction lists run up to the pc, keeping only what the walk uses:
 * the CFA rule, the return address rule and the frame pointer's rule.
 * Rules for other registers are read past: the walk recovers only these.
 *
 * Async-signal-safe: no lock, no allocation, no system call; every read
 * inside the object's segment [lo, hi), a bounded state stack; rows found
 * are kept in a lock-free cache (row_cache).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <link.h>
#include <sys/auxv.h>

#include "capture/cfi-parse.h"
#include "capture/cfi.h"
#include "capture/unwind-local.h"

struct rs_cfi_object rs_cfi_objects[RS_CFI_OBJECTS];
unsigned rs_cfi_nobjects;

/* DW_EH_PE_datarel | DW_EH_PE_sdata4: the table encoding every linker writes. */
#define RS_EH_TABLE_ENC 0x3b

/* A register rule while the instructions run; NONE: not mentioned yet. */
enum { RULE_NONE = 3, RULE_UNSUPPORTED = 4 };

struct rule {
	uint8_t kind; /* enum rs_cfi_rule, RULE_NONE or RULE_UNSUPPORTED */
	int64_t off;
};

struct state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	bool cfa_expr;
	struct rule fp, ra;
};

/* remember_state nesting; GCC and glibc's assembly use one level. */
#define STATE_DEPTH 4

struct run {
	struct state st, initial, saved[STATE_DEPTH];
	unsigned depth;
	uintptr_t loc, pc;
	const struct cie *cie;
	bool in_fde; /* restore takes the CIE's rules (only in an FDE) */
};

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

/* Move to @loc; true when the row at pc is complete (loc passed it). */
static inline bool advance(struct run *r, uintptr_t loc)
{
	r->loc = loc;
	return loc > r->pc;
}

/* Run instructions [p, end) up to pc.  Returns false for malformed CFI. */
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
			r->st.cfa_expr = false;
			break;
		case 0x0d: /* def_cfa_register */
			r->st.cfa_reg = get_uleb(&c);
			r->st.cfa_expr = false;
			break;
		case 0x0e: r->st.cfa_off = (int64_t)get_uleb(&c); break; /* def_cfa_offset */
		case 0x0f:                                               /* def_cfa_expression */
			skip(&c, get_uleb(&c));
			r->st.cfa_expr = true;
			break;
		case 0x10: case 0x16: /* expression, val_expression */
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
			r->st.cfa_expr = false;
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

static int row_compute(const struct rs_cfi_object *o, uintptr_t pc, struct rs_cfi_row *row)
{
	const unsigned char *seg_end = (const unsigned char *)o->hi, *body, *cbody;
	uint32_t lo = 0, hi = o->count;
	uintptr_t fde, cie_at, begin, range;
	uint64_t len, clen;
	struct cursor c;
	struct cie cie;
	struct run r;

	if (!hi)
		return -ENOENT;
	/* the last entry whose pc is <= @pc (the table is sorted by pc) */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (o->hdr + (intptr_t)table_word(o->table + (size_t)mid * 8) <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (o->hdr + (intptr_t)table_word(o->table + (size_t)lo * 8) > pc)
		return -ENOENT;
	fde = o->hdr + (intptr_t)table_word(o->table + (size_t)lo * 8 + 4);
	if (fde < o->lo || fde >= o->hi)
		return -ENOTSUP;
	len = entry_length((const unsigned char *)fde, seg_end, &body);
	if (!len)
		return -ENOTSUP;
	c = (struct cursor){ body, body + len, false };
	cie_at = (uintptr_t)body - (uint32_t)get_u(&c, 4);
	if (c.bad || cie_at == (uintptr_t)body || cie_at < o->lo || cie_at >= o->hi)
		return -ENOTSUP;
	clen = entry_length((const unsigned char *)cie_at, seg_end, &cbody);
	if (!clen || table_word(cbody) != 0 || !parse_cie(cbody + 4, cbody + clen, &cie))
		return -ENOTSUP;
	if (cie.signal || cie.ra_reg != RS_ARCH_DWARF_RA)
		return -ENOTSUP;
	begin = get_encoded(&c, cie.fde_enc, 0);
	range = get_encoded(&c, cie.fde_enc & 0x0f, 0);
	if (cie.has_z)
		skip(&c, get_uleb(&c));
	if (c.bad)
		return -ENOTSUP;
	if (pc - begin >= range)
		return -ENOENT;

	memset(&r, 0, sizeof(r));
	r.st.cfa_reg = UINT64_MAX;
	r.st.fp.kind = r.st.ra.kind = RULE_NONE;
	r.loc = begin;
	r.pc = pc;
	r.cie = &cie;
	if (!run_insns(&r, cie.insns, cie.insns_end))
		return -ENOTSUP;
	r.initial = r.st;
	r.in_fde = true;
	r.depth = 0;
	if (r.loc <= pc && !run_insns(&r, c.p, c.end))
		return -ENOTSUP;

	memset(row, 0, sizeof(*row));
	if (r.st.ra.kind == RS_CFI_UNDEFINED) {
		row->ra_rule = RS_CFI_UNDEFINED; /* the outermost frame: no CFA needed */
		return 0;
	}
	if (r.st.ra.kind != RS_CFI_OFFSET || r.st.cfa_expr ||
	    (r.st.cfa_reg != RS_ARCH_DWARF_SP && r.st.cfa_reg != RS_ARCH_DWARF_FP))
		return -ENOTSUP;
	if (r.st.fp.kind == RULE_UNSUPPORTED)
		return -ENOTSUP;
	row->cfa_on_fp = r.st.cfa_reg == RS_ARCH_DWARF_FP;
	row->cfa_off = r.st.cfa_off;
	row->ra_rule = RS_CFI_OFFSET;
	row->ra_off = r.st.ra.off;
	row->fp_rule = r.st.fp.kind == RULE_NONE ? RS_CFI_SAME : r.st.fp.kind;
	row->fp_off = r.st.fp.off;
	return 0;
}

/*
 * Rows already found, shared by every thread: a row of these objects never
 * changes, and finding one (the search, the CIE, the instructions up to
 * the address) costs far more than a frame-pointer frame.  Direct-mapped
 * by address; each entry is a sequence lock taken by compare-and-swap:
 *
 *   fill:  F1  seq even and CAS seq -> seq + 1, else give up (another
 *              writer, maybe the code this signal handler interrupted)
 *          F2  store pc and the packed row (relaxed atomics)
 *          F3  seq + 2 (release)
 *   read:  R1  s = seq (acquire); odd or 0: a miss
 *          R2  load pc and the packed row
 *          R3  seq == s (after an acquire fence), and pc is the address
 *
 * R3 pairs with F1 and F3: a row read while a fill ran, or across one, is
 * not used.  A miss computes the row, as without the cache.
 */
#define ROW_CACHE 512u

struct row_entry {
	_Atomic uint64_t seq;
	_Atomic uintptr_t pc;
	_Atomic uint64_t w0, w1; /* the row packed: see row_pack() */
};

static struct row_entry row_cache[ROW_CACHE];

/* w0: cfa_off, ra_off; w1: fp_off, the rules and flags, and the result */
static bool row_pack(int err, const struct rs_cfi_row *r, uint64_t *w0, uint64_t *w1)
{
	if (r->cfa_off != (int32_t)r->cfa_off || r->ra_off != (int32_t)r->ra_off || r->fp_off != (int32_t)r->fp_off)
		return false;
	*w0 = (uint32_t)(int32_t)r->cfa_off | (uint64_t)(uint32_t)(int32_t)r->ra_off << 32;
	*w1 = (uint32_t)(int32_t)r->fp_off | (uint64_t)r->cfa_on_fp << 32 | (uint64_t)(r->ra_rule & 3) << 33 |
	      (uint64_t)(r->fp_rule & 3) << 35 | (uint64_t)(uint8_t)(-err) << 40;
	return true;
}

static int row_unpack(uint64_t w0, uint64_t w1, struct rs_cfi_row *r)
{
	r->cfa_off = (int32_t)(uint32_t)w0;
	r->ra_off = (int32_t)(uint32_t)(w0 >> 32);
	r->fp_off = (int32_t)(uint32_t)w1;
	r->cfa_on_fp = (w1 >> 32) & 1;
	r->ra_rule = (w1 >> 33) & 3;
	r->fp_rule = (w1 >> 35) & 3;
	return -(int)(uint8_t)(w1 >> 40);
}

int rs_cfi_row_at(const struct rs_cfi_object *o, uintptr_t pc, struct rs_cfi_row *row)
{
	struct row_entry *e = &row_cache[(pc ^ pc >> 9) % ROW_CACHE];
	uint64_t s, w0, w1;
	uintptr_t epc;
	int err;

	/* R1: pairs with F3 */
	s = atomic_load_explicit(&e->seq, memory_order_acquire);
	if (s && !(s & 1)) {
		/* R2 */
		epc = atomic_load_explicit(&e->pc, memory_order_relaxed);
		w0 = atomic_load_explicit(&e->w0, memory_order_relaxed);
		w1 = atomic_load_explicit(&e->w1, memory_order_relaxed);
		/* R3: pairs with F1 */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->seq, memory_order_relaxed) == s && epc == pc)
			return row_unpack(w0, w1, row);
	}
	memset(row, 0, sizeof(*row));
	err = row_compute(o, pc, row);
	if (row_pack(err, row, &w0, &w1)) {
		s = atomic_load_explicit(&e->seq, memory_order_relaxed);
		/* F1 */
		if (!(s & 1) && atomic_compare_exchange_strong_explicit(&e->seq, &s, s + 1, memory_order_acquire,
									 memory_order_relaxed)) {
			atomic_thread_fence(memory_order_release);
			/* F2 */
			atomic_store_explicit(&e->pc, pc, memory_order_relaxed);
			atomic_store_explicit(&e->w0, w0, memory_order_relaxed);
			atomic_store_explicit(&e->w1, w1, memory_order_relaxed);
			/* F3: pairs with R1 */
			atomic_store_explicit(&e->seq, s + 2, memory_order_release);
		}
	}
	return err;
}

/* The object's span, and its .eh_frame_hdr search table if it has a usable one. */
static bool cfi_object_set(const struct dl_phdr_info *info, struct rs_cfi_object *o)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	memset(o, 0, sizeof(*o));
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD) {
			if (s < lo)
				lo = s;
			if (s + ph->p_memsz > hi)
				hi = s + ph->p_memsz;
		}
	}
	if (lo >= hi)
		return false;
	o->start = lo;
	o->end = hi;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t hdr = info->dlpi_addr + ph->p_vaddr, seg_lo, seg_hi;

		if (ph->p_type == PT_GNU_EH_FRAME && load_segment(info, hdr, &seg_lo, &seg_hi)) {
			rs_cfi_object_table(o, hdr, seg_lo, seg_hi);
			break;
		}
	}
	return true; /* without a table: known, and every lookup in it fails */
}

bool rs_cfi_object_table(struct rs_cfi_object *o, uintptr_t hdr, uintptr_t lo, uintptr_t hi)
{
	struct cursor c = { (const unsigned char *)hdr, (const unsigned char *)hi, false };
	uint8_t enc, count_enc, table_enc;
	uintptr_t n;

	o->lo = lo;
	o->hi = hi;
	o->count = 0;
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
	o->hdr = hdr;
	o->table = c.p;
	o->count = (uint32_t)n;
	return true;
}

struct find {
	uintptr_t crt, ldso;
	bool first;
};

static int find_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *f = data;
	struct rs_cfi_object o;
	bool want;

	(void)size;
	if (rs_cfi_nobjects == RS_CFI_OBJECTS || !cfi_object_set(info, &o))
		return 0;
	/* the main executable comes first; then the C runtime and ld.so wherever they are */
	want = f->first || (f->crt && f->crt - o.start < o.end - o.start) ||
	       (f->ldso && info->dlpi_addr == f->ldso);
	f->first = false;
	if (want)
		rs_cfi_objects[rs_cfi_nobjects++] = o;
	return 0;
}

void rs_cfi_init(void)
{
	struct find f = { (uintptr_t)dlsym(RTLD_DEFAULT, "__libc_start_main"), getauxval(AT_BASE), true };

	rs_cfi_nobjects = 0;
	dl_iterate_phdr(find_one, &f);
}
