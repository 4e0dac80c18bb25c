// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `relstack ps`: a live process's threads with their verdicts, and the
 * consistency check.
 *
 * The check answers livepatch's question for user space: may code be
 * changed while these threads run?  Per thread, one of
 *
 *   inside       a frame is in one of the given functions or objects (the
 *                frame is named): not safe, whatever the verdict;
 *   not inside   the stack is reliable and no frame is in one of them;
 *   cannot tell  the stack is not reliable (its reasons are listed), or
 *                it could not be read, or a frame that could be in a
 *                given function has no name.
 *
 * A target is resolved in each snapshot: a FUNCTION to where each object
 * that defines it (under any of its names) has it, and a frame is inside
 * when its address is, whatever name it is printed with; an OBJECT to the
 * objects it names.  A target that names nothing in the process (a typo,
 * or an object not loaded) is an error, never "not inside": the answer
 * would be safe for any process.  A frame in an object whose symbols
 * cannot be read could be in a FUNCTION: cannot tell.
 *
 * A thread that ended during the snapshot runs nothing: not inside.  The
 * exit status (RS_PS_*) is "inside" if any thread is, else "cannot
 * tell" if any thread is, else safe.  With a wait, the snapshot is taken
 * again until safe or the time is out, as livepatch retries its
 * transition; only the last one is printed.
 *
 * Frames are named by the decoder's symbolizer, from the file each
 * object was found at in the process (the build-id must match).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relstack/relstack.h"
#include "capture/objtab-local.h"
#include "decode/symbolize.h"
#include "live/live.h"
#include "live/ps.h"

enum check_state { NOT_INSIDE = 0, INSIDE, CANNOT_TELL, ENDED };

/* Where a FUNCTION target lies: in object @object (of the snapshot), at offsets [offset, offset + size). */
struct extent {
	unsigned object;
	uint64_t offset, size;
};

struct target {
	const char *object;   /* NULL: any object */
	const char *function; /* NULL: the whole object */
	struct extent *extents; /* of the function, in this snapshot */
	unsigned nextents;
};

/* Per object of the snapshot: its symbolizer handle, and whether it has names. */
struct handle {
	int h;     /* -1 before it is asked, -2 refused */
	int names; /* 0 names available, else the negative code of rs_symbolizer_load() */
};

struct ps {
	const struct rs_ps_opts *o;
	FILE *out;
	struct rs_live_snapshot *s;
	struct rs_symbolizer *sym;
	struct handle *handles; /* per object */
	struct target targets[RS_PS_MAX];
	unsigned ntargets;
	char objbuf[RS_PS_MAX][RELSTACK_PATH_MAX]; /* the OBJECT of OBJECT:FUNCTION */
};

struct frame {
	uintptr_t addr;
	bool exact;  /* an interrupted pc, not a return address */
	int marker;  /* 0, or 'S' (signal frame) */
	const struct rs_live_object *obj;
	struct rs_sym sym;
	bool named;
};

struct verdict {
	enum check_state state;
	unsigned frame; /* the frame inside, or the unnamed one */
	const char *why;
};

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

/* OBJECT names @path: the path, its file name, or its file name up to a dot ("libc", "libc.so" for libc.so.6). */
static bool object_matches(const char *want, const char *path)
{
	const char *b = base_name(path);
	size_t n = strlen(want);

	return strcmp(want, path) == 0 || strcmp(want, b) == 0 || (strncmp(want, b, n) == 0 && b[n] == '.');
}

/* The symbolizer's handle of object @k, -2 if refused; *names says whether it has names. */
static int object_handle(struct ps *p, unsigned k, bool *names)
{
	struct handle *h = &p->handles[k];

	if (h->h == -1) {
		const struct rs_live_object *lo = &p->s->objects[k];
		struct relstack_object o = lo->obj;

		if (lo->open_path[0] && strlen(lo->open_path) < sizeof(o.path))
			memcpy(o.path, lo->open_path, strlen(lo->open_path) + 1);
		h->h = p->sym ? rs_symbolizer_object(p->sym, &o) : -ENOMEM;
		if (h->h < 0)
			h->h = -2;
		h->names = h->h < 0 ? -RELSTACK_ENOSYMBOLS : rs_symbolizer_load(p->sym, h->h);
	}
	*names = h->names == 0;
	return h->h;
}

