// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The decoder: a run's records, filtered, ordered by time, each frame
 * decoded by the file's format descriptor, checked against the run's
 * object table and named by the symbolizer.  One bad frame never costs
 * the rest of its trace.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <relstack/decode.h>
#include <relstack/relstack.h>

#include "decode/present.h"
#include "decode/symbolize.h"
#include "opts-local.h"
#include "relstack-local.h"

struct rec_copy {
	struct relstack_record rec;
	uint64_t *words;
	void *fields;
};

/* The run's objects, read once. */
struct slot {
	struct relstack_object obj;
	uint64_t load;  /* load address, if the run keeps them */
	int state;      /* 0 ok, else the error of relstack_reader__object() */
	int handle;     /* symbolizer handle, -1 none yet */
	char *layout;   /* a kernel module's section layout (its RS_KMODULE_EVENT record), or NULL */
};

/* A kernel module's layout, from its record, until the slots are read. */
struct kmod_layout {
	uint32_t slot;
	char *sections;
};

/* What one frame's names point into: valid until the next record. */
struct frame_store {
	struct relstack_decoded_inline inlined[RS_SYM_MAX_INLINED];
	char file[4096];
	char inl_file[RS_SYM_MAX_INLINED][1024];
};

struct relstack_decoder {
	struct relstack_reader *r;
	struct relstack_decode_opts o;
	struct relstack_run_info ri;
	struct rec_copy *all;
	size_t n, next;
	unsigned nslots;
	struct slot *slot;
	struct rs_symbolizer *sym;
	/* the record handed out */
	struct relstack_decoded_record out;
	struct relstack_decoded_frame *frames;
	struct frame_store *store;
	size_t capframes;
	char event[64];
	struct kmod_layout *layouts;
	size_t nlayouts;
	/* demangled names, by mangled name: owned here until the decoder is freed */
	struct rs_intern demangled;
	char **dname;
	size_t ndname, capdname;
};

/* The C++ runtime's demangler (the Itanium C++ ABI, which legacy Rust names follow). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t size, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && size) {
		va_start(ap, fmt);
		vsnprintf(err, size, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static bool wanted(const struct relstack_record *rec, const struct relstack_decode_opts *o,
		   const struct relstack_run_info *ri)
{
	if (o->n_tids) {
		bool hit = false;

		for (size_t i = 0; i < o->n_tids && !hit; i++)
			hit = rec->tid == o->tids[i];
		if (!hit)
			return false;
	}
	if (o->n_events) {
		bool hit = false;

		for (size_t i = 0; i < o->n_events && !hit; i++)
			hit = rec->event_name && strcmp(rec->event_name, o->events[i]) == 0;
		if (!hit)
			return false;
	}
	if (o->since.set) {
		uint64_t t = o->since.relative ? rec->time_ns - ri->monotonic_ns : rec->realtime_ns;

		if (rec->time_ns < ri->monotonic_ns && o->since.relative)
			return false;
		if (t < o->since.ns)
			return false;
	}
	if (o->until.set) {
		uint64_t t = o->until.relative ? rec->time_ns - ri->monotonic_ns : rec->realtime_ns;

		if (!(rec->time_ns < ri->monotonic_ns && o->until.relative) && t > o->until.ns)
			return false;
	}
	return true;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct relstack_record *x = &((const struct rec_copy *)a)->rec;
	const struct relstack_record *y = &((const struct rec_copy *)b)->rec;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->position < y->position ? -1 : x->position > y->position;
}

int rs_no_run_message(struct relstack_reader *r, enum relstack_run_which w, const char *name, int ret, char *err,
		      size_t size)
{
	char why[600] = "";
	size_t n = 0;

	for (unsigned a = 0; a < 2 && ret == -ENOENT; a++) {
		const char *e = relstack_reader__run_error(r, a);

		if (e && n < sizeof(why))
			n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%s", n ? "; " : "", e);
	}
	if (n)
		return fail(err, size, ret, "%s: no %s run, damaged: %s", name, rs_run_name(w), why);
	return fail(err, size, ret, "%s: no %s run (%s)", name, rs_run_name(w),
		    ret == -ENOENT ? "the file does not hold one" : relstack_strerror(ret));
}

/*
 * A record of RS_KMODULE_EVENT: the layout of the module in its slot.
 * Its fields are checked against the record, as any record's; a layout
 * given twice for a slot keeps the first.  0, or -ENOMEM.
 */
