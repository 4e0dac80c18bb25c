/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The buffer file's test fixture: a "seq" event whose words are derived
 * from its fields, so that every record read back can be checked byte for
 * byte, and a temporary buffer file.  Include after <cmocka.h>.
 */
#ifndef RS_RING_FIXTURE_H
#define RS_RING_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "relstack/relstack.h"

/* The fields of a "seq" event: which writer, how many words, its number in that writer's sequence. */
struct rs_seq_fields {
	uint32_t thread;
	uint32_t n;
	uint64_t seq;
};

/* Word @i of record @seq of writer @thread. */
uint64_t rs_seq_payload(uint32_t thread, uint64_t seq, unsigned i);

/* Defines the "seq" event in @rec; returns its id (fails the test otherwise). */
int rs_seq_define(struct relstack_recorder *rec);

/* Writes record @seq of @thread with @n words (at most 256) and the verdict @v (may be NULL). */
int rs_seq_write(struct relstack_recorder *rec, int ev, uint32_t thread, uint64_t seq, unsigned n,
		 const struct relstack_verdict *v);

/* A "seq" record read back: fails the test unless its words are what rs_seq_write() wrote. */
void rs_seq_check(const struct relstack_record *rec, uint32_t *thread, uint64_t *seq);

/* The next record of @c, checked by rs_seq_check(); false at the end. */
bool rs_seq_next(struct relstack_cursor *c, struct relstack_record *rec, uint32_t *thread, uint64_t *seq);

/* A reader of @path; fails the test with the reader's message if it does not open. */
struct relstack_reader *rs_seq_reader(const char *path);

/* A new temporary directory named after @name, and the path of a buffer file in it. */
struct rs_tmpfile {
	char dir[64];
	char path[128];
};
void rs_tmpfile_make(struct rs_tmpfile *t, const char *name);
/* Removes the file, any other file named, and the directory. */
void rs_tmpfile_remove(struct rs_tmpfile *t);

#endif