static void free_targets(struct ps *p)
{
	for (unsigned i = 0; i < p->ntargets; i++)
		free(p->targets[i].extents);
	p->ntargets = 0;
}

/* Append to @buf (of @len) ", NAME", while it fits. */
static void list_add(char *buf, size_t len, const char *name)
{
	size_t n = strlen(buf);

	if (n + 2 + strlen(name) + 4 < len)
		snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name);
	else if (n + 4 < len && strcmp(buf + n - 3, "...") != 0)
		snprintf(buf + n, len - n, "%s", ", ...");
}

/* Where @t's function lies in object @k: its extents appended.  0 or -ENOMEM. */
static int find_function(struct ps *p, struct target *t, unsigned k, char *unsearched, size_t ulen)
{
	struct rs_symextent one[8], *all = one;
	bool names;
	int h = object_handle(p, k, &names), n;

	if (!names) {
		list_add(unsearched, ulen, base_name(p->s->objects[k].obj.path));
		return 0;
	}
	n = rs_symbolizer_find(p->sym, h, t->function, one, 8);
	if (n <= 0)
		return 0;
	if (n > 8) {
		all = calloc((size_t)n, sizeof(*all));
		if (!all || rs_symbolizer_find(p->sym, h, t->function, all, (size_t)n) != n) {
			free(all);
			return -ENOMEM;
		}
	}
	struct extent *e = realloc(t->extents, (t->nextents + (size_t)n) * sizeof(*e));

	if (!e) {
		if (all != one)
			free(all);
		return -ENOMEM;
	}
	t->extents = e;
	for (int i = 0; i < n; i++)
		e[t->nextents++] = (struct extent){ k, all[i].offset, all[i].size };
	if (all != one)
		free(all);
	return 0;
}

/*
 * Resolve the --check targets in this snapshot: FUNCTION, OBJECT:FUNCTION
 * or OBJECT (a bare word is an object when one is named so).  0, or
 * -ENOENT with @msg for a target that names nothing in the process,
 * -ENOMEM.
 */
static int resolve_targets(struct ps *p, char *msg, size_t msglen)
{
	for (unsigned i = 0; i < p->o->nchecks; i++) {
		const char *c = p->o->checks[i], *colon = strchr(c, ':');
		struct target *t = &p->targets[p->ntargets++];
		char unsearched[160] = "";
		unsigned objects = 0;

		*t = (struct target){ NULL, NULL, NULL, 0 };
		if (colon) {
			snprintf(p->objbuf[i], sizeof(p->objbuf[i]), "%.*s", (int)(colon - c), c);
			t->object = p->objbuf[i];
			t->function = colon[1] ? colon + 1 : NULL;
		} else {
			t->function = strchr(c, '/') ? NULL : c;
			for (unsigned k = 0; k < p->s->nobjects && t->function; k++)
				if (object_matches(c, p->s->objects[k].obj.path))
					t->function = NULL;
			if (!t->function)
				t->object = c;
		}
		for (unsigned k = 0; k < p->s->nobjects; k++) {
			if (t->object && !object_matches(t->object, p->s->objects[k].obj.path))
				continue;
			objects++;
			if (t->function && find_function(p, t, k, unsearched, sizeof(unsearched)) < 0) {
				snprintf(msg, msglen, "out of memory");
				return -ENOMEM;
			}
		}
		if (t->object && !objects) {
			snprintf(msg, msglen, "--check %s: no object of process %d is named '%s'", c, (int)p->s->pid,
				 t->object);
			return -ENOENT;
		}
		if (t->function && !t->nextents) {
			snprintf(msg, msglen, "--check %s: no object of process %d%s%s%s defines '%s'%s%s%s", c,
				 (int)p->s->pid, t->object ? " named '" : "", t->object ? t->object : "",
				 t->object ? "'" : "", t->function, t->object ? "" : " or is named so",
				 unsearched[0] ? " (objects without symbols, not searched: " : "",
				 unsearched[0] ? unsearched : "");
			if (unsearched[0] && strlen(msg) + 1 < msglen)
				strcat(msg, ")");
			return -ENOENT;
		}
	}
	return 0;
}

