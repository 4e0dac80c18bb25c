/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The buffer file: on-disk structures and the writer's internal interface.
 *
 * docs/format.md, "The buffer file", is the specification of every byte
 * declared here; the _Static_asserts in recorder.c pin sizes and
 * offsets.  All integers are little-endian (the only byte order this
 * writer produces; the format descriptor says so).
 *
 *   file:  [ file head, 4096 ] [ run area 0 ] [ run area 1 ]
 *   run:   [ run head, 4096 ] [ schemas ] [ chunk states ] [ object table image ] [ stack table ] [ ring ]
 *   ring:  [ write area 0 ] [ write area 1 ] ... (run head `areas` of them, one per CPU)
 */
#ifndef RELSTACK_RING_H
#define RELSTACK_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relstack/entry.h"
#include "relstack-local.h"
#include "ring-arch.h" /* src/ring/arch/<cpu>/, chosen by the build */

#define RS_FILE_MAGIC "RELSTACK"
#define RS_FILE_VERSION 4u
#define RS_FILE_VERSION_PREV 3u /* read (no stack table), never written */
#define RS_RUN_MAGIC "RELSTRUN"
#define RS_BLOCK 4096u
#define RS_MIN_RING (64u << 10)  /* data ring bytes of a run, at least ... */
#define RS_MAX_RING (1ull << 30) /* ... and at most (writer and reader) */
#define RS_RUNS 2u
#define RS_MAX_AREAS 32u       /* write areas of a run, at most ... */
#define RS_MIN_AREA_CHUNKS 8u  /* ... each of at least this many chunks */

/* file head flags (the only mutable word of the file head) */
#define RS_FILE_ADDRESSES 0x1u /* some run of this file holds absolute addresses */

struct rs_file_head {
	char magic[8];                 /* RS_FILE_MAGIC, no NUL */
	uint32_t version;              /* RS_FILE_VERSION */
	uint32_t head_size;            /* sizeof(struct rs_file_head) */
	struct relstack_format format; /* how entry words are laid out */
	uint32_t runs;                 /* RS_RUNS */
	uint32_t objtab_capacity;      /* object slots of each run's object table image */
	uint64_t run_area_size;        /* bytes of one run area, a multiple of RS_BLOCK */
	uint64_t run_offset[RS_RUNS];  /* file offset of each run area */
	uint64_t file_size;            /* RS_BLOCK + runs * run_area_size */
	uint64_t ring_size;            /* data ring bytes of each run: a power of two */
	uint32_t head_hash;            /* rs_hash32 of bytes 0..127 */
	uint32_t flags;                /* RS_FILE_ADDRESSES; not hashed, written alone */
};

/* run states */
#define RS_RUN_ACTIVE 1u /* being written, or its writer died */
#define RS_RUN_CLOSED 2u /* closed by relstack_recorder__close() */

/* run modes */
#define RS_MODE_OVERWRITE 0u
#define RS_MODE_STOP 1u

/* run flags */
#define RS_RUN_ADDRESSES 0x1u /* absolute stacks allowed; object records keep load addresses */

/* run clocks: what a record's time field counts */
#define RS_CLOCK_MONOTONIC 0u /* CLOCK_MONOTONIC nanoseconds */
#define RS_CLOCK_TSC 1u       /* time stamp counter ticks; the run head converts them */
#define RS_TSC_HZ_MIN 1000000ull      /* the counter rates a reader accepts */
#define RS_TSC_HZ_MAX 100000000000ull

/*
 * A write area's own cache line: the writers of one CPU reserve chunks of
 * their area here, so no line of it is written from two CPUs as a rule.
 */
struct rs_area_head {
	_Alignas(64) uint64_t head; /* next free logical position in the area */
	uint64_t overwritten;       /* records of the area's chunks that were overwritten */
	uint8_t pad[48];
};

