// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The text `perf script` prints for samples with call chains, which
 * FlameGraph's stackcollapse-perf.pl and the Firefox Profiler import:
 *
 *   COMM PID/TID [000] SECONDS.MICROS: 1 EVENT:
 *   \t    ADDRESS SYMBOL+0xOFF (OBJECT)
 *   (blank line)
 *
 * The address is the recorded offset in the object (relstack stacks are
 * relative); frames without a name are [unknown], as perf names them.
 * An inlined function gets a line of its own at the same address, inner
 * first, as `perf script --inline` prints it.  Timestamps are the
 * record's CLOCK_MONOTONIC, perf's clock.
 *
 * An unreliable stack ends with one more, outermost, frame:
 *
 *   \t               0 [unreliable] ([unknown])
 *
 * a function as any other to the collapsers, so stackcollapse-perf.pl
 * folds the stack as "COMM;[unreliable];outer;...", apart from the
 * reliable ones, as the folded format does.
 */
#include <inttypes.h>

#include "decode/present.h"

static void comm(FILE *f, const char *s, size_t max)
{
	/* perf's comm has no spaces: a collapser splits the line on them */
	bool any = false;

	for (size_t i = 0; i < max && s[i]; i++) {
		fputc(s[i] == ' ' || (unsigned char)s[i] < 0x20 ? '_' : s[i], f);
		any = true;
	}
	if (!any)
		fputs("relstack", f);
}

static int perf_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	const struct relstack_record *rec = dr->rec;
	FILE *f = p->f;

	if (!rec->has_stack)
		return 0;
	if (p->has_run)
		comm(f, p->run.comm, sizeof(p->run.comm));
	else
		comm(f, "", 0);
	fprintf(f, " %u/%u [000] %" PRIu64 ".%06" PRIu64 ": 1 %s:\n", p->has_run ? p->run.pid : rec->tid, rec->tid,
		rec->time_ns / 1000000000u, rec->time_ns % 1000000000u / 1000u, dr->event);
	for (size_t i = 0; i < dr->nframes; i++) {
		const struct relstack_decoded_frame *fr = &dr->frames[i];
		struct rs_func fn[RS_FUNC_MAX];
		char name[4200];
		unsigned n = rs_frame_funcs(fr, fn, name, sizeof(name));
		const char *obj = fr->kind == RELSTACK_ENTRY_OBJECT ? fr->object->path : "[unknown]";

		for (unsigned k = n; k-- > 0;) {
			fprintf(f, "\t%16" PRIx64 " ", fr->kind == RELSTACK_ENTRY_OBJECT ? fr->offset : 0);
			if (fr->kind == RELSTACK_ENTRY_OBJECT && !fr->symbol)
				fputs("[unknown]", f);
			else if (k == 0 && fr->symbol)
				fprintf(f, "%s+0x%" PRIx64, fn[k].name, fr->symoff);
			else
				fputs(fn[k].name, f);
			fprintf(f, " (%s)\n", obj[0] ? obj : "[unknown]");
		}
	}
	if (!dr->reliable && !p->o.no_verdict)
		fprintf(f, "\t%16x %s ([unknown])\n", 0, RS_UNRELIABLE_FRAME);
	fputc('\n', f);
	return 0;
}

const struct rs_presenter_ops rs_present_perf_script = { .record = perf_record };