static int take_layout(struct relstack_decoder *d, const struct relstack_record *rec)
{
	const struct relstack_schema_field *slot = NULL, *sec = NULL;
	struct kmod_layout *more;
	uint32_t s;

	for (unsigned i = 0; i < rec->schema->nfields && i < RELSTACK_EVENT_FIELDS_MAX; i++) {
		const struct relstack_schema_field *f = &rec->schema->field[i];

		if ((size_t)f->offset + f->size > rec->fields_size)
			continue;
		if (!strcmp(f->name, "slot") && f->size == 4)
			slot = f;
		else if (!strcmp(f->name, "sections") && f->type == RELSTACK_FIELD_STRING && f->size)
			sec = f;
	}
	if (!slot || !sec)
		return 0;
	memcpy(&s, (const char *)rec->fields + slot->offset, 4);
	for (size_t i = 0; i < d->nlayouts; i++)
		if (d->layouts[i].slot == s)
			return 0;
	more = realloc(d->layouts, (d->nlayouts + 1) * sizeof(*more));
	if (!more)
		return -ENOMEM;
	d->layouts = more;
	more[d->nlayouts].slot = s;
	more[d->nlayouts].sections = strndup((const char *)rec->fields + sec->offset, sec->size);
	if (!more[d->nlayouts].sections)
		return -ENOMEM;
	d->nlayouts++;
	return 0;
}

static int load_records(struct relstack_decoder *d, char *err, size_t size)
{
	struct relstack_cursor *cur = relstack_reader__records(d->r, d->o.run);
	struct relstack_record rec;
	size_t cap = 0;
	bool oom = false;

	if (!cur)
		return fail(err, size, -errno, "%s: cannot read the %s run: %s", d->o.name, rs_run_name(d->o.run),
			    strerror(errno));
	while (relstack_cursor__next(cur, &rec) > 0) {
		struct rec_copy *c;

		/* whatever the filters: the module's frames in other records need it */
		if (rec.schema && rec.event_name && !strcmp(rec.event_name, RS_KMODULE_EVENT) &&
		    take_layout(d, &rec) < 0) {
			oom = true;
			break;
		}
		if (!wanted(&rec, &d->o, &d->ri))
			continue;
		if (d->n == cap) {
			struct rec_copy *more = realloc(d->all, (cap ? 2 * cap : 1024) * sizeof(*more));

			if (!more) {
				oom = true;
				break;
			}
			d->all = more;
			cap = cap ? 2 * cap : 1024;
		}
		c = &d->all[d->n];
		c->rec = rec;
		c->words = malloc((rec.nwords ? rec.nwords : 1) * sizeof(uint64_t));
		c->fields = malloc(rec.fields_size ? rec.fields_size : 1);
		if (!c->words || !c->fields) {
			free(c->words);
			free(c->fields);
			oom = true;
			break;
		}
		memcpy(c->words, rec.words, rec.nwords * sizeof(uint64_t));
		memcpy(c->fields, rec.fields, rec.fields_size);
		c->rec.words = c->words;
		c->rec.fields = c->fields;
		d->n++;
		if (rec.nwords > d->capframes)
			d->capframes = rec.nwords;
	}
	relstack_cursor__free(cur);
	if (oom)
		return fail(err, size, -ENOMEM, "out of memory");
	if (d->n)
		qsort(d->all, d->n, sizeof(*d->all), cmp_rec);
	d->frames = calloc(d->capframes ? d->capframes : 1, sizeof(*d->frames));
	d->store = calloc(d->capframes ? d->capframes : 1, sizeof(*d->store));
	if (!d->frames || !d->store)
		return fail(err, size, -ENOMEM, "out of memory");
	return 0;
}

/*
 * "OBJECT=FILE": a typo must not pass silently.  OBJECT must name an
 * object of the run (its recorded path or base name, as the symbolizer
 * matches it) and FILE must be readable.
 */
