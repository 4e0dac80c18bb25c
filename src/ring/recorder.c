// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder: a buffer file, its runs, its event schemas, the public
 * record calls.
 *
 * Opening sets up a run (never on the write path, so it may lock, allocate
 * and make system calls); recording goes straight to ring-write.c.
 *
 * Starting a run, in an order that a crash at any point leaves harmless:
 *   1  the area of the older run gets state 0 and a zero head_hash: from
 *      here on readers see one run (the previous), never a half-new one;
 *   2  schemas, chunk states, the object table image and the stack table
 *      are cleared (they are the run two generations back's), the run head
 *      written;
 *   3  head_hash, then state = ACTIVE (release): the run exists.
 * Which area holds the most recent run is decided by the reader's own run
 * head check (rs_run_head_check), so an area a kill left in 1..3 counts as
 * no run, here as in the reader, and the next open starts there again.
 * The area of the most recent run is never written, so it stays
 * decodable as the previous run.  A new file is made aside and linked at
 * its path once whole (create_file()).  docs/format.md, "Starting a run",
 * lists what a kill at each point leaves; RS_KILL_POINT marks the points.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/objtab.h"
#include "opts-local.h"
#include "relstack/recorder.h"
#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "ring/ring.h"

_Static_assert(sizeof(struct rs_file_head) == 136, "file head is 136 bytes");
_Static_assert(offsetof(struct rs_file_head, objtab_capacity) == 84, "file objtab_capacity at 84");
_Static_assert(offsetof(struct rs_file_head, ring_size) == 120, "file ring_size at 120");
_Static_assert(offsetof(struct rs_file_head, format) == 16, "file format at 16");
_Static_assert(offsetof(struct rs_file_head, runs) == 80, "file runs at 80");
_Static_assert(offsetof(struct rs_file_head, run_area_size) == 88, "file run_area_size at 88");
_Static_assert(offsetof(struct rs_file_head, run_offset) == 96, "file run_offset at 96");
_Static_assert(offsetof(struct rs_file_head, file_size) == 112, "file file_size at 112");
_Static_assert(offsetof(struct rs_file_head, head_hash) == 128, "file head_hash at 128");
_Static_assert(offsetof(struct rs_file_head, flags) == 132, "file flags at 132");
_Static_assert(sizeof(struct rs_chunk_state) == 8, "chunk state is 8 bytes");

_Static_assert(sizeof(struct rs_run_head) == 320 + 64 * RS_MAX_AREAS, "run head is 2368 bytes");
_Static_assert(sizeof(struct rs_run_head) <= RS_BLOCK, "run head fits its block");
_Static_assert(sizeof(struct rs_area_head) == 64, "area head is one cache line");
_Static_assert(offsetof(struct rs_area_head, overwritten) == 8, "area overwritten at +8");
_Static_assert(offsetof(struct rs_run_head, generation) == 16, "run generation at 16");
_Static_assert(offsetof(struct rs_run_head, run_id) == 24, "run run_id at 24");
_Static_assert(offsetof(struct rs_run_head, boot_id) == 40, "run boot_id at 40");
_Static_assert(offsetof(struct rs_run_head, realtime_ns) == 56, "run realtime_ns at 56");
_Static_assert(offsetof(struct rs_run_head, monotonic_ns) == 64, "run monotonic_ns at 64");
_Static_assert(offsetof(struct rs_run_head, pid) == 72, "run pid at 72");
_Static_assert(offsetof(struct rs_run_head, chunk_size) == 84, "run chunk_size at 84");
_Static_assert(offsetof(struct rs_run_head, ring_offset) == 88, "run ring_offset at 88");
_Static_assert(offsetof(struct rs_run_head, base) == 104, "run base at 104");
_Static_assert(offsetof(struct rs_run_head, schema_offset) == 112, "run schema_offset at 112");
_Static_assert(offsetof(struct rs_run_head, states_offset) == 128, "run states_offset at 128");
_Static_assert(offsetof(struct rs_run_head, objtab_offset) == 136, "run objtab_offset at 136");
_Static_assert(offsetof(struct rs_run_head, comm) == 152, "run comm at 152");
_Static_assert(offsetof(struct rs_run_head, seed) == 168, "run seed at 168");
_Static_assert(offsetof(struct rs_run_head, clock) == 172, "run clock at 172");
_Static_assert(offsetof(struct rs_run_head, tsc_start) == 176, "run tsc_start at 176");
_Static_assert(offsetof(struct rs_run_head, tsc_hz) == 184, "run tsc_hz at 184");
_Static_assert(offsetof(struct rs_run_head, areas) == 192, "run areas at 192");
_Static_assert(offsetof(struct rs_run_head, reserved1) == 196, "run reserved1 at 196");
_Static_assert(offsetof(struct rs_run_head, head_hash) == 200, "run head_hash at 200");
_Static_assert(offsetof(struct rs_run_head, state) == 204, "run state at 204");
_Static_assert(offsetof(struct rs_run_head, close_monotonic_ns) == 208, "run close time at 208");
_Static_assert(offsetof(struct rs_run_head, anchor_seq) == 216, "run anchor_seq at 216");
_Static_assert(offsetof(struct rs_run_head, reserved0) == 220, "run reserved0 at 220");
_Static_assert(offsetof(struct rs_run_head, anchor_tsc) == 224, "run anchor_tsc at 224");
_Static_assert(offsetof(struct rs_run_head, anchor_monotonic_ns) == 232, "run anchor time at 232");
_Static_assert(offsetof(struct rs_run_head, lost) == 256, "run lost at 256");
_Static_assert(offsetof(struct rs_run_head, area) == 320, "run area heads at 320");

_Static_assert(sizeof(struct rs_rec_head) == 16, "record head is 16 bytes");
_Static_assert(offsetof(struct rs_rec_head, commit) == 8, "record commit at 8");
_Static_assert(offsetof(struct rs_rec_head, kind) == 12, "record kind at 12");
_Static_assert(offsetof(struct rs_rec_head, units) == 14, "record units at 14");
_Static_assert(sizeof(struct rs_rec_body) == 32, "record body head is 32 bytes");
_Static_assert(offsetof(struct rs_rec_body, time) == 0, "record time at +0");
_Static_assert(offsetof(struct rs_rec_body, epoch) == 8, "record epoch at +8");
_Static_assert(offsetof(struct rs_rec_body, tid) == 16, "record tid at +16");
_Static_assert(offsetof(struct rs_rec_body, event_id) == 24, "record event_id at +24");
_Static_assert(offsetof(struct rs_rec_body, fields_size) == 28, "record fields_size at +28");

_Static_assert(sizeof(struct rs_schema_field) == 32, "schema field is 32 bytes");
_Static_assert(offsetof(struct rs_schema_field, offset) == 24, "field offset at 24");
_Static_assert(offsetof(struct rs_schema_field, type) == 28, "field type at 28");
_Static_assert(sizeof(struct rs_schema) == 576, "schema is 576 bytes");
_Static_assert(offsetof(struct rs_schema, name) == 16, "schema name at 16");
_Static_assert(offsetof(struct rs_schema, field) == 64, "schema fields at 64");
_Static_assert(RS_MAX_RECORD <= RS_CHUNK, "a record fits a chunk");
_Static_assert(RS_MAX_RECORD % 16 == 0 && RS_NH_KEYS * 4 == RS_MAX_RECORD - RS_REC_HEAD,
	       "the checksum key covers the largest record, in whole blocks");
_Static_assert(RELSTACK_EVENT_FIELDS_MAX == RS_SCHEMA_FIELDS, "public and file field limits agree");
_Static_assert(RELSTACK_FIELDS_SIZE_MAX == RS_MAX_FIELDS_SIZE, "public and file size limits agree");
_Static_assert(RELSTACK_WORDS_MAX == RS_MAX_WORDS, "public and file word limits agree");
_Static_assert(RELSTACK_EVENT_NAME_MAX + 1 == RS_SCHEMA_NAME && RELSTACK_FIELD_NAME_MAX + 1 == RS_FIELD_NAME,
	       "public and file name lengths agree");
/* the run head's mode is the public mode, stored and read back as it is */
_Static_assert(RS_MODE_OVERWRITE == RELSTACK_MODE_OVERWRITE && RS_MODE_STOP == RELSTACK_MODE_STOP,
	       "file and public modes agree");
_Static_assert(sizeof(struct relstack_crash_fields) == 32, "crash fields are 32 bytes");

#define RS_DEFAULT_RING (1u << 20)
#define RS_DEFAULT_OBJTAB (RS_OBJTAB_SLOTS < 256u ? RS_OBJTAB_SLOTS : 256u)

static inline uint64_t round_block(uint64_t n)
{
	return (n + RS_BLOCK - 1) & ~(uint64_t)(RS_BLOCK - 1);
}

void rs_run_layout(uint64_t ring_size, unsigned objtab_capacity, struct rs_run_head *h, uint64_t *area_size)
{
	uint64_t off = RS_BLOCK;

	h->schema_offset = off;
	h->schema_capacity = RS_SCHEMAS;
	h->schema_size = sizeof(struct rs_schema);
	off += round_block(RS_SCHEMAS * sizeof(struct rs_schema));
	h->states_offset = off;
	off += round_block(ring_size / RS_CHUNK * sizeof(struct rs_chunk_state));
	h->objtab_offset = off;
	h->objtab_size = round_block(rs_objtab_image_size(objtab_capacity));
	off += h->objtab_size;
	if (h->version != RS_FILE_VERSION_PREV)
		off += rs_stack_geo(ring_size).size; /* the stack table, between the image and the ring */
	h->ring_offset = off;
	h->ring_size = ring_size;
	h->chunk_size = RS_CHUNK;
	*area_size = off + ring_size;
}

#ifdef RS_KILL_POINTS
const char *rs_kill_at;

void rs_kill_point(const char *name)
{
	if (rs_kill_at && strcmp(rs_kill_at, name) == 0)
		raise(SIGKILL);
}
#endif

/* A run the reader accepts has this generation; anything else (no run, damaged, half started) has 0. */
static uint64_t run_generation(const struct rs_file_head *f, const struct rs_run_head *layout, unsigned area,
			       const struct rs_run_head *h)
{
	struct rs_run_head c;
	char err[200];

	memcpy(&c, h, sizeof(c));
	return rs_run_head_check(&c, layout, area, f->run_offset[area], err, sizeof(err)) > 0 ? c.generation : 0;
}

static void read_boot_id(uint8_t out[16])
{
	char buf[64];
	unsigned n = 0;

	memset(out, 0, 16);
	rs_read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	for (const char *c = buf; *c && n < 32; c++) {
		int v;

		if (*c >= '0' && *c <= '9')
			v = *c - '0';
		else if (*c >= 'a' && *c <= 'f')
			v = *c - 'a' + 10;
		else
			continue;
		out[n / 2] |= (uint8_t)(n % 2 ? v : v << 4);
		n++;
	}
}

static int schema_put(struct relstack_recorder *rec, unsigned id, const char *name,
		      const struct relstack_event_field *fields, unsigned n, size_t size)
{
	struct rs_schema s, *dst = &rec->schemas[id];

	memset(&s, 0, sizeof(s));
	s.id = (uint16_t)id;
	s.nfields = (uint16_t)n;
	s.size = (uint16_t)size;
	strncpy(s.name, name, sizeof(s.name) - 1);
	for (unsigned i = 0; i < n; i++) {
		strncpy(s.field[i].name, fields[i].name, sizeof(s.field[i].name) - 1);
		s.field[i].offset = fields[i].offset;
		s.field[i].size = fields[i].size;
		s.field[i].type = (uint8_t)fields[i].type;
	}
	s.hash = rs_hash32(RS_HASH32_INIT, (const char *)&s + 8, sizeof(s) - 8);
	/* seq odd while the schema is written: a crash here leaves it rejected, not torn */
	atomic_store_explicit((_Atomic uint32_t *)&dst->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	dst->hash = s.hash;
	memcpy((char *)dst + 8, (const char *)&s + 8, sizeof(s) - 8);
	atomic_store_explicit((_Atomic uint32_t *)&dst->seq, 2, memory_order_release);
	rec->schema_size[id] = (uint16_t)size;
	return (int)id;
}

static bool valid_name(const char *name, size_t max)
{
	size_t n = name ? strnlen(name, max + 1) : 0;

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

int relstack_recorder__define_event(struct relstack_recorder *rec, const char *name,
				    const struct relstack_event_field *fields, unsigned n, size_t fields_size)
{
	int ret = -ENOSPC;

	if (!rec || !valid_name(name, RELSTACK_EVENT_NAME_MAX) || n > RS_SCHEMA_FIELDS ||
	    fields_size > RS_MAX_FIELDS_SIZE || (n && !fields))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		const struct relstack_event_field *f = &fields[i];
		bool intish = f->type == RELSTACK_FIELD_UNSIGNED || f->type == RELSTACK_FIELD_SIGNED ||
			      f->type == RELSTACK_FIELD_HEX;

		if (!valid_name(f->name, RELSTACK_FIELD_NAME_MAX) || f->size == 0 ||
		    (size_t)f->offset + f->size > fields_size ||
		    f->type < RELSTACK_FIELD_UNSIGNED || f->type > RELSTACK_FIELD_BYTES ||
		    (intish && f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
			return -EINVAL;
	}
	pthread_mutex_lock(&rec->lock);
	for (unsigned id = 0; id < RS_SCHEMAS; id++) {
		const struct rs_schema *s = &rec->schemas[id];

		if (s->seq == 0) {
			ret = schema_put(rec, id, name, fields, n, fields_size);
			break;
		}
		if (strncmp(s->name, name, sizeof(s->name)) != 0)
			continue;
		ret = (int)id;
		if (s->nfields != n || s->size != fields_size)
			ret = -EEXIST;
		for (unsigned i = 0; ret >= 0 && i < n; i++)
			if (strncmp(s->field[i].name, fields[i].name, RS_FIELD_NAME) != 0 ||
			    s->field[i].offset != fields[i].offset || s->field[i].size != fields[i].size ||
			    s->field[i].type != fields[i].type)
				ret = -EEXIST;
		break;
	}
	pthread_mutex_unlock(&rec->lock);
	return ret;
}

static void define_builtins(struct relstack_recorder *rec)
{
	static const struct relstack_event_field crash[] = {
		{ "signo", 0, 4, RELSTACK_FIELD_SIGNED },
		{ "code", 4, 4, RELSTACK_FIELD_SIGNED },
		{ "errno", 8, 4, RELSTACK_FIELD_SIGNED },
		{ "pid", 12, 4, RELSTACK_FIELD_UNSIGNED },
		{ "addr", 16, 8, RELSTACK_FIELD_HEX },
		{ "flags", 24, 8, RELSTACK_FIELD_HEX },
	};

	schema_put(rec, RELSTACK_EVENT_STACK, "stack", NULL, 0, 0);
	schema_put(rec, RELSTACK_EVENT_CRASH, "crash", crash, RS_ARRAY_SIZE(crash),
		   sizeof(struct relstack_crash_fields));
}

static void new_file_head(uint64_t ring_size, unsigned objtab_capacity, struct rs_file_head *f)
{
	struct rs_run_head geo;
	uint64_t area;

	memset(&geo, 0, sizeof(geo));
	geo.version = RS_FILE_VERSION;
	rs_run_layout(ring_size, objtab_capacity, &geo, &area);
	memset(f, 0, sizeof(*f));
	memcpy(f->magic, RS_FILE_MAGIC, 8);
	f->version = RS_FILE_VERSION;
	f->head_size = sizeof(*f);
	relstack_format_native(&f->format);
	f->runs = RS_RUNS;
	f->run_area_size = area;
	f->run_offset[0] = RS_BLOCK;
	f->run_offset[1] = RS_BLOCK + area;
	f->file_size = RS_BLOCK + RS_RUNS * area;
	f->ring_size = ring_size;
	f->objtab_capacity = objtab_capacity;
	f->head_hash = rs_hash32(RS_HASH32_INIT, f, offsetof(struct rs_file_head, head_hash));
}

/*
 * A new file appears at @path whole or not at all: it is made unnamed
 * (O_TMPFILE) in @path's directory, sized, given its head, and only then
 * linked at @path.  linkat() replaces nothing: of two recorders creating
 * one file, one links it and the other opens that one (-EEXIST).  Where
 * O_TMPFILE or /proc/self/fd is missing, and to replace an empty file
 * (@replace), a named file next to @path is linked or renamed there the
 * same way; a kill may leave that one behind, never a partial @path.
 * Returns the new file's descriptor, -EEXIST, or -errno.
 */
static int create_file(const char *path, bool replace, const struct rs_file_head *f)
{
	char dir[4096], tmp[4096 + 8], proc[32];
	const char *slash = strrchr(path, '/');
	bool named = replace;
	int fd, ret;

	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
again:
	fd = named ? -1 : open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		named = true;
		snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
		fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
		if (fd < 0)
			return -errno;
	}
	ret = ftruncate(fd, (off_t)f->file_size) < 0 ? -errno : 0;
	RS_KILL_POINT("create-sized");
	if (!ret && pwrite(fd, f, sizeof(*f), 0) != (ssize_t)sizeof(*f))
		ret = -EIO;
	RS_KILL_POINT("create-written");
	if (!ret && !named) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
			return fd;
		ret = -errno;
		close(fd);
		if (ret == -EEXIST)
			return ret;
		named = true; /* no /proc, say */
		goto again;
	}
	if (!ret && (replace ? rename(tmp, path) : link(tmp, path)) < 0)
		ret = -errno;
	if (ret < 0 || !replace)
		unlink(tmp);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

static void run_start(struct relstack_recorder *rec, struct rs_run_head *h, uint64_t generation,
		      uint64_t ring_size, unsigned objtab_capacity, unsigned mode, unsigned flags)
{
	struct rs_run_head s;
	uint64_t area;

	/* 1 */
	atomic_store_explicit((_Atomic uint32_t *)&h->state, 0, memory_order_relaxed);
	atomic_store_explicit((_Atomic uint32_t *)&h->head_hash, 0, memory_order_release);
	RS_KILL_POINT("start-unhashed");
	/* 2 */
	memset(&s, 0, sizeof(s));
	memcpy(s.magic, RS_RUN_MAGIC, 8);
	s.version = RS_FILE_VERSION;
	s.head_size = sizeof(s);
	s.generation = generation;
	if (getrandom(s.run_id, sizeof(s.run_id), GRND_NONBLOCK) != sizeof(s.run_id)) {
		uint64_t t = rs_clock_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32);

		memcpy(s.run_id, &t, sizeof(t));
	}
	read_boot_id(s.boot_id);
	s.realtime_ns = rs_clock_ns(CLOCK_REALTIME);
	rs_clock_pick(&s); /* monotonic_ns, and the counter's anchor and rate if records carry ticks */
	s.pid = (uint32_t)getpid();
	s.mode = mode;
	s.flags = flags;
	rs_run_layout(ring_size, objtab_capacity, &s, &area);
	s.base = generation << 40;
	strncpy(s.comm, program_invocation_short_name, sizeof(s.comm) - 1);
	s.seed = rs_hash32(RS_HASH32_INIT, s.run_id, sizeof(s.run_id));
	s.areas = rs_ring_areas(ring_size);
	/* schemas, chunk states, the object table image and the stack table lie between schema_offset and ring_offset */
	memset(rec->area + s.schema_offset, 0, s.ring_offset - s.schema_offset);
	RS_KILL_POINT("start-cleared");
	memcpy(h, &s, offsetof(struct rs_run_head, head_hash));
	h->close_monotonic_ns = 0;
	h->anchor_seq = 0;
	h->reserved0 = 0;
	h->anchor_tsc = 0;
	h->anchor_monotonic_ns = 0;
	h->lost = 0;
	memset(h->area, 0, sizeof(h->area));
	for (uint32_t a = 0; a < s.areas; a++)
		h->area[a].head = s.base;
	RS_KILL_POINT("start-written");
	/* 3 */
	atomic_store_explicit((_Atomic uint32_t *)&h->head_hash,
			      rs_hash32(RS_HASH32_INIT, h, offsetof(struct rs_run_head, head_hash)),
			      memory_order_release);
	RS_KILL_POINT("start-hashed");
	atomic_store_explicit((_Atomic uint32_t *)&h->state, RS_RUN_ACTIVE, memory_order_release);
	RS_KILL_POINT("start-active");
}

/*
 * The buffer file at @path, locked, with its head checked into *f (the
 * reader's check, and the native format this writer writes); a missing
 * or empty file is made with @ring_size and @cap first.  Returns the
 * descriptor or -errno.
 */
static int open_file(const char *path, uint64_t ring_size, unsigned cap, struct rs_file_head *f,
		     struct rs_run_head *layout)
{
	struct relstack_format native;
	unsigned char head[sizeof(*f)];
	char msg[200];
	struct stat st;
	ssize_t got;
	int fd, ret;

	for (unsigned tries = 0;; tries++) {
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT || tries == 3)
			break;
		new_file_head(ring_size, cap, f);
		fd = create_file(path, false, f);
		if (fd != -EEXIST)
			break; /* made (fd), failed (-errno); -EEXIST: another one made it, open that */
	}
	if (fd < 0)
		return fd == -1 ? -errno : fd;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		goto fail;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	if (st.st_size == 0) {
		/* empty (made by hand, say): replaced by a whole file */
		new_file_head(ring_size, cap, f);
		ret = create_file(path, true, f);
		if (ret < 0)
			goto fail;
		close(fd);
		fd = ret;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
			goto fail;
		}
		st.st_size = (off_t)f->file_size;
	}
	got = pread(fd, head, sizeof(head), 0);
	if (got < 0) {
		ret = -errno;
		goto fail;
	}
	/* a file that shrank under the pread: its head is what was read */
	ret = rs_file_head_check(head, (size_t)got < sizeof(head) ? (uint64_t)got : (uint64_t)st.st_size, f, layout,
				 msg, sizeof(msg));
	if (ret < 0)
		goto fail;
	if (f->version != RS_FILE_VERSION) {
		ret = -RELSTACK_EVERSION; /* an older file: read it, do not write it */
		goto fail;
	}
	relstack_format_native(&native);
	if (memcmp(&native, &f->format, sizeof(native)) != 0) {
		ret = -RELSTACK_EFORMAT; /* a file of another word size or layout: read it, do not write it */
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return ret;
}

static struct relstack_recorder *open_recorder(const char *path, const struct relstack_recorder_opts *opts,
					       bool foreign_objtab)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec = NULL;
	struct rs_file_head f;
	struct rs_run_head *heads[RS_RUNS], layout;
	uint64_t ring_size, gen[RS_RUNS];
	unsigned cap, cur;
	void *map = MAP_FAILED;
	int fd = -1, ret;

	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	if (rs_opts_copy(&o, sizeof(o), opts) < 0)
		goto einval;
	if (o.mode != RELSTACK_MODE_OVERWRITE && o.mode != RELSTACK_MODE_STOP)
		goto einval;
	if (o.flags & ~(RELSTACK_RECORDER_ABSOLUTE | RELSTACK_RECORDER_NO_STACK_TABLE))
		goto einval;
	ring_size = o.size ? o.size : RS_DEFAULT_RING;
	if (ring_size > RS_MAX_RING)
		goto einval;
	if (ring_size < RS_MIN_RING)
		ring_size = RS_MIN_RING;
	ring_size = 1ull << (64 - __builtin_clzll(ring_size - 1));
	cap = o.objtab_capacity ? o.objtab_capacity : RS_DEFAULT_OBJTAB;
	if (cap > RS_OBJTAB_SLOTS)
		goto einval;

	fd = open_file(path, ring_size, cap, &f, &layout);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	ring_size = f.ring_size;
	cap = f.objtab_capacity;
	map = mmap(NULL, f.file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail_errno;

	rec = aligned_alloc(_Alignof(struct relstack_recorder), sizeof(*rec)); /* the areas' lines */
	if (!rec)
		goto fail_errno;
	memset(rec, 0, sizeof(*rec));
	pthread_mutex_init(&rec->lock, NULL);
	rec->fd = fd;
	rec->map = map;
	rec->map_size = f.file_size;
	rec->file = map;
	rec->flags = o.flags;
	rec->mirror = -1;
	rec->ring.holder = -1;
	for (unsigned i = 0; i < RS_RUNS; i++) {
		heads[i] = (struct rs_run_head *)((char *)map + f.run_offset[i]);
		gen[i] = run_generation(&f, &layout, i, heads[i]);
	}
	/* the new run goes where the older run is; the most recent one is kept */
	cur = gen[0] <= gen[1] ? 0 : 1;
	rec->area = (unsigned char *)map + f.run_offset[cur];
	rec->run = heads[cur];
	/* each area's share in lines of its own */
	rec->ring.chunk_epoch = aligned_alloc(64, ring_size / RS_CHUNK * sizeof(uint64_t));
	if (!rec->ring.chunk_epoch)
		goto fail_errno;
	memset((void *)rec->ring.chunk_epoch, 0, ring_size / RS_CHUNK * sizeof(uint64_t));

	run_start(rec, rec->run, (gen[0] > gen[1] ? gen[0] : gen[1]) + 1, ring_size, cap, o.mode,
		  (o.flags & RELSTACK_RECORDER_ABSOLUTE) ? RS_RUN_ADDRESSES : 0);
	if (o.flags & RELSTACK_RECORDER_ABSOLUTE)
		atomic_fetch_or_explicit((_Atomic uint32_t *)&rec->file->flags, RS_FILE_ADDRESSES,
					 memory_order_relaxed);
	rec->schemas = (struct rs_schema *)(rec->area + rec->run->schema_offset);
	define_builtins(rec);
	RS_KILL_POINT("open-schemas");

	rec->ring.run = rec->run;
	rec->ring.areas = rec->run->areas;
	rec->ring.size = ring_size / rec->ring.areas;
	rec->ring.mask = rec->ring.size - 1;
	rec->ring.size_shift = (unsigned)__builtin_ctzll(rec->ring.size);
	rec->ring.base = rec->run->base;
	rec->ring.nchunks = (uint32_t)(rec->ring.size / RS_CHUNK);
	for (uint32_t a = 0; a < rec->ring.areas; a++) {
		struct rs_ring_area *A = &rec->ring.area[a];

		A->data = rec->area + rec->run->ring_offset + a * rec->ring.size;
		A->chunks = (struct rs_chunk_state *)(rec->area + rec->run->states_offset) + a * rec->ring.nchunks;
		A->head = (_Atomic uint64_t *)&rec->run->area[a].head;
		A->overwritten = (_Atomic uint64_t *)&rec->run->area[a].overwritten;
		A->chunk_epoch = rec->ring.chunk_epoch + a * rec->ring.nchunks;
	}
	rec->ring.seed = rec->run->seed;
	rec->ring.mode = o.mode;
	rec->ring.word_size = f.format.word_size;
	rec->ring.clock = rec->run->clock;
	rs_nh_keys(rec->ring.seed, rec->ring.key);
	if (!(o.flags & RELSTACK_RECORDER_NO_STACK_TABLE))
		rs_stacktab_attach(&rec->ring.stacks, rec->area + rec->run->objtab_offset + rec->run->objtab_size,
				   ring_size);
	rs_ring_init(&rec->ring);

	RS_KILL_POINT("open-objtab");
	if (foreign_objtab) {
		rec->foreign_objtab = true;
		return rec;
	}
	ret = rs_objtab_mirror_attach(rec->area + rec->run->objtab_offset, rec->run->objtab_size, cap,
				      (o.flags & RELSTACK_RECORDER_ABSOLUTE) != 0);
	if (ret < 0)
		goto fail;
	rec->mirror = ret;
	{
		struct relstack_objtab_stats ost;

		relstack_objtab_stats(&ost);
		rec->ring.held = ost.epoch;
		for (uint32_t a = 0; a < rec->ring.areas; a++)
			rec->ring.area[a].horizon = UINT64_MAX; /* holds nothing yet */
		rec->ring.holder = rs_objtab_hold(ost.epoch);
	}
	return rec;

einval:
	errno = EINVAL;
	return NULL;
fail_errno:
	ret = -errno;
fail:
	if (rec) {
		free((void *)rec->ring.chunk_epoch);
		pthread_mutex_destroy(&rec->lock);
		free(rec);
	}
	if (map != MAP_FAILED)
		munmap(map, f.file_size);
	if (fd >= 0)
		close(fd);
	errno = -ret;
	return NULL;
}

struct relstack_recorder *relstack_recorder__open(const char *path, const struct relstack_recorder_opts *opts)
{
	return open_recorder(path, opts, false);
}

struct relstack_recorder *rs_recorder_open_foreign(const char *path, const struct relstack_recorder_opts *opts)
{
	struct relstack_recorder *rec = open_recorder(path, opts, true);

	if (rec)
		rs_objtab_image_put_head(rec->area + rec->run->objtab_offset, rec->file->objtab_capacity, 0, 0, 0);
	return rec;
}

void *rs_recorder_objtab_image(struct relstack_recorder *rec, size_t *size, unsigned *capacity)
{
	if (!rec->foreign_objtab)
		return NULL;
	*size = rec->run->objtab_size;
	*capacity = rec->file->objtab_capacity;
	return rec->area + rec->run->objtab_offset;
}

void rs_recorder_count_lost(struct relstack_recorder *rec, uint64_t n)
{
	atomic_fetch_add_explicit((_Atomic uint64_t *)&rec->run->lost, n, memory_order_relaxed);
}

int relstack_recorder__flush(struct relstack_recorder *rec)
{
	if (!rec)
		return -EINVAL;
	/* a fresh clock anchor: records so far convert by interpolation (ring-clock.c) */
	pthread_mutex_lock(&rec->lock);
	rs_clock_anchor(rec->run);
	pthread_mutex_unlock(&rec->lock);
	return msync(rec->map, rec->map_size, MS_SYNC) < 0 ? -errno : 0;
}

int relstack_recorder__close(struct relstack_recorder *rec)
{
	int ret;

	if (!rec)
		return -EINVAL;
	rs_crash_handler_forget(rec);
	if (rec->mirror >= 0)
		rs_objtab_mirror_detach(rec->mirror);
	if (rec->ring.holder >= 0)
		rs_objtab_release(rec->ring.holder);
	rec->run->close_monotonic_ns = rs_clock_ns(CLOCK_MONOTONIC);
	atomic_store_explicit((_Atomic uint32_t *)&rec->run->state, RS_RUN_CLOSED, memory_order_release);
	ret = relstack_recorder__flush(rec);
	munmap(rec->map, rec->map_size);
	close(rec->fd);
	free((void *)rec->ring.chunk_epoch);
	pthread_mutex_destroy(&rec->lock);
	free(rec);
	return ret;
}

int relstack_recorder__thread_init(void)
{
	rs_ring_tid();
	return relstack_thread_register();
}
