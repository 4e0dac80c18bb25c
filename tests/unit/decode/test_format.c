// SPDX-License-Identifier: LGPL-2.1-or-later
/* Format descriptor and entry words: both word sizes, other widths, every marker. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "relstack/relstack.h"

static void standard_64bit_layout_matches_the_specification(void **state)
{
	struct relstack_format f;

	assert_int_equal(relstack_format_init(&f, 8), 0);
	assert_int_equal(relstack_format__validate(&f, NULL), 0);
	assert_int_equal(f.flag_bit, 63);
	assert_int_equal(f.index_bits, 10);
	assert_int_equal(f.index_shift, 53);
	assert_int_equal(f.offset_bits, 53);
	assert_int_equal(f.marker_slot, 1023);
	assert_int_equal(f.max_slot, 1022);
	assert_true(f.marker_end == UINT64_MAX);
	assert_true(f.marker_unknown == UINT64_MAX - 1);
	assert_true(f.marker_signal == UINT64_MAX - 2);
}

static void standard_32bit_layout_matches_the_specification(void **state)
{
	struct relstack_format f;

	assert_int_equal(relstack_format_init(&f, 4), 0);
	assert_int_equal(relstack_format__validate(&f, NULL), 0);
	assert_int_equal(f.flag_bit, 31);
	assert_int_equal(f.index_bits, 7);
	assert_int_equal(f.index_shift, 24);
	assert_int_equal(f.offset_bits, 24);
	assert_int_equal(f.marker_slot, 127);
	assert_true(f.marker_end == 0xffffffffu);
	assert_true(f.marker_unknown == 0xfffffffeu);
	assert_int_equal(relstack_format_init(&f, 2), -EINVAL);
}

/* 32-bit words as a 32-bit writer would have stored them, decoded here. */
static void words_of_a_32bit_writer_decode_on_this_host(void **state)
{
	struct relstack_format f;
	struct relstack_entry e;

	relstack_format_init(&f, 4);

	relstack_word_decode(&f, 0x0804a1b3u, &e); /* flag clear: main object */
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, 0);
	assert_true(e.offset == 0x0804a1b3u);

	/* flag, slot 5, offset 0x123456 */
	relstack_word_decode(&f, 0x80000000u | (5u << 24) | 0x123456u, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, 5);
	assert_true(e.offset == 0x123456u);

	/* slot 126 is the last object slot */
	relstack_word_decode(&f, 0x80000000u | (126u << 24) | 0xffffffu, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, 126);
	assert_true(e.offset == 0xffffffu);

	relstack_word_decode(&f, 0xffffffffu, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_MARKER);
	assert_int_equal(e.marker, RELSTACK_MARKER_END);

	/* a 64-bit END is not a 32-bit word */
	relstack_word_decode(&f, UINT64_MAX, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);
	assert_int_equal(e.reason, RELSTACK_REASON_WIDE_WORD);
}

static void every_marker_decodes_to_its_name_in_both_word_sizes(void **state)
{
	static const enum relstack_marker all[] = { RELSTACK_MARKER_END, RELSTACK_MARKER_UNKNOWN,
						    RELSTACK_MARKER_SIGNAL };

	for (unsigned ws = 4; ws <= 8; ws += 4) {
		struct relstack_format f;

		relstack_format_init(&f, ws);
		for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
			struct relstack_entry e;
			uint64_t w = relstack_word_marker(&f, all[i]);

			assert_true(w != 0);
			relstack_word_decode(&f, w, &e);
			assert_int_equal(e.kind, RELSTACK_ENTRY_MARKER);
			assert_int_equal(e.marker, all[i]);
		}
		assert_string_equal(relstack_marker_name(RELSTACK_MARKER_END), "END");
		assert_string_equal(relstack_marker_name(RELSTACK_MARKER_UNKNOWN), "UNKNOWN");
	}
}

static void unknown_marker_carries_no_address_bits(void **state)
{
	struct relstack_format f;

	/* Whatever the address, UNKNOWN is one constant word. */
	relstack_format_native(&f);
	assert_true(relstack_word_encode(&f, 7, 1ull << 60) == f.marker_unknown);
	assert_true(relstack_word_encode(&f, 1023, 0x1234) == f.marker_unknown);
	assert_true(relstack_word_encode(&f, 0, 1ull << 63) == f.marker_unknown);
}

static void reserved_marker_values_decode_as_invalid(void **state)
{
	struct relstack_format f;
	struct relstack_entry e;

	relstack_format_init(&f, 8);
	relstack_word_decode(&f, (1ull << 63) | (1023ull << 53) | 42, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);
	assert_int_equal(e.reason, RELSTACK_REASON_RESERVED_MARKER);

	/* flag set with slot 0: slot 0 is only ever written with the flag clear */
	relstack_word_decode(&f, (1ull << 63) | 0x1000, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);
	assert_int_equal(e.reason, RELSTACK_REASON_RESERVED_SLOT);
}

