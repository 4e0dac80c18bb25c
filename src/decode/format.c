// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The format descriptor and entry words.
 *
 * Owns the meaning of bits in an entry word.  Nothing here uses a
 * compile-time bit position: encode and decode take every width, shift and
 * marker value from a struct relstack_format, so a buffer written by a
 * 32-bit process (or by any future layout that passes validation) decodes
 * on this host.  The standard layouts are built by relstack_format_init().
 *
 *   64-bit:  63 | 62 ....... 53 | 52 .............. 0
 *            1  |  slot index   |  offset from base
 *            0  |        offset in the main object
 *
 * Markers live in the slot index that is all ones; the defined markers are
 * the top three values of the word, everything else in that slot is
 * reserved.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "relstack/entry.h"
#include "relstack-local.h"

_Static_assert(sizeof(struct relstack_format) == 64, "format descriptor is 64 bytes on disk");
_Static_assert(offsetof(struct relstack_format, marker_slot) == 8, "marker_slot at 8");
_Static_assert(offsetof(struct relstack_format, max_slot) == 10, "max_slot at 10");
_Static_assert(offsetof(struct relstack_format, marker_end) == 16, "marker_end at 16");
_Static_assert(offsetof(struct relstack_format, marker_signal) == 32, "marker_signal at 32");
_Static_assert(offsetof(struct relstack_format, reserved2) == 40, "reserved2 at 40");

