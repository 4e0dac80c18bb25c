// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The reader: a buffer file, validated from the outside in.
 *
 * Each part is copied into memory of its own before it is checked, so
 * nothing changes under the checks (a live writer, a file truncated
 * while read), and only the parts the reader checks and keeps are read.
 * Then, in order:
 *
 *   1  the file head: magic, version, size, checksum, format descriptor,
 *      geometry, and the file's real size against the geometry
 *      (rs_file_head_check(), which the recorder runs too);
 *   2  each run head: magic, checksum, state, version, generation, mode,
 *      then every offset and size of the run's parts, each against the
 *      area and against the parts before it (rs_run_head_check(), by
 *      which the recorder also decides which area holds a run); the
 *      dynamic part's fields no record depends on are said, not fatal;
 *   3  the run's object table image (rs_objtab_image_check; its records
 *      are checked one by one when used) and its schemas, one by one;
 *   4  the ring, write area by write area: the area's `head` against its
 *      records (it has no checksum: scan_window()), then every record,
 *      from the oldest position the area can still hold to its head, and
 *      last the records of all areas merged by time (ring-write.c
 *      explains the areas, and the steps A..D
 *      a record head reflects).  A record is accepted only if its pos is
 *      its own position (B happened), its commit is not 0 (D happened)
 *      and equals the checksum, and its body fits its length.
 *
 * A record's time is in the run's clock (the run head says which); the
 * cursor turns counter ticks into CLOCK_MONOTONIC with the run head's
 * anchors (ring-clock.c), which are checked like the rest of the head.
 *
 * A failed check in 1 refuses the file; in 2 it drops the run; in 3 the
 * schema or the object table; in 4 the record.  Each check has its own
 * message.  Positions where no record head is found are counted as gap
 * bytes and skipped 16 bytes at a time until a record head appears.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/objtab.h"
#include "opts-local.h"
#include "relstack/reader.h"
#include "relstack/recorder.h"
#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "ring/ring.h"

#define RS_READ_MAX (8ull << 30) /* bigger than any file a recorder makes */

/* A valid record: its area, its position there, and its time (the cursor's order). */
struct rec_ref {
	uint64_t time, pos;
	uint32_t area;
};

struct run_view {
	bool valid;
	char err[200];
	unsigned area;
	struct rs_run_head h;
	uint32_t key[RS_NH_KEYS];     /* the run's record checksum key */
	unsigned char *ring;          /* copies of the run's ring, object table image and stack table */
	unsigned char *objtab;
	size_t objtab_size;
	unsigned char *stk;           /* NULL: a version 3 run, no stack table */
	struct rs_stack_geo sg;
	uint64_t stk_entries, stk_bad, stk_refs, stk_inline;
	unsigned objtab_cap;          /* 0: image damaged */
	struct relstack_schema schema[RS_SCHEMAS];
	unsigned nschemas;
	int8_t by_id[RS_SCHEMAS];
	uint64_t asize;               /* bytes of one write area */
	struct rec_ref *pos;          /* valid records, by time */
	size_t npos, cappos;
	uint64_t skipped, partial, damaged, malformed, gap_bytes;
	char rec_err[320];            /* the first damaged or malformed record */
};

struct relstack_reader {
	struct rs_file_head fh;
	struct rs_run_head layout;    /* the parts of a run, as the file head's geometry makes them */
	struct run_view run[RS_RUNS];
	int which[2];                 /* area of the current and previous run, -1 */
	unsigned nruns;
	bool locked;                  /* a recorder held the file's lock when it was read */
};

struct relstack_cursor {
	const struct relstack_reader *r;
	const struct run_view *v;
	enum relstack_run_which which;
	size_t i;
	uint64_t words[RS_MAX_WORDS];
	unsigned char fields[RS_MAX_FIELDS_SIZE];
};

static void say(const struct relstack_reader_opts *o, const char *name, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!o || o->sz < offsetof(struct relstack_reader_opts, errbuf_sz) + sizeof(size_t) || !o->errbuf ||
	    !o->errbuf_sz)
		return;
	n = snprintf(o->errbuf, o->errbuf_sz, "%s: ", name);
	if (n < 0 || (size_t)n >= o->errbuf_sz)
		return;
	va_start(ap, fmt);
	vsnprintf(o->errbuf + n, o->errbuf_sz - (size_t)n, fmt, ap);
	va_end(ap);
}

/* ---- 1: the file head ---- */

static int head_fail(char *msg, size_t msgsz, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int head_fail(char *msg, size_t msgsz, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, msgsz, fmt, ap);
	va_end(ap);
	return code;
}

/*
 * The one check of a file head, for the reader and the recorder alike.
 * @mem holds the first min(@file_bytes, sizeof(*f)) bytes of a file of
 * @file_bytes bytes.  Fills *f and the run geometry *layout; returns 0 or
 * -RELSTACK_E* with "offset 0x...: field: problem" in @msg.
 */
