// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Damaged buffer files: start from a well-formed file with two runs, damage
 * it (flip bytes, truncate, rewrite fields with a matching checksum), and
 * check that the reader refuses exactly what is damaged, with a message of
 * its own, never returns a record that is not byte-for-byte what was
 * written, and never crashes.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "ring/ring.h"
#include "ring-fixture.h"

static unsigned char *good;
static size_t good_size;
static size_t good_records[2]; /* current, previous */

static struct relstack_recorder *left_open;

static cpu_set_t all_cpus;
static bool two_cpus; /* the runs' records lie in both write areas */

/* Run on the @k-th CPU this process may use (the write area follows the CPU); false if there is none. */
static bool run_on_cpu(unsigned k)
{
	cpu_set_t one;

	if (!CPU_COUNT(&all_cpus) && sched_getaffinity(0, sizeof(all_cpus), &all_cpus) < 0)
		return false;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &all_cpus) || k--)
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		return sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	return false;
}

/*
 * Two write areas, and where the machine has two CPUs, records in both:
 * the first half written on one CPU, the rest on the other.
 */
static void write_run(const char *path, uint64_t from, unsigned count, bool close_it)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;
	int ev;

	rs_ring_test_areas = 2;
	o.size = 128u << 10;
	o.objtab_capacity = 16;
	rec = relstack_recorder__open(path, &o);
	assert_non_null(rec);
	ev = rs_seq_define(rec);
	run_on_cpu(0);
	for (uint64_t s = from; s < from + count; s++) {
		if (s == from + count / 2)
			two_cpus = run_on_cpu(1);
		assert_int_equal(rs_seq_write(rec, ev, 0, s, (unsigned)(s % 32), NULL), 0);
	}
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	assert_int_equal(relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, 0), 0);
	if (close_it)
		relstack_recorder__close(rec);
	else
		left_open = rec; /* an active run, as after a crash (closed once the bytes are taken) */
}

static int setup(void **state)
{
	char dir[64] = "/tmp/rs-corrupt-XXXXXX", path[128];
	struct stat st;
	FILE *f;

	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/buf", dir);
	write_run(path, 0, 150, true);
	write_run(path, 1000, 200, false);
	if (stat(path, &st) < 0)
		return -1;
	good_size = (size_t)st.st_size;
	good = malloc(good_size);
	f = fopen(path, "rb");
	if (!f || fread(good, 1, good_size, f) != good_size)
		return -1;
	fclose(f);
	relstack_recorder__close(left_open);
	unlink(path);
	rmdir(dir);
	good_records[0] = 201;
	good_records[1] = 151;
	return 0;
}

static int teardown(void **state)
{
	free(good);
	return 0;
}

/*
 * Every record the reader returns must be exactly one that was written.
 * Returns the number of records of the run.
 */
static size_t verify(struct relstack_reader *r, enum relstack_run_which which)
{
	struct relstack_cursor *c = relstack_reader__records(r, which);
	struct relstack_record rec;
	size_t n = 0;

	if (!c)
		return 0;
	while (relstack_cursor__next(c, &rec) > 0) {
		uint32_t t;
		uint64_t seq;

		n++;
		if (rec.event_id == RELSTACK_EVENT_STACK && rec.nwords > 0 && rec.fields_size == 0)
			continue;
		assert_int_equal(rec.event_id, 2);
		if (!rec.event_name)
			continue; /* its schema is damaged: the fields cannot be named, the record is still whole */
		rs_seq_check(&rec, &t, &seq);
		assert_int_equal(rec.nwords, seq % 32);
	}
	relstack_cursor__free(c);
	return n;
}

static struct relstack_reader *open_bytes(const unsigned char *b, size_t n, char *err, size_t errsz)
{
	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = errsz };

	err[0] = 0;
	return relstack_reader__open_mem(b, n, &o);
}

static void the_well_formed_file_reads_back_whole(void **state)
{
	char err[256];
	struct relstack_reader *r = open_bytes(good, good_size, err, sizeof(err));

	assert_non_null(r);
	assert_int_equal(relstack_reader__run_count(r), 2);
	assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[0]);
	assert_int_equal(verify(r, RELSTACK_RUN_PREVIOUS), good_records[1]);
	assert_null(relstack_reader__run_error(r, 0));
	assert_null(relstack_reader__run_error(r, 1));
	relstack_reader__close(r);
	for (unsigned i = 0; i < RS_RUNS; i++) {
		const struct rs_run_head *h = (const struct rs_run_head *)(good + ((struct rs_file_head *)good)->run_offset[i]);

		assert_int_equal(h->areas, 2);
		if (two_cpus) /* so the checks below damage a run whose records the reader merges from two areas */
			assert_true(h->area[0].head > h->base && h->area[1].head > h->base);
	}
}

