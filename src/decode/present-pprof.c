// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pprof: a perftools.profiles.Profile message (profile.proto), gzip
 * compressed, as `go tool pprof` reads it.
 *
 * Each recorded object is a mapping carrying its path and build-id; the
 * mappings are laid out in an address space of their own, one per slot
 * at (slot + 1) << 40, so a location's address minus its mapping's start
 * is the recorded offset.  A location is one (object, offset) and lists
 * the frame's inlined functions innermost first, its own function last,
 * as pprof's Location.line wants.  Markers and bad words are locations
 * without a mapping, named as the folded format names them.  Samples are
 * valued by count, and "sample" records (the sampler's) also by CPU time:
 * the sampling period, or if not given (the file does not hold it) the
 * median interval between two samples of one thread, which is the period
 * for a thread that keeps its CPU busy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "decode/present.h"

struct buf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
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

/* A message field from a scratch buffer, which is emptied. */
static void field_msg(struct buf *b, unsigned field, struct buf *m)
{
	field_bytes(b, field, m->p, m->n);
	b->oom |= m->oom;
	m->n = 0;
}

struct mapping {
	bool used;
	char build_id[2 * sizeof(((struct relstack_object *)0)->build_id) + 1];
	char *path;
	uint64_t limit;
};

struct pprof {
	struct buf out;       /* the Profile message, fields in any order */
	struct buf scratch, scratch2;
	struct rs_intern strings, functions, locations, samples;
	uint64_t nstrings, nfunctions, nlocations;
	struct mapping *map;
	size_t nmap;
	/* samples, aggregated by their location list */
	struct { uint64_t *loc; size_t n; uint64_t count, cpu; } *sample;
	size_t nsample, capsample;
	/* CPU time of "sample" records */
	struct { uint32_t tid; uint64_t last; } *threads;
	size_t nthreads;
	uint64_t *interval;
	size_t ninterval, capinterval;
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
		struct buf *m = &s->scratch;

		s->nfunctions++;
		field_u(m, 1, id);
		field_u(m, 2, str_id(s, fn->name));
		field_u(m, 3, str_id(s, fn->name));
		field_u(m, 4, fn->file ? str_id(s, fn->file) : 0);
		field_msg(&s->out, 5, m);
	}
	return id;
}

static int mapping_of(struct pprof *s, const struct relstack_decoded_frame *fr)
{
	struct mapping *m;

	if (fr->slot >= s->nmap) {
		size_t n = (size_t)fr->slot + 1;
		struct mapping *more = realloc(s->map, n * sizeof(*more));

		if (!more)
			return -ENOMEM;
		memset(more + s->nmap, 0, (n - s->nmap) * sizeof(*more));
		s->map = more;
		s->nmap = n;
	}
	m = &s->map[fr->slot];
	if (!m->used) {
		m->used = true;
		for (unsigned i = 0; i < fr->object->build_id_len && i < sizeof(fr->object->build_id); i++)
			snprintf(m->build_id + 2 * i, 3, "%02x", fr->object->build_id[i]);
		m->path = strndup(fr->object->path, sizeof(fr->object->path));
		if (!m->path)
			return -ENOMEM;
		str_id(s, m->path);
		str_id(s, m->build_id);
	}
	if (fr->offset + 1 > m->limit)
		m->limit = fr->offset + 1;
	return 0;
}