static void resolve(struct ps *p, struct frame *f)
{
	bool names;
	int h;

	f->named = false;
	f->sym.reason = RS_SYM_NO_SOURCE;
	if (!f->obj || !p->sym)
		return;
	h = object_handle(p, (unsigned)(f->obj - p->s->objects), &names);
	if (h < 0)
		return;
	/* a return address is the instruction after the call: name the call */
	if (rs_symbolize(p->sym, h, f->addr - f->obj->bias - !f->exact, &f->sym) == 0) {
		f->sym.symoff += !f->exact;
		f->named = true;
	}
}

/* The frames of @t's words: addresses, each after a signal marker exact as the first. */
static unsigned frames_of(struct ps *p, const struct rs_live_thread *t, struct frame *fr)
{
	unsigned n = 0;
	bool exact = true;

	for (size_t i = 0; i < t->n; i++) {
		uint64_t w = t->words[i];

		if (w == RS_NATIVE_END)
			break;
		memset(&fr[n], 0, sizeof(fr[n]));
		if (w == RS_NATIVE_SIGNAL) {
			fr[n++].marker = 'S';
			exact = true;
			continue;
		}
		fr[n].addr = (uintptr_t)w;
		fr[n].exact = exact;
		fr[n].obj = w == RS_NATIVE_UNKNOWN ? NULL : rs_live_object_at(p->s, (uintptr_t)w);
		if (w == RS_NATIVE_UNKNOWN)
			fr[n].addr = 0;
		resolve(p, &fr[n]);
		exact = false;
		n++;
	}
	return n;
}

static bool frame_in(struct ps *p, const struct target *t, const struct frame *f, bool *unnamed)
{
	unsigned k;
	uint64_t off;
	bool names;

	if (f->marker)
		return false;
	if (t->object && (!f->obj || !object_matches(t->object, f->obj->obj.path)))
		return false;
	if (!t->function)
		return true;
	if (!f->obj) {
		*unnamed = true;
		return false;
	}
	k = (unsigned)(f->obj - p->s->objects);
	object_handle(p, k, &names);
	if (!names) {
		*unnamed = true;
		return false;
	}
	/* a return address is the instruction after the call: the call is in the function */
	off = f->addr - f->obj->bias - !f->exact;
	for (unsigned i = 0; i < t->nextents; i++)
		if (t->extents[i].object == k && off - t->extents[i].offset < t->extents[i].size)
			return true;
	return false;
}

static struct verdict check_thread(struct ps *p, const struct rs_live_thread *t, const struct frame *fr, unsigned n)
{
	struct verdict v = { NOT_INSIDE, 0, NULL };
	bool unnamed = false;
	unsigned first_unnamed = 0;

	if (t->err == -ESRCH)
		return (struct verdict){ ENDED, 0, NULL };
	if (t->err)
		return (struct verdict){ CANNOT_TELL, 0, "its stack could not be read" };
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < p->ntargets; k++) {
			bool u = false;

			if (frame_in(p, &p->targets[k], &fr[i], &u))
				return (struct verdict){ INSIDE, i, NULL };
			if (u && !unnamed) {
				unnamed = true;
				first_unnamed = i;
			}
		}
	if (t->v.reasons)
		return (struct verdict){ CANNOT_TELL, 0, "its stack is not reliable" };
	if (unnamed)
		return (struct verdict){ CANNOT_TELL, first_unnamed, "a frame that may be in a function has no name" };
	return v;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void reasons_text(FILE *f, uint32_t reasons)
{
	const char *sep = "";

	for (uint32_t b = 1; b && b <= reasons; b <<= 1)
		if (reasons & b) {
			fprintf(f, "%s%s", sep, relstack_reason_string(b) ? relstack_reason_string(b) : "?");
			sep = ", ";
		}
}