static int refuse_field(size_t off, const void *val, size_t n, char *err, size_t errsz);

/*
 * A file of the previous layout (version 2: one head, one ring) is refused
 * by the reader and by a recorder, each naming the version, and the
 * recorder leaves the file as it was.
 */
static void a_file_of_the_previous_layout_is_refused_naming_its_version(void **state)
{
	char dir[64] = "/tmp/rs-corrupt-XXXXXX", path[128], err[256];
	uint32_t v2 = 2;
	unsigned char *after = malloc(good_size);
	unsigned char *b = malloc(good_size);
	struct rs_file_head *f = (struct rs_file_head *)b;
	struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
	FILE *fp;

	assert_int_equal(refuse_field(offsetof(struct rs_file_head, version), &v2, 4, err, sizeof(err)),
			 RELSTACK_EVERSION);
	assert_non_null(strstr(err, "version 2, this reader reads versions 3 and 4"));

	memcpy(b, good, good_size);
	f->version = 2;
	f->head_hash = rs_hash32(RS_HASH32_INIT, f, offsetof(struct rs_file_head, head_hash));
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/buf", dir);
	fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(b, 1, good_size, fp), good_size);
	fclose(fp);
	assert_null(relstack_recorder__open(path, NULL));
	assert_int_equal(errno, RELSTACK_EVERSION);
	assert_null(relstack_reader__open(path, &ro));
	assert_non_null(strstr(err, "version 2"));
	fp = fopen(path, "rb");
	assert_non_null(fp);
	assert_int_equal(fread(after, 1, good_size, fp), good_size);
	fclose(fp);
	assert_memory_equal(after, b, good_size);
	unlink(path);
	rmdir(dir);
	free(after);
	free(b);
}

static void any_flipped_byte_of_the_file_head_refuses_the_file_with_a_message(void **state)
{
	unsigned char *b = malloc(good_size);
	char err[256];

	for (size_t off = 0; off < sizeof(struct rs_file_head); off++) {
		struct relstack_reader *r;

		memcpy(b, good, good_size);
		b[off] ^= 0x41;
		r = open_bytes(b, good_size, err, sizeof(err));
		if (r)
			fail_msg("flip at file offset %zu accepted", off);
		assert_true(errno == RELSTACK_EMAGIC || errno == RELSTACK_EVERSION || errno == RELSTACK_ECORRUPT ||
			    errno == RELSTACK_EFORMAT);
		assert_non_null(strstr(err, "(memory): "));
		assert_true(strlen(err) > 20);
		if (off < 8)
			assert_int_equal(errno, RELSTACK_EMAGIC);
	}
	free(b);
}

/* Rewrite a file head field and its checksum: only the field's own check can refuse it. */
static int refuse_field(size_t off, const void *val, size_t n, char *err, size_t errsz)
{
	unsigned char *b = malloc(good_size);
	struct rs_file_head *f = (struct rs_file_head *)b;
	struct relstack_reader *r;
	int e;

	memcpy(b, good, good_size);
	memcpy(b + off, val, n);
	f->head_hash = rs_hash32(RS_HASH32_INIT, f, offsetof(struct rs_file_head, head_hash));
	r = open_bytes(b, good_size, err, errsz);
	e = r ? 0 : errno;
	relstack_reader__close(r);
	free(b);
	return e;
}

static void each_file_head_check_has_its_own_code_and_message(void **state)
{
	struct {
		size_t off;
		uint64_t val;
		size_t n;
		int code;
		const char *mentions;
	} cases[] = {
		{ 8, 1, 4, RELSTACK_EVERSION, "version" },
		{ 12, 64, 4, RELSTACK_ECORRUPT, "head_size" },
		{ 16, 5, 1, RELSTACK_EFORMAT, "word_size" },
		{ 17, RELSTACK_BIG_ENDIAN, 1, RELSTACK_EFORMAT, "byte_order" },
		{ 80, 3, 4, RELSTACK_ECORRUPT, "runs" },
		{ 88, 4095, 8, RELSTACK_ECORRUPT, "run_area_size" },
		{ 104, 4096, 8, RELSTACK_ECORRUPT, "run_offset[1]" },
		{ 112, 1, 8, RELSTACK_ECORRUPT, "file_size" },
		{ 132, 0x80, 4, RELSTACK_ECORRUPT, "flags" },
		{ 120, 3 << 16, 8, RELSTACK_ECORRUPT, "ring_size" },
		{ 84, 5000, 4, RELSTACK_ECORRUPT, "objtab_capacity" },
	};
	char msgs[RS_ARRAY_SIZE(cases)][256];

	for (size_t i = 0; i < RS_ARRAY_SIZE(cases); i++) {
		int code = refuse_field(cases[i].off, &cases[i].val, cases[i].n, msgs[i], sizeof(msgs[i]));

		if (code != cases[i].code)
			fail_msg("field at %zu: code %d, expected %d (%s)", cases[i].off, code, cases[i].code, msgs[i]);
		if (!strstr(msgs[i], cases[i].mentions))
			fail_msg("message \"%s\" does not name %s", msgs[i], cases[i].mentions);
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(msgs[i], msgs[k]);
	}
}