static void encode_and_decode_round_trip_for_every_slot(void **state)
{
	for (unsigned ws = 4; ws <= 8; ws += 4) {
		struct relstack_format f;

		relstack_format_init(&f, ws);
		for (uint32_t slot = 0; slot <= f.max_slot; slot++) {
			struct relstack_entry e;
			uint64_t off = (slot * 2654435761u) & ((1ull << f.offset_bits) - 1);
			uint64_t w = relstack_word_encode(&f, slot, off);

			relstack_word_decode(&f, w, &e);
			assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
			assert_int_equal(e.slot, slot);
			assert_true(e.offset == off);
		}
		/* an offset one beyond the field cannot be encoded */
		assert_true(relstack_word_encode(&f, 3, 1ull << f.offset_bits) == f.marker_unknown);
	}
}

/* A descriptor with other widths: decoders must not use the standard ones. */
static void descriptor_with_other_widths_decodes_by_its_own_fields(void **state)
{
	struct relstack_format f;
	struct relstack_entry e;

	relstack_format_init(&f, 8);
	f.index_bits = 12;
	f.index_shift = 40;
	f.offset_bits = 40;
	f.main_offset_bits = 48;
	f.marker_slot = 4095;
	f.max_slot = 4000;
	f.marker_end = (1ull << 63) | (4095ull << 40) | 1;
	f.marker_unknown = (1ull << 63) | (4095ull << 40) | 2;
	f.marker_signal = (1ull << 63) | (4095ull << 40) | 3;
	assert_int_equal(relstack_format__validate(&f, NULL), 0);

	relstack_word_decode(&f, (1ull << 63) | (3000ull << 40) | 0xabcdef, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, 3000);
	assert_true(e.offset == 0xabcdef);

	relstack_word_decode(&f, (1ull << 63) | (4095ull << 40) | 1, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_MARKER);
	assert_int_equal(e.marker, RELSTACK_MARKER_END);

	/* slots beyond max_slot name nothing */
	relstack_word_decode(&f, (1ull << 63) | (4001ull << 40) | 1, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);
	assert_int_equal(e.reason, RELSTACK_REASON_RESERVED_SLOT);

	/* bits between offset and index are not part of any field */
	relstack_word_decode(&f, (1ull << 63) | (1ull << 62), &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);

	/* a 32-bit descriptor with a 5-bit index */
	relstack_format_init(&f, 4);
	f.index_bits = 5;
	f.index_shift = 26;
	f.offset_bits = 26;
	f.marker_slot = 31;
	f.max_slot = 30;
	assert_int_equal(relstack_format__validate(&f, NULL), 0);
	relstack_word_decode(&f, 0x80000000u | (17u << 26) | 0x3ffffffu, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, 17);
	assert_true(e.offset == 0x3ffffffu);
}

static void expect_rejected(struct relstack_format *f, const char *field_prefix)
{
	const char *why = NULL;

	assert_int_equal(relstack_format__validate(f, &why), -EINVAL);
	assert_non_null(why);
	assert_true(strncmp(why, field_prefix, strlen(field_prefix)) == 0);
}

static void malformed_descriptors_are_rejected_naming_the_field(void **state)
{
	struct relstack_format f;

	relstack_format_init(&f, 8);
	f.word_size = 6;
	expect_rejected(&f, "word_size");

	relstack_format_init(&f, 8);
	f.flag_bit = 64;
	expect_rejected(&f, "flag_bit");

	relstack_format_init(&f, 8);
	f.index_bits = 11; /* reaches bit 63, the flag */
	expect_rejected(&f, "index_bits");

	relstack_format_init(&f, 4);
	f.index_shift = 30; /* 30 + 7 beyond 32 bits */
	expect_rejected(&f, "index_bits");

	relstack_format_init(&f, 8);
	f.offset_bits = 54; /* overlaps the index */
	expect_rejected(&f, "offset_bits");

	relstack_format_init(&f, 8);
	f.main_offset_bits = 64;
	expect_rejected(&f, "main_offset_bits");

	relstack_format_init(&f, 8);
	f.marker_slot = 2048;
	expect_rejected(&f, "marker_slot");

	relstack_format_init(&f, 8);
	f.max_slot = 1023;
	expect_rejected(&f, "max_slot");

	relstack_format_init(&f, 8);
	f.marker_unknown = 0x1234; /* not in the marker slot */
	expect_rejected(&f, "marker_unknown");

	relstack_format_init(&f, 8);
	f.marker_signal = f.marker_end;
	expect_rejected(&f, "markers");

	relstack_format_init(&f, 8);
	f.byte_order = 0;
	expect_rejected(&f, "byte_order");
	f.byte_order = RELSTACK_BIG_ENDIAN;
	expect_rejected(&f, "byte_order");

	relstack_format_init(&f, 8);
	f.reserved2[1] = 1;
	expect_rejected(&f, "reserved");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(standard_64bit_layout_matches_the_specification),
		cmocka_unit_test(standard_32bit_layout_matches_the_specification),
		cmocka_unit_test(words_of_a_32bit_writer_decode_on_this_host),
		cmocka_unit_test(every_marker_decodes_to_its_name_in_both_word_sizes),
		cmocka_unit_test(unknown_marker_carries_no_address_bits),
		cmocka_unit_test(reserved_marker_values_decode_as_invalid),
		cmocka_unit_test(encode_and_decode_round_trip_for_every_slot),
		cmocka_unit_test(descriptor_with_other_widths_decodes_by_its_own_fields),
		cmocka_unit_test(malformed_descriptors_are_rejected_naming_the_field),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