static void reasons_json(FILE *f, uint32_t reasons)
{
	const char *sep = "";

	fputc('[', f);
	for (uint32_t b = 1; b && b <= reasons; b <<= 1)
		if (reasons & b) {
			fputs(sep, f);
			json_str(f, relstack_reason_string(b) ? relstack_reason_string(b) : "?");
			sep = ",";
		}
	fputc(']', f);
}

static void frame_text(FILE *f, const struct frame *fr, const char *lead)
{
	if (fr->marker) {
		fprintf(f, "%s<signal frame>\n", lead);
		return;
	}
	if (!fr->obj) {
		fprintf(f, "%s0x%" PRIxPTR " (in no object)\n", lead, fr->addr);
		return;
	}
	if (fr->named) {
		fprintf(f, "%s%s+0x%" PRIx64 "/0x%" PRIx64 " [%s]", lead, fr->sym.name, fr->sym.symoff, fr->sym.symsize,
			base_name(fr->obj->obj.path));
		if (fr->sym.file)
			fprintf(f, " %s:%u", fr->sym.file, fr->sym.line);
		fputc('\n', f);
		return;
	}
	fprintf(f, "%s%s+0x%" PRIxPTR " (%s)\n", lead, base_name(fr->obj->obj.path), fr->addr - fr->obj->bias,
		rs_sym_reason_str(fr->sym.reason));
}

static void frame_json(FILE *f, const struct frame *fr)
{
	if (fr->marker) {
		fputs("{\"marker\":\"signal\"}", f);
		return;
	}
	fprintf(f, "{\"address\":\"0x%" PRIxPTR "\",\"exact\":%s", fr->addr, fr->exact ? "true" : "false");
	if (fr->obj) {
		fputs(",\"object\":", f);
		json_str(f, fr->obj->obj.path);
		fprintf(f, ",\"offset\":\"0x%" PRIxPTR "\"", fr->addr - fr->obj->bias);
	}
	if (fr->named) {
		fputs(",\"symbol\":", f);
		json_str(f, fr->sym.name);
		fprintf(f, ",\"symoff\":\"0x%" PRIx64 "\"", fr->sym.symoff);
	}
	fputc('}', f);
}

static const char *state_name(enum check_state s)
{
	static const char *const names[] = { "not inside", "inside", "cannot tell", "ended" };

	return names[s];
}

static const char *thread_problem(const struct rs_live_thread *t, char *buf, size_t len)
{
	if (t->err == -ESRCH)
		return "it ended during the snapshot";
	if (t->err == -ETIMEDOUT)
		return "it did not stop (uninterruptible sleep?)";
	snprintf(buf, len, "its %s could not be read: %s", t->what ? t->what : "state", strerror(-t->err));
	return buf;
}

static void print_thread_text(struct ps *p, const struct rs_live_thread *t, const struct frame *fr, unsigned n,
			      const struct verdict *cv)
{
	FILE *f = p->out;
	char buf[160];

	fprintf(f, "thread %d (%s) %c: ", (int)t->tid, t->name, t->state);
	if (t->err)
		fprintf(f, "not read: %s\n", thread_problem(t, buf, sizeof(buf)));
	else if (t->v.reasons == 0)
		fprintf(f, "reliable\n");
	else {
		fprintf(f, "unreliable: ");
		reasons_text(f, t->v.reasons);
		fputc('\n', f);
	}
	if (cv) {
		fprintf(f, " check: %s", state_name(cv->state));
		if (cv->state == INSIDE || (cv->state == CANNOT_TELL && cv->why && fr && n)) {
			if (cv->why)
				fprintf(f, ": %s", cv->why);
			frame_text(f, &fr[cv->frame], cv->state == INSIDE ? ": " : ": ");
		} else {
			if (cv->why)
				fprintf(f, ": %s", cv->why);
			fputc('\n', f);
		}
		return;
	}
	for (unsigned i = 0; i < n; i++)
		frame_text(f, &fr[i], " => ");
}

