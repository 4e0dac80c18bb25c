// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The text format: an ftrace-style header line per record, one " => " line
 * per frame; of several files, a "==> FILE <==" line before each one's.
 */
#include <inttypes.h>

#include "decode/present.h"

static void text_frame(FILE *f, const struct relstack_decoded_frame *fr)
{
	if (fr->kind == RELSTACK_ENTRY_MARKER) {
		if (fr->marker == RELSTACK_MARKER_END)
			return;
		fprintf(f, " => <%s>\n", fr->marker == RELSTACK_MARKER_SIGNAL ? "signal frame" : "unknown object");
		return;
	}
	if (fr->kind != RELSTACK_ENTRY_OBJECT) {
		fprintf(f, " => <invalid entry: %s>\n", fr->problem);
		return;
	}
	if (fr->symbol) {
		const char *obj = rs_basename(fr->object->path);

		for (unsigned i = 0; i < fr->n_inlined; i++) {
			fprintf(f, " => %s [%s]", fr->inlined[i].symbol, obj);
			if (fr->inlined[i].file)
				fprintf(f, " %s:%u", fr->inlined[i].file, fr->inlined[i].line);
			fprintf(f, " (inlined)\n");
		}
		fprintf(f, " => %s+0x%" PRIx64 "/0x%" PRIx64 " [%s]", fr->symbol, fr->symoff, fr->symsize, obj);
		if (fr->file)
			fprintf(f, " %s:%u", fr->file, fr->line);
		if (fr->line_note)
			fprintf(f, " (%s)", fr->line_note);
		fprintf(f, "\n");
		return;
	}
	fprintf(f, " => %s+0x%" PRIx64, rs_basename(fr->object->path), fr->offset);
	if (fr->symbolized)
		fprintf(f, " (%s)", fr->unnamed);
	fprintf(f, "\n");
}

static int text_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	const struct relstack_record *rec = dr->rec;
	FILE *f = p->f;

	/* several files: each one's records under its name, as head(1) heads them */
	if (p->file_begun) {
		fprintf(f, "==> %s <==\n", p->file);
		p->file_begun = false;
	}
	rs_print_walltime(f, rec->realtime_ns);
	fprintf(f, " tid %u %s", rec->tid, dr->event);
	if (rec->has_stack) {
		/* colour (--color): the verdict only, the rest stays as plain text prints it */
		if (rec->reasons) {
			fprintf(f, p->o.color ? " \033[31munreliable(" : " unreliable(");
			rs_print_reasons(f, rec->reasons, false);
			fprintf(f, p->o.color ? ")\033[0m" : ")");
		} else {
			fprintf(f, p->o.color ? " \033[32mreliable\033[0m" : " reliable");
		}
	}
	rs_print_fields(f, rec, false);
	fprintf(f, "\n");
	for (size_t i = 0; i < dr->nframes; i++)
		text_frame(f, &dr->frames[i]);
	return 0;
}

const struct rs_presenter_ops rs_present_text = { .record = text_record };
