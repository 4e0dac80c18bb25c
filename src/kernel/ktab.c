// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel object table, and kernel stacks made relative with a verdict.
 *
 * Owned by one recorder thread: nothing here is shared, so nothing is
 * atomic.  The table only grows: a module that goes keeps its slot
 * (state unloaded, with the epoch that unloaded it), so a record made
 * before keeps naming it, as dlclose'd objects do in the user-space
 * table.  Slot 0 is the core kernel, counted from _stext, so that a
 * System.map decodes it; a module counts from its .text.
 *
 * The verdict's facts come from kallsyms, read once: the core kernel's
 * text (_stext.._etext and _sinittext.._einittext), the functions where
 * a task's kernel stack starts, and the interrupt and exception entries.
 * Each is a range from a symbol to the next symbol above it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/objtab.h"
#include "kernel/kernel.h"
#include "relstack-local.h"

/* Slots the kernel table can name: every slot of a buffer file's default object table. */
#define KTAB_SLOTS 256u

enum kclass { K_BASE = 1, K_IRQ = 2 };

struct krange {
	uint64_t start, end;
	unsigned cls_or_slot;
};

struct rs_ktab {
	char root[PATH_MAX];
	uint64_t stext, etext, sinit, einit;
	struct relstack_format fmt;
	uint64_t unknown, end;      /* marker words */
	struct relstack_object obj[KTAB_SLOTS];
	uint64_t mod_start[KTAB_SLOTS]; /* a loaded module's .text (never persisted) */
	unsigned n;
	struct krange mods[KTAB_SLOTS]; /* loaded modules' text, by start */
	unsigned nmods;
	struct krange *cls;         /* base and interrupt functions, by start */
	size_t ncls;
	uint64_t epoch, full;
	/* relative stacks: the kernel's module index of each module slot, by index */
	struct kindex { uint32_t index, slot; } byindex[KTAB_SLOTS];
	unsigned nbyindex;
	char (*sections)[RS_KSECTIONS_MAX]; /* per slot, allocated with the first module */
};

/* The epoch of every relative word (the table's first): an index names one module for the whole boot. */
#define KREL_EPOCH 1u

/* Where a task's kernel stack starts: the last frame of a whole stack. */
static const char *const base_names[] = {
	"entry_SYSCALL_64", "entry_SYSCALL_64_safe_stack", "entry_SYSCALL_64_after_hwframe",
	"entry_SYSENTER_compat", "entry_SYSENTER_compat_after_hwframe", "entry_SYSCALL_compat",
	"entry_SYSCALL_compat_safe_stack", "entry_SYSCALL_compat_after_hwframe", "entry_INT80_compat",
	"asm_int80_emulation", "ret_from_fork_asm", "common_startup_64", "secondary_startup_64",
	"secondary_startup_64_no_verify",
};

/*
 * Interrupt and exception entries: crossed, the walk went through saved
 * registers, and the interrupted function's caller can be missing; last,
 * the interrupt came from user mode and the stack is whole.
 */