static void a_truncated_file_is_refused_as_truncated(void **state)
{
	size_t cuts[] = { 0, 7, 8, 100, 127, 128, 4096, 4097, good_size / 2, good_size - 4096, good_size - 1 };
	char err[256];

	for (size_t i = 0; i < RS_ARRAY_SIZE(cuts); i++) {
		struct relstack_reader *r = open_bytes(good, cuts[i], err, sizeof(err));

		assert_null(r);
		assert_int_equal(errno, cuts[i] < 8 ? RELSTACK_EMAGIC : RELSTACK_ETRUNCATED);
		assert_true(strlen(err) > 10);
	}
}

static void a_flipped_byte_of_a_run_head_drops_that_run_only(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	size_t at = f->run_offset[cur_area];
	char err[256];

	for (size_t off = 0; off < sizeof(struct rs_run_head); off++) {
		struct relstack_reader *r;

		memcpy(b, good, good_size);
		b[at + off] ^= 0x10;
		r = open_bytes(b, good_size, err, sizeof(err));
		assert_non_null(r);
		if (off < offsetof(struct rs_run_head, head_hash) + 4) {
			/* the static part is hashed: the run goes, the previous run stays */
			assert_int_equal(relstack_reader__run_count(r), 1);
			assert_non_null(relstack_reader__run_error(r, cur_area));
			assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[1]);
		} else {
			/* the dynamic part (state, counters, head): checked, never trusted */
			verify(r, RELSTACK_RUN_CURRENT);
			assert_int_equal(verify(r, RELSTACK_RUN_PREVIOUS) + verify(r, RELSTACK_RUN_CURRENT) > 0, 1);
		}
		relstack_reader__close(r);
	}
	free(b);
}

static void flipped_bytes_in_the_ring_cost_at_most_one_record_each_and_are_counted(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	const struct rs_run_head *h = (const struct rs_run_head *)(good + f->run_offset[cur_area]);
	size_t ring = f->run_offset[cur_area] + h->ring_offset, asize = h->ring_size / h->areas, used[RS_MAX_AREAS];
	char err[256];

	for (unsigned a = 0; a < h->areas; a++)
		used[a] = h->area[a].head - h->base < asize ? h->area[a].head - h->base : asize;
	srand(4);
	for (unsigned it = 0; it < 2000; it++) {
		struct relstack_reader *r;
		struct relstack_run_info info;
		unsigned flips = 1 + (unsigned)rand() % 4;
		size_t n;

		memcpy(b, good, good_size);
		for (unsigned k = 0; k < flips; k++) {
			unsigned a = (unsigned)rand() % h->areas;

			while (!used[a]) /* the areas that hold records */
				a = (a + 1) % h->areas;
			b[ring + a * asize + (size_t)rand() % used[a]] ^= (unsigned char)(1u << (rand() % 8));
		}
		r = open_bytes(b, good_size, err, sizeof(err));
		assert_non_null(r);
		n = verify(r, RELSTACK_RUN_CURRENT);
		assert_true(n + flips >= good_records[0]);
		assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
		if (n < good_records[0])
			assert_true(info.skipped + info.gap_bytes > 0);
		assert_int_equal(info.skipped_partial, 0); /* damage is never taken for a crash */
		if (info.skipped_damaged)
			assert_non_null(strstr(relstack_reader__record_error(r, RELSTACK_RUN_CURRENT),
					       ": checksum mismatch"));
		assert_int_equal(verify(r, RELSTACK_RUN_PREVIOUS), good_records[1]);
		relstack_reader__close(r);
	}
	free(b);
}

/* The current run's head in @file, and where its stack table's arena and index are. */
static const struct rs_run_head *stack_table(const unsigned char *file, size_t *arena, size_t *index,
					     struct rs_stack_geo *g)
{
	const struct rs_file_head *f = (const struct rs_file_head *)file;
	unsigned cur_area = ((const struct rs_run_head *)(file + f->run_offset[0]))->generation == 2 ? 0 : 1;
	const struct rs_run_head *h = (const struct rs_run_head *)(file + f->run_offset[cur_area]);
	size_t at = f->run_offset[cur_area] + h->objtab_offset + h->objtab_size;

