// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Raw ring-buffer pages of tracefs into relstack records.
 *
 * A page (libtraceevent's kbuffer walks its events) holds events of one
 * CPU in time order.  The stacktrace trigger, given a condition, writes
 * the kernel stack as a kernel_stack event right after the event that
 * fired it, on the same CPU and task: so each event waits in its CPU's
 * slot until the next event of that CPU, and a kernel_stack event of the
 * same task joins it.  An event whose stack never came is written
 * without one (and counted); a stack without its event is counted and
 * dropped.  Pages are hostile input (the fuzz target feeds any bytes):
 * the page's length is checked before kbuffer reads it, every event and
 * field against the event's length.
 *
 * Fields: a record carries cpu, pid and the event's time stamp, then the
 * event's fixed fields as the format file describes them.  Pointers and
 * variable-length fields are left out, and an 8-byte value that looks
 * like a kernel address is written as 0 (counted as withheld): the file
 * must hold no kernel address.
 *
 * Records are written in time order per flush: the batch of every CPU's
 * pages read in one round is sorted by time stamp first.
 *
 * Relative stacks (kernel_stack_rel, the event of linux/patches) are
 * words already: each is translated by the bit layout its own fields
 * give (rs_kstack_rel_encode()), and its verdict is the kernel's.  A
 * layout, a reliable value or a size that no kernel writes stops the
 * conversion with a message naming the field (rs_kconv_error()).  The
 * module-load event of the same patches (a "module" event with index,
 * name, build_id, text_size and sections fields) gives a module its slot
 * when the table given to rs_kconv_module_table() does not have it yet.
 *
 * Standalone stacks (rs_kconv_standalone()): every stack event is a
 * record of its own, at its own time stamp, as the kernel's text shows
 * it; for data whose triggers this converter did not set up, where
 * pairing a stack with the event before it could join the wrong ones.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>
#include <traceevent/kbuffer.h>

#include "kernel/kernel.h"
#include "relstack-local.h"
#include "relstack/recorder.h"
#include "ring/recorder-local.h"

#define KFIELDS_MAX 16
#define KFIELDS_SIZE 512
#define KCPUS_MAX 1024
#define KWORDS_MAX RELSTACK_WORDS_MAX
/* Kernel addresses on x86-64: the upper half, above the small negative numbers a signed field holds. */
#define KADDR_LO 0xffff800000000000ull
#define KADDR_HI 0xfffffffffff00000ull

struct kfield {
	uint16_t src, dst, size;
	bool maybe_addr;
};

struct plan {
	int id;
	int rs_id;
	uint16_t fields_size;
	unsigned nf;
	struct kfield f[KFIELDS_MAX];
};

struct kev {
	uint64_t ts;
	int rs_id;
	uint16_t fields_size;
	uint32_t nwords;
	struct relstack_verdict v;
	uint8_t fields[KFIELDS_SIZE];
	uint64_t words[KWORDS_MAX];
};

struct korder {
	uint64_t ts;
	size_t off; /* of its kent in the arena */
};

/* A record in the batch: then fields_size bytes of fields (padded to 8), then nwords words. */
struct kent {
	uint64_t ts;
	int32_t pid;    /* the event's task (common_pid): the record's tid */
	int rs_id;
	uint16_t fields_size;
	uint32_t nwords;
	struct relstack_verdict v;
};

/* Where the fields of kernel_stack_rel lie in its events (checked against the format when found). */
struct relfmt {
	int id;
	bool refused;  /* its format is not the patches': its events stop the conversion */
	uint16_t size, reliable, module_bit, index_shift, index_bits, caller;
};

/* The module-load event's fields: index and text_size numbers, the others __data_loc. */
struct modfmt {
	int id;
	uint16_t index, text_size, name, build_id, sections;
};

struct pending {
	bool used;
	int pid;
	struct kev ev;
};

struct rs_kconv {
	struct tep_handle *tep;
	const struct rs_ktab *kt;
	struct rs_ktab *kt_mut;
	struct relstack_recorder *rec;
	struct kbuffer *kbuf;
	unsigned depth;
	struct plan *plans;
	size_t nplans, capplans;
	bool every_event;     /* no ids given: each event type gets its schema when first seen */
	int stack_id, load_id, free_id;
	int stack_size_off, stack_caller_off;
	struct relfmt rel;
	struct modfmt mod;
	struct rs_ktab *kt_rel;  /* modules of load events go here */
	bool standalone;
	int kmod_rs_id;          /* the kernel_module records' schema, once defined */
	struct rs_krel_stats krel;
	char err[320];
	unsigned char *page;  /* a copy with room after it: kbuffer may read a header past the last event */
	size_t page_cap;
	struct pending *pend; /* per CPU */
	unsigned npend;
	/*
	 * The batch: records packed end to end (a kent, its fields, its
	 * words), and their order by time stamp, sorted as 16-byte keys.
	 */
	unsigned char *arena;
	size_t arena_len, arena_cap;
	struct korder *order;
	size_t nbatch, capbatch;
	struct rs_krecord_stats st;
	uint64_t withheld, orphan_stacks, lost_stacks;
};

static int define_plan(struct rs_kconv *c, struct tep_event *ev, struct plan *p);

/* Make room for one more of @elem-byte items in *@v (*@cap of them): 0 or -ENOMEM. */
static int grow(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t nc;
	void *nv;

	if (n < *cap)
		return 0;
	nc = *cap ? 2 * *cap : first;
	nv = realloc(*v, nc * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

static struct plan *plan_of(struct rs_kconv *c, int id)
{
	struct tep_event *ev;

	for (unsigned i = 0; i < c->nplans; i++)
		if (c->plans[i].id == id)
			return &c->plans[i];
	if (!c->every_event || ((id == c->stack_id || id == c->rel.id) && !c->standalone) || id == c->load_id ||
	    id == c->free_id || !(ev = tep_find_event(c->tep, id)))
		return NULL;
	if (grow((void **)&c->plans, &c->capplans, c->nplans, sizeof(*c->plans), 16) < 0)
		return NULL;
	if (define_plan(c, ev, &c->plans[c->nplans]) < 0)
		return NULL;
	return &c->plans[c->nplans++];
}

static int define_plan(struct rs_kconv *c, struct tep_event *ev, struct plan *p)
{
	struct relstack_event_field rf[KFIELDS_MAX];
	char name[RELSTACK_EVENT_NAME_MAX + 1];
	uint16_t off = 16;
	struct tep_format_field *f;
	unsigned n = 3;

	rf[0] = (struct relstack_event_field){ "cpu", 0, 4, RELSTACK_FIELD_UNSIGNED };
	rf[1] = (struct relstack_event_field){ "pid", 4, 4, RELSTACK_FIELD_SIGNED };
	rf[2] = (struct relstack_event_field){ "ts_ns", 8, 8, RELSTACK_FIELD_UNSIGNED };
	p->id = ev->id;
	p->nf = 0;
	for (f = ev->format.fields; f && n < KFIELDS_MAX; f = f->next) {
		bool str = (f->flags & TEP_FIELD_IS_ARRAY) && f->elementsize == 1;
		enum relstack_field_type type;

		if (f->flags & (TEP_FIELD_IS_POINTER | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_RELATIVE))
			continue;
		if (str)
			type = RELSTACK_FIELD_STRING;
		else if ((f->flags & TEP_FIELD_IS_ARRAY) || (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
			continue;
		else
			type = (f->flags & TEP_FIELD_IS_SIGNED) ? RELSTACK_FIELD_SIGNED : RELSTACK_FIELD_UNSIGNED;
		if (f->offset < 0 || f->size <= 0 || f->size > 256 || off + f->size > KFIELDS_SIZE ||
		    strlen(f->name) > RELSTACK_FIELD_NAME_MAX)
			continue;
		rf[n] = (struct relstack_event_field){ f->name, off, (uint16_t)f->size, type };
		p->f[p->nf++] = (struct kfield){ (uint16_t)f->offset, off, (uint16_t)f->size, !str && f->size == 8 };
		off = (uint16_t)(off + f->size);
		n++;
	}
	p->fields_size = off;
	/* named as ftrace prints it; the system joins the name only when two systems share it */
	snprintf(name, sizeof(name), "%s", ev->name);
	p->rs_id = c->rec ? relstack_recorder__define_event(c->rec, name, rf, n, off) : 2;
	if (p->rs_id == -EEXIST) {
		snprintf(name, sizeof(name), "%s__%s", ev->system, ev->name);
		p->rs_id = relstack_recorder__define_event(c->rec, name, rf, n, off);
	}
	return p->rs_id < 0 ? p->rs_id : 0;
}

/* A field of @ev that is @size bytes (0: any) with @flags among its flags: its offset, or -1. */
static int field_at(struct tep_event *ev, const char *name, int size, unsigned long flags)
{
	struct tep_format_field *f = tep_find_field(ev, name);

	if (!f || f->offset < 0 || f->offset > 0xffff || (size && f->size != size) || (f->flags & flags) != flags)
		return -1;
	return f->offset;
}

/*
 * kernel_stack_rel and the module-load event, when the formats have them:
 * a format whose fields are not what the patches write is named in c->err
 * and its events refused.
 */
static void find_rel_events(struct rs_kconv *c)
{
	struct tep_event *ev = tep_find_event_by_name(c->tep, "ftrace", "kernel_stack_rel");
	struct tep_event **all = tep_list_events(c->tep, TEP_EVENT_SORT_ID);
	static const char *const u8s[] = { "reliable", "module_bit", "index_shift", "index_bits" };
	int off[6];

	c->rel.id = c->mod.id = -1;
	if (ev) {
		struct tep_format_field *cf = tep_find_field(ev, "caller");

		if ((off[0] = field_at(ev, "size", 4, 0)) < 0)
			snprintf(c->err, sizeof(c->err), "format of kernel_stack_rel: field size is not a 4-byte int");
		for (unsigned i = 0; i < 4; i++)
			if ((off[i + 1] = field_at(ev, u8s[i], 1, 0)) < 0 && !c->err[0])
				snprintf(c->err, sizeof(c->err), "format of kernel_stack_rel: field %s is not one byte",
					 u8s[i]);
		off[5] = cf && (cf->flags & TEP_FIELD_IS_ARRAY) && cf->elementsize == 8 && cf->offset >= 0 &&
				 cf->offset < 0xffff ? cf->offset : -1;
		if (off[5] < 0 && !c->err[0])
			snprintf(c->err, sizeof(c->err), "format of kernel_stack_rel: field caller is not an array of "
				 "8-byte words");
		c->rel = (struct relfmt){ ev->id, c->err[0] != 0, (uint16_t)off[0], (uint16_t)off[1],
					  (uint16_t)off[2], (uint16_t)off[3], (uint16_t)off[4], (uint16_t)off[5] };
	}
	for (size_t i = 0; all && all[i]; i++) {
		ev = all[i];
		if (strcmp(ev->system, "module") || !tep_find_field(ev, "sections"))
			continue;
		off[0] = field_at(ev, "index", 4, 0);
		off[1] = field_at(ev, "text_size", 4, 0);
		off[2] = field_at(ev, "name", 4, TEP_FIELD_IS_DYNAMIC);
		off[3] = field_at(ev, "build_id", 4, TEP_FIELD_IS_DYNAMIC);
		off[4] = field_at(ev, "sections", 4, TEP_FIELD_IS_DYNAMIC);
		if (off[0] < 0 || off[1] < 0 || off[2] < 0 || off[3] < 0 || off[4] < 0) {
			if (!c->err[0])
				snprintf(c->err, sizeof(c->err), "format of module:%s: expected fields index, text_size "
					 "(4 bytes) and name, build_id, sections (__data_loc)", ev->name);
			continue;
		}
		c->mod = (struct modfmt){ ev->id, (uint16_t)off[0], (uint16_t)off[1], (uint16_t)off[2],
					  (uint16_t)off[3], (uint16_t)off[4] };
	}
}

struct rs_kconv *rs_kconv_new(struct tep_handle *tep, const struct rs_ktab *kt, struct relstack_recorder *rec,
			      const int *ids, unsigned nids, unsigned stack_depth)
{
	struct rs_kconv *c = calloc(1, sizeof(*c));
	struct tep_event *se;
	struct tep_format_field *f;
	int ret = -ENOMEM;

	if (!c)
		return NULL;
	c->tep = tep;
	c->kt = kt;
	c->rec = rec;
	c->depth = stack_depth && stack_depth < KWORDS_MAX - 1 ? stack_depth : KWORDS_MAX - 1;
	c->stack_id = c->load_id = c->free_id = -1;
	c->kbuf = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	c->plans = calloc(nids ? nids : 1, sizeof(*c->plans));
	c->capplans = nids ? nids : 1;
	c->every_event = !ids;
	c->npend = KCPUS_MAX;
	c->pend = calloc(c->npend, sizeof(*c->pend));
	if (!c->kbuf || !c->plans || !c->pend)
		goto fail;
	se = tep_find_event_by_name(tep, "ftrace", "kernel_stack");
	if (se && (f = tep_find_field(se, "size")) && f->size == 4) {
		c->stack_size_off = f->offset;
		if ((f = tep_find_field(se, "caller"))) {
			c->stack_caller_off = f->offset;
			c->stack_id = se->id;
		}
	}
	c->kmod_rs_id = -1;
	find_rel_events(c);
	for (unsigned i = 0; i < nids; i++) {
		struct tep_event *ev = tep_find_event(tep, ids[i]);

		ret = -ENOENT;
		if (!ev)
			goto fail;
		ret = define_plan(c, ev, &c->plans[c->nplans]);
		if (ret < 0)
			goto fail;
		c->nplans++;
	}
	return c;
fail:
	rs_kconv_free(c);
	errno = -ret;
	return NULL;
}

void rs_kconv_free(struct rs_kconv *c)
{
	if (!c)
		return;
	if (c->kbuf)
		kbuffer_free(c->kbuf);
	free(c->plans);
	free(c->pend);
	free(c->arena);
	free(c->order);
	free(c->page);
	free(c);
}

const char *rs_kconv_error(const struct rs_kconv *c)
{
	return c->err[0] ? c->err : NULL;
}

void rs_kconv_standalone(struct rs_kconv *c)
{
	c->standalone = true;
}

void rs_kconv_module_table(struct rs_kconv *c, struct rs_ktab *kt)
{
	c->kt_rel = kt;
}

void rs_kconv_rel_stats(const struct rs_kconv *c, struct rs_krel_stats *st)
{
	*st = c->krel;
}

void rs_kconv_module_events(struct rs_kconv *c, int load_id, int free_id, struct rs_ktab *kt)
{
	c->load_id = load_id;
	c->free_id = free_id;
	c->kt_mut = kt;
}

/* Room for one more record of @size bytes in the batch; NULL when out of memory. */
static struct kent *batch_add(struct rs_kconv *c, size_t size)
{
	struct kent *e;

	if (grow((void **)&c->order, &c->capbatch, c->nbatch, sizeof(*c->order), 256) < 0)
		return NULL;
	if (c->arena_cap - c->arena_len < size) {
		size_t cap = c->arena_cap ? 2 * c->arena_cap : 1 << 16;
		unsigned char *na;

		while (cap - c->arena_len < size)
			cap *= 2;
		na = realloc(c->arena, cap);
		if (!na)
			return NULL;
		c->arena = na;
		c->arena_cap = cap;
	}
	e = (struct kent *)(c->arena + c->arena_len);
	c->order[c->nbatch++] = (struct korder){ 0, c->arena_len };
	c->arena_len += size;
	return e;
}

static inline size_t fields_room(size_t fields_size)
{
	return (fields_size + 7) & ~(size_t)7;
}

/* The CPU's waiting event goes to the batch, with whatever stack it has. */
static int release(struct rs_kconv *c, struct pending *p)
{
	size_t room = fields_room(p->ev.fields_size);
	struct kent *e;

	if (!p->used)
		return 0;
	p->used = false;
	if (!p->ev.nwords)
		c->lost_stacks++;
	e = batch_add(c, sizeof(*e) + room + p->ev.nwords * sizeof(uint64_t));
	if (!e)
		return -ENOMEM;
	/* what the event uses of its kev only: a kev is mostly room */
	*e = (struct kent){ p->ev.ts, p->pid, p->ev.rs_id, p->ev.fields_size, p->ev.nwords, p->ev.v };
	memcpy(e + 1, p->ev.fields, p->ev.fields_size);
	memcpy((unsigned char *)(e + 1) + room, p->ev.words, p->ev.nwords * sizeof(uint64_t));
	c->order[c->nbatch - 1].ts = e->ts;
	return 0;
}

static void take_fields(struct rs_kconv *c, const struct plan *p, const uint8_t *data, size_t size,
			unsigned cpu, int pid, uint64_t ts, struct kev *e)
{
	uint32_t cpu32 = cpu;

	e->ts = ts;
	e->rs_id = p->rs_id;
	e->fields_size = p->fields_size;
	e->nwords = 0;
	memset(&e->v, 0, sizeof(e->v));
	memset(e->fields, 0, p->fields_size);
	memcpy(e->fields, &cpu32, 4);
	memcpy(e->fields + 4, &pid, 4);
	memcpy(e->fields + 8, &ts, 8);
	for (unsigned i = 0; i < p->nf; i++) {
		const struct kfield *f = &p->f[i];

		if ((size_t)f->src + f->size > size)
			continue;
		memcpy(e->fields + f->dst, data + f->src, f->size);
		if (f->maybe_addr) {
			uint64_t v;

			memcpy(&v, e->fields + f->dst, 8);
			if (v >= KADDR_LO && v < KADDR_HI) {
				memset(e->fields + f->dst, 0, 8);
				c->withheld++;
			}
		}
	}
}

static void take_stack(struct rs_kconv *c, const uint8_t *data, size_t size, struct kev *e)
{
	uint64_t addrs[KWORDS_MAX];
	int32_t n;
	size_t avail, use;

	memcpy(&n, data + c->stack_size_off, 4);
	avail = size > (size_t)c->stack_caller_off ? (size - (size_t)c->stack_caller_off) / 8 : 0;
	if (n < 0)
		n = 0;
	if ((size_t)n > avail)
		n = (int32_t)avail;
	use = (size_t)n < c->depth ? (size_t)n : c->depth;
	memcpy(addrs, data + c->stack_caller_off, use * 8);
	e->nwords = (uint32_t)rs_kstack_encode(c->kt, addrs, use, (size_t)n > use, e->words, KWORDS_MAX, &e->v);
	c->st.stacks++;
	c->st.reliable += e->v.reasons == 0;
}

int rs_kfail(char *errbuf, size_t sz, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && sz) {
		va_start(ap, fmt);
		vsnprintf(errbuf, sz, fmt, ap);
		va_end(ap);
	}
	return err;
}

__attribute__((format(printf, 3, 4))) static int conv_error(struct rs_kconv *c, uint64_t ts, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(c->err, sizeof(c->err), "kernel_stack_rel event at %llu ns: %s", (unsigned long long)ts, why);
	return -EINVAL;
}

static int take_stack_rel(struct rs_kconv *c, const uint8_t *data, size_t size, uint64_t ts, struct kev *e)
{
	const struct relfmt *r = &c->rel;
	struct rs_krel_layout l;
	uint64_t kw[KWORDS_MAX];
	char why[160];
	int32_t n;
	size_t avail, use;

	if (r->refused)
		return -EINVAL; /* c->err says why */
	if (size < (size_t)r->caller || size < r->size + 4u || size <= r->reliable || size <= r->module_bit ||
	    size <= r->index_shift || size <= r->index_bits)
		return conv_error(c, ts, "%zu bytes, shorter than its fields", size);
	l = (struct rs_krel_layout){ data[r->module_bit], data[r->index_shift], data[r->index_bits] };
	if (rs_krel_layout_check(&l, 64, why, sizeof(why)) < 0)
		return conv_error(c, ts, "%s", why);
	if (data[r->reliable] > 2)
		return conv_error(c, ts, "reliable %u (expected 0, 1 or 2)", data[r->reliable]);
	memcpy(&n, data + r->size, 4);
	avail = (size - r->caller) / 8;
	if (n < 0 || (size_t)n > avail)
		return conv_error(c, ts, "size %d, but the event holds %zu words", n, avail);
	use = (size_t)n < c->depth ? (size_t)n : c->depth;
	memcpy(kw, data + r->caller, use * 8);
	e->nwords = (uint32_t)rs_kstack_rel_encode(c->kt_rel ? c->kt_rel : c->kt, &l, kw, use, data[r->reliable],
						   (size_t)n > use, e->words, KWORDS_MAX, &e->v, &c->krel);
	c->st.stacks++;
	c->st.reliable += e->v.reasons == 0;
	return 0;
}

/* A __data_loc field of @data (offset in the low 16 bits, length in the high): its bytes, or NULL. */
static const char *data_loc(const uint8_t *data, size_t size, uint16_t off, size_t *len)
{
	uint32_t v;

	if ((size_t)off + 4 > size)
		return NULL;
	memcpy(&v, data + off, 4);
	if ((v & 0xffff) + (v >> 16) > size)
		return NULL;
	*len = v >> 16;
	return (const char *)data + (v & 0xffff);
}

/* The kernel_module record of slot @slot at @ts: the module's sections for the decoder. */
static int module_record(struct rs_kconv *c, const struct rs_ktab *kt, unsigned slot, uint64_t ts)
{
	struct kmodrec {
		uint64_t ts_ns;
		uint32_t slot, index;
		uint64_t text_size;
		char name[RS_KMODNAME_MAX];
		char sections[RS_KSECTIONS_MAX];
	} f;
	static const struct relstack_event_field rf[] = {
		{ "ts_ns", offsetof(struct kmodrec, ts_ns), 8, RELSTACK_FIELD_UNSIGNED },
		{ "slot", offsetof(struct kmodrec, slot), 4, RELSTACK_FIELD_UNSIGNED },
		{ "index", offsetof(struct kmodrec, index), 4, RELSTACK_FIELD_UNSIGNED },
		{ "text_size", offsetof(struct kmodrec, text_size), 8, RELSTACK_FIELD_HEX },
		{ "name", offsetof(struct kmodrec, name), RS_KMODNAME_MAX, RELSTACK_FIELD_STRING },
		{ "sections", offsetof(struct kmodrec, sections), RS_KSECTIONS_MAX, RELSTACK_FIELD_STRING },
	};
	const struct relstack_object *o = rs_ktab_object(kt, slot);
	struct kent *e;
	int64_t index;

	if (!o || !c->rec)
		return 0;
	if (c->kmod_rs_id < 0) {
		c->kmod_rs_id = relstack_recorder__define_event(c->rec, RS_KMODULE_EVENT, rf, RS_ARRAY_SIZE(rf),
								 sizeof(f));
		if (c->kmod_rs_id < 0)
			return c->kmod_rs_id;
	}
	index = rs_ktab_index_of_slot(kt, slot);
	memset(&f, 0, sizeof(f));
	f.ts_ns = ts;
	f.slot = slot;
	f.index = (uint32_t)index;
	f.text_size = o->text_size;
	snprintf(f.name, sizeof(f.name), "%.*s", RS_KMODNAME_MAX - 1, o->path);
	snprintf(f.sections, sizeof(f.sections), "%s", rs_ktab_sections(kt, slot));
	e = batch_add(c, sizeof(*e) + fields_room(sizeof(f)));
	if (!e)
		return -ENOMEM;
	/* the kernel's own record, of no task: tid 0, as the idle task's */
	*e = (struct kent){ ts, 0, c->kmod_rs_id, sizeof(f), 0, { 0 } };
	memcpy(e + 1, &f, sizeof(f));
	c->order[c->nbatch - 1].ts = ts;
	return 0;
}

int rs_kconv_write_modules(struct rs_kconv *c, const struct rs_ktab *kt)
{
	for (unsigned s = 1; s < rs_ktab_count(kt); s++) {
		int ret = module_record(c, kt, s, 0);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* A module-load event of the patches: a module the table does not know takes a slot. */
static int take_module(struct rs_kconv *c, const uint8_t *data, size_t size, uint64_t ts)
{
	const struct modfmt *m = &c->mod;
	const char *name, *bid, *sec;
	size_t nl, bl, sl, len = 0;
	char line[1024], why[300];
	struct rs_kmodule km;
	uint32_t index, text_size;
	int slot;

	if (size < (size_t)m->index + 4 || size < (size_t)m->text_size + 4 ||
	    !(name = data_loc(data, size, m->name, &nl)) || !(bid = data_loc(data, size, m->build_id, &bl)) ||
	    !(sec = data_loc(data, size, m->sections, &sl))) {
		snprintf(c->err, sizeof(c->err), "module load event at %llu ns: a field lies beyond its %zu bytes",
			 (unsigned long long)ts, size);
		return -EINVAL;
	}
	memcpy(&index, data + m->index, 4);
	memcpy(&text_size, data + m->text_size, 4);
	/* as a line of the module table, so that one parser checks both */
	nl = strnlen(name, nl);
	sl = strnlen(sec, sl);
	len = (size_t)snprintf(line, sizeof(line), "%u %.*s ", index, (int)(nl < 100 ? nl : 100), name);
	for (size_t i = 0; i < bl && i < RELSTACK_BUILD_ID_MAX + 1 && len + 3 < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%02x", (uint8_t)bid[i]);
	snprintf(line + len, sizeof(line) - len, "%s %x live %.*s", bl ? "" : "-", text_size,
		 (int)(sl < 700 ? sl : 700), sec);
	if (rs_kmodtab_parse(line, strlen(line), &km, 1, why, sizeof(why)) != 1) {
		snprintf(c->err, sizeof(c->err), "module load event at %llu ns: %s", (unsigned long long)ts,
			 why + (strncmp(why, "line 1: ", 8) ? 0 : 8));
		return -EINVAL;
	}
	if (!c->kt_rel || rs_ktab_slot_of_index(c->kt_rel, km.index) >= 0)
		return 0;
	slot = rs_ktab_add_module(c->kt_rel, &km);
	if (slot == -ENOSPC)
		return 0; /* counted: its words are UNKNOWN */
	if (slot < 0)
		return slot;
	if (c->rec) {
		size_t isz;
		unsigned cap;
		void *img = rs_recorder_objtab_image(c->rec, &isz, &cap);

		if (img)
			rs_ktab_publish(c->kt_rel, img, cap);
	}
	return module_record(c, c->kt_rel, (unsigned)slot, ts);
}

int rs_kconv_page(struct rs_kconv *c, const void *page, size_t size, unsigned cpu)
{
	unsigned long long ts;
	uint64_t commit;
	int missed, count = 0;
	void *data;

	/* header: time stamp, then commit (bytes of events, flags in the bits above 27) */
	if (size < 16 || cpu >= c->npend)
		return -EINVAL;
	memcpy(&commit, (const char *)page + 8, 8);
	if ((commit & ((1ull << 27) - 1)) > size - 16)
		return -EINVAL;
	if (c->page_cap < size + 64) {
		free(c->page);
		c->page_cap = size + 64;
		c->page = malloc(c->page_cap);
		if (!c->page) {
			c->page_cap = 0;
			return -ENOMEM;
		}
	}
	memcpy(c->page, page, size);
	memset(c->page + size, 0, 64);
	if (kbuffer_load_subbuffer(c->kbuf, c->page) < 0)
		return -EINVAL;
	c->st.pages++;
	missed = kbuffer_missed_events(c->kbuf);
	if (missed)
		c->st.lost += missed > 0 ? (uint64_t)missed : 1;
	for (data = kbuffer_read_event(c->kbuf, &ts); data; data = kbuffer_next_event(c->kbuf, &ts)) {
		int esize = kbuffer_event_size(c->kbuf), ret;
		size_t off = (size_t)((unsigned char *)data - c->page);

		if (esize < 8 || off > 16 + (commit & ((1ull << 27) - 1)) || (size_t)esize > size - off)
			break;
		ret = rs_kconv_event(c, data, (size_t)esize, cpu, ts);
		if (ret < 0)
			return ret;
		count += ret;
	}
	return count;
}

int rs_kconv_event(struct rs_kconv *c, const void *data, size_t size, unsigned cpu, uint64_t ts)
{
	struct pending *p;
	uint16_t type;
	int32_t pid;
	struct plan *pl;

	if (size < 8 || cpu >= c->npend)
		return -EINVAL;
	p = &c->pend[cpu];
	memcpy(&type, data, 2);
	memcpy(&pid, (const char *)data + 4, 4);
	if (type == c->mod.id && c->mod.id >= 0) {
		int ret = take_module(c, data, size, ts);

		if (ret < 0)
			return ret;
	}
	if ((type == c->stack_id && c->stack_id >= 0) || (type == c->rel.id && c->rel.id >= 0)) {
		bool rel = type == c->rel.id;
		int ret = 0;

		if (c->standalone) {
			/* a record of its own: its fields, then its stack */
			if (release(c, p) < 0)
				return -ENOMEM;
			if (!(pl = plan_of(c, type))) {
				c->orphan_stacks++; /* an event type the caller did not ask for */
				return 0;
			}
			p->used = true;
			p->pid = pid;
			take_fields(c, pl, data, size, cpu, pid, ts, &p->ev);
		} else if (!p->used || p->pid != pid || p->ev.nwords ||
			   (!rel && size < (size_t)c->stack_caller_off)) {
			c->orphan_stacks++;
			return 0;
		}
		if (rel)
			ret = take_stack_rel(c, data, size, ts, &p->ev);
		else if (size >= (size_t)c->stack_caller_off)
			take_stack(c, data, size, &p->ev);
		if (ret < 0) {
			p->used = false;
			return ret;
		}
		return release(c, p) < 0 ? -ENOMEM : 1;
	}
	if ((pl = plan_of(c, type))) {
		if (release(c, p) < 0)
			return -ENOMEM;
		p->used = true;
		p->pid = pid;
		take_fields(c, pl, data, size, cpu, pid, ts, &p->ev);
		if (c->standalone && release(c, p) < 0)
			return -ENOMEM;
	} else if ((type == c->load_id || type == c->free_id) && c->kt_mut) {
		/* a module came or went: its slot, before any stack of it is relativised */
		if (rs_ktab_scan_modules(c->kt_mut) > 0 && c->rec) {
			size_t isz;
			unsigned cap;
			void *img = rs_recorder_objtab_image(c->rec, &isz, &cap);

			if (img)
				rs_ktab_publish(c->kt_mut, img, cap);
		}
	}
	return 0;
}

static int cmp_order(const void *a, const void *b)
{
	const struct korder *x = a, *y = b;

	/* equal time stamps keep the order they were read in: a CPU's ring order */
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int rs_kconv_flush(struct rs_kconv *c)
{
	int written = 0;

	if (c->nbatch > 1)
		qsort(c->order, c->nbatch, sizeof(*c->order), cmp_order);
	for (size_t i = 0; i < c->nbatch; i++) {
		const struct kent *e = (const struct kent *)(c->arena + c->order[i].off);
		const unsigned char *fields = (const unsigned char *)(e + 1);
		uint64_t words[KWORDS_MAX];
		int ret = 0;

		/* the words' copy is aligned for the writer */
		memcpy(words, fields + fields_room(e->fields_size), e->nwords * sizeof(uint64_t));
		if (c->rec)
			ret = rs_recorder_write_tid(c->rec, (uint32_t)e->pid, (unsigned)e->rs_id, words, e->nwords,
						    &e->v, fields, e->fields_size,
						    e->nwords ? 0 : RELSTACK_RECORD_NO_STACK);
		if (ret < 0)
			c->st.lost++;
		else
			written++;
	}
	c->st.events += (uint64_t)written;
	c->nbatch = 0;
	c->arena_len = 0;
	return written;
}

/* Events still waiting for a stack: written without one (the end of a recording). */
static int release_all(struct rs_kconv *c)
{
	for (unsigned i = 0; i < c->npend; i++)
		if (release(c, &c->pend[i]) < 0)
			return -ENOMEM;
	return 0;
}

void rs_kconv_stats(const struct rs_kconv *c, struct rs_krecord_stats *st)
{
	*st = c->st;
}

int rs_kconv_finish(struct rs_kconv *c)
{
	int ret = release_all(c);

	return ret < 0 ? ret : rs_kconv_flush(c);
}
