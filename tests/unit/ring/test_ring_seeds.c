// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fuzz target's seed files (fuzz/corpus/reader) are buffer files of the
 * current format, with their zeros squeezed out (tests/lib/ring/ring-seed.h),
 * and this program is what makes them:
 *
 *   test_ring_seeds                 check the seeds in SEED_DIR
 *   test_ring_seeds --write DIR     write fresh seeds into DIR
 *
 * Seeds: two-runs (a closed run and an active one), absolute (absolute
 * stacks allowed and used), stop-full (stop mode, refused records), wrapped
 * (overwrite mode past a lap), head-only (the file head alone),
 * stack-table-full (a stack table that filled: records naming entries and
 * records carrying their words).  The main
 * executable's path in each object table image is replaced by "seedgen",
 * so that no path of the machine that made them is committed.
 */
#include <errno.h>
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

#include "capture/objtab.h"
#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "ring/ring.h"
#include "ring-seed.h"

static const char *const seeds[] = { "two-runs", "absolute", "stop-full", "wrapped", "head-only",
				     "stack-table-full" };

static unsigned char *slurp(const char *p, size_t *n)
{
	FILE *f = fopen(p, "rb");
	struct stat st;
	unsigned char *b;

	if (!f || fstat(fileno(f), &st) < 0)
		return NULL;
	b = malloc((size_t)st.st_size + 1);
	*n = fread(b, 1, (size_t)st.st_size, f);
	fclose(f);
	return b;
}

/* The main executable's path in both runs' object table images becomes "seedgen". */
static void scrub(unsigned char *b, size_t n)
{
	const struct rs_file_head *f = (const struct rs_file_head *)b;

	for (unsigned i = 0; i < RS_RUNS && n >= f->file_size; i++) {
		const struct rs_run_head *h = (const struct rs_run_head *)(b + f->run_offset[i]);
		struct rs_objtab_image_head *ih;
		struct rs_objtab_record *o;

		if (memcmp(h->magic, RS_RUN_MAGIC, 8) != 0)
			continue;
		ih = (struct rs_objtab_image_head *)(b + f->run_offset[i] + h->objtab_offset);
		o = (struct rs_objtab_record *)(ih + 1);
		for (unsigned s = 0; s < ih->capacity; s++, o++) {
			if (o->seq == 0 || (o->seq & 1) || !(o->flags & RELSTACK_OBJECT_MAIN))
				continue;
			memset(o->path, 0, sizeof(o->path));
			strcpy(o->path, "seedgen");
			o->hash = rs_hash32(RS_HASH32_INIT, &o->slot, sizeof(*o) - offsetof(struct rs_objtab_record, slot));
		}
	}
}

static void put_file(const char *dir, const char *name, const unsigned char *b, size_t n)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "wb");
	if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "%s: %s\n", p, strerror(errno));
		exit(1);
	}
}

/* The recorder's file as it is now (open or closed), scrubbed and squeezed, as seed @name. */
static void take(const char *path, const char *dir, const char *name, size_t limit)
{
	size_t n;
	unsigned char *b = slurp(path, &n), *sq;

	scrub(b, n);
	n = limit && limit < n ? limit : n;
	sq = malloc(n + n / 4 + 16);
	put_file(dir, name, sq, rs_seed_squeeze(b, n, sq));
	free(sq);
	free(b);
}

static struct relstack_recorder *open_small(const char *path, enum relstack_recorder_mode mode, unsigned flags)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;

	o.size = 64u << 10;
	o.objtab_capacity = 8;
	o.mode = mode;
	o.flags = flags;
	rec = relstack_recorder__open(path, &o);
	if (!rec) {
		perror(path);
		exit(1);
	}
	return rec;
}

static void events(struct relstack_recorder *rec, unsigned count, unsigned flags)
{
	static const struct relstack_event_field ev[] = {
		{ "a", 0, 4, RELSTACK_FIELD_SIGNED },
		{ "b", 4, 2, RELSTACK_FIELD_HEX },
	};
	int id = relstack_recorder__define_event(rec, "ev", ev, 2, 16);

	for (unsigned i = 0; i < count; i++) {
		unsigned char fields[16] = { (unsigned char)i, 0, 0, 0, 0xbe, 0xef };

		if (i % 3 == 0)
			relstack_recorder__record(rec, RELSTACK_EVENT_STACK, NULL, 0, flags);
		else
			relstack_recorder__record(rec, (unsigned)id, fields, sizeof(fields),
						  flags | (i % 3 == 2 ? RELSTACK_RECORD_NO_STACK : 0));
	}
}