	*g = rs_stack_geo(h->ring_size);
	*arena = at + g->arena_off;
	*index = at + g->index_off;
	return h;
}

static void table_figures(const unsigned char *b, struct relstack_stack_table_info *st, size_t *n, char *err,
			  size_t errsz)
{
	struct relstack_reader *r = open_bytes(b, good_size, err, errsz);

	assert_non_null(r);
	*n = verify(r, RELSTACK_RUN_CURRENT);
	assert_int_equal(relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, st), 0);
	if (*n < good_records[0]) {
		const char *e = relstack_reader__record_error(r, RELSTACK_RUN_CURRENT);

		assert_non_null(e);
		snprintf(err, errsz, "%s", e);
	}
	assert_int_equal(verify(r, RELSTACK_RUN_PREVIOUS), good_records[1]);
	relstack_reader__close(r);
}

/*
 * Each record of the well-formed runs names an entry of its own (their
 * stacks all differ): a flipped byte of an entry costs at most the record
 * naming it, with a message naming the entry; a flipped byte of the index
 * costs no record; no record is ever read with other words.
 */
static void flipped_bytes_in_the_stack_table_cost_only_the_records_naming_their_entry(void **state)
{
	unsigned char *b = malloc(good_size);
	struct relstack_stack_table_info st0, st;
	struct rs_stack_geo g;
	size_t arena, index, n;
	const struct rs_run_head *h = stack_table(good, &arena, &index, &g);
	uint64_t used = ((const struct rs_stack_head *)(good + index - g.index_off))->used;
	char err[400];

	(void)h;
	table_figures(good, &st0, &n, err, sizeof(err));
	assert_int_equal(n, good_records[0]);
	assert_true(st0.entries > 100 && st0.ref_records == st0.entries && st0.damaged == 0);
	srand(5);
	for (unsigned it = 0; it < 1000; it++) {
		unsigned flips = 1 + (unsigned)rand() % 3;

		memcpy(b, good, good_size);
		for (unsigned k = 0; k < flips; k++)
			b[arena + (size_t)rand() % used] ^= (unsigned char)(1u << (rand() % 8));
		table_figures(b, &st, &n, err, sizeof(err));
		assert_true(n + flips >= good_records[0]);
		if (n < good_records[0])
			assert_non_null(strstr(err, "of the stack table: "));
		assert_true(st.entries + flips >= st0.entries);
	}
	for (unsigned it = 0; it < 300; it++) {
		memcpy(b, good, good_size);
		b[index + (size_t)rand() % (g.buckets * 8)] ^= (unsigned char)(1u << (rand() % 8));
		table_figures(b, &st, &n, err, sizeof(err));
		assert_int_equal(n, good_records[0]);
	}
	free(b);
}

/* The first entry of the current run's table: its offset in @b, and its length. */
static size_t first_entry(const unsigned char *b, size_t *len)
{
	struct rs_stack_geo g;
	size_t arena, index;
	const struct rs_stack_entry *e;

	stack_table(b, &arena, &index, &g);
	e = (const struct rs_stack_entry *)(b + arena);
	assert_true(e->sum != 0 && e->nwords > 0);
	*len = (size_t)e->units * 16;
	return arena;
}

/*
 * An entry left without its checksum (a writer stopped in S4), and an
 * entry rewritten with other words and a checksum that holds (what reuse
 * would do): the record naming it is refused, each with its message, and
 * never read with the entry's new words.
 */
static void a_record_never_takes_the_words_of_an_entry_it_did_not_name(void **state)
{
	unsigned char *b = malloc(good_size);
	struct relstack_stack_table_info st;
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	const struct rs_run_head *h;
	struct rs_stack_geo g;
	struct rs_stack_entry *e;
	size_t arena, index, len, at, n;
	uint32_t key[RS_NH_KEYS];
	char err[400];

	memcpy(b, good, good_size);
	at = first_entry(b, &len);
	((struct rs_stack_entry *)(b + at))->sum = 0;
	table_figures(b, &st, &n, err, sizeof(err));
	assert_int_equal(n, good_records[0] - 1);
	assert_non_null(strstr(err, "stack table entry not written"));

	memcpy(b, good, good_size);
	h = stack_table(b, &arena, &index, &g);
	rs_nh_keys(h->seed, key);
	e = (struct rs_stack_entry *)(b + at);
	((uint64_t *)(e + 1))[0] ^= 0x10; /* another stack, of the same depth */
	e->sum = rs_rec_sum(h->seed, key, e->tag, e, len);
	table_figures(b, &st, &n, err, sizeof(err));
	assert_int_equal(n, good_records[0] - 1);
	assert_non_null(strstr(err, "is not the one named (checksum differs)"));
	assert_int_equal(st.entries, st.ref_records + 1); /* the entry itself is whole: only its record is refused */
	(void)f;
	free(b);
}