static const char *const irq_prefixes[] = {
	"asm_exc_", "asm_sysvec_", "asm_common_interrupt", "asm_spurious_interrupt", "asm_fred_",
	"xen_asm_exc_", "xen_asm_sysvec_",
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_range(const void *a, const void *b)
{
	return cmp_u64(&((const struct krange *)a)->start, &((const struct krange *)b)->start);
}

static int classify(const char *name, bool has_fork_asm)
{
	for (unsigned i = 0; i < RS_ARRAY_SIZE(base_names); i++)
		if (!strcmp(name, base_names[i]))
			return K_BASE;
	/* older kernels: ret_from_fork is the assembly entry itself */
	if (!has_fork_asm && !strcmp(name, "ret_from_fork"))
		return K_BASE;
	for (unsigned i = 0; i < RS_ARRAY_SIZE(irq_prefixes); i++)
		if (!strncmp(name, irq_prefixes[i], strlen(irq_prefixes[i])))
			return K_IRQ;
	return 0;
}

static int build_classes(struct rs_ktab *kt, const struct rs_ksyms *s)
{
	uint64_t *addrs = malloc((s->n ? s->n : 1) * sizeof(*addrs));
	bool has_fork_asm = false;
	size_t cap = 0;

	if (!addrs)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		addrs[i] = s->v[i].addr;
		has_fork_asm |= !strcmp(s->v[i].name, "ret_from_fork_asm");
	}
	qsort(addrs, s->n, sizeof(*addrs), cmp_u64);
	for (size_t i = 0; i < s->n; i++) {
		int cls = classify(s->v[i].name, has_fork_asm);
		size_t lo = 0, hi = s->n;

		if (!cls)
			continue;
		/* the next address above: the function's end, as the kernel sizes it */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (addrs[mid] <= s->v[i].addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (kt->ncls == cap) {
			struct krange *nc;

			cap = cap ? 2 * cap : 64;
			nc = realloc(kt->cls, cap * sizeof(*nc));
			if (!nc) {
				free(addrs);
				return -ENOMEM;
			}
			kt->cls = nc;
		}
		kt->cls[kt->ncls++] = (struct krange){ s->v[i].addr, lo < s->n ? addrs[lo] : s->v[i].addr + 1,
						       (unsigned)cls };
	}
	free(addrs);
	qsort(kt->cls, kt->ncls, sizeof(*kt->cls), cmp_range);
	return 0;
}

/* A table of the core kernel only (slot 0, "vmlinux", base _stext), in epoch 1. */
static struct rs_ktab *ktab_alloc(const char *root, const uint8_t *bid, size_t bid_len)
{
	struct relstack_object *o;
	struct rs_ktab *kt = calloc(1, sizeof(*kt));

	if (!kt)
		return NULL;
	snprintf(kt->root, sizeof(kt->root), "%s", root);
	relstack_format_native(&kt->fmt);
	kt->unknown = relstack_word_marker(&kt->fmt, RELSTACK_MARKER_UNKNOWN);
	kt->end = relstack_word_marker(&kt->fmt, RELSTACK_MARKER_END);
	kt->epoch = 1;
	o = &kt->obj[0];
	o->state = RELSTACK_OBJECT_LOADED;
	o->base = RELSTACK_BASE_STEXT;
	o->flags = RELSTACK_OBJECT_MAIN | RELSTACK_OBJECT_KERNEL;
	strcpy(o->path, "vmlinux");
	o->build_id_len = (uint32_t)(bid_len < RELSTACK_BUILD_ID_MAX ? bid_len : RELSTACK_BUILD_ID_MAX);
	if (o->build_id_len)
		memcpy(o->build_id, bid, o->build_id_len);
	o->load_epoch = kt->epoch;
	kt->n = 1;
	return kt;
}

struct rs_ktab *rs_ktab_new(const struct rs_ksyms *syms, const uint8_t *bid, size_t bid_len, const char *root)
{
	struct rs_ktab *kt;
	int ret;

	if (!syms->stext || strlen(root) >= sizeof(kt->root)) {
		errno = EINVAL;
		return NULL;
	}
	kt = ktab_alloc(root, bid, bid_len);
	if (!kt)
		return NULL;
	kt->stext = syms->stext;
	kt->etext = syms->etext;
	kt->sinit = syms->sinittext;
	kt->einit = syms->einittext;
	ret = build_classes(kt, syms);
	if (ret < 0) {
		rs_ktab_free(kt);
		errno = -ret;
		return NULL;
	}
	kt->obj[0].text_size = (kt->einit > kt->etext ? kt->einit : kt->etext) - kt->stext;
	ret = rs_ktab_scan_modules(kt);
	if (ret < 0) {
		rs_ktab_free(kt);
		errno = -ret;
		return NULL;
	}
	return kt;
}

struct rs_ktab *rs_ktab_new_rel(const struct rs_ksyms *syms, const uint8_t *bid, size_t bid_len)
{
	struct rs_ktab *kt;

	if (syms)
		return rs_ktab_new(syms, bid, bid_len, "/nonexistent");
	kt = ktab_alloc("/nonexistent", bid, bid_len);
	/* the core's end is not in the data: every offset a main word holds (System.map's _etext bounds names) */
	if (kt)
		kt->obj[0].text_size = 1ull << kt->fmt.main_offset_bits;
	return kt;
}

int rs_ktab_slot_of_index(const struct rs_ktab *kt, uint32_t index)
{
	unsigned lo = 0, hi = kt->nbyindex;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (kt->byindex[mid].index == index)
			return (int)kt->byindex[mid].slot;
		if (kt->byindex[mid].index < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int64_t rs_ktab_index_of_slot(const struct rs_ktab *kt, unsigned slot)
{
	for (unsigned i = 0; i < kt->nbyindex; i++)
		if (kt->byindex[i].slot == slot)
			return kt->byindex[i].index;
	return -1;
}

const char *rs_ktab_sections(const struct rs_ktab *kt, unsigned slot)
{
	return kt->sections && slot < kt->n ? kt->sections[slot] : "";
}

int rs_ktab_add_module(struct rs_ktab *kt, const struct rs_kmodule *m)
{
	struct relstack_object *o;
	unsigned s, i;

	if (rs_ktab_slot_of_index(kt, m->index) >= 0)
		return -EEXIST;
	if (kt->n == KTAB_SLOTS) {
		kt->full++;
		return -ENOSPC;
	}
	if (!kt->sections && !(kt->sections = calloc(KTAB_SLOTS, sizeof(*kt->sections))))
		return -ENOMEM;
	s = kt->n++;
	o = &kt->obj[s];
	memset(o, 0, sizeof(*o));
	o->slot = s;
	o->state = RELSTACK_OBJECT_LOADED;
	o->base = RELSTACK_BASE_LOAD_BIAS;
	o->flags = RELSTACK_OBJECT_KERNEL;
	snprintf(o->path, sizeof(o->path), "%s", m->name);
	o->build_id_len = (uint32_t)(m->bid_len < RELSTACK_BUILD_ID_MAX ? m->bid_len : RELSTACK_BUILD_ID_MAX);
	memcpy(o->build_id, m->bid, o->build_id_len);
	o->text_size = m->text_size;
	o->load_epoch = KREL_EPOCH;
	if (m->gone) {
		/* after every relative word: they were all made while the index named it */
		o->state = RELSTACK_OBJECT_UNLOADED;
		o->unload_epoch = KREL_EPOCH + 1;
		if (kt->epoch < o->unload_epoch)
			kt->epoch = o->unload_epoch;
	}
	snprintf(kt->sections[s], RS_KSECTIONS_MAX, "%s", m->sections);
	for (i = kt->nbyindex; i > 0 && kt->byindex[i - 1].index > m->index; i--)
		kt->byindex[i] = kt->byindex[i - 1];
	kt->byindex[i] = (struct kindex){ m->index, s };
	kt->nbyindex++;
	return (int)s;
}

int rs_krel_layout_check(const struct rs_krel_layout *l, unsigned word_bits, char *err, size_t errsz)
{
	if (l->module_bit >= word_bits)
		snprintf(err, errsz, "module_bit %u lies beyond the %u-bit word", l->module_bit, word_bits);
	else if (!l->index_bits || l->index_bits > RS_KREL_INDEX_BITS_MAX)
		snprintf(err, errsz, "index_bits %u (expected 1..%u)", l->index_bits, RS_KREL_INDEX_BITS_MAX);
	else if (!l->index_shift)
		snprintf(err, errsz, "index_shift 0 leaves no bit for a module's offset");
	else if (l->index_shift + l->index_bits > l->module_bit)
		snprintf(err, errsz, "index_shift %u + index_bits %u reach module_bit %u", l->index_shift,
			 l->index_bits, l->module_bit);
	else
		return 0;
	return -EINVAL;
}

size_t rs_kstack_rel_encode(const struct rs_ktab *kt, const struct rs_krel_layout *l, const uint64_t *kw, size_t n,
			    unsigned reliable, bool truncated, uint64_t *words, size_t cap, struct relstack_verdict *v,
			    struct rs_krel_stats *st)
{
	/* the caller checked @l: every shift below is within the word */
	const uint64_t k_end = ~0ull, k_no_text = ~0ull - 1;
	const uint64_t index_mask = (1ull << l->index_bits) - 1, off_mask = (1ull << l->index_shift) - 1;
	const uint64_t main_max = 1ull << kt->fmt.main_offset_bits, mod_max = 1ull << kt->fmt.offset_bits;
	uint32_t reasons = 0;
	bool end = false;
	size_t i, out = 0;

	cap--; /* room for END */
	for (i = 0; i < n && out < cap; i++) {
		uint64_t w = kw[i], off;
		int slot;

		if (w == k_end) {
			end = true;
			i++;
			break;
		}
		if (w >> l->module_bit == 0) {
			if (w < main_max && w < kt->obj[0].text_size) {
				words[out++] = relstack_word_encode(&kt->fmt, 0, w);
				continue;
			}
			st->beyond_text++;
		} else if (w >> l->module_bit != 1 || (w >> l->index_shift & index_mask) == index_mask ||
			   (w & ~(1ull << l->module_bit)) >> (l->index_shift + l->index_bits)) {
			/* a marker (NO_TEXT, or one this decoder does not know), or bits no layout field explains */
			st->no_text += w == k_no_text || (w >> l->index_shift & index_mask) == index_mask;
		} else if ((slot = rs_ktab_slot_of_index(kt, (uint32_t)(w >> l->index_shift & index_mask))) < 0) {
			st->unknown_index++;
		} else if ((off = w & off_mask) < kt->obj[slot].text_size && off < mod_max) {
			words[out++] = relstack_word_encode(&kt->fmt, (uint32_t)slot, off);
			continue;
		} else {
			st->beyond_text++;
		}
		words[out++] = kt->unknown;
		reasons |= RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
	}
	if (!end && i < n)
		truncated = true;
	if (reliable == 0)
		reasons |= RELSTACK_UNRELIABLE_UNCHECKED;
	else if (reliable != 1)
		reasons |= RELSTACK_UNRELIABLE_KERNEL_REFUSED;
	else if (end && i < n)
		reasons |= RELSTACK_UNRELIABLE_END_UNPROVEN; /* words after END: not the stack the kernel proved */
	else if (!end && !truncated)
		reasons |= RELSTACK_UNRELIABLE_END_UNPROVEN;
	if (truncated)
		reasons |= RELSTACK_UNRELIABLE_TRUNCATED;
	v->reasons = reasons;
	v->frames = (uint32_t)out;
	v->epoch = KREL_EPOCH;
	if (!reasons)
		words[out++] = kt->end;
	return out;
}

void rs_ktab_free(struct rs_ktab *kt)
{
	if (!kt)
		return;
	free(kt->sections);
	free(kt->cls);
	free(kt);
}

struct kmod {
	char name[64];
	uint64_t start, end;
	uint8_t bid[RELSTACK_BUILD_ID_MAX];
	size_t bid_len;
};

/*
 * The module's text: from /sys/module/NAME/sections/.text to the next
 * section above it, bounded by the module's size in /proc/modules (its
 * core may be several allocations, .text first).
 */
static bool module_text(const struct rs_ktab *kt, const char *name, uint64_t base, uint64_t size, struct kmod *m)
{
	char path[PATH_MAX + 128], buf[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/sys/module/%s/sections/.text", kt->root, name);
	if (!rs_read_small(path, buf, sizeof(buf)))
		return false;
	m->start = strtoull(buf, NULL, 16);
	if (!m->start)
		return false; /* addresses hidden (kptr_restrict) */
	m->end = base <= m->start && m->start - base < size ? base + size : m->start + size;
	snprintf(path, sizeof(path), "%s/sys/module/%s/sections", kt->root, name);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char sec[PATH_MAX + 400];
		uint64_t a;

		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".text")))
			continue;
		snprintf(sec, sizeof(sec), "%s/%s", path, de->d_name);
		if (!rs_read_small(sec, buf, sizeof(buf)))
			continue;
		a = strtoull(buf, NULL, 16);
		if (a > m->start && a < m->end)
			m->end = a;
	}
	if (d)
		closedir(d);
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(path, sizeof(path), "%s/sys/module/%s/notes/.note.gnu.build-id", kt->root, name);
	{
		char notes[256];
		size_t len;
		int n;

		m->bid_len = 0;
		if ((len = rs_read_small(path, notes, sizeof(notes))) > 0 &&
		    (n = rs_knotes_build_id(notes, len, m->bid, sizeof(m->bid))) > 0)
			m->bid_len = (size_t)n;
	}
	return true;
}

