// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Presenters: the dispatch to each format's file, and the printing rules
 * they share.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <relstack/decode.h>
#include <relstack/relstack.h>

#include "decode/present.h"
#include "relstack-local.h"

static const struct {
	const char *name;
	enum relstack_present_format format;
	const struct rs_presenter_ops *ops;
} formats[] = {
	{ "text", RELSTACK_PRESENT_TEXT, &rs_present_text },
	{ "json", RELSTACK_PRESENT_JSON, &rs_present_json },
	{ "folded", RELSTACK_PRESENT_FOLDED, &rs_present_folded },
	{ "top", RELSTACK_PRESENT_TOP, &rs_present_top },
	{ "pprof", RELSTACK_PRESENT_PPROF, &rs_present_pprof },
	{ "perf-script", RELSTACK_PRESENT_PERF_SCRIPT, &rs_present_perf_script },
	{ "speedscope", RELSTACK_PRESENT_SPEEDSCOPE, &rs_present_speedscope },
	{ "html", RELSTACK_PRESENT_HTML, &rs_present_html },
};

int relstack_present_format_parse(const char *name, enum relstack_present_format *out)
{
	for (size_t i = 0; i < RS_ARRAY_SIZE(formats); i++) {
		if (name && strcmp(name, formats[i].name) == 0) {
			*out = formats[i].format;
			return 0;
		}
	}
	return -EINVAL;
}

/* @run is the run presented now; the span grows to cover it. */
static void set_run(struct relstack_presenter *p, const struct relstack_run_info *run)
{
	uint64_t end = run->close_monotonic_ns > run->monotonic_ns ?
			       run->realtime_ns + (run->close_monotonic_ns - run->monotonic_ns) : 0;

	if (!p->has_run) {
		p->span_start_ns = run->realtime_ns;
		p->span_end_ns = end;
	} else {
		if (run->realtime_ns < p->span_start_ns)
			p->span_start_ns = run->realtime_ns;
		/* a run still open has no end: neither has the span */
		p->span_end_ns = end && p->span_end_ns ? (end > p->span_end_ns ? end : p->span_end_ns) : 0;
	}
	p->run = *run;
	p->has_run = true;
}

int relstack_presenter__new(const struct relstack_present_opts *opts, FILE *f, struct relstack_presenter **out)
{
	struct relstack_presenter *p;
	int ret;

	*out = NULL;
	if (!opts || opts->sz < sizeof(*opts) || !f)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *opts;
	p->f = f;
	if (opts->run)
		set_run(p, opts->run);
	p->o.run = NULL;
	for (size_t i = 0; i < RS_ARRAY_SIZE(formats); i++)
		if (formats[i].format == opts->format)
			p->ops = formats[i].ops;
	if (!p->ops) {
		free(p);
		return -EINVAL;
	}
	ret = p->ops->init ? p->ops->init(p) : 0;
	if (ret < 0) {
		relstack_presenter__free(p);
		return ret;
	}
	*out = p;
	return 0;
}

int relstack_presenter__begin_file(struct relstack_presenter *p, const char *name, const struct relstack_run_info *run)
{
	char *copy = strdup(name ? name : "");

	if (!copy)
		return -ENOMEM;
	free(p->file);
	p->file = copy;
	p->file_begun = true;
	if (run)
		set_run(p, run);
	return 0;
}

int relstack_presenter__record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	return p->ops->record(p, dr);
}

int relstack_presenter__finish(struct relstack_presenter *p)
{
	int ret = p->ops->finish ? p->ops->finish(p) : 0;

	if (fflush(p->f) != 0 && ret == 0)
		ret = -errno;
	if (ferror(p->f) && ret == 0)
		ret = -EIO;
	return ret;
}

void relstack_presenter__free(struct relstack_presenter *p)
{
	if (!p)
		return;
	if (p->ops && p->ops->free)
		p->ops->free(p);
	free(p->file);
	free(p);
}

/* ---- printing rules ---- */

const char *rs_run_name(enum relstack_run_which w)
{
	return w == RELSTACK_RUN_PREVIOUS ? "previous" : "current";
}

const char *rs_basename(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

void rs_print_hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

void rs_print_walltime(FILE *f, uint64_t ns)
{
	time_t secs = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char buf[64];

	gmtime_r(&secs, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "%s.%09" PRIu64 "Z", buf, (uint64_t)(ns % 1000000000u));
}

/*
 * Length of the valid UTF-8 sequence at @s (at most @max bytes, NUL ends
 * the string), or 0 if the byte at @s starts none.  Overlong forms,
 * surrogates and code points beyond U+10FFFF are not valid (RFC 3629).
 */
static size_t utf8_len(const unsigned char *s, size_t max)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n > max)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