int rs_file_head_check(const void *mem, uint64_t file_bytes, struct rs_file_head *f, struct rs_run_head *layout,
		       char *msg, size_t msgsz)
{
	const char *field;
	uint64_t area;

	if (file_bytes < 8 || memcmp(mem, RS_FILE_MAGIC, 8) != 0)
		return head_fail(msg, msgsz, -RELSTACK_EMAGIC, "offset 0x0 (magic): not a relstack buffer file");
	if (file_bytes < sizeof(*f))
		return head_fail(msg, msgsz, -RELSTACK_ETRUNCATED, "offset 0x%llx: file ends inside the %zu-byte file head",
				 (unsigned long long)file_bytes, sizeof(*f));
	memcpy(f, mem, sizeof(*f));
	if (f->version != RS_FILE_VERSION && f->version != RS_FILE_VERSION_PREV)
		return head_fail(msg, msgsz, -RELSTACK_EVERSION,
				 "offset 0x8 (version): version %u, this reader reads versions %u and %u", f->version,
				 RS_FILE_VERSION_PREV, RS_FILE_VERSION);
	if (f->head_size != sizeof(*f))
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0xc (head_size): %u, expected %zu",
				 f->head_size, sizeof(*f));
	if (f->head_hash != rs_hash32(RS_HASH32_INIT, f, offsetof(struct rs_file_head, head_hash)))
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0x80 (head_hash): file head checksum mismatch");
	if (relstack_format__validate(&f->format, &field) < 0)
		return head_fail(msg, msgsz, -RELSTACK_EFORMAT, "offset 0x10 (format descriptor): %s",
				 field ? field : "invalid");
	if (f->format.byte_order != RELSTACK_LITTLE_ENDIAN)
		return head_fail(msg, msgsz, -RELSTACK_EFORMAT,
				 "offset 0x11 (format.byte_order): big-endian buffers are not read");
	if (f->runs != RS_RUNS)
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0x50 (runs): %u, expected %u", f->runs, RS_RUNS);
	if (f->ring_size < RS_MIN_RING || f->ring_size > RS_MAX_RING || (f->ring_size & (f->ring_size - 1)))
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT,
				 "offset 0x78 (ring_size): %llu is not a power of two in [%u KiB, 1 GiB]",
				 (unsigned long long)f->ring_size, RS_MIN_RING >> 10);
	if (f->objtab_capacity < 1 || f->objtab_capacity > RS_OBJTAB_SLOTS)
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0x54 (objtab_capacity): %u is not in [1, %u]",
				 f->objtab_capacity, RS_OBJTAB_SLOTS);
	memset(layout, 0, sizeof(*layout));
	layout->version = f->version; /* version 3 runs have no stack table */
	rs_run_layout(f->ring_size, f->objtab_capacity, layout, &area);
	if (f->run_area_size != area)
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT,
				 "offset 0x58 (run_area_size): %llu, the ring and object table make %llu",
				 (unsigned long long)f->run_area_size, (unsigned long long)area);
	for (unsigned i = 0; i < RS_RUNS; i++)
		if (f->run_offset[i] != RS_BLOCK + i * f->run_area_size)
			return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0x%zx (run_offset[%u]): 0x%llx, expected 0x%llx",
					 offsetof(struct rs_file_head, run_offset) + 8 * i, i,
					 (unsigned long long)f->run_offset[i],
					 (unsigned long long)(RS_BLOCK + i * f->run_area_size));
	if (f->file_size != RS_BLOCK + RS_RUNS * f->run_area_size)
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0x70 (file_size): %llu does not match the run areas",
				 (unsigned long long)f->file_size);
	if (f->flags & ~RS_FILE_ADDRESSES)
		return head_fail(msg, msgsz, -RELSTACK_ECORRUPT, "offset 0x84 (flags): unknown flags 0x%x", f->flags);
	if (file_bytes < f->file_size)
		return head_fail(msg, msgsz, -RELSTACK_ETRUNCATED, "file is %llu bytes, its head says %llu: truncated",
				 (unsigned long long)file_bytes, (unsigned long long)f->file_size);
	return 0;
}

/* ---- 2: run heads ---- */

#define RUN_FAIL(off, ...)                                                                      \
	do {                                                                                    \
		int n_ = snprintf(err, errsz, "run area %u, offset 0x%llx: ", area,             \
				  (unsigned long long)(at + (off)));                            \
		if (n_ > 0 && (size_t)n_ < errsz)                                               \
			snprintf(err + n_, errsz - (size_t)n_, __VA_ARGS__);                    \
		return -1;                                                                      \
	} while (0)

static bool span_ok(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi)
{
	return off >= lo && off <= hi && len <= hi - off;
}

/*
 * The one check of a run head (its static part and the fields of the
 * dynamic part a run cannot do without), for the reader and the recorder
 * alike: the recorder counts as a run exactly what a reader accepts.
 * @h is run area @area, at file offset @at, of a file whose run geometry is
 * @layout.  Returns 1 (a run), 0 (never used: no run, no error) or -1 with
 * "run area N, offset 0x...: problem" in @err.
 */
int rs_run_head_check(const struct rs_run_head *h, const struct rs_run_head *layout, unsigned area, uint64_t at,
		      char *err, size_t errsz)
{
	const struct rs_run_head *L = layout;
	static const unsigned char zero[8];

	if (memcmp(h->magic, zero, 8) == 0 && h->generation == 0)
		return 0;
	if (memcmp(h->magic, RS_RUN_MAGIC, 8) != 0)
		RUN_FAIL(0, "run head magic: not %s", RS_RUN_MAGIC);
	if (h->state == 0 && h->head_hash == 0)
		RUN_FAIL(200, "run head: a run was being started here when its writer stopped");
	if (h->head_hash != rs_hash32(RS_HASH32_INIT, h, offsetof(struct rs_run_head, head_hash)))
		RUN_FAIL(200, "run head checksum mismatch");
	if (h->state == 0)
		RUN_FAIL(204, "state 0: a run was being started here when its writer stopped");
	if (h->state != RS_RUN_ACTIVE && h->state != RS_RUN_CLOSED)
		RUN_FAIL(204, "state %u unknown", h->state);
	if (h->version != L->version)
		RUN_FAIL(8, "run version %u, the file head says %u", h->version, L->version);
	if (h->head_size != sizeof(*h))
		RUN_FAIL(12, "run head_size %u, expected %zu", h->head_size, sizeof(*h));
	if (h->generation == 0 || h->generation >= (1ull << 24))
		RUN_FAIL(16, "generation %llu out of range", (unsigned long long)h->generation);
	if (h->base != h->generation << 40)
		RUN_FAIL(104, "base 0x%llx is not generation << 40", (unsigned long long)h->base);
	if (h->clock != RS_CLOCK_MONOTONIC && h->clock != RS_CLOCK_TSC)
		RUN_FAIL(172, "clock %u unknown", h->clock);
	if (h->clock == RS_CLOCK_MONOTONIC && (h->tsc_start || h->tsc_hz))
		RUN_FAIL(176, "counter anchor set, but records carry CLOCK_MONOTONIC");
	if (h->clock == RS_CLOCK_TSC && (h->tsc_hz < RS_TSC_HZ_MIN || h->tsc_hz > RS_TSC_HZ_MAX))
		RUN_FAIL(184, "counter rate %llu Hz out of range", (unsigned long long)h->tsc_hz);
	if (h->mode != RS_MODE_OVERWRITE && h->mode != RS_MODE_STOP)
		RUN_FAIL(76, "mode %u unknown", h->mode);
	if (h->flags & ~RS_RUN_ADDRESSES)
		RUN_FAIL(80, "unknown run flags 0x%x", h->flags);
	if (h->chunk_size != RS_CHUNK)
		RUN_FAIL(84, "chunk_size %u, expected %u", h->chunk_size, RS_CHUNK);
	if (h->ring_size != L->ring_size)
		RUN_FAIL(96, "ring_size %llu, the file head says %llu", (unsigned long long)h->ring_size,
			 (unsigned long long)L->ring_size);
	if (h->schema_offset != L->schema_offset || h->schema_capacity != RS_SCHEMAS ||
	    h->schema_size != sizeof(struct rs_schema))
		RUN_FAIL(112, "schema table at 0x%llx, %u x %u bytes: expected 0x%llx, %u x %zu",
			 (unsigned long long)h->schema_offset, h->schema_capacity, h->schema_size,
			 (unsigned long long)L->schema_offset, RS_SCHEMAS, sizeof(struct rs_schema));
	if (h->states_offset != L->states_offset)
		RUN_FAIL(128, "chunk states at 0x%llx, expected 0x%llx", (unsigned long long)h->states_offset,
			 (unsigned long long)L->states_offset);
	if (h->objtab_offset != L->objtab_offset || h->objtab_size != L->objtab_size)
		RUN_FAIL(136, "object table at 0x%llx, %llu bytes: expected 0x%llx, %llu bytes",
			 (unsigned long long)h->objtab_offset, (unsigned long long)h->objtab_size,
			 (unsigned long long)L->objtab_offset, (unsigned long long)L->objtab_size);
	if (h->ring_offset != L->ring_offset || !span_ok(h->ring_offset, h->ring_size, 0, L->ring_offset + L->ring_size))
		RUN_FAIL(88, "ring at 0x%llx, expected 0x%llx", (unsigned long long)h->ring_offset,
			 (unsigned long long)L->ring_offset);
	if (!h->areas || h->areas > RS_MAX_AREAS || (h->areas & (h->areas - 1)) ||
	    h->ring_size / h->areas < RS_MIN_AREA_CHUNKS * RS_CHUNK)
		RUN_FAIL(192, "%u write areas: not a power of two up to %u with %u chunks each", h->areas,
			 RS_MAX_AREAS, RS_MIN_AREA_CHUNKS);
	if (h->reserved1)
		RUN_FAIL(196, "reserved field not zero");
	for (uint32_t a = 0; a < h->areas; a++) {
		uint64_t hd = h->area[a].head;

		if (hd < h->base || (hd - h->base) % RS_CHUNK || hd - h->base >= (1ull << 40))
			RUN_FAIL(offsetof(struct rs_run_head, area) + 64 * a,
				 "head of write area %u, 0x%llx, is not a chunk position of this run", a,
				 (unsigned long long)hd);
	}
	return 1;
}