static bool same_module(const struct rs_ktab *kt, unsigned slot, const struct kmod *m)
{
	const struct relstack_object *o = &kt->obj[slot];

	return o->state == RELSTACK_OBJECT_LOADED && !strcmp(o->path, m->name) && kt->mod_start[slot] == m->start &&
	       o->text_size == m->end - m->start && o->build_id_len == m->bid_len &&
	       !memcmp(o->build_id, m->bid, m->bid_len);
}

static void rebuild_ranges(struct rs_ktab *kt)
{
	kt->nmods = 0;
	for (unsigned s = 1; s < kt->n; s++)
		if (kt->obj[s].state == RELSTACK_OBJECT_LOADED)
			kt->mods[kt->nmods++] = (struct krange){ kt->mod_start[s], kt->mod_start[s] + kt->obj[s].text_size, s };
	qsort(kt->mods, kt->nmods, sizeof(*kt->mods), cmp_range);
}

int rs_ktab_scan_modules(struct rs_ktab *kt)
{
	char path[PATH_MAX + 32], line[512];
	bool seen[KTAB_SLOTS] = { false };
	int changed = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/modules", kt->root);
	f = fopen(path, "re");
	if (!f) {
		/* no CONFIG_MODULES: no modules, ever */
		if (errno != ENOENT)
			return -errno;
	}
	while (f && fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned long long size, base = 0;
		struct kmod m;
		unsigned s;

		if (sscanf(line, "%63s %llu %*s %*s %*s %llx", name, &size, &base) < 2)
			continue;
		if (!module_text(kt, name, base, size, &m))
			continue;
		for (s = 1; s < kt->n && !same_module(kt, s, &m); s++)
			;
		if (s < kt->n) {
			seen[s] = true;
			continue;
		}
		if (kt->n == KTAB_SLOTS) {
			kt->full++;
			continue;
		}
		s = kt->n++;
		memset(&kt->obj[s], 0, sizeof(kt->obj[s]));
		kt->obj[s].slot = s;
		kt->obj[s].state = RELSTACK_OBJECT_LOADED;
		kt->obj[s].base = RELSTACK_BASE_LOAD_BIAS;
		kt->obj[s].flags = RELSTACK_OBJECT_KERNEL;
		snprintf(kt->obj[s].path, sizeof(kt->obj[s].path), "%s", m.name);
		memcpy(kt->obj[s].build_id, m.bid, m.bid_len);
		kt->obj[s].build_id_len = (uint32_t)m.bid_len;
		kt->obj[s].text_size = m.end - m.start;
		kt->obj[s].load_epoch = ++kt->epoch;
		kt->mod_start[s] = m.start;
		seen[s] = true;
		changed++;
	}
	if (f)
		fclose(f);
	for (unsigned s = 1; s < kt->n; s++) {
		if (kt->obj[s].state != RELSTACK_OBJECT_LOADED || seen[s])
			continue;
		kt->obj[s].state = RELSTACK_OBJECT_UNLOADED;
		kt->obj[s].unload_epoch = ++kt->epoch;
		changed++;
	}
	if (changed)
		rebuild_ranges(kt);
	return changed;
}