static void a_damaged_schema_or_object_table_costs_only_itself(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	const struct rs_run_head *h = (const struct rs_run_head *)(good + f->run_offset[cur_area]);
	size_t area = f->run_offset[cur_area];
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record rec;
	struct relstack_entry e = { .kind = RELSTACK_ENTRY_OBJECT, .slot = 0, .offset = 0x1000 };
	char err[256];

	/* schema 2 ("seq"): one byte of its name */
	memcpy(b, good, good_size);
	b[area + h->schema_offset + 2 * sizeof(struct rs_schema) + 17] ^= 1;
	r = open_bytes(b, good_size, err, sizeof(err));
	assert_non_null(r);
	assert_null(relstack_reader__schema_by_id(r, RELSTACK_RUN_CURRENT, 2));
	assert_non_null(relstack_reader__schema_by_id(r, RELSTACK_RUN_CURRENT, RELSTACK_EVENT_CRASH));
	assert_non_null(strstr(relstack_reader__run_error(r, cur_area), "schema 2: checksum mismatch"));
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	assert_int_equal(relstack_cursor__next(c, &rec), 1);
	assert_null(rec.event_name); /* the record is intact, its schema is not */
	assert_int_equal(rec.event_id, 2);
	relstack_cursor__free(c);
	assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[0]);
	relstack_reader__close(r);

	/* the object table image head */
	memcpy(b, good, good_size);
	b[area + h->objtab_offset + 1] ^= 1;
	r = open_bytes(b, good_size, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(relstack_reader__object_count(r, RELSTACK_RUN_CURRENT), 0);
	assert_non_null(strstr(relstack_reader__run_error(r, cur_area), "object table: bad magic"));
	relstack_reader__check_entry(r, RELSTACK_RUN_CURRENT, 1, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);
	assert_int_equal(e.reason, RELSTACK_REASON_BAD_SLOT_RECORD);
	assert_true(relstack_reader__object_count(r, RELSTACK_RUN_PREVIOUS) > 0);
	assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[0]);
	relstack_reader__close(r);
	free(b);
}

/* Rewrite fields of the current run's head and its checksum: the reader gives the run's own message. */
static const char *run_refused(unsigned char *b, void (*edit)(struct rs_run_head *), unsigned *area_out)
{
	static char msg[256];
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	struct rs_run_head *h = (struct rs_run_head *)(b + f->run_offset[cur_area]);
	struct relstack_reader *r;
	char err[256];
	const char *e;

	memcpy(b, good, good_size);
	edit(h);
	h->head_hash = rs_hash32(RS_HASH32_INIT, h, offsetof(struct rs_run_head, head_hash));
	r = open_bytes(b, good_size, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(relstack_reader__run_count(r), 1);
	assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[1]); /* the previous run is left */
	e = relstack_reader__run_error(r, cur_area);
	assert_non_null(e);
	snprintf(msg, sizeof(msg), "%s", e);
	relstack_reader__close(r);
	*area_out = cur_area;
	return msg;
}

static void unknown_clock(struct rs_run_head *h) { h->clock = 7; }
static void ticks_rate_zero(struct rs_run_head *h) { h->clock = RS_CLOCK_TSC; h->tsc_hz = 5; }
static void monotonic_with_anchor(struct rs_run_head *h) { h->clock = RS_CLOCK_MONOTONIC; h->tsc_start = 1; h->tsc_hz = 0; }
static void three_areas(struct rs_run_head *h) { h->areas = 3; }
static void areas_too_small(struct rs_run_head *h) { h->areas = RS_MAX_AREAS; }
static void no_areas(struct rs_run_head *h) { h->areas = 0; }
static void area_head_between_chunks(struct rs_run_head *h) { h->area[1].head += 16; }

static void each_write_area_check_has_its_own_message(void **state)
{
	unsigned char *b = malloc(good_size);
	unsigned area;

	assert_non_null(strstr(run_refused(b, three_areas, &area), "3 write areas: not a power of two"));
	assert_non_null(strstr(run_refused(b, areas_too_small, &area), "32 write areas: not a power of two up to 32 "
								       "with 8 chunks each"));
	assert_non_null(strstr(run_refused(b, no_areas, &area), "0 write areas"));
	/* at area 1's head, 384 bytes into the run head */
	assert_non_null(strstr(run_refused(b, area_head_between_chunks, &area), "head of write area 1, 0x"));
	free(b);
}