/* Where a reader's bytes come from: a caller's buffer, or a file, read part by part. */
struct source {
	const unsigned char *mem; /* NULL: fd */
	int fd;
	uint64_t size;
	const char *name;
	const struct relstack_reader_opts *o;
};

/* @n bytes at @off of the source (within its size: the checks before say so); 0 or -errno, said. */
static int src_read(const struct source *s, uint64_t off, void *dst, size_t n)
{
	if (s->mem) {
		memcpy(dst, s->mem + off, n);
		return 0;
	}
	for (size_t got = 0; got < n;) {
		ssize_t k = pread(s->fd, (char *)dst + got, n - got, (off_t)(off + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int err = errno;

			say(s->o, s->name, "read error at offset 0x%llx: %s", (unsigned long long)(off + got), strerror(err));
			return -err;
		}
		if (k == 0) {
			say(s->o, s->name, "offset 0x%llx: the file ends there, it was cut while being read",
			    (unsigned long long)(off + got));
			return -RELSTACK_ETRUNCATED;
		}
		got += (size_t)k;
	}
	return 0;
}

/* A copy of @n bytes at @off of the source into *out (malloc'd). */
static int src_copy(const struct source *s, uint64_t off, size_t n, unsigned char **out)
{
	*out = malloc(n ? n : 1);
	return *out ? src_read(s, off, *out, n) : -ENOMEM;
}

/* The run head of area @v->area; then, for a run, the copies the later checks and the cursor read. */
static int read_run(const struct relstack_reader *r, const struct source *src, struct run_view *v)
{
	uint64_t at = r->fh.run_offset[v->area];
	int ret = src_read(src, at, &v->h, sizeof(v->h));

	if (ret < 0)
		return ret;
	v->valid = rs_run_head_check(&v->h, &r->layout, v->area, at, v->err, sizeof(v->err)) > 0;
	if (!v->valid)
		return 0;
	v->asize = v->h.ring_size / v->h.areas;
	rs_nh_keys(v->h.seed, v->key);
	v->objtab_size = v->h.objtab_size;
	ret = src_copy(src, at + v->h.objtab_offset, v->objtab_size, &v->objtab);
	if (ret == 0 && v->h.version != RS_FILE_VERSION_PREV) {
		v->sg = rs_stack_geo(v->h.ring_size);
		ret = src_copy(src, at + v->h.objtab_offset + v->h.objtab_size, v->sg.size, &v->stk);
	}
	if (ret == 0)
		ret = src_copy(src, at + v->h.ring_offset, v->h.ring_size, &v->ring);
	return ret;
}

/* The dynamic part's fields no record depends on: damage there is said, the run is kept. */
static void check_run_counters(struct run_view *v, uint64_t at)
{
	const struct rs_run_head *h = &v->h;
	const char *why = NULL;
	unsigned off = 0;

	if (h->reserved0) {
		off = offsetof(struct rs_run_head, reserved0);
		why = "reserved field not zero";
	} else if (h->state == RS_RUN_CLOSED && h->close_monotonic_ns < h->monotonic_ns) {
		off = offsetof(struct rs_run_head, close_monotonic_ns);
		why = "closed before it started: close time damaged";
	}
	if (why && !v->err[0])
		snprintf(v->err, sizeof(v->err), "run area %u, offset 0x%llx: %s", v->area,
			 (unsigned long long)(at + off), why);
}

/* ---- 3: object table and schemas ---- */

static void check_objtab(struct run_view *v, uint64_t at)
{
	const char *why;

	static const unsigned char zero[sizeof(struct rs_objtab_image_head)];

	/* the run start clears the image; the recorder's open writes it after the run exists */
	if (v->objtab_size >= sizeof(zero) && memcmp(v->objtab, zero, sizeof(zero)) == 0) {
		snprintf(v->err, sizeof(v->err), "run area %u, offset 0x%llx: object table image not written: "
			 "the writer stopped while opening the run", v->area, (unsigned long long)(at + v->h.objtab_offset));
		return;
	}
	if (rs_objtab_image_check(v->objtab, v->objtab_size, &why) < 0) {
		snprintf(v->err, sizeof(v->err), "run area %u, offset 0x%llx: %s", v->area,
			 (unsigned long long)(at + v->h.objtab_offset), why);
		return;
	}
	v->objtab_cap = ((const struct rs_objtab_image_head *)v->objtab)->capacity;
}

static const char *schema_problem(const struct rs_schema *s, unsigned index)
{
	if (s->seq & 1)
		return "writer stopped while defining it";
	if (s->seq != 2)
		return "unknown seq value";
	if (s->hash != rs_hash32(RS_HASH32_INIT, (const char *)s + 8, sizeof(*s) - 8))
		return "checksum mismatch";
	if (s->id != index)
		return "id does not match its position";
	if (s->nfields > RS_SCHEMA_FIELDS)
		return "more fields than the table holds";
	if (s->flags)
		return "flags not zero";
	if (s->size > RS_MAX_FIELDS_SIZE)
		return "fields size too large";
	if (!memchr(s->name, 0, sizeof(s->name)) || !s->name[0])
		return "name empty or not terminated";
	for (unsigned i = 0; i < s->nfields; i++) {
		const struct rs_schema_field *f = &s->field[i];

		if (!memchr(f->name, 0, sizeof(f->name)) || !f->name[0])
			return "field name empty or not terminated";
		if ((unsigned)f->offset + f->size > s->size || f->size == 0)
			return "field beyond the event's fields";
		if (f->type < RELSTACK_FIELD_UNSIGNED || f->type > RELSTACK_FIELD_BYTES)
			return "field type unknown";
		if (f->reserved[0] | f->reserved[1] | f->reserved[2])
			return "field reserved bytes not zero";
		if (f->type != RELSTACK_FIELD_STRING && f->type != RELSTACK_FIELD_BYTES &&
		    f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
			return "integer field of a size other than 1, 2, 4, 8";
	}
	return NULL;
}

static void check_schemas(struct run_view *v, const unsigned char *table)
{
	memset(v->by_id, -1, sizeof(v->by_id));
	for (unsigned i = 0; i < RS_SCHEMAS; i++) {
		struct rs_schema s;
		struct relstack_schema *o;
		const char *why;

		memcpy(&s, table + i * sizeof(s), sizeof(s));
		if (s.seq == 0)
			continue;
		why = schema_problem(&s, i);
		if (why) {
			if (!v->err[0])
				snprintf(v->err, sizeof(v->err), "run area %u, offset 0x%llx: schema %u: %s", v->area,
					 (unsigned long long)(v->h.schema_offset + i * sizeof(s)), i, why);
			continue;
		}
		o = &v->schema[v->nschemas];
		memset(o, 0, sizeof(*o));
		o->id = i;
		memcpy(o->name, s.name, sizeof(o->name));
		o->size = s.size;
		o->nfields = s.nfields;
		for (unsigned k = 0; k < s.nfields; k++) {
			memcpy(o->field[k].name, s.field[k].name, sizeof(o->field[k].name));
			o->field[k].offset = s.field[k].offset;
			o->field[k].size = s.field[k].size;
			o->field[k].type = s.field[k].type;
		}
		v->by_id[i] = (int8_t)v->nschemas++;
	}
}

/* ---- 4: records ---- */

/* Why the body of a committed record is not acceptable, or NULL. */
static const char *body_problem(bool stack_table, const struct rs_rec_head *h, const struct rs_rec_body *b,
				size_t len, unsigned ws)
{
	if (h->kind < RS_REC_STACK_REL || h->kind > (stack_table ? RS_REC_STACK_REF : RS_REC_EVENT))
		return "unknown kind";
	if (h->kind == RS_REC_STACK_REF)
		ws = 0; /* the reference, not the words, is in the record */
	if (h->flags & ~(stack_table ? RS_REC_F_INTERRUPTED : 0u))
		return "unknown flags";
	if (len < RS_REC_FIXED)
		return "shorter than a record";
	if (b->nwords > RS_MAX_WORDS || b->fields_size > RS_MAX_FIELDS_SIZE)
		return "more words or fields than a record holds";
	if (RS_REC_FIXED + (ws ? (size_t)b->nwords * ws : RS_STACK_REF_SIZE) + b->fields_size > len)
		return "words and fields beyond the record";
	if (h->kind == RS_REC_STACK_REF && !b->nwords)
		return "stack reference to a stack of no words";
	if (h->kind == RS_REC_EVENT && b->nwords)
		return "event record with words";
	if (b->reserved)
		return "reserved not zero";
	return NULL;
}

/*
 * Why the stack table entry that reference @ref (of a kind 5 record, or
 * of an index slot) names is not a whole entry of @depth words with the
 * checksum @ref names, or NULL; *@off gets its offset in the arena.
 */
static const char *stack_problem(const struct run_view *v, unsigned ws, uint64_t ref, unsigned depth,
				 uint64_t *off)
{
	const unsigned char *arena = v->stk + v->sg.arena_off;
	struct rs_stack_entry e;
	size_t len;

	*off = (ref & 0xffffffffu) * 16;
	if (*off + sizeof(e) > v->sg.arena_size)
		return "names a stack table entry beyond the arena";
	memcpy(&e, arena + *off, sizeof(e));
	if (e.sum == 0)
		return "stack table entry not written (its writer stopped before its checksum)";
	if (e.tag != (RS_STACK_TAG | *off))
		return "stack table entry: tag is not its own offset";
	len = (sizeof(e) + (size_t)e.nwords * ws + 15) & ~(size_t)15;
	if (e.nwords == 0 || e.nwords > RS_MAX_WORDS || e.units != len / 16 || *off + len > v->sg.arena_size)
		return "stack table entry: length does not fit its words or the arena";
	if (e.sum != rs_rec_sum(v->h.seed, v->key, e.tag, arena + *off, len))
		return "stack table entry: checksum mismatch";
	if (e.sum != (uint32_t)(ref >> 32))
		return "stack table entry is not the one named (checksum differs)";
	if (e.nwords != depth)
		return "stack table entry: depth differs from the record's";
	return NULL;
}

/* The index's slots: entries that pass stack_problem(), and those that do not. */
static void scan_stack_index(struct run_view *v, unsigned ws)
{
	const unsigned char *index = v->stk + v->sg.index_off;

	for (uint64_t i = 0; i < v->sg.buckets; i++) {
		uint64_t s, off;
		struct rs_stack_entry e;

		memcpy(&s, index + 8 * i, 8);
		if (!s)
			continue;
		off = ((s & 0xffffffffu) - 1) * 16;
		if ((s & 0xffffffffu) == 0 || off + sizeof(e) > v->sg.arena_size) {
			v->stk_bad++;
			continue;
		}
		memcpy(&e, v->stk + v->sg.arena_off + off, sizeof(e));
		if (stack_problem(v, ws, (uint64_t)e.sum << 32 | off / 16, e.nwords, &off))
			v->stk_bad++;
		else
			v->stk_entries++;
	}
}

static int add_pos(struct run_view *v, uint32_t a, uint64_t p, uint64_t time)
{
	if (v->npos == v->cappos) {
		size_t n = v->cappos ? v->cappos * 2 : 256;
		struct rec_ref *np = realloc(v->pos, n * sizeof(*np));

		if (!np)
			return -ENOMEM;
		v->pos = np;
		v->cappos = n;
	}
	v->pos[v->npos++] = (struct rec_ref){ time, p, a };
	return 0;
}

static void bad_record(const struct relstack_reader *r, struct run_view *v, uint32_t a, uint64_t p,
		       const char *what)
{
	const struct rs_run_head *h = &v->h;

	if (v->rec_err[0])
		return;
	snprintf(v->rec_err, sizeof(v->rec_err),
		 "run area %u, offset 0x%llx: record at position +0x%llx of write area %u: %s", v->area,
		 (unsigned long long)(r->fh.run_offset[v->area] + h->ring_offset + a * v->asize +
				      ((p - h->base) & (v->asize - 1))),
		 (unsigned long long)(p - h->base), a, what);
}

enum rec_kind { REC_NONE, REC_PARTIAL, REC_TOO_LONG, REC_BAD_SUM, REC_PAD, REC_WHOLE };

/* A run's ring as the walks over it need it, in locals (the walks are the reader's hot loops). */
struct ring_view {
	const unsigned char *ring;
	uint64_t base, mask;
	uint32_t seed;
	const uint32_t *key;
};

/* Write area @a of the run. */
static struct ring_view ring_view(const struct run_view *v, uint32_t a)
{
	return (struct ring_view){ v->ring + a * v->asize, v->h.base, v->asize - 1, v->h.seed, v->key };
}

/* What the ring holds at position @p of the run: no record head, or a record of *len bytes and its state. */
static inline enum rec_kind rec_at(struct ring_view g, uint64_t p, size_t *len)
{
	uint64_t off = (p - g.base) & g.mask, pos;
	struct rs_rec_head rh;

	memcpy(&pos, g.ring + off, sizeof(pos));
	if (pos != p) /* most positions of a gap: the walk steps over them 16 bytes at a time */
		return REC_NONE;
	memcpy(&rh, g.ring + off, sizeof(rh));
	*len = (size_t)rh.units * 16;
	if (rh.units == 0 || off % RS_CHUNK + *len > RS_CHUNK)
		return REC_NONE;
	if (rh.commit == 0)
		return REC_PARTIAL; /* B happened, D did not */
	if (rh.kind != RS_REC_PAD && *len > RS_MAX_RECORD)
		return REC_TOO_LONG; /* no writer makes one: the length is damaged (the checksum key does not reach) */
	/* a PAD record's checksum covers its head only: the rest is not written */
	if (rh.commit != rs_rec_sum(g.seed, g.key, p, g.ring + off, rh.kind == RS_REC_PAD ? RS_REC_HEAD : *len))
		return REC_BAD_SUM;
	return rh.kind == RS_REC_PAD ? REC_PAD : REC_WHOLE;
}

/* The first position from @p to @hi whose 8 bytes could be its own position: where a gap may end. */
static inline uint64_t gap_end(struct ring_view g, uint64_t p, uint64_t hi)
{
	for (; p < hi; p += 16) {
		uint64_t pos;

		memcpy(&pos, g.ring + ((p - g.base) & g.mask), sizeof(pos));
		if (pos == p)
			break;
	}
	return p < hi ? p : hi;
}

/*
 * The newest chunk the records show: the largest position, at the start
 * of a chunk, of a record whose checksum holds (it covers the position)
 * or of a partial one.  0 if no chunk of the run starts with a record.
 */
static uint64_t newest_chunk(const struct run_view *v, uint32_t a)
{
	const struct rs_run_head *h = &v->h;
	const unsigned char *ring = v->ring + a * v->asize;
	uint64_t top = 0;

	for (uint64_t off = 0; off < v->asize; off += RS_CHUNK) {
		uint64_t p;
		struct rs_rec_head rh;
		size_t len;
		enum rec_kind k;

		memcpy(&rh, ring + off, sizeof(rh));
		p = rh.pos;
		/* a position of this run that is this chunk's, above the newest so far */
		if (p < h->base || p - h->base >= (1ull << 40) || ((p - h->base) & (v->asize - 1)) != off || p <= top)
			continue;
		k = rec_at(ring_view(v, a), p, &len);
		if (k == REC_PARTIAL || k == REC_PAD || k == REC_WHOLE)
			top = p;
	}
	return top;
}

/* Records whose checksum holds, from @lo to @hi. */
static uint64_t count_whole(const struct run_view *v, uint32_t a, uint64_t lo, uint64_t hi)
{
	struct ring_view g = ring_view(v, a);
	uint64_t n = 0;
	size_t len;

	for (uint64_t p = lo; p < hi;) {
		enum rec_kind k = rec_at(g, p, &len);

		n += k == REC_WHOLE;
		p = k == REC_NONE ? gap_end(g, p + 16, hi) : p + (k == REC_TOO_LONG || k == REC_BAD_SUM ? 16 : len);
	}
	return n;
}

/*
 * Which positions to read: from the oldest the run can still hold to
 * `head`.  head has no checksum (every reservation moves it), so it is
 * checked against the records: a chunk that starts with a record at or
 * beyond head, or head a whole ring past the newest such chunk, or
 * intact records below the window head makes, say it is wrong.  Reading
 * then goes up to the newest chunk the records show, and the run says so.
 */
static void scan_window(const struct relstack_reader *r, struct run_view *v, uint32_t a, uint64_t *lo,
			uint64_t *hi)
{
	const struct rs_run_head *h = &v->h;
	const uint64_t head = h->area[a].head, size = v->asize;
	uint64_t top = newest_chunk(v, a), end = top ? top + RS_CHUNK : h->base,
		 at = r->fh.run_offset[v->area] + offsetof(struct rs_run_head, area) + 64 * a;
	char why[160] = "";
	int n0;

	*hi = head;
	if (end > head) {
		/* a recorder still writing moved on after head was read: not damage */
		if (!r->locked)
			snprintf(why, sizeof(why), "head +0x%llx is below the chunk at +0x%llx, which holds a record",
				 (unsigned long long)(head - h->base), (unsigned long long)(top - h->base));
		*hi = end;
	} else if (h->mode == RS_MODE_OVERWRITE && top && head - end >= size) {
		snprintf(why, sizeof(why), "head +0x%llx is a whole ring past the newest chunk with a record, at +0x%llx",
			 (unsigned long long)(head - h->base), (unsigned long long)(top - h->base));
		*hi = end;
	}
	*lo = h->base;
	if (h->mode == RS_MODE_STOP) {
		if (*hi - h->base > size)
			*hi = h->base + size;
	} else if (*hi - h->base > size) {
		uint64_t below = end > h->base + size ? end - size : h->base, n;

		*lo = *hi - size;
		if (*lo - below > size)
			below = *lo - size; /* a ring below lo: the window's own slots */
		/*
		 * Below lo, the slots of chunks reserved above the newest record are
		 * not overwritten yet: writers that died before their first record
		 * there, or a head too large.
		 */
		if (!why[0] && below < *lo && (n = count_whole(v, a, below, *lo)) > 0)
			snprintf(why, sizeof(why), "head +0x%llx leaves out %llu intact records below +0x%llx: head damaged, "
				 "or writers died after reserving the chunks above +0x%llx", (unsigned long long)(head - h->base),
				 (unsigned long long)n, (unsigned long long)(*lo - h->base), (unsigned long long)(end - h->base));
	}
	if (why[0] && !v->err[0]) {
		n0 = snprintf(v->err, sizeof(v->err), "run area %u, offset 0x%llx: write area %u: ", v->area,
			      (unsigned long long)at, a);
		if (n0 > 0 && (size_t)n0 < sizeof(v->err))
			snprintf(v->err + n0, sizeof(v->err) - (size_t)n0, "%s", why);
	}
}

/* By time; ties by area, then position (one area's order is its writers' order). */
static int ref_cmp(const void *x, const void *y)
{
	const struct rec_ref *a = x, *b = y;

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	if (a->area != b->area)
		return a->area < b->area ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static int scan_area(const struct relstack_reader *r, struct run_view *v, uint32_t a);

static int scan_records(const struct relstack_reader *r, struct run_view *v)
{
	for (uint32_t a = 0; a < v->h.areas; a++) {
		int ret = scan_area(r, v, a);

		if (ret < 0)
			return ret;
	}
	if (v->npos > 1)
		qsort(v->pos, v->npos, sizeof(*v->pos), ref_cmp);
	return 0;
}

static int scan_area(const struct relstack_reader *r, struct run_view *v, uint32_t a)
{
	struct ring_view g = ring_view(v, a);
	unsigned ws = r->fh.format.word_size;
	uint64_t lo, hi;
	size_t len;

	scan_window(r, v, a, &lo, &hi);
	for (uint64_t p = lo; p < hi;) {
		const unsigned char *d = g.ring + ((p - g.base) & g.mask);
		struct rs_rec_head rh;
		struct rs_rec_body b;
		const char *why;

		enum rec_kind k = rec_at(g, p, &len);

		switch (k) {
		case REC_NONE: {
			uint64_t q = gap_end(g, p + 16, hi);

			v->gap_bytes += q - p;
			p = q;
			continue;
		}
		case REC_PARTIAL:
			memcpy(&rh, d, sizeof(rh));
			if (rh.kind != RS_REC_PAD) {
				v->skipped++;
				v->partial++;
			}
			p += len;
			continue;
		case REC_TOO_LONG:
		case REC_BAD_SUM:
			v->skipped++;
			v->damaged++;
			bad_record(r, v, a, p, k == REC_TOO_LONG ? "longer than any record" : "checksum mismatch");
			v->gap_bytes += 16;
			p += 16;
			continue;
		case REC_PAD:
			p += len;
			continue;
		case REC_WHOLE:
			break;
		}
		memcpy(&rh, d, sizeof(rh));
		memset(&b, 0, sizeof(b));
		if (len >= RS_REC_FIXED)
			memcpy(&b, d + RS_REC_HEAD, sizeof(b));
		why = body_problem(v->stk != NULL, &rh, &b, len, ws);
		if (!why && rh.kind == RS_REC_STACK_REF) {
			uint64_t ref, off;
			const char *sp;

			memcpy(&ref, d + RS_REC_FIXED, sizeof(ref));
			sp = stack_problem(v, ws, ref, b.nwords, &off);
			if (sp) {
				char m[160];

				snprintf(m, sizeof(m), "entry +0x%llx of the stack table: %s", (unsigned long long)off, sp);
				v->skipped++;
				v->malformed++;
				bad_record(r, v, a, p, m);
				p += len;
				continue;
			}
			v->stk_refs++;
		} else if (!why && rh.kind == RS_REC_STACK_REL && b.nwords) {
			v->stk_inline++;
		}
		if (why) {
			v->skipped++;
			v->malformed++;
			bad_record(r, v, a, p, why);
		} else if (add_pos(v, a, p, b.time) < 0) {
			return -ENOMEM;
		}
		p += len;
	}
	return 0;
}

static void free_runs(struct relstack_reader *r)
{
	for (unsigned i = 0; i < RS_RUNS; i++) {
		free(r->run[i].pos);
		free(r->run[i].ring);
		free(r->run[i].objtab);
		free(r->run[i].stk);
	}
}

static struct relstack_reader *open_source(const struct source *src, bool locked)
{
	struct relstack_reader *r = calloc(1, sizeof(*r));
	unsigned char head[sizeof(struct rs_file_head)], *schemas = NULL;
	char msg[200];
	int ret;

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->locked = locked;
	r->which[0] = r->which[1] = -1;
	ret = src_read(src, 0, head, src->size < sizeof(head) ? (size_t)src->size : sizeof(head));
	if (ret < 0)
		goto fail;
	ret = rs_file_head_check(head, src->size, &r->fh, &r->layout, msg, sizeof(msg));
	if (ret < 0) {
		say(src->o, src->name, "%s", msg);
		goto fail;
	}
	for (unsigned i = 0; i < RS_RUNS; i++) {
		struct run_view *v = &r->run[i];

		v->area = i;
		ret = read_run(r, src, v);
		if (ret < 0)
			goto fail;
		if (!v->valid)
			continue;
		check_run_counters(v, r->fh.run_offset[i]);
		check_objtab(v, r->fh.run_offset[i]);
		ret = src_copy(src, r->fh.run_offset[i] + v->h.schema_offset, RS_SCHEMAS * sizeof(struct rs_schema),
			       &schemas);
		if (ret < 0)
			goto fail;
		check_schemas(v, schemas);
		free(schemas);
		schemas = NULL;
		ret = scan_records(r, v);
		if (ret < 0)
			goto fail;
		if (v->stk)
			scan_stack_index(v, r->fh.format.word_size);
	}
	for (unsigned i = 0; i < RS_RUNS; i++) {
		if (!r->run[i].valid)
			continue;
		r->nruns++;
		if (r->which[0] < 0 || r->run[i].h.generation > r->run[r->which[0]].h.generation) {
			r->which[1] = r->which[0];
			r->which[0] = (int)i;
		} else {
			r->which[1] = (int)i;
		}
	}
	if (r->nruns == 2 && r->run[0].h.generation == r->run[1].h.generation) {
		/* two runs claiming one generation: trust neither to be the current one */
		snprintf(r->run[1].err, sizeof(r->run[1].err), "run area 1: same generation as run area 0");
		r->run[1].valid = false;
		r->nruns = 1;
		r->which[0] = 0;
		r->which[1] = -1;
	}
	return r;
fail:
	free(schemas);
	free_runs(r);
	free(r);
	errno = -ret;
	return NULL;
}

struct relstack_reader *relstack_reader__open_mem(const void *buf, size_t size, const struct relstack_reader_opts *o)
{
	struct source src = { .mem = buf, .fd = -1, .size = size, .name = "(memory)", .o = o };

	if ((!buf && size) || !rs_opts_valid(o, sizeof(*o))) {
		errno = EINVAL;
		return NULL;
	}
	if (!buf)
		src.mem = (const unsigned char *)"";
	return open_source(&src, false);
}

struct relstack_reader *relstack_reader__open(const char *path, const struct relstack_reader_opts *o)
{
	struct stat st;
	int fd, err;

	if (!path || !rs_opts_valid(o, sizeof(*o))) {
		errno = EINVAL;
		return NULL;
	}
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err = errno;
		say(o, path, "cannot open: %s", strerror(err));
		errno = err;
		return NULL;
	}
	err = 0;
	if (fstat(fd, &st) < 0) {
		err = errno;
		say(o, path, "cannot stat: %s", strerror(err));
	} else if (!S_ISREG(st.st_mode)) {
		err = EINVAL;
		say(o, path, "not a regular file");
	} else if ((uint64_t)st.st_size > RS_READ_MAX) {
		err = EFBIG;
		say(o, path, "larger than any buffer file");
	}
	if (err) {
		close(fd);
		errno = err;
		return NULL;
	}
	{
		struct source src = { .fd = fd, .size = (uint64_t)st.st_size, .name = path, .o = o };
		struct relstack_reader *r;
		/* a recorder holds an exclusive lock on its file while it runs */
		bool locked = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;

		r = open_source(&src, locked);
		err = errno;
		close(fd);
		errno = err;
		return r;
	}
}

void relstack_reader__close(struct relstack_reader *r)
{
	if (!r)
		return;
	free_runs(r);
	free(r);
}

const struct relstack_format *relstack_reader__format(const struct relstack_reader *r)
{
	return &r->fh.format;
}

bool relstack_reader__has_addresses(const struct relstack_reader *r)
{
	bool any = (r->fh.flags & RS_FILE_ADDRESSES) != 0;

	for (unsigned i = 0; i < RS_RUNS; i++)
		any |= r->run[i].valid && (r->run[i].h.flags & RS_RUN_ADDRESSES);
	return any;
}

unsigned relstack_reader__run_count(const struct relstack_reader *r)
{
	return r->nruns;
}

static const struct run_view *view(const struct relstack_reader *r, enum relstack_run_which which)
{
	if ((unsigned)which > 1 || r->which[which] < 0)
		return NULL;
	return &r->run[r->which[which]];
}

int relstack_reader__run_info(const struct relstack_reader *r, enum relstack_run_which which,
			      struct relstack_run_info *out)
{
	const struct run_view *v = view(r, which);
	const struct rs_run_head *h;

	if (!v)
		return -ENOENT;
	h = &v->h;
	memset(out, 0, sizeof(*out));
	out->generation = h->generation;
	memcpy(out->run_id, h->run_id, 16);
	memcpy(out->boot_id, h->boot_id, 16);
	out->realtime_ns = h->realtime_ns;
	out->monotonic_ns = h->monotonic_ns;
	out->close_monotonic_ns = h->close_monotonic_ns;
	out->pid = h->pid;
	memcpy(out->comm, h->comm, sizeof(out->comm) - 1);
	out->state = h->state == RS_RUN_CLOSED ? RELSTACK_RUN_CLOSED : RELSTACK_RUN_ACTIVE;
	out->writer_alive = which == RELSTACK_RUN_CURRENT && out->state == RELSTACK_RUN_ACTIVE && r->locked;
	out->mode = h->mode;
	out->addresses = (h->flags & RS_RUN_ADDRESSES) != 0;
	out->ring_size = h->ring_size;
	out->chunk_size = h->chunk_size;
	out->areas = h->areas;
	out->objtab_capacity = v->objtab_cap;
	out->schema_capacity = h->schema_capacity;
	out->lost = h->lost;
	if (v->objtab_cap)
		out->objtab_full = ((const struct rs_objtab_image_head *)v->objtab)->full;
	for (uint32_t a = 0; a < h->areas; a++) {
		out->written += h->area[a].head - h->base;
		out->overwritten += h->area[a].overwritten;
	}
	out->records = v->npos;
	out->skipped = v->skipped;
	out->skipped_partial = v->partial;
	out->skipped_damaged = v->damaged;
	out->skipped_malformed = v->malformed;
	out->gap_bytes = v->gap_bytes;
	return 0;
}

int relstack_reader__stack_table(const struct relstack_reader *r, enum relstack_run_which which,
				 struct relstack_stack_table_info *out)
{
	const struct run_view *v = view(r, which);
	struct rs_stack_head sh;

	if (!v)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	if (!v->stk)
		return 0;
	memcpy(&sh, v->stk, sizeof(sh));
	out->size = v->sg.size;
	out->arena_size = v->sg.arena_size;
	out->used = sh.used < v->sg.arena_size ? sh.used : v->sg.arena_size;
	out->buckets = v->sg.buckets;
	out->entries = v->stk_entries;
	out->damaged = v->stk_bad;
	out->full = sh.full;
	out->ref_records = v->stk_refs;
	out->inline_records = v->stk_inline;
	return 0;
}

const char *relstack_reader__run_error(const struct relstack_reader *r, unsigned area)
{
	if (area >= RS_RUNS || !r->run[area].err[0])
		return NULL;
	return r->run[area].err;
}

const char *relstack_reader__record_error(const struct relstack_reader *r, enum relstack_run_which which)
{
	const struct run_view *v = view(r, which);

	return v && v->rec_err[0] ? v->rec_err : NULL;
}

unsigned relstack_reader__object_count(const struct relstack_reader *r, enum relstack_run_which which)
{
	const struct run_view *v = view(r, which);

	return v ? v->objtab_cap : 0;
}

int relstack_reader__object(const struct relstack_reader *r, enum relstack_run_which which, uint32_t slot,
			    struct relstack_object *out, uint64_t *load_address, const char **why)
{
	const struct run_view *v = view(r, which);
	const char *w = NULL;
	int ret;

	if (why)
		*why = NULL;
	if (!v)
		return -ENOENT;
	if (!v->objtab_cap) {
		if (why)
			*why = "object table image damaged";
		return -RELSTACK_ECORRUPT;
	}
	ret = rs_objtab_image_record(v->objtab, v->objtab_size, slot, out, load_address, &w);
	if (why)
		*why = w;
	return ret;
}

void relstack_reader__check_entry(const struct relstack_reader *r, enum relstack_run_which which, uint64_t epoch,
				  struct relstack_entry *e)
{
	const struct run_view *v = view(r, which);

	if (e->kind != RELSTACK_ENTRY_OBJECT)
		return;
	if (!v || !v->objtab_cap) {
		e->kind = RELSTACK_ENTRY_INVALID;
		e->reason = RELSTACK_REASON_BAD_SLOT_RECORD;
		return;
	}
	rs_objtab_image_check_entry(v->objtab, v->objtab_size, epoch, e);
}

unsigned relstack_reader__schema_count(const struct relstack_reader *r, enum relstack_run_which which)
{
	const struct run_view *v = view(r, which);

	return v ? v->nschemas : 0;
}

const struct relstack_schema *relstack_reader__schema(const struct relstack_reader *r,
						      enum relstack_run_which which, unsigned index)
{
	const struct run_view *v = view(r, which);

	return v && index < v->nschemas ? &v->schema[index] : NULL;
}

const struct relstack_schema *relstack_reader__schema_by_id(const struct relstack_reader *r,
							    enum relstack_run_which which, unsigned id)
{
	const struct run_view *v = view(r, which);

	if (!v || id >= RS_SCHEMAS || v->by_id[id] < 0)
		return NULL;
	return &v->schema[v->by_id[id]];
}

struct relstack_cursor *relstack_reader__records(const struct relstack_reader *r, enum relstack_run_which which)
{
	const struct run_view *v = view(r, which);
	struct relstack_cursor *c;

	if (!v) {
		errno = ENOENT;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->r = r;
	c->v = v;
	c->which = which;
	return c;
}

int relstack_cursor__next(struct relstack_cursor *c, struct relstack_record *out)
{
	const struct run_view *v = c->v;
	const struct rs_run_head *h = &v->h;
	unsigned ws = c->r->fh.format.word_size;
	const unsigned char *d, *w;
	struct rs_rec_head rh;
	struct rs_rec_body b;
	int64_t delta;

	if (c->i >= v->npos)
		return 0;
	d = v->ring + v->pos[c->i].area * v->asize + ((v->pos[c->i].pos - h->base) & (v->asize - 1));
	memcpy(&rh, d, sizeof(rh));
	memcpy(&b, d + RS_REC_HEAD, sizeof(b));
	w = d + RS_REC_FIXED;
	memset(out, 0, sizeof(*out));
	out->position = v->pos[c->i++].pos;
	out->time_ns = rs_clock_to_ns(h, b.time);
	delta = (int64_t)(out->time_ns - h->monotonic_ns);
	out->realtime_ns = h->realtime_ns + (uint64_t)delta;
	out->tid = b.tid;
	out->event_id = b.event_id;
	out->schema = relstack_reader__schema_by_id(c->r, c->which, b.event_id);
	out->event_name = out->schema ? out->schema->name : NULL;
	out->reasons = b.reasons;
	out->epoch = b.epoch;
	out->has_stack = rh.kind != RS_REC_EVENT;
	out->absolute = rh.kind == RS_REC_STACK_ABS;
	out->interrupted = (rh.flags & RS_REC_F_INTERRUPTED) && b.nwords;
	out->nwords = b.nwords;
	if (rh.kind == RS_REC_STACK_REF) {
		uint64_t ref;

		/* checked when the run was read (stack_problem()) */
		memcpy(&ref, w, sizeof(ref));
		w = v->stk + v->sg.arena_off + (ref & 0xffffffffu) * 16 + sizeof(struct rs_stack_entry);
	}
	for (size_t i = 0; i < b.nwords; i++) {
		if (ws == 8) {
			memcpy(&c->words[i], w + 8 * i, 8);
		} else {
			uint32_t x;

			memcpy(&x, w + 4 * i, 4);
			c->words[i] = x;
		}
	}
	out->words = c->words;
	out->fields_size = b.fields_size;
	memcpy(c->fields, d + RS_REC_FIXED + (rh.kind == RS_REC_STACK_REF ? RS_STACK_REF_SIZE : (size_t)b.nwords * ws),
	       b.fields_size);
	out->fields = c->fields;
	return 1;
}

void relstack_cursor__free(struct relstack_cursor *c)
{
	free(c);
}

int relstack_record__field_int(const struct relstack_record *rec, const char *name, int64_t *value)
{
	const struct relstack_schema *s = rec->schema;

	if (!s || !name)
		return -ENOENT;
	for (unsigned i = 0; i < s->nfields; i++) {
		const struct relstack_schema_field *f = &s->field[i];
		uint64_t u = 0;

		if (strncmp(f->name, name, sizeof(f->name)) != 0)
			continue;
		if (f->type != RELSTACK_FIELD_UNSIGNED && f->type != RELSTACK_FIELD_SIGNED &&
		    f->type != RELSTACK_FIELD_HEX)
			return -EINVAL;
		if ((size_t)f->offset + f->size > rec->fields_size)
			return -ENOENT;
		memcpy(&u, (const unsigned char *)rec->fields + f->offset, f->size); /* little-endian */
		if (f->type == RELSTACK_FIELD_SIGNED && f->size < 8 && (u >> (f->size * 8 - 1)) & 1)
			u |= ~0ull << (f->size * 8);
		*value = (int64_t)u;
		return 0;
	}
	return -ENOENT;
}