static int check_symbols_arg(struct relstack_decoder *d, const char *arg, char *err, size_t size)
{
	const char *eq = strchr(arg, '=');
	size_t len;
	char names[512] = "";
	size_t used = 0;

	if (!eq)
		return fail(err, size, -EINVAL, "--symbols %s: %s", arg, relstack_strerror(-EINVAL));
	len = (size_t)(eq - arg);
	if (access(eq + 1, R_OK) != 0)
		return fail(err, size, -EINVAL, "--symbols %s: cannot read %s: %s", arg, eq + 1, strerror(errno));
	for (unsigned s = 0; s < d->nslots; s++) {
		const char *path = d->slot[s].obj.path, *base = rs_basename(path);

		if (d->slot[s].state)
			continue;
		if ((strlen(path) == len && !memcmp(path, arg, len)) || (strlen(base) == len && !memcmp(base, arg, len)))
			return 0;
		if (!strstr(names, base) && used + strlen(base) + 3 < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", base);
	}
	return fail(err, size, -EINVAL, "--symbols %s: the %s run of %s has no object '%.*s' (its objects: %s)", arg,
		    rs_run_name(d->o.run), d->o.name, (int)len, arg, used ? names : "none");
}

/*
 * A recorded kernel with no map for it: this machine's
 * /boot/System.map-RELEASE, if there is one (its build-id line must match
 * the recorded one, or the frames say build-id mismatch).
 */
static void add_boot_system_map(struct relstack_decoder *d)
{
	struct utsname u;
	char path[128 + sizeof(u.release)];

	for (size_t i = 0; i < d->o.n_symbols; i++)
		if (!strncmp(d->o.symbols[i], "vmlinux=", 8))
			return;
	for (unsigned k = 0; k < d->nslots; k++) {
		const struct relstack_object *obj = &d->slot[k].obj;

		if (d->slot[k].state || !(obj->flags & RELSTACK_OBJECT_KERNEL) || obj->base != RELSTACK_BASE_STEXT)
			continue;
		if (uname(&u) == 0 && snprintf(path, sizeof(path), "/boot/System.map-%s", u.release) > 0 &&
		    access(path, R_OK) == 0)
			rs_symbolizer_add_map(d->sym, obj->path, path);
		return;
	}
}

static int make_symbolizer(struct relstack_decoder *d, char *err, size_t size)
{
	struct rs_symbolizer_opts so = {
		.sz = sizeof(so),
		.debug_dirs = d->o.debug_dirs,
		.n_debug_dirs = d->o.n_debug_dirs,
		.lines = d->o.lines,
		.inlines = d->o.inlines,
		.fetch_fn = d->o.fetch_fn,
		.fetch_arg = d->o.fetch_arg,
		.fetch_deadline_ns = d->o.fetch_deadline_ns,
	};

	d->sym = rs_symbolizer_new(&so);
	if (!d->sym)
		return fail(err, size, -errno, "cannot create the symbolizer: %s", strerror(errno));
	for (size_t i = 0; i < d->o.n_symbols; i++) {
		int ret = check_symbols_arg(d, d->o.symbols[i], err, size);

		if (ret < 0)
			return ret;
		ret = rs_symbolizer_add_map_arg(d->sym, d->o.symbols[i]);
		if (ret < 0)
			return fail(err, size, ret, "--symbols %s: %s", d->o.symbols[i], relstack_strerror(ret));
	}
	if (d->o.system_map)
		add_boot_system_map(d);
	return 0;
}

int relstack_decoder__new(struct relstack_reader *r, const struct relstack_decode_opts *opts,
			  struct relstack_decoder **out, char *err, size_t errsize)
{
	struct relstack_decoder *d;
	int ret;

	*out = NULL;
	/* an older caller's options lack the fields added since: they read as zero (opts-local.h) */
	if (!r || !opts || !rs_opts_valid(opts, sizeof(*opts)))
		return fail(err, errsize, -EINVAL, "decoder options: %s", relstack_strerror(-EINVAL));
	d = calloc(1, sizeof(*d));
	if (!d)
		return fail(err, errsize, -ENOMEM, "out of memory");
	d->r = r;
	rs_opts_copy(&d->o, sizeof(d->o), opts);
	d->o.sz = sizeof(d->o);
	if (!d->o.name)
		d->o.name = "buffer file";
	ret = relstack_reader__run_info(r, d->o.run, &d->ri);
	if (ret < 0) {
		ret = rs_no_run_message(r, d->o.run, d->o.name, ret, err, errsize);
		goto fail;
	}
	for (size_t i = 0; i < d->o.n_events; i++) {
		bool known = false;

		for (unsigned k = 0; k < relstack_reader__schema_count(r, d->o.run) && !known; k++) {
			const struct relstack_schema *sc = relstack_reader__schema(r, d->o.run, k);

			known = sc && strncmp(sc->name, d->o.events[i], sizeof(sc->name)) == 0;
		}
		if (!known) {
			ret = fail(err, errsize, -EINVAL, "%s: the %s run defines no event '%s'", d->o.name,
				   rs_run_name(d->o.run), d->o.events[i]);
			goto fail;
		}
	}
	ret = load_records(d, err, errsize);
	if (ret < 0)
		goto fail;
	d->nslots = relstack_reader__object_count(r, d->o.run);
	d->slot = calloc(d->nslots ? d->nslots : 1, sizeof(*d->slot));
	if (!d->slot) {
		ret = fail(err, errsize, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned s = 0; s < d->nslots; s++) {
		d->slot[s].state = relstack_reader__object(r, d->o.run, s, &d->slot[s].obj, &d->slot[s].load, NULL);
		d->slot[s].handle = -1;
	}
	for (size_t i = 0; i < d->nlayouts; i++) {
		struct slot *sl = d->layouts[i].slot < d->nslots ? &d->slot[d->layouts[i].slot] : NULL;

		if (sl && !sl->state && (sl->obj.flags & RELSTACK_OBJECT_KERNEL) &&
		    sl->obj.base == RELSTACK_BASE_LOAD_BIAS)
			sl->layout = d->layouts[i].sections;
	}
	if (d->o.symbolize) {
		ret = make_symbolizer(d, err, errsize);
		if (ret < 0)
			goto fail;
	}
	*out = d;
	return 0;
fail:
	relstack_decoder__free(d);
	return ret;
}

void relstack_decoder__free(struct relstack_decoder *d)
{
	if (!d)
		return;
	if (d->sym)
		rs_symbolizer_free(d->sym);
	for (size_t i = 0; i < d->n; i++) {
		free(d->all[i].words);
		free(d->all[i].fields);
	}
	free(d->all);
	for (size_t i = 0; i < d->nlayouts; i++)
		free(d->layouts[i].sections);
	free(d->layouts);
	free(d->slot);
	free(d->frames);
	free(d->store);
	rs_intern_free(&d->demangled);
	for (size_t i = 0; i < d->ndname; i++)
		free(d->dname[i]);
	free(d->dname);
	free(d);
}

const struct relstack_run_info *relstack_decoder__run_info(const struct relstack_decoder *d)
{
	return &d->ri;
}

size_t relstack_decoder__count(const struct relstack_decoder *d)
{
	return d->n;
}

void relstack_decoder__rewind(struct relstack_decoder *d)
{
	d->next = 0;
}

static void decode_frame(struct relstack_decoder *d, const struct relstack_record *rec, uint64_t word,
			 struct relstack_decoded_frame *fr)
{
	struct relstack_entry e;

	if (rec->absolute) {
		/* An absolute address: find the object that held it, by load address. */
		for (unsigned s = 0; s < d->nslots; s++) {
			const struct relstack_object *o = &d->slot[s].obj;
			uint64_t load = d->slot[s].load;
			uint64_t off;

			if (d->slot[s].state || !load || word < load)
				continue;
			off = word - load;
			if (off < o->text_vaddr || off - o->text_vaddr >= o->text_size)
				continue;
			if (rec->epoch < o->load_epoch || (o->unload_epoch && rec->epoch >= o->unload_epoch))
				continue;
			fr->kind = RELSTACK_ENTRY_OBJECT;
			fr->slot = s;
			fr->offset = off;
			fr->object = o;
			return;
		}
		fr->kind = RELSTACK_ENTRY_INVALID;
		fr->problem = "address in no recorded object";
		return;
	}
	relstack_word_decode(relstack_reader__format(d->r), word, &e);
	relstack_reader__check_entry(d->r, d->o.run, rec->epoch, &e);
	fr->kind = e.kind;
	fr->marker = e.marker;
	fr->slot = e.slot;
	fr->offset = e.offset;
	if (e.kind == RELSTACK_ENTRY_OBJECT && e.slot < d->nslots && d->slot[e.slot].state == 0) {
		fr->object = &d->slot[e.slot].obj;
	} else if (e.kind == RELSTACK_ENTRY_OBJECT) {
		fr->kind = RELSTACK_ENTRY_INVALID;
		fr->problem = relstack_reason_name(RELSTACK_REASON_BAD_SLOT_RECORD);
	} else if (e.kind == RELSTACK_ENTRY_INVALID) {
		fr->problem = relstack_reason_name(e.reason);
	}
}

/*
 * DWARF joins the compilation directory and the file name as the compiler
 * saw them ("/src/build/../lib/x.c"): show the path with "." and "dir/.."
 * folded away, without touching the file system (it is another machine's).
 */
const char *rs_clean_path(const char *path, char *buf, size_t size)
{
	const char *seg[256];
	size_t len[256], n = 0, out = 0;
	bool abs = path[0] == '/';
	const char *p = path;

	while (*p) {
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == 0 || (l == 1 && p[0] == '.')) {
			/* nothing */
		} else if (l == 2 && p[0] == '.' && p[1] == '.' && n && !(len[n - 1] == 2 && seg[n - 1][0] == '.')) {
			n--;
		} else if (n < 256) {
			seg[n] = p;
			len[n++] = l;
		} else {
			return path;
		}
		p += l + (e ? 1 : 0);
	}
	if (abs)
		buf[out++] = '/';
	for (size_t i = 0; i < n; i++) {
		if (out + len[i] + 2 > size)
			return path;
		memcpy(buf + out, seg[i], len[i]);
		out += len[i];
		if (i + 1 < n)
			buf[out++] = '/';
	}
	buf[out] = '\0';
	return buf;
}

/*
 * @name demangled, or @name itself when it is not mangled (or @d does not
 * demangle, or memory is short).  A legacy Rust name ends in a hash,
 * "::h" and 16 hex digits, that rustfilt leaves out: so is it here.
 */
static const char *demangle(struct relstack_decoder *d, const char *name)
{
	bool added, oom = false;
	uint64_t id;
	char *out;
	size_t len;
	int status;

	if (!d->o.demangle || !name || strncmp(name, "_Z", 2) != 0)
		return name;
	id = rs_intern(&d->demangled, name, d->ndname, &added, &oom);
	if (oom)
		return name;
	if (!added)
		return d->dname[id] ? d->dname[id] : name;
	if (d->ndname == d->capdname) {
		size_t cap = d->capdname ? 2 * d->capdname : 256;
		char **more = realloc(d->dname, cap * sizeof(*more));

		if (!more) {
			/* the table names an id that has no slot: forget the name */
			rs_intern_free(&d->demangled);
			memset(&d->demangled, 0, sizeof(d->demangled));
			return name;
		}
		d->dname = more;
		d->capdname = cap;
	}
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (out && status == 0 && (len = strlen(out)) > 19 && !strncmp(out + len - 19, "::h", 3) &&
	    strspn(out + len - 16, "0123456789abcdef") == 16)
		out[len - 19] = '\0';
	d->dname[d->ndname++] = status == 0 ? out : NULL;
	if (status != 0)
		free(out);
	return status == 0 ? out : name;
}

static void name_frame(struct relstack_decoder *d, struct relstack_decoded_frame *fr, struct frame_store *st)
{
	int *h = &d->slot[fr->slot].handle;
	struct rs_sym sym;

	fr->symbolized = true;
	fr->unnamed = rs_sym_reason_str(RS_SYM_NO_SOURCE);
	if (*h < 0) {
		*h = rs_symbolizer_module(d->sym, fr->object, d->slot[fr->slot].layout);
		if (*h < 0)
			return;
	}
	/*
	 * A return address is the instruction after the call: its line and
	 * inlined frames are those of the call, one byte before.
	 */
	if (rs_symbolize(d->sym, *h, fr->offset - fr->return_address, &sym) != 0) {
		fr->unnamed = rs_sym_reason_str(sym.reason);
		return;
	}
	fr->unnamed = NULL;
	fr->symbol = demangle(d, sym.name);
	fr->symoff = sym.symoff + fr->return_address;
	fr->symsize = sym.symsize;
	fr->file = sym.file ? rs_clean_path(sym.file, st->file, sizeof(st->file)) : NULL;
	fr->line = sym.line;
	fr->line_note = sym.line_note;
	fr->n_inlined = sym.n_inlined;
	for (unsigned i = 0; i < sym.n_inlined; i++) {
		st->inlined[i].symbol = demangle(d, sym.inlined[i].name);
		st->inlined[i].file = sym.inlined[i].file ?
			rs_clean_path(sym.inlined[i].file, st->inl_file[i], sizeof(st->inl_file[i])) : NULL;
		st->inlined[i].line = sym.inlined[i].line;
	}
	fr->inlined = st->inlined;
}

/*
 * Every frame is a return address except the first of a record that says
 * it is an interrupted pc (or, in files without that flag, whose verdict
 * has async-start) and the one after a SIGNAL marker (the pc the signal
 * interrupted).  A kernel object's frames are named at the address
 * itself, as the kernel's own stack traces name them (a call that does not
 * return names the next function there too).
 */
int relstack_decoder__next(struct relstack_decoder *d, const struct relstack_decoded_record **out)
{
	const struct relstack_record *rec;
	bool exact;

	if (d->next >= d->n)
		return 0;
	rec = &d->all[d->next++].rec;
	exact = rec->interrupted || (rec->reasons & RELSTACK_UNRELIABLE_ASYNC_START);
	for (size_t i = 0; i < rec->nwords; i++) {
		struct relstack_decoded_frame *fr = &d->frames[i];

		memset(fr, 0, sizeof(*fr));
		decode_frame(d, rec, rec->words[i], fr);
		fr->return_address = !exact && fr->kind == RELSTACK_ENTRY_OBJECT && fr->offset > 0 &&
				     !(fr->object->flags & RELSTACK_OBJECT_KERNEL);
		exact = fr->kind == RELSTACK_ENTRY_MARKER && fr->marker == RELSTACK_MARKER_SIGNAL;
		if (d->sym && fr->kind == RELSTACK_ENTRY_OBJECT)
			name_frame(d, fr, &d->store[i]);
	}
	if (rec->event_name)
		snprintf(d->event, sizeof(d->event), "%s", rec->event_name);
	else
		snprintf(d->event, sizeof(d->event), "event#%u", rec->event_id);
	d->out.rec = rec;
	d->out.event = d->event;
	d->out.reliable = rec->has_stack && !rec->reasons;
	d->out.nframes = rec->nwords;
	d->out.frames = d->frames;
	*out = &d->out;
	return 1;
}

int relstack_decoder__object_errors(struct relstack_decoder *d, void (*fn)(const char *line, void *arg), void *arg)
{
	int status = 0;

	if (!d->sym)
		return 0;
	for (unsigned s = 0; s < d->nslots; s++) {
		int h = d->slot[s].handle, ret;
		const char *err;

		if (h < 0 || !(err = rs_symbolizer_object_error(d->sym, h)))
			continue;
		for (unsigned k = 0; k < s && err; k++) {
			int hk = d->slot[k].handle;
			const char *seen = hk >= 0 ? rs_symbolizer_object_error(d->sym, hk) : NULL;

			if (seen && strcmp(seen, err) == 0)
				err = NULL;
		}
		if (!err)
			continue;
		fn(err, arg);
		ret = rs_symbolizer_load(d->sym, h);
		if (ret == -RELSTACK_EBUILDID || ret == -RELSTACK_ECORRUPT)
			status = 1;
	}
	return status;
}