static void each_run_clock_check_has_its_own_message(void **state)
{
	unsigned char *b = malloc(good_size);
	unsigned area;

	assert_non_null(strstr(run_refused(b, unknown_clock, &area), "clock 7 unknown"));
	assert_non_null(strstr(run_refused(b, ticks_rate_zero, &area), "counter rate 5 Hz out of range"));
	assert_non_null(strstr(run_refused(b, monotonic_with_anchor, &area),
			       "counter anchor set, but records carry CLOCK_MONOTONIC"));
	free(b);
}

static void a_damaged_clock_anchor_moves_times_never_records(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	struct rs_run_head *h = (struct rs_run_head *)(b + f->run_offset[cur_area]);
	static const uint64_t odd[][3] = {
		{ 3, 1, 1 },                           /* cut short while written */
		{ 2, UINT64_MAX, UINT64_MAX },         /* absurd */
		{ 2, 0, 0 },                           /* before the start */
		{ 4, UINT64_MAX / 2, 1ull << 61 },     /* far from the measured rate */
	};
	uint64_t *times = calloc(good_records[0], sizeof(*times));
	size_t n = 0;
	char err[256];

	{
		/* the current run was left open: no anchor, its times come from the measured rate */
		struct relstack_reader *r = open_bytes(good, good_size, err, sizeof(err));
		struct relstack_cursor *c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
		struct relstack_record rec;

		while (relstack_cursor__next(c, &rec) > 0 && n < good_records[0])
			times[n++] = rec.time_ns;
		relstack_cursor__free(c);
		relstack_reader__close(r);
		assert_int_equal(n, good_records[0]);
	}
	for (size_t i = 0; i < RS_ARRAY_SIZE(odd); i++) {
		struct relstack_reader *r;
		struct relstack_cursor *c;
		struct relstack_record rec;
		size_t k = 0;

		memcpy(b, good, good_size);
		h->anchor_seq = (uint32_t)odd[i][0];
		h->anchor_tsc = odd[i][1];
		h->anchor_monotonic_ns = odd[i][2];
		r = open_bytes(b, good_size, err, sizeof(err));
		assert_non_null(r);
		assert_int_equal(relstack_reader__run_count(r), 2);
		assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[0]);
		c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
		while (relstack_cursor__next(c, &rec) > 0)
			assert_true(rec.time_ns == times[k++]); /* the anchor is ignored, the measured rate used */
		relstack_cursor__free(c);
		relstack_reader__close(r);
	}
	free(times);
	free(b);
}

static void a_record_longer_than_any_record_is_damage_with_its_own_message(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	const struct rs_run_head *h = (const struct rs_run_head *)(good + f->run_offset[cur_area]);
	struct rs_rec_head *rh = (struct rs_rec_head *)(b + f->run_offset[cur_area] + h->ring_offset);
	struct relstack_reader *r;
	struct relstack_run_info info;
	char err[256];

	memcpy(b, good, good_size);
	assert_int_equal(rh->pos, h->base); /* the first record of the ring */
	rh->units = (RS_MAX_RECORD + 16) / 16;
	r = open_bytes(b, good_size, err, sizeof(err));
	assert_non_null(r);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.skipped_damaged, 1);
	assert_non_null(strstr(relstack_reader__record_error(r, RELSTACK_RUN_CURRENT), ": longer than any record"));
	assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[0] - 1);
	relstack_reader__close(r);
	free(b);
}

/* The records of the run of generation @gen, or -1 if the reader holds no such run. */
static long run_records(struct relstack_reader *r, uint64_t gen)
{
	for (int w = RELSTACK_RUN_CURRENT; w <= RELSTACK_RUN_PREVIOUS; w++) {
		struct relstack_run_info info;

		if (relstack_reader__run_info(r, (enum relstack_run_which)w, &info) == 0 && info.generation == gen)
			return (long)verify(r, (enum relstack_run_which)w);
	}
	return -1;
}

/*
 * Every bit of @b's run area @area from byte @from to @to of its run head
 * flipped in turn: the run keeps all its @expect records, or the reader
 * says what is wrong with it; the other run loses nothing.
 */
static void flip_run_head_bits(const unsigned char *file, size_t size, unsigned area, size_t from, size_t to,
			       const long expect[2])
{
	const struct rs_file_head *f = (const struct rs_file_head *)file;
	unsigned char *b = malloc(size);
	uint64_t gen[2];
	char err[256];

	for (unsigned a = 0; a < 2; a++)
		gen[a] = ((const struct rs_run_head *)(file + f->run_offset[a]))->generation;
	for (size_t off = from; off < to; off++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			struct relstack_reader *r;
			const char *why;
			long n;

			memcpy(b, file, size);
			b[f->run_offset[area] + off] ^= (unsigned char)(1u << bit);
			r = open_bytes(b, size, err, sizeof(err));
			assert_non_null(r);
			why = relstack_reader__run_error(r, area);
			n = run_records(r, gen[area]);
			if (n != expect[area] && !why)
				fail_msg("run area %u, run head byte %zu bit %u: %ld of %ld records, and no word of damage",
					 area, off, bit, n, expect[area]);
			if (why && !strstr(why, area ? "run area 1, offset" : "run area 0, offset"))
				fail_msg("message \"%s\" does not name the run area and offset", why);
			assert_int_equal(run_records(r, gen[!area]), expect[!area]);
			relstack_reader__close(r);
		}
	}
	free(b);
}

