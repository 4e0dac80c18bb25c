// SPDX-License-Identifier: LGPL-2.1-or-later
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring-fixture.h"

static const struct relstack_event_field seq_desc[] = {
	{ "thread", 0, 4, RELSTACK_FIELD_UNSIGNED },
	{ "n", 4, 4, RELSTACK_FIELD_UNSIGNED },
	{ "seq", 8, 8, RELSTACK_FIELD_UNSIGNED },
};

/* Word i of a record: as wide as the native entry word, which is what the file keeps. */
uint64_t rs_seq_payload(uint32_t thread, uint64_t seq, unsigned i)
{
	uint64_t p = ((uint64_t)thread << 52) ^ ((seq + 1) * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)i << 32 | i);

	return sizeof(uintptr_t) < sizeof(p) ? (uint32_t)(p ^ p >> 32) : p;
}

int rs_seq_define(struct relstack_recorder *rec)
{
	int ev = relstack_recorder__define_event(rec, "seq", seq_desc, 3, sizeof(struct rs_seq_fields));

	assert_true(ev >= 2);
	return ev;
}

int rs_seq_write(struct relstack_recorder *rec, int ev, uint32_t thread, uint64_t seq, unsigned n,
		 const struct relstack_verdict *v)
{
	uint64_t w[RELSTACK_WORDS_MAX];
	struct rs_seq_fields f = { thread, n, seq };

	for (unsigned i = 0; i < n && i < RELSTACK_WORDS_MAX; i++)
		w[i] = rs_seq_payload(thread, seq, i);
	return relstack_recorder__write(rec, (unsigned)ev, w, n, v, &f, sizeof(f), 0);
}

void rs_seq_check(const struct relstack_record *rec, uint32_t *thread, uint64_t *seq)
{
	int64_t t, n, s;

	assert_non_null(rec->event_name);
	assert_string_equal(rec->event_name, "seq");
	assert_int_equal(relstack_record__field_int(rec, "thread", &t), 0);
	assert_int_equal(relstack_record__field_int(rec, "n", &n), 0);
	assert_int_equal(relstack_record__field_int(rec, "seq", &s), 0);
	assert_int_equal(rec->nwords, (size_t)n);
	for (size_t i = 0; i < rec->nwords; i++)
		if (rec->words[i] != rs_seq_payload((uint32_t)t, (uint64_t)s, (unsigned)i))
			fail_msg("writer %lld, seq %lld, word %zu: a damaged record was accepted", (long long)t,
				 (long long)s, i);
	*thread = (uint32_t)t;
	*seq = (uint64_t)s;
}

bool rs_seq_next(struct relstack_cursor *c, struct relstack_record *rec, uint32_t *thread, uint64_t *seq)
{
	if (relstack_cursor__next(c, rec) <= 0)
		return false;
	rs_seq_check(rec, thread, seq);
	return true;
}

struct relstack_reader *rs_seq_reader(const char *path)
{
	char err[256] = "";
	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r = relstack_reader__open(path, &o);

	if (!r)
		fail_msg("reader: %s", err);
	return r;
}

void rs_tmpfile_make(struct rs_tmpfile *t, const char *name)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/rs-%s-XXXXXX", name);
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/buf", t->dir);
}

void rs_tmpfile_remove(struct rs_tmpfile *t)
{
	DIR *d = opendir(t->dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[400];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", t->dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(t->dir);
}
