// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JSON Lines: one object per record (relstack(1), JSON OUTPUT), with the
 * file it came from when there are several.  Addresses,
 * offsets and sizes are "0x" strings; counts, times and ids are numbers.
 */
#include <inttypes.h>
#include <stdint.h>

#include "decode/present.h"

static void json_string_or_null(FILE *f, const char *s, size_t max)
{
	if (s)
		rs_print_string(f, s, max, true);
	else
		fputs("null", f);
}

static void json_frame(FILE *f, const struct relstack_decoded_frame *fr, bool first)
{
	fprintf(f, "%s{", first ? "" : ",");
	if (fr->kind == RELSTACK_ENTRY_MARKER) {
		fprintf(f, "\"marker\":\"%s\"}", relstack_marker_name(fr->marker));
		return;
	}
	if (fr->kind != RELSTACK_ENTRY_OBJECT) {
		fprintf(f, "\"reason\":");
		rs_print_string(f, fr->problem, 256, true);
		fprintf(f, "}");
		return;
	}
	fprintf(f, "\"slot\":%u,\"object\":", fr->slot);
	rs_print_string(f, fr->object->path, sizeof(fr->object->path), true);
	fprintf(f, ",\"build_id\":\"");
	rs_print_hex(f, fr->object->build_id, fr->object->build_id_len);
	fprintf(f, "\",\"offset\":\"0x%" PRIx64 "\",\"return_address\":%s", fr->offset,
		fr->return_address ? "true" : "false");
	if (!fr->symbolized) {
		fprintf(f, "}");
		return;
	}
	if (!fr->symbol) {
		fprintf(f, ",\"reason\":");
		rs_print_string(f, fr->unnamed, 256, true);
		fprintf(f, "}");
		return;
	}
	fprintf(f, ",\"symbol\":");
	rs_print_string(f, fr->symbol, 4096, true);
	fprintf(f, ",\"symoff\":\"0x%" PRIx64 "\",\"symsize\":\"0x%" PRIx64 "\",\"file\":", fr->symoff, fr->symsize);
	json_string_or_null(f, fr->file, 4096);
	fprintf(f, ",\"line\":");
	if (fr->line)
		fprintf(f, "%u", fr->line);
	else
		fprintf(f, "null");
	fprintf(f, ",\"line_note\":");
	json_string_or_null(f, fr->line_note, 512);
	fprintf(f, ",\"inlined\":[");
	for (unsigned i = 0; i < fr->n_inlined; i++) {
		fprintf(f, "%s{\"symbol\":", i ? "," : "");
		rs_print_string(f, fr->inlined[i].symbol, 4096, true);
		fprintf(f, ",\"file\":");
		json_string_or_null(f, fr->inlined[i].file, 4096);
		fprintf(f, ",\"line\":%u}", fr->inlined[i].line);
	}
	fprintf(f, "]}");
}

static int json_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	const struct relstack_record *rec = dr->rec;
	FILE *f = p->f;
	bool first = true;

	fputc('{', f);
	if (p->file) {
		fprintf(f, "\"file\":");
		rs_print_string(f, p->file, SIZE_MAX, true);
		fputc(',', f);
	}
	fprintf(f, "\"run\":\"%s\",\"generation\":%" PRIu64 ",\"ts_ns\":%" PRIu64 ",\"realtime_ns\":%" PRIu64
		",\"tid\":%u,\"event\":", rs_run_name(p->o.which), p->run.generation, rec->time_ns, rec->realtime_ns,
		rec->tid);
	rs_print_string(f, dr->event, 64, true);
	fprintf(f, ",\"has_stack\":%s,\"absolute\":%s,\"reliable\":%s,\"reasons\":", rec->has_stack ? "true" : "false",
		rec->absolute ? "true" : "false", dr->reliable ? "true" : "false");
	rs_print_reasons(f, rec->reasons, true);
	fprintf(f, ",\"fields\":");
	rs_print_fields(f, rec, true);
	fprintf(f, ",\"frames\":[");
	for (size_t i = 0; i < dr->nframes; i++) {
		const struct relstack_decoded_frame *fr = &dr->frames[i];

		if (fr->kind == RELSTACK_ENTRY_MARKER && fr->marker == RELSTACK_MARKER_END)
			continue;
		json_frame(f, fr, first);
		first = false;
	}
	fprintf(f, "]}\n");
	return 0;
}

const struct rs_presenter_ops rs_present_json = { .record = json_record };