struct rs_run_head {
	/* static part: written once when the run starts, then hashed */
	char magic[8];            /* RS_RUN_MAGIC */
	uint32_t version;         /* RS_FILE_VERSION */
	uint32_t head_size;       /* sizeof(struct rs_run_head) */
	uint64_t generation;      /* 1, 2, ... across the file; the larger is the current run */
	uint8_t run_id[16];       /* random */
	uint8_t boot_id[16];      /* /proc/sys/kernel/random/boot_id, zero if unknown */
	uint64_t realtime_ns;     /* CLOCK_REALTIME when the run started ... */
	uint64_t monotonic_ns;    /* ... and CLOCK_MONOTONIC read right after it */
	uint32_t pid;
	uint32_t mode;            /* RS_MODE_* */
	uint32_t flags;           /* RS_RUN_* */
	uint32_t chunk_size;      /* RS_CHUNK */
	uint64_t ring_offset;     /* offsets are from the start of the run area */
	uint64_t ring_size;       /* power of two, multiple of chunk_size */
	uint64_t base;            /* logical position of the ring's first byte: generation << 40 */
	uint64_t schema_offset;
	uint32_t schema_capacity; /* RS_SCHEMAS */
	uint32_t schema_size;     /* sizeof(struct rs_schema) */
	uint64_t states_offset;   /* the chunk states: one struct rs_chunk_state per chunk of the ring */
	uint64_t objtab_offset;
	uint64_t objtab_size;     /* bytes set aside for the object table image */
	char comm[16];            /* program name, NUL-padded */
	uint32_t seed;            /* record checksum seed (from run_id) */
	uint32_t clock;           /* RS_CLOCK_* */
	uint64_t tsc_start;       /* RS_CLOCK_TSC: the counter at monotonic_ns; else 0 */
	uint64_t tsc_hz;          /* RS_CLOCK_TSC: ticks per second, measured at the start; else 0 */
	uint32_t areas;           /* write areas the ring is cut into: a power of two, at most RS_MAX_AREAS */
	uint32_t reserved1;       /* zero */
	uint32_t head_hash;       /* rs_hash32 of bytes 0..199 */
	/* dynamic part */
	uint32_t state;           /* RS_RUN_*; 0 while the static part is written */
	uint64_t close_monotonic_ns;
	uint32_t anchor_seq;      /* odd while the anchor below is written; 0: none */
	uint32_t reserved0;       /* zero */
	uint64_t anchor_tsc;      /* RS_CLOCK_TSC: the counter at ... */
	uint64_t anchor_monotonic_ns; /* ... this CLOCK_MONOTONIC time, taken at flush and close */
	uint8_t pad0[16];
	_Alignas(64) uint64_t lost;  /* records refused (stop mode full, oversize, lapped) */
	uint8_t pad1[56];
	struct rs_area_head area[RS_MAX_AREAS]; /* the first `areas` are used, the rest zero */
};

/*
 * Per chunk of the ring, the writers' bookkeeping (the reader only checks
 * that the array fits); area a's chunks have the a-th equal share of the array.  owner: 0 when free; (lap << 1 | 1) while a
 * writer fills the chunk in that lap of the ring.  count: records the chunk
 * held when it was closed, added to `overwritten` when it is reused.
 */
struct rs_chunk_state {
	uint32_t count;
	uint32_t owner;
};

/* A record: 16-byte head, then the body; total length a multiple of 16. */
#define RS_REC_PAD 1u       /* filler to the end of a chunk; no body */
#define RS_REC_STACK_REL 2u /* relative stack (entry words) + fields */
#define RS_REC_STACK_ABS 3u /* absolute addresses + fields */
#define RS_REC_EVENT 4u     /* fields only */
#define RS_REC_STACK_REF 5u /* relative stack named by its stack table entry + fields */
#define RS_STACK_REF_SIZE 8u /* a kind 5 record's reference: entry unit (u32), entry checksum (u32) */

/* rs_rec_head.flags (version 4) */
#define RS_REC_F_INTERRUPTED 0x1u /* the first word is an interrupted instruction, not a return address */

struct rs_rec_head {
	uint64_t pos;     /* its own logical position; written after commit = 0 */
	uint32_t commit;  /* 0 while written; then the checksum, never 0 */
	uint8_t kind;     /* RS_REC_* */
	uint8_t flags;    /* RS_REC_F_* */
	uint16_t units;   /* total length / 16 */
};

struct rs_rec_body {
	uint64_t time;        /* the run's clock (RS_CLOCK_*): ns or counter ticks */
	uint64_t epoch;       /* object table epoch the words were made in */
	uint32_t tid;
	uint32_t reasons;     /* verdict: 0 = reliable */
	uint16_t event_id;
	uint16_t nwords;      /* words that follow, format.word_size bytes each */
	uint16_t fields_size; /* bytes of fields after the words */
	uint16_t reserved;    /* zero */
};

#define RS_REC_HEAD 16u
#define RS_REC_FIXED (RS_REC_HEAD + sizeof(struct rs_rec_body)) /* 48 */
#define RS_CHUNK 4096u
#define RS_MAX_WORDS 256u
#define RS_MAX_FIELDS_SIZE 1024u
#define RS_MAX_RECORD (RS_REC_FIXED + RS_MAX_WORDS * 8 + RS_MAX_FIELDS_SIZE)

