// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: the buffer file reader over arbitrary bytes.  Opens
 * them, then touches everything a decoder would: both runs' info and
 * stack table figures, every object record, every schema, every record
 * (its words taken from the stack table where it names an entry) with its time converted from
 * the run's clock and every integer field, and the words of the first
 * records decoded and checked against the run's object table.
 *
 * A buffer file is mostly zeros (unused schemas, object slots, ring), and
 * the fuzzer's time goes by the input's size, so an input is the file with
 * its zeros squeezed out (see expand()): seeds of a few KiB stand for
 * files of 228 KiB, and mutations land on bytes the reader looks at.
 *
 * Seeds (fuzz/corpus/reader) are made by tests/unit/ring/test_ring_seeds.c,
 * whose test fails when they no longer match the format.  After a format
 * change, from the source tree:
 *
 *   BUILDDIR/tests/unit/ring/test_ring_seeds --write fuzz/corpus/reader
 *
 * Inputs that once made the reader fail are kept there as regress-*.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "relstack/relstack.h"
#include "ring-seed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(struct relstack_reader *r, enum relstack_run_which which)
{
	struct relstack_run_info info;
	struct relstack_cursor *c;
	struct relstack_record rec;
	struct relstack_stack_table_info st;
	unsigned n;

	if (relstack_reader__run_info(r, which, &info) < 0)
		return;
	if (relstack_reader__stack_table(r, which, &st) < 0 || st.used > st.arena_size ||
	    st.entries + st.damaged > st.buckets || st.ref_records + st.inline_records > info.records)
		__builtin_trap();
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
	/* the object table checks of a word are the same for every record: the first ones cover them */
	for (unsigned k = 0; relstack_cursor__next(c, &rec) > 0; k++) {
		for (size_t i = 0; i < rec.nwords && k < 32; i++) {
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
	static unsigned char file[RS_SEED_FILE_MAX];
	char err[256];
	struct relstack_reader_opts o = { .sz = sizeof(o), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r = relstack_reader__open_mem(file, rs_seed_expand(data, size, file), &o);

	if (!r)
		return 0;
	walk(r, RELSTACK_RUN_CURRENT);
	walk(r, RELSTACK_RUN_PREVIOUS);
	relstack_reader__run_error(r, 0);
	relstack_reader__run_error(r, 1);
	relstack_reader__close(r);
	return 0;
}