static void print_thread_json(struct ps *p, const struct rs_live_thread *t, const struct frame *fr, unsigned n,
			      const struct verdict *cv, bool first)
{
	FILE *f = p->out;
	char buf[160];

	fprintf(f, "%s{\"tid\":%d,\"name\":", first ? "" : ",", (int)t->tid);
	json_str(f, t->name);
	fprintf(f, ",\"state\":\"%c\",\"stopped_ns\":%" PRIu64 ",\"stack_bytes\":%zu", t->state, t->stopped_ns,
		t->stack_bytes);
	if (t->err) {
		fputs(",\"error\":", f);
		json_str(f, thread_problem(t, buf, sizeof(buf)));
	} else {
		fprintf(f, ",\"reliable\":%s,\"reasons\":", t->v.reasons ? "false" : "true");
		reasons_json(f, t->v.reasons);
	}
	if (cv) {
		fputs(",\"check\":", f);
		json_str(f, state_name(cv->state));
		if (cv->why) {
			fputs(",\"why\":", f);
			json_str(f, cv->why);
		}
		if (cv->state == INSIDE) {
			fputs(",\"inside\":", f);
			frame_json(f, &fr[cv->frame]);
		}
	}
	fputs(",\"frames\":[", f);
	for (unsigned i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		frame_json(f, &fr[i]);
	}
	fputs("]}", f);
}

static void print_thread_folded(struct ps *p, const struct rs_live_thread *t, const struct frame *fr, unsigned n)
{
	FILE *f = p->out;

	if (t->err)
		return;
	fputs(t->name, f);
	for (unsigned i = n; i-- > 0;) {
		if (fr[i].marker)
			fputs(";[signal]", f);
		else if (fr[i].named)
			fprintf(f, ";%s", fr[i].sym.name);
		else if (fr[i].obj)
			fprintf(f, ";%s+0x%" PRIxPTR, base_name(fr[i].obj->obj.path), fr[i].addr - fr[i].obj->bias);
		else
			fputs(";[unknown]", f);
	}
	fputs(" 1\n", f);
}