static void a_flipped_bit_of_a_run_heads_unhashed_fields_loses_no_record_without_saying_so(void **state)
{
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	long expect[2];

	expect[cur_area] = (long)good_records[0];
	expect[!cur_area] = (long)good_records[1];
	/* state, close time, clock anchor, reserved, head, lost, overwritten and the pads: all of the dynamic part */
	for (unsigned area = 0; area < 2; area++)
		flip_run_head_bits(good, good_size, area, offsetof(struct rs_run_head, state), sizeof(struct rs_run_head),
				   expect);
}

static void a_damaged_head_is_said_and_every_record_still_read(void **state)
{
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned prev_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 1 ? 0 : 1;
	unsigned char *b = malloc(good_size);
	struct rs_run_head *h = (struct rs_run_head *)(b + f->run_offset[prev_area]);
	static const int64_t moves[] = { 1 << 23, -(1 << 12), 1 << 30 };
	char err[256];

	for (size_t i = 0; i < RS_ARRAY_SIZE(moves); i++) {
		struct relstack_reader *r;
		const char *why;

		unsigned a = 0;

		memcpy(b, good, good_size);
		for (unsigned k = 1; k < h->areas; k++) /* the area that holds the most */
			if (h->area[k].head > h->area[a].head)
				a = k;
		if (moves[i] < 0 && h->area[a].head - h->base < (uint64_t)-moves[i])
			continue;
		h->area[a].head += (uint64_t)moves[i];
		r = open_bytes(b, good_size, err, sizeof(err));
		assert_non_null(r);
		assert_int_equal(relstack_reader__run_count(r), 2);
		assert_int_equal(verify(r, RELSTACK_RUN_PREVIOUS), good_records[1]);
		why = relstack_reader__run_error(r, prev_area);
		if (!why || !strstr(why, "head +0x"))
			fail_msg("head moved by %lld: run error \"%s\"", (long long)moves[i], why ? why : "none");
		relstack_reader__close(r);
	}
	free(b);
}

static void a_wrapped_runs_head_flipped_loses_no_record_without_saying_so(void **state)
{
	char dir[64] = "/tmp/rs-corrupt-XXXXXX", path[128];
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;
	struct relstack_reader *r;
	unsigned char *b;
	size_t size;
	long expect[2];
	FILE *fp;
	int ev;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/buf", dir);
	o.size = 64u << 10;
	o.objtab_capacity = 16;
	for (unsigned run = 0; run < 2; run++) {
		rec = relstack_recorder__open(path, &o);
		assert_non_null(rec);
		ev = rs_seq_define(rec);
		for (uint64_t s = 0; s < 2000; s++) /* some 3 laps of the ring */
			assert_int_equal(rs_seq_write(rec, ev, 0, s, (unsigned)(s % 32), NULL), 0);
		relstack_recorder__close(rec);
	}
	fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	size = (size_t)ftell(fp);
	rewind(fp);
	b = malloc(size);
	assert_int_equal(fread(b, 1, size, fp), size);
	fclose(fp);
	unlink(path);
	rmdir(dir);
	r = open_bytes(b, size, path, sizeof(path));
	assert_non_null(r);
	expect[0] = run_records(r, 1);
	expect[1] = run_records(r, 2);
	assert_true(expect[0] > 100 && expect[1] > 100);
	relstack_reader__close(r);
	/* the heads of every write area, both runs */
	for (unsigned area = 0; area < 2; area++) {
		const struct rs_run_head *h = (const struct rs_run_head *)(b + ((struct rs_file_head *)b)->run_offset[area]);

		for (unsigned a = 0; a < h->areas; a++)
			flip_run_head_bits(b, size, area, offsetof(struct rs_run_head, area[a].head),
					   offsetof(struct rs_run_head, area[a].head) + 8, expect);
	}
	free(b);
}

