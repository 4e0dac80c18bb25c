/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * relstack/reader.h - reading a buffer file written by a recorder.
 *
 * The reader treats the file as hostile: it reads it into memory, then
 * validates it from the outside in - file head, format descriptor, each
 * run's head and geometry, the object table image, the event schemas, then
 * every record - and never trusts an offset or a length it has not checked.
 * A damaged run, schema, object record or data record costs only itself.
 *
 * A file holds up to two runs: RELSTACK_RUN_CURRENT (the most recent) and
 * RELSTACK_RUN_PREVIOUS (the one before it), each with its own object
 * table and schemas, so the previous run decodes with the objects that
 * were loaded then.
 *
 * Records that a writer did not finish (it died in the middle) are skipped
 * and counted, never returned; so are records that fail their checksum.
 * Reading a file that is being written works on a snapshot: records being
 * written at that instant count as skipped.
 *
 * Typical use:
 *
 *	char err[256];
 *	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
 *	struct relstack_reader *r = relstack_reader__open(path, &o);
 *	if (!r) { fprintf(stderr, "%s\n", err); exit(1); }
 *	struct relstack_cursor *c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
 *	struct relstack_record rec;
 *	while (relstack_cursor__next(c, &rec) > 0)
 *		...;
 *	relstack_cursor__free(c);
 *	relstack_reader__close(r);
 */
#ifndef RELSTACK_READER_H
#define RELSTACK_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <relstack/entry.h>
#include <relstack/recorder.h>

