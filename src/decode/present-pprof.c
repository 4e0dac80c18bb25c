// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pprof: a perftools.profiles.Profile message (profile.proto), gzip
 * compressed, as `go tool pprof` reads it.
 *
 * Messages nest (a Line in a Location, a Location in the Profile) and
 * each is built in a buffer of its own, owned by the function that builds
 * it; what such a function interns on the way (a string, a Function met
 * for the first time as an inlined function of a location) goes to the
 * Profile's buffer, never into the message being built.
 *
 * Each recorded object is a mapping of its executable segment as it was
 * linked: memory_start = base + text_vaddr, memory_limit = base +
 * text_vaddr + text_size, file_offset = text_offset, with its path and
 * build-id.  A location's address is base + the recorded offset (for
 * objects with the load bias as their base, the object's own link-time
 * address), so the address minus the mapping's start plus its
 * file_offset is where the instruction lies in the file, as pprof
 * computes it to read the binary (-disasm, weblist, its own symbolizer).
 * The base is slot << RS_PPROF_REGION_BITS: 0 for the main executable
 * (slot 0), whose mapping comes first, where pprof puts the program named
 * on its command line; `go tool pprof` does not relocate the addresses it
 * compares with a file's symbols, so only at base 0 do they line up.
 * Every other object has a region of its own, so no two mappings overlap.
 * A frame named at the call before its return address is at the offset
 * minus one, inside the call instruction, as the decoder names it.
 *
 * A mapping says has_functions only when every one of its frames got a
 * name (not an "object+0x..." placeholder), has_filenames and
 * has_line_numbers when they all got a file and a line too, and
 * has_inline_frames when, besides, none lacks its inlined functions (a
 * line note says why) and some have them.  A mapping without any of the
 * first three is symbolized by pprof itself from the binary it finds; it
 * keeps our names where it finds none.
 *
 * A location is one (object, offset, return address) and lists the
 * frame's inlined functions innermost first, its own function last, as
 * pprof's Location.line wants.  Markers and bad words are locations
 * without a mapping, named as the folded format names them.  Samples are
 * valued by count, and "sample" records (the sampler's) also by CPU time:
 * the sampling period, or if not given (the file does not hold it) the
 * median interval between two samples of one thread, which is the period
 * for a thread that keeps its CPU busy.  Every sample is labelled
 * reliable=true or reliable=false, an unreliable one also
 * unreliable=REASON[,REASON...] (pprof's -tagfocus, -tagignore, -tags).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <relstack/unwind.h>

#include "decode/present.h"

/* Each object slot's share of the profile's address space. */
#define RS_PPROF_REGION_BITS 44

struct buf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		uint8_t *more;

		while (cap < b->n + n)
			cap *= 2;
		more = realloc(b->p, cap);
		if (!more) {
			b->oom = true;
			return;
		}
		b->p = more;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void varint(struct buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	put(b, t, n);
}

/* A varint field (wire type 0); zero values are left out, as proto3 does. */
static void field_u(struct buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	varint(b, (uint64_t)field << 3);
	varint(b, v);
}

/* A length-delimited field (wire type 2). */
static void field_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	varint(b, (uint64_t)field << 3 | 2);
	varint(b, n);
	put(b, p, n);
}

/*
 * Message @m, which the caller built in a buffer of its own, as field
 * @field of @b; @m is freed.
 */
static void field_msg(struct buf *b, unsigned field, struct buf *m)
{
	field_bytes(b, field, m->p, m->n);
	b->oom |= m->oom;
	free(m->p);
	*m = (struct buf){ 0 };
}

struct mapping {
	bool used;
	char build_id[2 * sizeof(((struct relstack_object *)0)->build_id) + 1];
	char *path;
	uint64_t base, start, limit, file_offset;
	/* what some frame of the object lacks, and whether one has inlined functions */
	bool unnamed, no_file, no_line, no_inlines, inlines;
};

struct pprof {
	struct buf out; /* the Profile message, fields in any order */
	struct rs_intern strings, functions, locations, samples;
	uint64_t nstrings, nfunctions, nlocations;
	struct mapping *map;
	size_t nmap;
	/* samples, aggregated by their location list, kind and verdict */
	struct { uint64_t *loc; size_t n; uint64_t count, cpu; uint32_t reasons; bool reliable; } *sample;
	size_t nsample, capsample;
	/* CPU time of "sample" records */
	struct rs_period period;
	bool oom;
};

static uint64_t str_id(struct pprof *s, const char *str)
{
	bool added;
	uint64_t id = rs_intern(&s->strings, str, s->nstrings, &added, &s->oom);

	if (added) {
		field_bytes(&s->out, 6, str, strlen(str));
		s->nstrings++;
	}
	return id;
}

static uint64_t function_id(struct pprof *s, const struct rs_func *fn)
{
	char key[8192];
	bool added;
	uint64_t id;

	snprintf(key, sizeof(key), "%s\n%s", fn->name, fn->file ? fn->file : "");
	id = rs_intern(&s->functions, key, s->nfunctions + 1, &added, &s->oom);
	if (added) {
		struct buf m = { 0 };

		s->nfunctions++;
		field_u(&m, 1, id);
		field_u(&m, 2, str_id(s, fn->name));
		field_u(&m, 3, str_id(s, fn->name));
		field_u(&m, 4, fn->file ? str_id(s, fn->file) : 0);
		field_msg(&s->out, 5, &m);
	}
	return id;
}

static struct mapping *mapping_of(struct pprof *s, const struct relstack_decoded_frame *fr)
{
	const struct relstack_object *o = fr->object;
	const uint64_t region = 1ull << RS_PPROF_REGION_BITS;
	struct mapping *m;
	uint64_t end;

	if (fr->slot >= s->nmap) {
		size_t n = (size_t)fr->slot + 1;
		struct mapping *more = realloc(s->map, n * sizeof(*more));

		if (!more)
			return NULL;
		memset(more + s->nmap, 0, (n - s->nmap) * sizeof(*more));
		s->map = more;
		s->nmap = n;
	}
	m = &s->map[fr->slot];
	if (m->used)
		return m;
	m->path = strndup(o->path, sizeof(o->path));
	if (!m->path)
		return NULL;
	m->used = true;
	for (unsigned i = 0; i < o->build_id_len && i < sizeof(o->build_id); i++)
		snprintf(m->build_id + 2 * i, 3, "%02x", o->build_id[i]);
	str_id(s, m->path);
	str_id(s, m->build_id);
	/*
	 * The decoder keeps only frames in [text_vaddr, text_vaddr + text_size);
	 * a text that does not fit the region (the kernel's core when its end is
	 * not known: every offset a word can hold) is cut at the region's end.
	 */
	end = o->text_vaddr + o->text_size;
	if (end < o->text_vaddr || end > region)
		end = region;
	m->base = (uint64_t)fr->slot << RS_PPROF_REGION_BITS;
	m->start = m->base + (o->text_vaddr < end ? o->text_vaddr : 0);
	m->limit = m->base + end;
	m->file_offset = o->text_offset;
	return m;
}

static uint64_t location_id(struct pprof *s, const struct relstack_decoded_frame *fr)
{
	struct rs_func fn[RS_FUNC_MAX];
	char key[128], name[4200];
	unsigned n = rs_frame_funcs(fr, fn, name, sizeof(name));
	struct mapping *m = NULL;
	struct buf loc = { 0 };
	bool added;
	uint64_t id;

	if (fr->kind == RELSTACK_ENTRY_OBJECT)
		snprintf(key, sizeof(key), "%u:%" PRIx64 ":%d", fr->slot, fr->offset, fr->return_address);
	else
		snprintf(key, sizeof(key), "%s", fn[0].name);
	id = rs_intern(&s->locations, key, s->nlocations + 1, &added, &s->oom);
	if (!added)
		return id;
	s->nlocations++;
	if (fr->kind == RELSTACK_ENTRY_OBJECT) {
		m = mapping_of(s, fr);
		if (!m) {
			s->oom = true;
			return 0;
		}
		m->unnamed |= !fr->symbol;
		m->no_file |= !fr->file;
		m->no_line |= !fr->line;
		m->no_inlines |= !fr->file || fr->line_note;
		m->inlines |= fr->n_inlined > 0;
	}
	field_u(&loc, 1, id);
	if (m) {
		field_u(&loc, 2, (uint64_t)fr->slot + 1);
		field_u(&loc, 3, m->base + fr->offset - fr->return_address);
	}
	/* innermost first: the last line is the function the others were inlined into */
	for (unsigned k = n; k-- > 0;) {
		struct buf line = { 0 };
		uint64_t fid = function_id(s, &fn[k]);

		field_u(&line, 1, fid);
		field_u(&line, 2, fn[k].line);
		field_msg(&loc, 4, &line);
	}
	field_msg(&s->out, 4, &loc);
	return id;
}

/* The location of the event, the root of each stack (as in the folded format). */
static uint64_t event_location_id(struct pprof *s, const char *event)
{
	struct rs_func fn = { .name = event };
	char key[128];
	bool added;
	uint64_t id;

	snprintf(key, sizeof(key), "event:%s", event);
	id = rs_intern(&s->locations, key, s->nlocations + 1, &added, &s->oom);
	if (added) {
		struct buf loc = { 0 }, line = { 0 };
		uint64_t fid = function_id(s, &fn);

		s->nlocations++;
		field_u(&loc, 1, id);
		field_u(&line, 1, fid);
		field_msg(&loc, 4, &line);
		field_msg(&s->out, 4, &loc);
	}
	return id;
}

static int pprof_init(struct relstack_presenter *p)
{
	struct pprof *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	p->state = s;
	str_id(s, ""); /* string 0 is the empty string */
	return s->oom ? -ENOMEM : 0;
}

static int pprof_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct pprof *s = p->state;
	uint64_t *loc = malloc((dr->nframes + 1) * sizeof(*loc));
	size_t n = 0;
	bool is_sample = rs_record_is_sample(dr->rec);
	bool added;
	uint64_t idx;

	if (!dr->rec->has_stack) {
		free(loc);
		return 0;
	}
	if (!loc)
		return -ENOMEM;
	for (size_t i = 0; i < dr->nframes; i++) {
		const struct relstack_decoded_frame *fr = &dr->frames[i];

		if (fr->kind == RELSTACK_ENTRY_MARKER && fr->marker == RELSTACK_MARKER_END)
			continue;
		loc[n++] = location_id(s, fr);
	}
	loc[n++] = event_location_id(s, dr->event);
	if (is_sample && rs_period_add(&s->period, dr->rec) < 0) {
		free(loc);
		return -ENOMEM;
	}
	/* aggregate identical stacks (and events) of one verdict: the key is the location list */
	{
		size_t klen = n * sizeof(*loc);
		char *k = malloc(2 * klen + 12);

		if (!k) {
			free(loc);
			return -ENOMEM;
		}
		for (size_t i = 0; i < klen; i++)
			snprintf(k + 2 * i, 3, "%02x", ((const uint8_t *)loc)[i]);
		snprintf(k + 2 * klen, 12, "%c%08" PRIx32 "%c", is_sample ? 's' : 'e', dr->rec->reasons,
			 dr->reliable ? 'r' : 'u');
		idx = rs_intern(&s->samples, k, s->nsample, &added, &s->oom);
		free(k);
	}
	if (s->oom) {
		free(loc);
		return -ENOMEM;
	}
	if (added) {
		if (s->nsample == s->capsample) {
			size_t cap = s->capsample ? 2 * s->capsample : 256;
			void *more = realloc(s->sample, cap * sizeof(*s->sample));

			if (!more) {
				free(loc);
				return -ENOMEM;
			}
			s->sample = more;
			s->capsample = cap;
		}
		s->sample[idx].loc = loc;
		s->sample[idx].n = n;
		s->sample[idx].count = 0;
		s->sample[idx].cpu = 0;
		s->sample[idx].reasons = dr->rec->reasons;
		s->sample[idx].reliable = dr->reliable;
		s->nsample++;
	} else {
		free(loc);
	}
	s->sample[idx].count++;
	s->sample[idx].cpu += is_sample;
	return 0;
}