void rs_print_string(FILE *f, const char *str, size_t max, bool json)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < max && s[i];) {
		unsigned char c = s[i];
		size_t n = utf8_len(s + i, max - i);

		if (n == 0)
			fprintf(f, json ? "\\udc%02x" : "\\x%02x", c);
		else if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fwrite(s + i, 1, n, f);
		i += n ? n : 1;
	}
	fputc('"', f);
}

void rs_print_reasons(FILE *f, uint32_t reasons, bool json)
{
	bool first = true;

	if (json)
		fputc('[', f);
	for (unsigned b = 0; b < 32; b++) {
		if (!(reasons & (1u << b)))
			continue;
		fprintf(f, json ? "%s\"%s\"" : "%s%s", first ? "" : ",", relstack_reason_string(1u << b));
		first = false;
	}
	if (json)
		fputc(']', f);
}

static bool field_int(const struct relstack_schema_field *fd, const uint8_t *p, uint64_t *u, int64_t *s)
{
	uint64_t v = 0;

	if (fd->size != 1 && fd->size != 2 && fd->size != 4 && fd->size != 8)
		return false;
	for (unsigned i = 0; i < fd->size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	*u = v;
	if (fd->size < 8 && (v >> (fd->size * 8 - 1)) & 1)
		*s = (int64_t)(v | ~0ull << (fd->size * 8));
	else
		*s = (int64_t)v;
	return true;
}

void rs_print_fields(FILE *f, const struct relstack_record *rec, bool json)
{
	const struct relstack_schema *sc = rec->schema;
	const uint8_t *base = rec->fields;
	bool first = true;

	if (json)
		fputc('{', f);
	if (!sc) {
		if (json)
			fputc('}', f);
		return;
	}
	for (unsigned i = 0; i < sc->nfields && i < RS_ARRAY_SIZE(sc->field); i++) {
		const struct relstack_schema_field *fd = &sc->field[i];
		const uint8_t *p = base + fd->offset;
		uint64_t u;
		int64_t s;

		if (json)
			fprintf(f, "%s", first ? "" : ",");
		else
			fputc(' ', f);
		first = false;
		if (json)
			rs_print_string(f, fd->name, sizeof(fd->name), true);
		else
			fprintf(f, "%.*s", (int)sizeof(fd->name), fd->name);
		fputc(json ? ':' : '=', f);
		if ((size_t)fd->offset + fd->size > rec->fields_size) {
			fputs(json ? "null" : "<missing>", f);
			continue;
		}
		switch (fd->type) {
		case RELSTACK_FIELD_UNSIGNED:
		case RELSTACK_FIELD_SIGNED:
		case RELSTACK_FIELD_HEX:
			if (!field_int(fd, p, &u, &s)) {
				fputs(json ? "null" : "<bad size>", f);
				break;
			}
			if (fd->type == RELSTACK_FIELD_SIGNED)
				fprintf(f, "%" PRId64, s);
			else if (fd->type == RELSTACK_FIELD_HEX)
				fprintf(f, json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, u);
			else
				fprintf(f, "%" PRIu64, u);
			if (!json && strcmp(fd->name, "signo") == 0 && s > 0 && s < 65 && sigabbrev_np((int)s))
				fprintf(f, "(SIG%s)", sigabbrev_np((int)s));
			break;
		case RELSTACK_FIELD_STRING:
			rs_print_string(f, (const char *)p, fd->size, json);
			break;
		default:
			fputc('"', f);
			rs_print_hex(f, p, fd->size);
			fputc('"', f);
		}
	}
	if (json)
		fputc('}', f);
}

/* ---- a frame's functions ---- */

unsigned rs_frame_funcs(const struct relstack_decoded_frame *fr, struct rs_func out[RS_FUNC_MAX], char *buf,
			size_t size)
{
	unsigned n = 0;

	memset(out, 0, RS_FUNC_MAX * sizeof(*out));
	if (fr->kind == RELSTACK_ENTRY_MARKER) {
		if (fr->marker == RELSTACK_MARKER_END)
			return 0;
		out[0].name = fr->marker == RELSTACK_MARKER_SIGNAL ? "[signal]" : "[unknown]";
		return 1;
	}
	if (fr->kind != RELSTACK_ENTRY_OBJECT) {
		out[0].name = "[invalid]";
		return 1;
	}
	if (!fr->symbol) {
		snprintf(buf, size, "%s+0x%" PRIx64, rs_basename(fr->object->path), fr->offset);
		out[0].name = buf;
		return 1;
	}
	out[n].name = fr->symbol;
	out[n].file = fr->file;
	out[n++].line = fr->line;
	/* inlined frames are called by the function: outer ones first */
	for (unsigned i = fr->n_inlined; i-- > 0 && n < RS_FUNC_MAX;) {
		out[n].name = fr->inlined[i].symbol;
		out[n].file = fr->inlined[i].file;
		out[n].line = fr->inlined[i].line;
		out[n++].inlined = true;
	}
	return n;
}

char *rs_folded_line(const struct relstack_decoded_record *dr)
{
	char line[16384], name[4200];
	size_t len;

	len = (size_t)snprintf(line, sizeof(line), "%s", dr->event);
	for (size_t i = dr->nframes; i-- > 0;) {
		struct rs_func fn[RS_FUNC_MAX];
		unsigned n = rs_frame_funcs(&dr->frames[i], fn, name, sizeof(name));

		for (unsigned k = 0; k < n && len < sizeof(line); k++)
			len += (size_t)snprintf(line + len, sizeof(line) - len, ";%s", fn[k].name);
	}
	return strdup(line);
}

/* ---- the sampling period ---- */

bool rs_record_is_sample(const struct relstack_record *rec)
{
	return rec->event_name && strcmp(rec->event_name, "sample") == 0;
}

int rs_period_add(struct rs_period *pd, const struct relstack_record *rec)
{
	size_t i;

	for (i = 0; i < pd->nthreads && pd->thread[i].tid != rec->tid; i++)
		;
	if (i == pd->nthreads) {
		if ((pd->nthreads & (pd->nthreads - 1)) == 0) {
			void *more = realloc(pd->thread, (pd->nthreads ? 2 * pd->nthreads : 1) * sizeof(*pd->thread));

			if (!more)
				return -ENOMEM;
			pd->thread = more;
		}
		pd->thread[pd->nthreads].tid = rec->tid;
		pd->thread[pd->nthreads++].last = rec->time_ns;
		return 0;
	}
	if (pd->n == pd->cap) {
		size_t cap = pd->cap ? 2 * pd->cap : 256;
		uint64_t *more = realloc(pd->interval, cap * sizeof(*more));

		if (!more)
			return -ENOMEM;
		pd->interval = more;
		pd->cap = cap;
	}
	if (rec->time_ns > pd->thread[i].last)
		pd->interval[pd->n++] = rec->time_ns - pd->thread[i].last;
	pd->thread[i].last = rec->time_ns;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t rs_period_ns(struct rs_period *pd, uint64_t given)
{
	if (given || !pd->n)
		return given;
	qsort(pd->interval, pd->n, sizeof(*pd->interval), cmp_u64);
	return pd->interval[pd->n / 2];
}

void rs_period_free(struct rs_period *pd)
{
	free(pd->thread);
	free(pd->interval);
}

/* ---- interning ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static bool intern_grow(struct rs_intern *t)
{
	struct rs_intern nt = { .cap = t->cap ? 2 * t->cap : 1024 };
	size_t i;

	nt.key = calloc(nt.cap, sizeof(*nt.key));
	nt.id = calloc(nt.cap, sizeof(*nt.id));
	if (!nt.key || !nt.id) {
		free(nt.key);
		free(nt.id);
		return false;
	}
	for (size_t k = 0; k < t->cap; k++) {
		if (!t->key[k])
			continue;
		for (i = hash_str(t->key[k]) & (nt.cap - 1); nt.key[i]; i = (i + 1) & (nt.cap - 1))
			;
		nt.key[i] = t->key[k];
		nt.id[i] = t->id[k];
	}
	nt.n = t->n;
	free(t->key);
	free(t->id);
	*t = nt;
	return true;
}

uint64_t rs_intern(struct rs_intern *t, const char *key, uint64_t next, bool *added, bool *oom)
{
	size_t i;

	*added = false;
	if (2 * (t->n + 1) > t->cap && !intern_grow(t)) {
		*oom = true;
		return 0;
	}
	for (i = hash_str(key) & (t->cap - 1); t->key[i]; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->key[i], key) == 0)
			return t->id[i];
	t->key[i] = strdup(key);
	if (!t->key[i]) {
		*oom = true;
		return 0;
	}
	t->id[i] = next;
	t->n++;
	*added = true;
	return next;
}

void rs_intern_free(struct rs_intern *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->key[i]);
	free(t->key);
	free(t->id);
}