/*
 * The stack table (stacktab.c has the design): a run's distinct relative
 * stacks, each written once, named by the records that carry it.
 *
 *   [ head, 64 bytes, in a block of its own ] [ index: buckets x u64 ] [ arena of entries ]
 *
 * Its size follows from the ring's (rs_stack_geo()), so the file head's
 * geometry fixes it and a run head needs no field for it.
 */
struct rs_stack_head {
	uint64_t used;      /* arena bytes handed out; may pass arena_size by a failed reservation */
	uint64_t full;      /* stacks written inline because the table had no room */
	uint8_t pad[48];
};

/* An entry: 16-byte head, then nwords words of the file's word size, zero-padded to 16. */
struct rs_stack_entry {
	uint64_t tag;       /* RS_STACK_TAG | its offset in the arena */
	uint32_t sum;       /* rs_rec_sum() of the entry with pos = tag; 0 while written */
	uint16_t nwords;    /* 1 .. RS_MAX_WORDS */
	uint16_t units;     /* entry length / 16 */
};

#define RS_STACK_TAG (1ull << 63)
#define RS_STACK_PROBES 32u /* index slots an insertion looks at before the table counts as full */

struct rs_stack_geo {
	uint64_t size;       /* bytes of the whole table: half the ring */
	uint64_t index_off;  /* from the table's start */
	uint64_t buckets;    /* index slots, a power of two */
	uint64_t arena_off;
	uint64_t arena_size;
};

static inline struct rs_stack_geo rs_stack_geo(uint64_t ring_size)
{
	struct rs_stack_geo g;

	g.size = ring_size / 2;
	g.index_off = 4096;
	g.buckets = g.size / 64;
	g.arena_off = g.index_off + g.buckets * 8;
	g.arena_size = g.size - g.arena_off;
	return g;
}

/* Event schemas */
#define RS_SCHEMAS 64u
#define RS_SCHEMA_FIELDS 16u
#define RS_SCHEMA_NAME 48u
#define RS_FIELD_NAME 24u

struct rs_schema_field {
	char name[RS_FIELD_NAME]; /* NUL-terminated */
	uint16_t offset;          /* in the record's field bytes */
	uint16_t size;
	uint8_t type;             /* enum relstack_field_type */
	uint8_t reserved[3];      /* zero */
};

struct rs_schema {
	uint32_t seq;             /* 0: unused; odd while written */
	uint32_t hash;            /* rs_hash32 of bytes 8..575 */
	uint16_t id;              /* equals its index in the table */
	uint16_t nfields;
	uint16_t size;            /* bytes of fields an event of this schema carries */
	uint16_t flags;           /* zero */
	char name[RS_SCHEMA_NAME];
	struct rs_schema_field field[RS_SCHEMA_FIELDS];
};

static inline uint64_t rs_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/*
 * Record checksum, never 0: NH (the hash of UMAC) over the record's
 * 16-byte blocks from byte 16, under a key of 32-bit words drawn from the
 * run's seed, then folded with the record's position and its head word at
 * byte 12 (kind, flags, units).  The commit word at 8 is not covered; the
 * position at 0 enters through the fold.
 *
 *   block j = four 32-bit words m0..m3,  key words k[4j] .. k[4j + 3]:
 *   s += (m0 + k0 mod 2^32) * (m1 + k1 mod 2^32)
 *      + (m2 + k2 mod 2^32) * (m3 + k3 mod 2^32)           (mod 2^64)
 *   commit = low 32 bits of mix(s ^ mix(pos ^ (head word << 32 | seed)))
 *
 * For two different bodies of one length (the length is in the head
 * word), NH collides with probability at most 2^-32 over the key, whatever
 * the difference, so damage that does not know the key - flipped bits,
 * a torn copy, bytes of another lap - passes with probability about
 * 2^-31 after the 32-bit fold.  The key is not secret (the seed is in the
 * file): the checksum tells damage, not forgery; the reader's bounds
 * checks stop hostile input.  Cost: one 32 x 32 multiply per 8 bytes,
 * two per SSE2 instruction, and no dependency chain but the additions.
 */
#define RS_NH_KEYS ((RS_MAX_RECORD - RS_REC_HEAD) / 4)

/* key word j of a run (the writer keeps them in rs_ring.key, the reader in its run view) */
static inline uint32_t rs_nh_key(uint32_t seed, uint32_t j)
{
	return (uint32_t)(rs_mix64(((uint64_t)seed << 32 | j) + 1) >> 32);
}