static void value_type(struct pprof *s, unsigned field, const char *type, const char *unit)
{
	struct buf m = { 0 };

	field_u(&m, 1, str_id(s, type));
	field_u(&m, 2, str_id(s, unit));
	field_msg(&s->out, field, &m);
}

/* A string label of a sample, to @sample. */
static void label(struct pprof *s, struct buf *sample, const char *key, const char *str)
{
	struct buf m = { 0 };

	field_u(&m, 1, str_id(s, key));
	field_u(&m, 2, str_id(s, str));
	field_msg(sample, 3, &m);
}

/* The verdict's reasons by name, "a,b" (an unknown bit as "unknown"). */
static void reason_names(uint32_t reasons, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned b = 0; b < 32 && len < size; b++) {
		const char *name;

		if (!(reasons & (1u << b)))
			continue;
		name = relstack_reason_string(1u << b);
		len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "," : "", name ? name : "unknown");
	}
}

/* gzip @in to @f. */
static int gzip_write(FILE *f, const uint8_t *in, size_t n)
{
	z_stream z = { 0 };
	uint8_t chunk[65536];
	int zr;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zr = deflate(&z, Z_FINISH);
		if (fwrite(chunk, 1, sizeof(chunk) - z.avail_out, f) != sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (zr == Z_OK);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

static int pprof_finish(struct relstack_presenter *p)
{
	struct pprof *s = p->state;
	uint64_t period;
	bool cpu = false;

	for (size_t i = 0; i < s->nsample && !cpu; i++)
		cpu = s->sample[i].cpu != 0;
	period = rs_period_ns(&s->period, p->o.sample_period_ns);
	if (!period)
		period = 1;
	value_type(s, 1, "samples", "count");
	if (cpu) {
		value_type(s, 1, "cpu", "nanoseconds");
		value_type(s, 11, "cpu", "nanoseconds");
		field_u(&s->out, 12, period);
	}
	for (size_t i = 0; i < s->nsample; i++) {
		struct buf m = { 0 }, packed = { 0 };
		char reasons[512];

		for (size_t k = 0; k < s->sample[i].n; k++)
			varint(&packed, s->sample[i].loc[k]);
		field_msg(&m, 1, &packed);
		varint(&packed, s->sample[i].count);
		if (cpu)
			varint(&packed, s->sample[i].cpu * period);
		field_msg(&m, 2, &packed);
		label(s, &m, "reliable", s->sample[i].reliable ? "true" : "false");
		if (s->sample[i].reasons) {
			reason_names(s->sample[i].reasons, reasons, sizeof(reasons));
			label(s, &m, "unreliable", reasons);
		}
		field_msg(&s->out, 2, &m);
	}
	for (size_t i = 0; i < s->nmap; i++) {
		struct mapping *mp = &s->map[i];
		struct buf m = { 0 };
		bool named = !mp->unnamed, lines = named && !mp->no_file && !mp->no_line;

		if (!mp->used)
			continue;
		field_u(&m, 1, i + 1);
		field_u(&m, 2, mp->start);
		field_u(&m, 3, mp->limit);
		field_u(&m, 4, mp->file_offset);
		field_u(&m, 5, str_id(s, mp->path));
		field_u(&m, 6, str_id(s, mp->build_id));
		field_u(&m, 7, named);
		field_u(&m, 8, named && !mp->no_file);
		field_u(&m, 9, named && !mp->no_line);
		field_u(&m, 10, lines && !mp->no_inlines && mp->inlines);
		field_msg(&s->out, 3, &m);
	}
	if (p->has_run) {
		/* every file's run: from the first start to the last close */
		field_u(&s->out, 9, p->span_start_ns);
		if (p->span_end_ns > p->span_start_ns)
			field_u(&s->out, 10, p->span_end_ns - p->span_start_ns);
	}
	if (s->oom || s->out.oom)
		return -ENOMEM;
	return gzip_write(p->f, s->out.p, s->out.n);
}

static void pprof_free(struct relstack_presenter *p)
{
	struct pprof *s = p->state;

	if (!s)
		return;
	free(s->out.p);
	rs_intern_free(&s->strings);
	rs_intern_free(&s->functions);
	rs_intern_free(&s->locations);
	rs_intern_free(&s->samples);
	for (size_t i = 0; i < s->nsample; i++)
		free(s->sample[i].loc);
	free(s->sample);
	for (size_t i = 0; i < s->nmap; i++)
		free(s->map[i].path);
	free(s->map);
	rs_period_free(&s->period);
	free(s);
}

const struct rs_presenter_ops rs_present_pprof = {
	.init = pprof_init, .record = pprof_record, .finish = pprof_finish, .free = pprof_free,
};