#ifdef __cplusplus
extern "C" {
#endif

struct relstack_reader;
struct relstack_cursor;

struct relstack_reader_opts {
	size_t sz;        /* sizeof(struct relstack_reader_opts) */
	char *errbuf;     /* if set: why open failed, one line naming the file, the offset or
			     field, and what is wrong */
	size_t errbuf_sz;
};

/*
 * Open and validate a buffer file, read-only.  Returns NULL with errno:
 * ENOENT/EACCES/... (missing or unreadable), RELSTACK_ETRUNCATED (shorter
 * than its header says), RELSTACK_EMAGIC (not a buffer file),
 * RELSTACK_EVERSION (another format version), RELSTACK_EFORMAT (bad format
 * descriptor), RELSTACK_ECORRUPT (damaged file head).  A file whose runs
 * are all damaged opens, with zero runs; see relstack_reader__run_error().
 */
RELSTACK_API struct relstack_reader *relstack_reader__open(const char *path,
							    const struct relstack_reader_opts *opts);

/* The same over bytes in memory (copied; @buf may be freed afterwards). */
RELSTACK_API struct relstack_reader *relstack_reader__open_mem(const void *buf, size_t size,
								const struct relstack_reader_opts *opts);

RELSTACK_API void relstack_reader__close(struct relstack_reader *r);

/* The format descriptor entry words of this file follow. */
RELSTACK_API const struct relstack_format *relstack_reader__format(const struct relstack_reader *r);

/* True if some run of the file may hold absolute addresses. */
RELSTACK_API bool relstack_reader__has_addresses(const struct relstack_reader *r);

enum relstack_run_which {
	RELSTACK_RUN_CURRENT = 0,
	RELSTACK_RUN_PREVIOUS = 1,
};

enum relstack_run_state {
	RELSTACK_RUN_ACTIVE = 1, /* still being written, or its writer died without closing it */
	RELSTACK_RUN_CLOSED = 2,
};

struct relstack_run_info {
	uint64_t generation;           /* runs of the file are numbered 1, 2, ... */
	uint8_t run_id[16];
	uint8_t boot_id[16];           /* monotonic times compare only within one boot */
	uint64_t realtime_ns;          /* clock anchor: CLOCK_REALTIME at the start ... */
	uint64_t monotonic_ns;         /* ... and CLOCK_MONOTONIC at the same moment */
	uint64_t close_monotonic_ns;   /* 0 unless closed */
	uint32_t pid;
	char comm[16];
	enum relstack_run_state state;
	bool writer_alive;             /* current run, opened from a path: a recorder still holds the file */
	enum relstack_recorder_mode mode;
	bool addresses;                /* absolute stacks allowed, object table keeps load addresses */
	uint64_t ring_size;            /* geometry */
	uint32_t chunk_size;
	uint32_t objtab_capacity;
	uint32_t schema_capacity;
	uint64_t written;              /* bytes reserved over the run's life */
	/* counters written by the recorder */
	uint64_t lost;                 /* records refused: full (stop mode), too large, undefined event */
	uint64_t overwritten;          /* records overwritten by newer ones (overwrite mode) */
	/* counters of this reader */
	uint64_t records;              /* valid records found */
	uint64_t skipped;              /* records found and skipped: the three below */
	uint64_t skipped_partial;      /* cut short by the death of their writer (commit 0) */
	uint64_t skipped_damaged;      /* checksum mismatch */
	uint64_t skipped_malformed;    /* checksum right, but the body does not fit its length, or
					  an unknown kind, or reserved bits set */
	uint64_t gap_bytes;            /* bytes holding no record head (never written, cut off, or damaged) */
	uint32_t areas;                /* write areas the ring is split into (one per possible CPU) */
	/* written by the recorder; last, so that the fields above keep their places */
	uint64_t objtab_full;          /* objects that found no free slot in the object table: their frames are UNKNOWN */
};

/*
 * The first damaged or malformed record of the run, as "run area N, offset
 * 0x...: record at position +0x...: what is wrong"; NULL if none (partial
 * records are not damage: a crash leaves them).
 */
RELSTACK_API const char *relstack_reader__record_error(const struct relstack_reader *r,
						       enum relstack_run_which which);

/*
 * The run's stack table (docs/format.md, "The stack table"): each distinct
 * relative stack once, named by the records that carry it.  All zero for
 * a run of a file version without one.
 */
struct relstack_stack_table_info {
	uint64_t size;                 /* bytes of the table in the file */
	uint64_t arena_size;           /* bytes for entries */
	uint64_t used;                 /* entry bytes taken (a table never gives them back in its run) */
	uint64_t buckets;              /* index slots */
	uint64_t entries;              /* distinct stacks the index names, whole */
	uint64_t damaged;              /* index slots naming an entry that fails its checks */
	uint64_t full;                 /* stacks written inline because the table had no room (writer's count) */
	uint64_t ref_records;          /* valid records that name their stack in the table ... */
	uint64_t inline_records;       /* ... and relative stack records that carry their words */
};

/* 0, or -ENOENT if the file has no such run. */
RELSTACK_API int relstack_reader__stack_table(const struct relstack_reader *r, enum relstack_run_which which,
					      struct relstack_stack_table_info *out);

/* Number of valid runs in the file (0, 1 or 2). */
RELSTACK_API unsigned relstack_reader__run_count(const struct relstack_reader *r);

/* 0, or -ENOENT if the file has no such run (a damaged run is none: see relstack_reader__run_error()). */
RELSTACK_API int relstack_reader__run_info(const struct relstack_reader *r, enum relstack_run_which which,
					   struct relstack_run_info *out);

/*
 * What is wrong in run area @area (0 or 1), as "run area N, offset 0x...:
 * problem": why its run was refused, or, for a run that was kept, the
 * first damage found in its head, object table image or schemas.  NULL
 * if nothing is (an area that never held a run is not an error).
 */
RELSTACK_API const char *relstack_reader__run_error(const struct relstack_reader *r, unsigned area);

/* Slots in the run's object table image (0 if the image is damaged; see run_error). */
RELSTACK_API unsigned relstack_reader__object_count(const struct relstack_reader *r,
						    enum relstack_run_which which);

/*
 * Object @slot of the run's table.  @load_address (may be NULL) gets the
 * load bias if the run keeps addresses, else 0.  Returns 0, -ENOENT (empty
 * slot or no such run), -ERANGE (beyond the table), -RELSTACK_ECORRUPT
 * (damaged record; *why, if non-NULL, says which check failed).
 */
RELSTACK_API int relstack_reader__object(const struct relstack_reader *r, enum relstack_run_which which,
					 uint32_t slot, struct relstack_object *out, uint64_t *load_address,
					 const char **why);

/*
 * Check an entry (decoded with relstack_word_decode()) of a record made in
 * object table epoch @epoch against the run's table: an empty slot, an
 * offset beyond the object's text, a slot reused since then turn it
 * RELSTACK_ENTRY_INVALID with the reason.
 */
RELSTACK_API void relstack_reader__check_entry(const struct relstack_reader *r, enum relstack_run_which which,
					       uint64_t epoch, struct relstack_entry *e);


struct relstack_schema_field {
	char name[RELSTACK_FIELD_NAME_MAX + 1];
	uint16_t offset;
	uint16_t size;
	unsigned type; /* enum relstack_field_type (relstack/recorder.h); other values: unknown */
};

struct relstack_schema {
	unsigned id;
	char name[RELSTACK_EVENT_NAME_MAX + 1];
	unsigned size; /* bytes of fields an event carries */
	unsigned nfields;
	struct relstack_schema_field field[RELSTACK_EVENT_FIELDS_MAX];
};

/* Schemas of the run, by index 0 .. count-1 (ids need not be dense). */
RELSTACK_API unsigned relstack_reader__schema_count(const struct relstack_reader *r,
						    enum relstack_run_which which);
RELSTACK_API const struct relstack_schema *relstack_reader__schema(const struct relstack_reader *r,
								   enum relstack_run_which which, unsigned index);
RELSTACK_API const struct relstack_schema *relstack_reader__schema_by_id(const struct relstack_reader *r,
									 enum relstack_run_which which,
									 unsigned id);

struct relstack_record {
	uint64_t time_ns;        /* CLOCK_MONOTONIC */
	uint64_t realtime_ns;    /* the same, through the run's clock anchors */
	uint32_t tid;
	unsigned event_id;
	const char *event_name;  /* NULL if the run has no (valid) schema for it */
	const struct relstack_schema *schema; /* NULL likewise */
	uint32_t reasons;        /* verdict: 0 = reliable, else RELSTACK_UNRELIABLE_* bits */
	uint64_t epoch;          /* object table epoch of the words */
	bool has_stack;
	bool absolute;           /* words are absolute addresses, not entry words */
	size_t nwords;
	const uint64_t *words;   /* widened to 64 bits; valid until the next call */
	size_t fields_size;
	const void *fields;      /* valid until the next call */
	uint64_t position;       /* logical position in its write area (areas share positions) */
	bool interrupted;        /* words[0] is an interrupted instruction, not a return address */
};

/*
 * Records of a run, by time (the records of its per-CPU write areas
 * merged; ties by area, then position): a thread's records, a signal
 * handler's among them, come in the order it wrote them.  NULL with errno
 * ENOENT if there is no such run, ENOMEM.
 */
RELSTACK_API struct relstack_cursor *relstack_reader__records(const struct relstack_reader *r,
							       enum relstack_run_which which);
/* 1 and *out filled, or 0 at the end. */
RELSTACK_API int relstack_cursor__next(struct relstack_cursor *c, struct relstack_record *out);
RELSTACK_API void relstack_cursor__free(struct relstack_cursor *c);

/*
 * Field @name of @rec as an integer (UNSIGNED, SIGNED, HEX fields,
 * sign-extended for SIGNED).  0 or -ENOENT (no schema, no such field),
 * -EINVAL (not an integer field).
 */
RELSTACK_API int relstack_record__field_int(const struct relstack_record *rec, const char *name,
					    int64_t *value);

#ifdef __cplusplus
}
#endif
#endif
