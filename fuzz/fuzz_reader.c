// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: the buffer file reader over arbitrary bytes.  Opens
 * them, then touches everything a decoder would: both runs' info, every
 * object record, every schema, every record with its words decoded and
 * checked against the run's object table (and its time converted from the
 * run's clock), and every integer field.
 *
 * Seeds (fuzz/corpus/reader) are made by tests/unit/ring/test_ring_seeds.c,
 * whose test fails when they no longer match the format.  After a format
 * change, from the source tree:
 *
 *   BUILDDIR/tests/unit/ring/test_ring_seeds --write fuzz/corpus/reader
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "relstack/relstack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(struct relstack_reader *r, enum relstack_run_which which)
{
	struct relstack_run_info info;
	struct relstack_cursor *c;
	struct relstack_record rec;
	unsigned n;

	if (relstack_reader__run_info(r, which, &info) < 0)
		return;
	n = relstack_reader__object_count(r, which);
	for (uint32_t s = 0; s <= n; s++) {
		struct relstack_object o;
		uint64_t load;
		const char *why;

		if (relstack_reader__object(r, which, s, &o, &load, &why) == 0 && strlen(o.path) >= sizeof(o.path))
			__builtin_trap();
	}
	n = relstack_reader__schema_count(r, which);
	for (unsigned i = 0; i < n; i++)
		if (strlen(relstack_reader__schema(r, which, i)->name) >= 48)
			__builtin_trap();
	c = relstack_reader__records(r, which);
	if (!c)
		return;
	while (relstack_cursor__next(c, &rec) > 0) {
		for (size_t i = 0; i < rec.nwords; i++) {
			struct relstack_entry e;

			relstack_word_decode(relstack_reader__format(r), rec.words[i], &e);
			relstack_reader__check_entry(r, which, rec.epoch, &e);
		}
		if (rec.schema) {
			for (unsigned i = 0; i < rec.schema->nfields; i++) {
				int64_t v;

				relstack_record__field_int(&rec, rec.schema->field[i].name, &v);
			}
		}
	}
	relstack_cursor__free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r = relstack_reader__open_mem(data, size, &o);

	if (!r)
		return 0;
	walk(r, RELSTACK_RUN_CURRENT);
	walk(r, RELSTACK_RUN_PREVIOUS);
	relstack_reader__run_error(r, 0);
	relstack_reader__run_error(r, 1);
	relstack_reader__close(r);
	return 0;
}