static uint64_t location_id(struct pprof *s, const struct relstack_decoded_frame *fr)
{
	struct rs_func fn[RS_FUNC_MAX];
	char key[128], name[4200];
	unsigned n = rs_frame_funcs(fr, fn, name, sizeof(name));
	bool added;
	uint64_t id, addr = 0;

	if (fr->kind == RELSTACK_ENTRY_OBJECT) {
		if (mapping_of(s, fr) < 0) {
			s->oom = true;
			return 0;
		}
		addr = ((uint64_t)fr->slot + 1) << 40 | fr->offset;
		snprintf(key, sizeof(key), "%u:%" PRIx64 ":%d", fr->slot, fr->offset, fr->return_address);
	} else {
		snprintf(key, sizeof(key), "%s", fn[0].name);
	}
	id = rs_intern(&s->locations, key, s->nlocations + 1, &added, &s->oom);
	if (!added)
		return id;
	s->nlocations++;
	/* innermost first: the last line is the function the others were inlined into */
	for (unsigned k = n; k-- > 0;) {
		struct buf *l = &s->scratch2;

		field_u(l, 1, function_id(s, &fn[k]));
		field_u(l, 2, fn[k].line);
		field_msg(&s->scratch, 4, l);
	}
	{
		struct buf line = s->scratch;

		s->scratch = (struct buf){ 0 };
		field_u(&s->scratch, 1, id);
		if (fr->kind == RELSTACK_ENTRY_OBJECT) {
			field_u(&s->scratch, 2, (uint64_t)fr->slot + 1);
			field_u(&s->scratch, 3, addr);
		}
		put(&s->scratch, line.p, line.n);
		s->scratch.oom |= line.oom;
		free(line.p);
		field_msg(&s->out, 4, &s->scratch);
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

/* The time since this thread's previous sample, 0 for its first. */
static uint64_t sample_interval(struct pprof *s, const struct relstack_record *rec)
{
	uint64_t d;

	for (size_t i = 0; i < s->nthreads; i++) {
		if (s->threads[i].tid != rec->tid)
			continue;
		d = rec->time_ns - s->threads[i].last;
		s->threads[i].last = rec->time_ns;
		return d;
	}
	if ((s->nthreads & (s->nthreads - 1)) == 0) {
		void *more = realloc(s->threads, (s->nthreads ? 2 * s->nthreads : 1) * sizeof(*s->threads));

		if (!more) {
			s->oom = true;
			return 0;
		}
		s->threads = more;
	}
	s->threads[s->nthreads].tid = rec->tid;
	s->threads[s->nthreads++].last = rec->time_ns;
	return 0;
}

static int pprof_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct pprof *s = p->state;
	uint64_t *loc = malloc((dr->nframes + 1) * sizeof(*loc));
	size_t n = 0;
	bool is_sample = dr->rec->event_name && strcmp(dr->rec->event_name, "sample") == 0;
	char key[64];
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
	/* the event is the root of the stack, as in the folded format */
	{
		struct rs_func fn = { .name = dr->event };
		bool fadded;
		uint64_t fid, lid;

		snprintf(key, sizeof(key), "event:%s", dr->event);
		lid = rs_intern(&s->locations, key, s->nlocations + 1, &fadded, &s->oom);
		if (fadded) {
			s->nlocations++;
			fid = function_id(s, &fn);
			field_u(&s->scratch2, 1, fid);
			field_u(&s->scratch, 1, lid);
			field_msg(&s->scratch, 4, &s->scratch2);
			field_msg(&s->out, 4, &s->scratch);
		}
		loc[n++] = lid;
	}
	if (is_sample) {
		uint64_t d = sample_interval(s, dr->rec);

		if (d && s->ninterval == s->capinterval) {
			size_t cap = s->capinterval ? 2 * s->capinterval : 256;
			uint64_t *more = realloc(s->interval, cap * sizeof(*more));

			if (!more) {
				free(loc);
				return -ENOMEM;
			}
			s->interval = more;
			s->capinterval = cap;
		}
		if (d)
			s->interval[s->ninterval++] = d;
	}
	/* aggregate identical stacks (and events): the key is the location list */
	{
		size_t klen = n * sizeof(*loc);
		char *k = malloc(2 * klen + 2);

		if (!k) {
			free(loc);
			return -ENOMEM;
		}
		for (size_t i = 0; i < klen; i++)
			snprintf(k + 2 * i, 3, "%02x", ((const uint8_t *)loc)[i]);
		k[2 * klen] = is_sample ? 's' : 'e';
		k[2 * klen + 1] = '\0';
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
	field_u(&s->scratch, 1, str_id(s, type));
	field_u(&s->scratch, 2, str_id(s, unit));
	field_msg(&s->out, field, &s->scratch);
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int pprof_finish(struct relstack_presenter *p)
{
	struct pprof *s = p->state;
	uint64_t period = p->o.sample_period_ns;
	bool cpu = false;

	for (size_t i = 0; i < s->nsample && !cpu; i++)
		cpu = s->sample[i].cpu != 0;
	if (!period && cpu && s->ninterval) {
		qsort(s->interval, s->ninterval, sizeof(*s->interval), cmp_u64);
		period = s->interval[s->ninterval / 2];
	}
	if (!period)
		period = 1;
	value_type(s, 1, "samples", "count");
	if (cpu) {
		value_type(s, 1, "cpu", "nanoseconds");
		value_type(s, 11, "cpu", "nanoseconds");
		field_u(&s->out, 12, period);
	}
	for (size_t i = 0; i < s->nsample; i++) {
		struct buf *m = &s->scratch, *packed = &s->scratch2;

		for (size_t k = 0; k < s->sample[i].n; k++)
			varint(packed, s->sample[i].loc[k]);
		field_msg(m, 1, packed);
		varint(packed, s->sample[i].count);
		if (cpu)
			varint(packed, s->sample[i].cpu * period);
		field_msg(m, 2, packed);
		field_msg(&s->out, 2, m);
	}
	for (size_t i = 0; i < s->nmap; i++) {
		struct mapping *mp = &s->map[i];
		struct buf *m = &s->scratch;

		if (!mp->used)
			continue;
		field_u(m, 1, i + 1);
		field_u(m, 2, (uint64_t)(i + 1) << 40);
		field_u(m, 3, ((uint64_t)(i + 1) << 40) + mp->limit);
		field_u(m, 5, str_id(s, mp->path));
		field_u(m, 6, str_id(s, mp->build_id));
		field_u(m, 7, 1);
		field_u(m, 8, 1);
		field_u(m, 9, 1);
		field_u(m, 10, 1);
		field_msg(&s->out, 3, m);
	}
	if (p->has_run) {
		field_u(&s->out, 9, p->run.realtime_ns);
		if (p->run.close_monotonic_ns > p->run.monotonic_ns)
			field_u(&s->out, 10, p->run.close_monotonic_ns - p->run.monotonic_ns);
	}
	if (s->oom || s->out.oom || s->scratch.oom || s->scratch2.oom)
		return -ENOMEM;
	return gzip_write(p->f, s->out.p, s->out.n);
}

static void pprof_free(struct relstack_presenter *p)
{
	struct pprof *s = p->state;

	if (!s)
		return;
	free(s->out.p);
	free(s->scratch.p);
	free(s->scratch2.p);
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
	free(s->threads);
	free(s->interval);
	free(s);
}

const struct rs_presenter_ops rs_present_pprof = {
	.init = pprof_init, .record = pprof_record, .finish = pprof_finish, .free = pprof_free,
};