static inline void rs_nh_keys(uint32_t seed, uint32_t *k)
{
	for (uint32_t j = 0; j < RS_NH_KEYS; j++)
		k[j] = rs_nh_key(seed, j);
}

/* NH over the 16-byte blocks of @rec from byte @from to byte @to, both multiples of 16 and at least 16. */
static inline rs_nh_acc rs_nh_mem(rs_nh_acc acc, const uint32_t *key, const void *rec, size_t from, size_t to)
{
	const unsigned char *c = rec;

	for (size_t o = from; o < to; o += 16)
		acc = rs_nh_block(acc, rs_nh_load(c + o), key + (o - RS_REC_HEAD) / 4);
	return acc;
}

static inline uint32_t rs_rec_sum_final(uint32_t seed, uint64_t pos, uint32_t head_word, rs_nh_acc acc)
{
	uint64_t x = rs_nh_fold(acc) ^ rs_mix64(pos ^ ((uint64_t)head_word << 32 | seed));
	uint32_t s = (uint32_t)rs_mix64(x);

	return s ? s : 1;
}

/* The checksum of the @len-byte record at @rec (len a multiple of 16, at most RS_MAX_RECORD). */
static inline uint32_t rs_rec_sum(uint32_t seed, const uint32_t *key, uint64_t pos, const void *rec, size_t len)
{
	uint32_t w;

	__builtin_memcpy(&w, (const unsigned char *)rec + 12, 4);
	return rs_rec_sum_final(seed, pos, w, rs_nh_mem(rs_nh_zero(), key, rec, RS_REC_HEAD, len));
}

/* ---- the writer ---- */

/* The run's stack table, as its writers see it; head NULL: records carry their words. */
struct rs_stacktab {
	struct rs_stack_head *head;
	_Atomic uint64_t *index;
	unsigned char *arena;
	uint64_t arena_size;
	uint64_t mask;        /* buckets - 1 */
};

/* One write area, as its writers see it: written from the CPU it belongs to, as a rule. */
struct rs_ring_area {
	_Alignas(64) unsigned char *data; /* the area's first byte */
	struct rs_chunk_state *chunks;   /* its share of the chunk states, in the file */
	_Atomic uint64_t *head;          /* its head and counter in the run head */
	_Atomic uint64_t *overwritten;
	_Atomic uint64_t *chunk_epoch;   /* per chunk: epoch of its first record (process memory) */
	_Atomic uint64_t horizon;        /* epoch of its oldest chunk still held */
};

struct rs_ring {
	struct rs_run_head *run;
	uint64_t size, base, mask;   /* of one area */
	unsigned size_shift;         /* size == 1 << size_shift */
	uint32_t nchunks;            /* of one area */
	uint32_t areas;              /* a power of two */
	_Atomic uint64_t *chunk_epoch; /* every area's chunk epochs, area by area */
	uint32_t seed;
	uint32_t mode;
	uint32_t clock;              /* RS_CLOCK_*: what record_put() reads */
	unsigned word_size;
	uint64_t serial;             /* unique per ring in this process */
	int holder;                  /* object table holder id, -1 if none */
	_Atomic uint64_t held;       /* the horizon last given to the object table */
	struct rs_stacktab stacks;
	_Alignas(16) uint32_t key[RS_NH_KEYS]; /* rs_nh_keys(seed) */
	struct rs_ring_area area[RS_MAX_AREAS];
};

/* What one record holds. */
struct rs_rec_in {
	unsigned kind;
	unsigned flags;       /* RS_REC_F_* */
	uint16_t event_id;
	uint32_t reasons;
	uint64_t epoch;
	const uint64_t *words;
	size_t nwords;        /* for RS_REC_STACK_REF: the depth of the stack it names */
	uint64_t ref;         /* RS_REC_STACK_REF: rs_stacktab_ref()'s reference */
	const void *fields;
	size_t fields_size;
	/*
	 * The record's thread: the writing thread's, or with tid_given the
	 * task a foreign source names (a kernel event's: its recorder writes
	 * for every task, the idle task 0 among them).
	 */
	bool tid_given;
	uint32_t tid;
};