static inline uint64_t mask_of(unsigned bits)
{
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

int relstack_format_init(struct relstack_format *fmt, unsigned word_size)
{
	unsigned bits, index_bits;
	uint64_t all;

	if (word_size != 4 && word_size != 8)
		return -EINVAL;
	bits = word_size * 8;
	index_bits = word_size == 8 ? 10 : 7;
	all = mask_of(bits);

	memset(fmt, 0, sizeof(*fmt));
	fmt->word_size = (uint8_t)word_size;
	fmt->byte_order = RELSTACK_LITTLE_ENDIAN;
	fmt->flag_bit = (uint8_t)(bits - 1);
	fmt->index_bits = (uint8_t)index_bits;
	fmt->index_shift = (uint8_t)(bits - 1 - index_bits);
	fmt->offset_bits = fmt->index_shift;
	fmt->main_offset_bits = (uint8_t)(bits - 1);
	fmt->marker_slot = (uint16_t)mask_of(index_bits);
	fmt->max_slot = (uint16_t)(fmt->marker_slot - 1);
	fmt->marker_end = all;
	fmt->marker_unknown = all - 1;
	fmt->marker_signal = all - 2;
	return 0;
}

void relstack_format_native(struct relstack_format *fmt)
{
	relstack_format_init(fmt, sizeof(void *));
}

static int is_marker_word(const struct relstack_format *f, uint64_t w)
{
	return ((w >> f->flag_bit) & 1) && ((w >> f->index_shift) & mask_of(f->index_bits)) == f->marker_slot;
}

int relstack_format__validate(const struct relstack_format *f, const char **field)
{
	const char *bad = NULL;
	unsigned bits = f->word_size * 8u;
	const uint64_t *m[3] = { &f->marker_end, &f->marker_unknown, &f->marker_signal };
	static const char *const mname[3] = {
		"marker_end: not a word of the marker slot",
		"marker_unknown: not a word of the marker slot",
		"marker_signal: not a word of the marker slot",
	};

	if (f->word_size != 4 && f->word_size != 8)
		bad = "word_size: must be 4 or 8";
	else if (f->byte_order == RELSTACK_BIG_ENDIAN)
		bad = "byte_order: big-endian buffers are not supported by this reader";
	else if (f->byte_order != RELSTACK_LITTLE_ENDIAN)
		bad = "byte_order: must be 1 (little-endian)";
	else if (f->flag_bit >= bits)
		bad = "flag_bit: beyond the word";
	else if (f->index_bits == 0 || f->index_bits > 16)
		bad = "index_bits: must be 1 to 16";
	else if ((unsigned)f->index_shift + f->index_bits > bits)
		bad = "index_bits: index field beyond the word";
	else if (f->index_shift + f->index_bits > f->flag_bit)
		bad = "index_bits: index field overlaps the object flag";
	else if (f->offset_bits == 0 || f->offset_bits > f->index_shift)
		bad = "offset_bits: offset field overlaps the slot index";
	else if (f->main_offset_bits == 0 || f->main_offset_bits > f->flag_bit)
		bad = "main_offset_bits: main offset field overlaps the object flag";
	else if (f->marker_slot > mask_of(f->index_bits))
		bad = "marker_slot: does not fit the index field";
	else if (f->max_slot == 0 || f->max_slot >= f->marker_slot)
		bad = "max_slot: must be at least 1 and below marker_slot";
	else if (f->reserved0 || f->reserved1 || f->reserved2[0] || f->reserved2[1] || f->reserved2[2])
		bad = "reserved: must be zero";
	if (!bad) {
		for (unsigned i = 0; i < 3 && !bad; i++) {
			if ((*m[i] & ~mask_of(bits)) || !is_marker_word(f, *m[i]))
				bad = mname[i];
			for (unsigned j = 0; j < i && !bad; j++)
				if (*m[i] == *m[j])
					bad = "markers: two markers share a value";
		}
	}
	if (field)
		*field = bad;
	return bad ? -EINVAL : 0;
}

void relstack_word_decode(const struct relstack_format *f, uint64_t w, struct relstack_entry *out)
{
	uint64_t idx;

	memset(out, 0, sizeof(*out));
	if (f->word_size < 8 && (w >> (f->word_size * 8u))) {
		out->kind = RELSTACK_ENTRY_INVALID;
		out->reason = RELSTACK_REASON_WIDE_WORD;
		return;
	}
	if (!((w >> f->flag_bit) & 1)) {
		if (w & ~mask_of(f->main_offset_bits)) {
			out->kind = RELSTACK_ENTRY_INVALID;
			out->reason = RELSTACK_REASON_WIDE_WORD;
			return;
		}
		out->kind = RELSTACK_ENTRY_OBJECT;
		out->slot = RELSTACK_MAIN_SLOT;
		out->offset = w;
		return;
	}
	idx = (w >> f->index_shift) & mask_of(f->index_bits);
	if (idx == f->marker_slot) {
		out->kind = RELSTACK_ENTRY_MARKER;
		if (w == f->marker_end)
			out->marker = RELSTACK_MARKER_END;
		else if (w == f->marker_unknown)
			out->marker = RELSTACK_MARKER_UNKNOWN;
		else if (w == f->marker_signal)
			out->marker = RELSTACK_MARKER_SIGNAL;
		else {
			out->kind = RELSTACK_ENTRY_INVALID;
			out->reason = RELSTACK_REASON_RESERVED_MARKER;
		}
		return;
	}
	/* Bits outside the offset and index fields must be clear. */
	if (idx == 0 || idx > f->max_slot ||
	    (w & mask_of(f->index_shift) & ~mask_of(f->offset_bits)) ||
	    (w & mask_of(f->flag_bit) & ~mask_of(f->index_shift + f->index_bits))) {
		out->kind = RELSTACK_ENTRY_INVALID;
		out->reason = RELSTACK_REASON_RESERVED_SLOT;
		return;
	}
	out->kind = RELSTACK_ENTRY_OBJECT;
	out->slot = (uint32_t)idx;
	out->offset = w & mask_of(f->offset_bits);
}

uint64_t relstack_word_encode(const struct relstack_format *f, uint32_t slot, uint64_t offset)
{
	if (slot == RELSTACK_MAIN_SLOT)
		return offset > mask_of(f->main_offset_bits) ? f->marker_unknown : offset;
	if (slot > f->max_slot || offset > mask_of(f->offset_bits))
		return f->marker_unknown;
	return (1ull << f->flag_bit) | ((uint64_t)slot << f->index_shift) | offset;
}

uint64_t relstack_word_marker(const struct relstack_format *f, enum relstack_marker mk)
{
	switch (mk) {
	case RELSTACK_MARKER_END: return f->marker_end;
	case RELSTACK_MARKER_UNKNOWN: return f->marker_unknown;
	case RELSTACK_MARKER_SIGNAL: return f->marker_signal;
	}
	return 0;
}

const char *relstack_marker_name(enum relstack_marker mk)
{
	switch (mk) {
	case RELSTACK_MARKER_END: return "END";
	case RELSTACK_MARKER_UNKNOWN: return "UNKNOWN";
	case RELSTACK_MARKER_SIGNAL: return "SIGNAL";
	}
	return "?";
}

const char *relstack_reason_name(enum relstack_entry_reason r)
{
	switch (r) {
	case RELSTACK_REASON_NONE: return "none";
	case RELSTACK_REASON_RESERVED_MARKER: return "reserved marker value";
	case RELSTACK_REASON_RESERVED_SLOT: return "reserved slot index";
	case RELSTACK_REASON_WIDE_WORD: return "bits set beyond the word";
	case RELSTACK_REASON_EMPTY_SLOT: return "slot holds no object";
	case RELSTACK_REASON_BEYOND_OBJECT: return "offset beyond the object's text";
	case RELSTACK_REASON_SLOT_REUSED: return "slot held another object at capture time";
	case RELSTACK_REASON_BAD_SLOT_RECORD: return "slot record is corrupt";
	}
	return "?";
}