unsigned rs_ktab_count(const struct rs_ktab *kt)
{
	return kt->n;
}

const struct relstack_object *rs_ktab_object(const struct rs_ktab *kt, unsigned slot)
{
	return slot < kt->n ? &kt->obj[slot] : NULL;
}

uint64_t rs_ktab_epoch(const struct rs_ktab *kt)
{
	return kt->epoch;
}

uint64_t rs_ktab_full(const struct rs_ktab *kt)
{
	return kt->full;
}

void rs_ktab_publish(const struct rs_ktab *kt, void *image, unsigned cap)
{
	static const struct relstack_object empty;

	for (unsigned s = 0; s < cap; s++) {
		struct relstack_object e = empty;

		e.slot = s;
		rs_objtab_image_put(image, s, s < kt->n ? &kt->obj[s] : &e, 0);
	}
	rs_objtab_image_put_head(image, cap, 0, kt->epoch, kt->full);
}

/* The range of @v holding @a, or NULL. */
static const struct krange *find_range(const struct krange *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && a < v[lo - 1].end ? &v[lo - 1] : NULL;
}

static inline bool in_core_text(const struct rs_ktab *kt, uint64_t a)
{
	return (a >= kt->stext && a < kt->etext) || (a >= kt->sinit && a < kt->einit);
}