/* Async-signal-safe (after the thread's first record: see ring-write.c). */
RS_HIDDEN int rs_ring_write(struct rs_ring *r, const struct rs_rec_in *in);
RS_HIDDEN void rs_ring_init(struct rs_ring *r);
/* The write areas a run of @ring_size bytes gets on this machine. */
RS_HIDDEN uint32_t rs_ring_areas(uint64_t ring_size);
/*
 * The CPU's side of the run clock (src/ring/arch/<cpu>/): whether the
 * counter rs_arch_ticks() reads ticks at a constant rate, in idle states
 * too.  Returns its rate in Hz where the CPU publishes it,
 * RS_COUNTER_MEASURE where ring-clock.c must measure it, or
 * RS_COUNTER_UNUSABLE.  Asked once per process.  Whether the kernel keeps
 * the counter as its clocksource (RS_ARCH_CLOCKSOURCE, the name in
 * /sys/devices/system/clocksource) is asked at every run.
 */
#define RS_COUNTER_UNUSABLE 0u
#define RS_COUNTER_MEASURE 1u
RS_HIDDEN uint64_t rs_arch_counter_hz(void);
/* Test hook: when set before a recorder opens, its run gets this many areas (within the limits). */
RS_HIDDEN extern uint32_t rs_ring_test_areas;
/* Test hook: stop after writing part of a record, as if killed there. */
RS_HIDDEN int rs_ring_write_partial(struct rs_ring *r, const struct rs_rec_in *in, unsigned stage);

RS_HIDDEN uint64_t rs_clock_ns(int clock);

/*
 * The reference of the relative stack @words[0..n) in the run's stack
 * table (entry unit | entry checksum << 32), inserting it if it is not
 * there; 0 if the table has no room (counted in its head's `full`) or
 * the run has none.  Lock-free and async-signal-safe (stacktab.c).
 */
RS_HIDDEN uint64_t rs_stacktab_ref(struct rs_ring *r, const uint64_t *words, size_t n);
/* Points @t at the stack table at @mem of a run whose ring is @ring_size bytes. */
RS_HIDDEN void rs_stacktab_attach(struct rs_stacktab *t, unsigned char *mem, uint64_t ring_size);

/*
 * Kill points: a test build (-DRS_KILL_POINTS) raises SIGKILL at the point
 * named rs_kill_at, so that tests kill the writer at an exact instant of
 * its work.  Other builds have none.
 */
#ifdef RS_KILL_POINTS
RS_HIDDEN extern const char *rs_kill_at;
RS_HIDDEN void rs_kill_point(const char *name);
#define RS_KILL_POINT(name) rs_kill_point(name)
#else
#define RS_KILL_POINT(name) ((void)0)
#endif

/* The checks of a file head and of a run head (reader.c), the same for the reader and the recorder. */
RS_HIDDEN int rs_file_head_check(const void *mem, uint64_t file_bytes, struct rs_file_head *f,
				 struct rs_run_head *layout, char *msg, size_t msgsz);
RS_HIDDEN int rs_run_head_check(const struct rs_run_head *h, const struct rs_run_head *layout, unsigned area,
				uint64_t at, char *err, size_t errsz);

/*
 * The run clock (ring-clock.c).  rs_clock_pick() decides at run start
 * whether records carry counter ticks, and fills clock, tsc_start, tsc_hz
 * and monotonic_ns of @h; rs_clock_anchor() stores a fresh (counter,
 * CLOCK_MONOTONIC) pair in the dynamic part.  Neither is async-signal-safe
 * in the sense of the write path (both read files or spin): callers are
 * open, flush and close.
 */
RS_HIDDEN void rs_clock_pick(struct rs_run_head *h);
RS_HIDDEN void rs_clock_anchor(struct rs_run_head *h);
/*
 * The CPU's side of the run clock (src/ring/arch/<cpu>/): whether the
 * counter rs_arch_ticks() reads ticks at a constant rate, in idle states
 * too.  Returns its rate in Hz where the CPU publishes it,
 * RS_COUNTER_MEASURE where ring-clock.c must measure it, or
 * RS_COUNTER_UNUSABLE.  Asked once per process.  Whether the kernel keeps
 * the counter as its clocksource (RS_ARCH_CLOCKSOURCE, the name in
 * /sys/devices/system/clocksource) is asked at every run.
 */
#define RS_COUNTER_UNUSABLE 0u
#define RS_COUNTER_MEASURE 1u
RS_HIDDEN uint64_t rs_arch_counter_hz(void);
/* Test hook: when set before a recorder opens, its run uses CLOCK_MONOTONIC. */
RS_HIDDEN extern bool rs_clock_no_tsc;
/* The reader's conversion of a record's time to CLOCK_MONOTONIC ns (validated run head). */
RS_HIDDEN uint64_t rs_clock_to_ns(const struct rs_run_head *h, uint64_t t);

#endif
