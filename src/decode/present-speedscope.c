// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 * the functions in one shared frame table, and one "sampled" profile per
 * thread whose samples are stacks of frame indices, outermost first, each
 * weighing one record.  The event is the root frame, as in the folded
 * format; an unreliable stack's root says so.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode/present.h"

struct thread {
	uint32_t tid;
	uint64_t *idx;   /* frame indices of every sample, each ended by UINT64_MAX */
	size_t n, cap, samples;
};

struct speedscope {
	struct rs_intern frames;
	char **name;     /* frame index -> "name\nfile\nline" key */
	size_t nframes, capframes;
	struct thread *thread;
	size_t nthreads;
	bool oom;
};

static int ss_init(struct relstack_presenter *p)
{
	p->state = calloc(1, sizeof(struct speedscope));
	return p->state ? 0 : -ENOMEM;
}

static uint64_t frame_index(struct speedscope *s, const char *name, const char *file, unsigned line)
{
	char key[8300];
	bool added;
	uint64_t id;

	snprintf(key, sizeof(key), "%s\n%s\n%u", name, file ? file : "", file ? line : 0);
	id = rs_intern(&s->frames, key, s->nframes, &added, &s->oom);
	if (!added)
		return id;
	if (s->nframes == s->capframes) {
		size_t cap = s->capframes ? 2 * s->capframes : 256;
		char **more = realloc(s->name, cap * sizeof(*more));

		if (!more) {
			s->oom = true;
			return 0;
		}
		s->name = more;
		s->capframes = cap;
	}
	s->name[s->nframes] = strdup(key);
	if (!s->name[s->nframes])
		s->oom = true;
	return s->nframes++;
}

static void push(struct speedscope *s, struct thread *t, uint64_t v)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		uint64_t *more = realloc(t->idx, cap * sizeof(*more));

		if (!more) {
			s->oom = true;
			return;
		}
		t->idx = more;
		t->cap = cap;
	}
	t->idx[t->n++] = v;
}

static struct thread *thread_of(struct speedscope *s, uint32_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->thread[i].tid == tid)
			return &s->thread[i];
	if ((s->nthreads & (s->nthreads - 1)) == 0) {
		struct thread *more = realloc(s->thread, (s->nthreads ? 2 * s->nthreads : 1) * sizeof(*more));

		if (!more)
			return NULL;
		s->thread = more;
	}
	memset(&s->thread[s->nthreads], 0, sizeof(s->thread[0]));
	s->thread[s->nthreads].tid = tid;
	return &s->thread[s->nthreads++];
}

static int ss_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct speedscope *s = p->state;
	struct thread *t;
	char root[128];

	if (!dr->rec->has_stack)
		return 0;
	t = thread_of(s, dr->rec->tid);
	if (!t)
		return -ENOMEM;
	snprintf(root, sizeof(root), "%s%s", dr->event, dr->reliable ? "" : " [unreliable]");
	push(s, t, frame_index(s, root, NULL, 0));
	for (size_t i = dr->nframes; i-- > 0;) {
		struct rs_func fn[RS_FUNC_MAX];
		char name[4200];
		unsigned n = rs_frame_funcs(&dr->frames[i], fn, name, sizeof(name));

		for (unsigned k = 0; k < n; k++)
			push(s, t, frame_index(s, fn[k].name, fn[k].file, fn[k].line));
	}
	push(s, t, UINT64_MAX);
	t->samples++;
	return s->oom ? -ENOMEM : 0;
}

static int ss_finish(struct relstack_presenter *p)
{
	struct speedscope *s = p->state;
	FILE *f = p->f;
	const char *title = p->o.title ? p->o.title : p->has_run ? p->run.comm : "relstack";

	fprintf(f, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"relstack\","
		   "\"name\":");
	rs_print_string(f, title, 256, true);
	fprintf(f, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (size_t i = 0; i < s->nframes; i++) {
		char *file = strchr(s->name[i], '\n'), *line = strchr(file + 1, '\n');

		*file++ = '\0';
		*line++ = '\0';
		fprintf(f, "%s{\"name\":", i ? "," : "");
		rs_print_string(f, s->name[i], SIZE_MAX, true);
		if (*file) {
			fprintf(f, ",\"file\":");
			rs_print_string(f, file, SIZE_MAX, true);
			if (strcmp(line, "0") != 0)
				fprintf(f, ",\"line\":%s", line);
		}
		fprintf(f, "}");
	}
	fprintf(f, "]},\"profiles\":[");
	for (size_t i = 0; i < s->nthreads; i++) {
		struct thread *t = &s->thread[i];
		bool open = false;

		fprintf(f, "%s{\"type\":\"sampled\",\"name\":\"tid %u\",\"unit\":\"none\",\"startValue\":0,"
			   "\"endValue\":%zu,\"samples\":[", i ? "," : "", t->tid, t->samples);
		for (size_t k = 0; k < t->n; k++) {
			if (t->idx[k] == UINT64_MAX) {
				fprintf(f, "]");
				open = false;
				continue;
			}
			fprintf(f, "%s%" PRIu64, open ? "," : k ? ",[" : "[", t->idx[k]);
			open = true;
		}
		fprintf(f, "],\"weights\":[");
		for (size_t k = 0; k < t->samples; k++)
			fprintf(f, "%s1", k ? "," : "");
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	return 0;
}

static void ss_free(struct relstack_presenter *p)
{
	struct speedscope *s = p->state;

	if (!s)
		return;
	rs_intern_free(&s->frames);
	for (size_t i = 0; i < s->nframes; i++)
		free(s->name[i]);
	free(s->name);
	for (size_t i = 0; i < s->nthreads; i++)
		free(s->thread[i].idx);
	free(s->thread);
	free(s);
}

const struct rs_presenter_ops rs_present_speedscope = {
	.init = ss_init, .record = ss_record, .finish = ss_finish, .free = ss_free,
};