size_t rs_kstack_encode(const struct rs_ktab *kt, const uint64_t *addrs, size_t n, bool truncated, uint64_t *words,
			size_t cap, struct relstack_verdict *v)
{
	uint32_t reasons = 0;
	size_t out = 0;
	int last_cls = 0;

	if (cap)
		cap--; /* room for END */
	for (size_t i = 0; i < n && out < cap; i++) {
		uint64_t a = addrs[i];
		const struct krange *r;

		if (a == UINT64_MAX)
			break;
		last_cls = 0;
		if (in_core_text(kt, a)) {
			words[out++] = relstack_word_encode(&kt->fmt, 0, a - kt->stext);
			r = find_range(kt->cls, kt->ncls, a);
			last_cls = r ? (int)r->cls_or_slot : 0;
			if (last_cls == K_IRQ)
				reasons |= RELSTACK_UNRELIABLE_INTERRUPT_FRAME;
		} else if ((r = find_range(kt->mods, kt->nmods, a))) {
			words[out++] = relstack_word_encode(&kt->fmt, r->cls_or_slot, a - r->start);
		} else {
			words[out++] = kt->unknown;
			reasons |= RELSTACK_UNRELIABLE_UNKNOWN_TEXT;
		}
	}
	if (out < n && out == cap && addrs[out] != UINT64_MAX)
		truncated = true;
	/* an interrupt entry that ends the stack was taken from user mode: nothing is missing */
	if (last_cls == K_IRQ && !truncated) {
		bool crossed_other = false;

		for (size_t i = 0; i + 1 < out; i++) {
			const struct krange *r = in_core_text(kt, addrs[i]) ? find_range(kt->cls, kt->ncls, addrs[i]) : NULL;

			crossed_other |= r && r->cls_or_slot == K_IRQ;
		}
		if (!crossed_other)
			reasons &= ~RELSTACK_UNRELIABLE_INTERRUPT_FRAME;
	}
	if (truncated)
		reasons |= RELSTACK_UNRELIABLE_TRUNCATED;
	else if (!out || !last_cls)
		reasons |= RELSTACK_UNRELIABLE_END_UNPROVEN;
	if (!reasons)
		words[out++] = kt->end;
	v->reasons = reasons;
	v->frames = (uint32_t)(out - !reasons);
	v->epoch = kt->epoch;
	return out;
}