/* Walk, check and print one snapshot; returns the check's status (RS_PS_SAFE without targets). */
static int present(struct ps *p, bool print)
{
	struct frame *fr = calloc(RS_LIVE_WORDS, sizeof(*fr));
	int status = RS_PS_SAFE;
	bool inside = false, unknown = false;

	if (!fr)
		return -ENOMEM;
	if (print && p->o->format == RS_PS_TEXT)
		fprintf(p->out, "process %d (%s): %u thread%s\n", (int)p->s->pid, p->s->comm, p->s->nthreads,
			p->s->nthreads == 1 ? "" : "s");
	if (print && p->o->format == RS_PS_JSON) {
		fprintf(p->out, "{\"pid\":%d,\"command\":", (int)p->s->pid);
		json_str(p->out, p->s->comm);
		fputs(",\"threads\":[", p->out);
	}
	for (unsigned i = 0; i < p->s->nthreads; i++) {
		const struct rs_live_thread *t = &p->s->threads[i];
		unsigned n = t->err ? 0 : frames_of(p, t, fr);
		struct verdict cv;

		if (p->ntargets) {
			cv = check_thread(p, t, fr, n);
			inside |= cv.state == INSIDE;
			unknown |= cv.state == CANNOT_TELL;
		}
		if (!print)
			continue;
		if (p->o->format == RS_PS_TEXT)
			print_thread_text(p, t, fr, n, p->ntargets ? &cv : NULL);
		else if (p->o->format == RS_PS_JSON)
			print_thread_json(p, t, fr, n, p->ntargets ? &cv : NULL, i == 0);
		else
			print_thread_folded(p, t, fr, n);
	}
	if (p->ntargets)
		status = inside ? RS_PS_INSIDE : unknown ? RS_PS_CANNOT_TELL : RS_PS_SAFE;
	if (print && p->o->format == RS_PS_JSON) {
		fputc(']', p->out);
		if (p->ntargets) {
			fputs(",\"check\":", p->out);
			json_str(p->out, status == RS_PS_INSIDE ? "inside" : status == RS_PS_CANNOT_TELL ? "cannot tell" : "safe");
		}
		fputs("}\n", p->out);
	}
	if (print && p->o->format == RS_PS_TEXT && p->ntargets)
		fprintf(p->out, "check: %s\n",
			status == RS_PS_INSIDE	    ? "some thread is inside" :
			status == RS_PS_CANNOT_TELL ? "cannot tell for some thread" :
						      "safe: no thread is inside, every stack is reliable");
	free(fr);
	return status;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int rs_live_ps(const struct rs_ps_opts *o, FILE *out, char *msg, size_t msglen)
{
	struct rs_symbolizer_opts so = { .sz = sizeof(so), .lines = o->lines };
	double deadline = now_s() + o->wait_seconds;
	struct ps p;
	int status;

	memset(&p, 0, sizeof(p));
	p.o = o;
	p.out = out;
	if (o->nchecks > RS_PS_MAX) {
		snprintf(msg, msglen, "too many --check targets (at most %d)", RS_PS_MAX);
		return -EINVAL;
	}
	p.sym = rs_symbolizer_new(&so);
	if (!p.sym && o->nchecks) {
		int e = errno;

		snprintf(msg, msglen, "no symbolizer for --check: %s", strerror(e));
		return -e;
	}
	for (;;) {
		int e = rs_live_snapshot_take(o->pid, o->tids, o->ntids, &p.s, msg, msglen);
		bool last;

		if (e) {
			rs_symbolizer_free(p.sym);
			return e;
		}
		p.handles = malloc((p.s->nobjects ? p.s->nobjects : 1) * sizeof(*p.handles));
		if (!p.handles) {
			snprintf(msg, msglen, "out of memory");
			status = -ENOMEM;
			goto out;
		}
		for (unsigned i = 0; i < p.s->nobjects; i++)
			p.handles[i] = (struct handle){ -1, 0 };
		status = resolve_targets(&p, msg, msglen);
		if (status < 0)
			goto out;
		/* without checks nothing decides a retry: print at once (symbolizing once) */
		status = o->nchecks ? present(&p, false) : RS_PS_SAFE;
		last = status <= RS_PS_SAFE || !o->nchecks || now_s() >= deadline;
		if (last && status >= 0)
			status = present(&p, true);
		if (status < 0) {
			snprintf(msg, msglen, "%s", strerror(-status));
			goto out;
		}
		if (last && o->output) {
			e = rs_live_record(p.s, o->output, msg, msglen);
			if (e < 0) {
				status = e;
				goto out;
			}
		}
		free_targets(&p);
		free(p.handles);
		rs_live_snapshot_free(p.s);
		p.s = NULL;
		if (last)
			break;
		/* a fresh snapshot, as livepatch retries its transition; the symbolizer keeps its files */
		{
			struct timespec ts = { 0, 100000000 };

			nanosleep(&ts, NULL);
		}
	}
	rs_symbolizer_free(p.sym);
	return status;
out:
	free_targets(&p);
	free(p.handles);
	rs_live_snapshot_free(p.s);
	rs_symbolizer_free(p.sym);
	return status;
}