static void write_seeds(const char *dir)
{
	char path[512];
	struct relstack_recorder *rec;

	/* two write areas, whatever the machine: the fuzzer starts from files that have them */
	rs_ring_test_areas = 2;
	snprintf(path, sizeof(path), "%s/seedgen.tmp", dir);
	unlink(path);
	rec = open_small(path, RELSTACK_MODE_OVERWRITE, 0);
	events(rec, 60, 0);
	relstack_recorder__close(rec);
	rec = open_small(path, RELSTACK_MODE_OVERWRITE, 0);
	events(rec, 90, 0);
	take(path, dir, "two-runs", 0); /* the second run active, as its writer left it */
	take(path, dir, "head-only", sizeof(struct rs_file_head));
	relstack_recorder__close(rec);

	unlink(path);
	rec = open_small(path, RELSTACK_MODE_OVERWRITE, RELSTACK_RECORDER_ABSOLUTE);
	events(rec, 30, RELSTACK_RECORD_ABSOLUTE);
	relstack_recorder__close(rec);
	take(path, dir, "absolute", 0);

	unlink(path);
	rec = open_small(path, RELSTACK_MODE_STOP, 0);
	events(rec, 1200, 0);
	relstack_recorder__close(rec);
	take(path, dir, "stop-full", 0);

	unlink(path);
	rec = open_small(path, RELSTACK_MODE_OVERWRITE, 0);
	events(rec, 1800, 0);
	relstack_recorder__close(rec);
	take(path, dir, "wrapped", 0);

	unlink(path);
	rec = open_small(path, RELSTACK_MODE_OVERWRITE, 0);
	{
		uint64_t w[64];
		struct relstack_verdict v = { 0 };
		int id = relstack_recorder__define_event(rec, "n", (const struct relstack_event_field[]){
								 { "n", 0, 8, RELSTACK_FIELD_UNSIGNED } }, 1, 8);

		/* distinct stacks until the table is full, then the first ones again */
		for (uint64_t i = 0; i < 120; i++) {
			uint64_t k = i < 100 ? i : i - 100;

			for (unsigned j = 0; j < 64; j++)
				w[j] = 0x1000 + 16 * j + k;
			w[63] = UINT64_MAX; /* END */
			relstack_recorder__write(rec, (unsigned)id, w, 64, &v, &k, 8, 0);
		}
	}
	relstack_recorder__close(rec);
	take(path, dir, "stack-table-full", 0);
	unlink(path);
}

static void the_fuzz_seeds_are_small_buffer_files_of_the_current_format(void **state)
{
	static unsigned char file[RS_SEED_FILE_MAX];

	for (size_t i = 0; i < RS_ARRAY_SIZE(seeds); i++) {
		char p[512], err[256] = "";
		struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
		struct relstack_reader *r;
		struct relstack_run_info info;
		size_t n;
		unsigned char *b;

		snprintf(p, sizeof(p), "%s/%s", SEED_DIR, seeds[i]);
		b = slurp(p, &n);
		assert_non_null(b);
		assert_true(n < 96u << 10); /* small: the fuzzer's speed goes by it */
		r = relstack_reader__open_mem(file, rs_seed_expand(b, n, file), &o);
		free(b);
		if (strcmp(seeds[i], "head-only") == 0) {
			/* refused for what it is, not for its version */
			assert_null(r);
			assert_int_equal(errno, RELSTACK_ETRUNCATED);
			continue;
		}
		if (!r || ((const struct rs_file_head *)file)->version != RS_FILE_VERSION)
			fail_msg("seed %s: %s (regenerate: test_ring_seeds --write fuzz/corpus/reader)", seeds[i],
				 r ? "not the current version" : err);
		assert_true(relstack_reader__run_count(r) >= 1);
		assert_null(relstack_reader__run_error(r, 0));
		assert_null(relstack_reader__run_error(r, 1));
		assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
		assert_true(info.records > 0);
		assert_int_equal(info.skipped, 0);
		relstack_reader__close(r);
	}
}

/*
 * A file of version 3 (no stack table; data/v3-two-runs, squeezed like the
 * seeds) is read whole, and a recorder refuses to start a run in it,
 * naming the version, and leaves it as it was.
 */
static void a_file_of_version_3_is_read_and_a_recorder_refuses_to_write_it(void **state)
{
	static unsigned char file[RS_SEED_FILE_MAX];
	char p[512], dir[64] = "/tmp/rs-v3-XXXXXX", err[256] = "";
	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_stack_table_info st;
	struct relstack_run_info info;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record rec;
	size_t n, records = 0, after_n;
	unsigned char *b, *after;

	snprintf(p, sizeof(p), "%s/data/v3-two-runs", TEST_DIR);
	b = slurp(p, &n);
	assert_non_null(b);
	n = rs_seed_expand(b, n, file);
	free(b);
	assert_int_equal(((const struct rs_file_head *)file)->version, 3);
	r = relstack_reader__open_mem(file, n, &o);
	if (!r)
		fail_msg("version 3: %s", err);
	assert_int_equal(relstack_reader__run_count(r), 2);
	assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
	assert_int_equal(info.skipped, 0);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &rec) > 0) {
		records++;
		if (rec.has_stack)
			assert_true(rec.nwords > 0);
	}
	relstack_cursor__free(c);
	assert_int_equal(records, info.records);
	assert_true(records > 0);
	assert_int_equal(relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, &st), 0);
	assert_int_equal(st.size, 0);
	relstack_reader__close(r);

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/buf", dir);
	put_file(dir, "buf", file, n);
	assert_null(relstack_recorder__open(p, NULL));
	assert_int_equal(errno, RELSTACK_EVERSION);
	after = slurp(p, &after_n);
	assert_int_equal(after_n, n);
	assert_memory_equal(after, file, n);
	free(after);
	unlink(p);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_fuzz_seeds_are_small_buffer_files_of_the_current_format),
		cmocka_unit_test(a_file_of_version_3_is_read_and_a_recorder_refuses_to_write_it),
	};

	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		write_seeds(argv[2]);
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
