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
 */
#include <errno.h>
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
	int rs_id;
	uint16_t fields_size;
	uint32_t nwords;
	struct relstack_verdict v;
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
	if (!c->every_event || id == c->stack_id || id == c->load_id || id == c->free_id ||
	    !(ev = tep_find_event(c->tep, id)))
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
	*e = (struct kent){ p->ev.ts, p->ev.rs_id, p->ev.fields_size, p->ev.nwords, p->ev.v };
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
	if (type == c->stack_id && c->stack_id >= 0) {
		if (size < (size_t)c->stack_caller_off || !p->used || p->pid != pid || p->ev.nwords) {
			c->orphan_stacks++;
			return 0;
		}
		take_stack(c, data, size, &p->ev);
		return release(c, p) < 0 ? -ENOMEM : 1;
	}
	if ((pl = plan_of(c, type))) {
		if (release(c, p) < 0)
			return -ENOMEM;
		p->used = true;
		p->pid = pid;
		take_fields(c, pl, data, size, cpu, pid, ts, &p->ev);
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
			ret = relstack_recorder__write(c->rec, (unsigned)e->rs_id, words, e->nwords, &e->v, fields,
						       e->fields_size, e->nwords ? 0 : RELSTACK_RECORD_NO_STACK);
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