static void damaged_chunk_states_cost_no_record(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	const struct rs_run_head *h = (const struct rs_run_head *)(good + f->run_offset[cur_area]);
	struct relstack_reader *r;
	char err[256];

	/* writer bookkeeping only: the reader reads nothing from it */
	memcpy(b, good, good_size);
	memset(b + f->run_offset[cur_area] + h->states_offset, 0xa5, h->ring_size / RS_CHUNK * sizeof(struct rs_chunk_state));
	r = open_bytes(b, good_size, err, sizeof(err));
	assert_non_null(r);
	assert_null(relstack_reader__run_error(r, cur_area));
	assert_int_equal(verify(r, RELSTACK_RUN_CURRENT), good_records[0]);
	relstack_reader__close(r);
	free(b);
}

static void a_chunk_start_naming_any_other_position_costs_at_most_its_record(void **state)
{
	unsigned char *b = malloc(good_size);
	const struct rs_file_head *f = (const struct rs_file_head *)good;
	unsigned cur_area = ((const struct rs_run_head *)(good + f->run_offset[0]))->generation == 2 ? 0 : 1;
	const struct rs_run_head *h = (const struct rs_run_head *)(good + f->run_offset[cur_area]);
	struct rs_rec_head *rh = (struct rs_rec_head *)(b + f->run_offset[cur_area] + h->ring_offset);
	/* of this run but another slot, the ring's last byte among them; the next lap; another run */
	const uint64_t pos[] = { h->base + 8, h->base + h->ring_size - 1, h->base + h->ring_size + RS_CHUNK,
				 h->base + h->ring_size, h->base - RS_CHUNK, UINT64_MAX };
	char err[256];

	for (size_t i = 0; i < RS_ARRAY_SIZE(pos); i++) {
		struct relstack_reader *r;

		memcpy(b, good, good_size);
		rh->pos = pos[i];
		r = open_bytes(b, good_size, err, sizeof(err));
		assert_non_null(r);
		assert_true(verify(r, RELSTACK_RUN_CURRENT) + 1 >= good_records[0]);
		assert_int_equal(verify(r, RELSTACK_RUN_PREVIOUS), good_records[1]);
		relstack_reader__close(r);
	}
	free(b);
}

static void a_missing_file_and_a_foreign_file_get_distinct_codes(void **state)
{
	char err[256] = "";
	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };

	assert_null(relstack_reader__open("/nonexistent/relstack-buffer", &o));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "/nonexistent/relstack-buffer: cannot open"));
	assert_null(relstack_reader__open("/proc/self/status", &o));
	assert_int_equal(errno, RELSTACK_EMAGIC);
	assert_null(relstack_reader__open("/", &o));
	assert_int_equal(errno, EINVAL);
	{
		char dir[64] = "/tmp/rs-fifo-XXXXXX", fifo[96];

		assert_non_null(mkdtemp(dir));
		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_null(relstack_reader__open(fifo, &o)); /* refused at once, not waited on */
		assert_int_equal(errno, EINVAL);
		assert_null(relstack_recorder__open(fifo, NULL));
		assert_int_equal(errno, EINVAL);
		unlink(fifo);
		rmdir(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_well_formed_file_reads_back_whole),
		cmocka_unit_test(any_flipped_byte_of_the_file_head_refuses_the_file_with_a_message),
		cmocka_unit_test(each_file_head_check_has_its_own_code_and_message),
		cmocka_unit_test(a_file_of_the_previous_layout_is_refused_naming_its_version),
		cmocka_unit_test(a_truncated_file_is_refused_as_truncated),
		cmocka_unit_test(a_flipped_byte_of_a_run_head_drops_that_run_only),
		cmocka_unit_test(flipped_bytes_in_the_ring_cost_at_most_one_record_each_and_are_counted),
		cmocka_unit_test(a_damaged_schema_or_object_table_costs_only_itself),
		cmocka_unit_test(flipped_bytes_in_the_stack_table_cost_only_the_records_naming_their_entry),
		cmocka_unit_test(a_record_never_takes_the_words_of_an_entry_it_did_not_name),
		cmocka_unit_test(each_run_clock_check_has_its_own_message),
		cmocka_unit_test(each_write_area_check_has_its_own_message),
		cmocka_unit_test(a_damaged_clock_anchor_moves_times_never_records),
		cmocka_unit_test(a_record_longer_than_any_record_is_damage_with_its_own_message),
		cmocka_unit_test(a_flipped_bit_of_a_run_heads_unhashed_fields_loses_no_record_without_saying_so),
		cmocka_unit_test(a_damaged_head_is_said_and_every_record_still_read),
		cmocka_unit_test(a_wrapped_runs_head_flipped_loses_no_record_without_saying_so),
		cmocka_unit_test(damaged_chunk_states_cost_no_record),
		cmocka_unit_test(a_chunk_start_naming_any_other_position_costs_at_most_its_record),
		cmocka_unit_test(a_missing_file_and_a_foreign_file_get_distinct_codes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
