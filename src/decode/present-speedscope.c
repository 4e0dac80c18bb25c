// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
 * the functions in one shared frame table, and "sampled" profiles whose
 * samples are stacks of frame indices, outermost first.  The event is the
 * root frame, as in the folded format; an unreliable stack's root says so
 * ("EVENT [unreliable]"), unless the options say no_verdict.
 *
 * A frame is a function: its name and file, never the line of a call in
 * it, so that speedscope's Sandwich and Left Heavy views give each
 * function once, with all its time.
 *
 * A thread's "sample" records (the sampler's) are a profile of their own
 * in nanoseconds, each weighing the sampling period as the pprof output
 * counts it (the period given, else the median interval between two
 * samples of a thread); its other records are a profile counted in
 * records (unit "none"), one each.  A file that holds no two samples of
 * a thread and no period counts its samples too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "decode/present.h"

struct profile {
	uint32_t tid;
	bool sampled;    /* the thread's "sample" records, weighed by CPU time */
	uint64_t *idx;   /* frame indices of every sample, each ended by UINT64_MAX */
	size_t n, cap, samples;
};

struct speedscope {
	struct rs_intern frames;
	char **name;     /* frame index -> "name\nfile" key */
	size_t nframes, capframes;
	struct profile *profile;
	size_t nprofiles;
	struct rs_period period;
	bool oom;
};

static int ss_init(struct relstack_presenter *p)
{
	p->state = calloc(1, sizeof(struct speedscope));
	return p->state ? 0 : -ENOMEM;
}

static uint64_t frame_index(struct speedscope *s, const char *name, const char *file)
{
	char key[8300];
	bool added;
	uint64_t id;

	snprintf(key, sizeof(key), "%s\n%s", name, file ? file : "");
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

static void push(struct speedscope *s, struct profile *t, uint64_t v)
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

static struct profile *profile_of(struct speedscope *s, uint32_t tid, bool sampled)
{
	for (size_t i = 0; i < s->nprofiles; i++)
		if (s->profile[i].tid == tid && s->profile[i].sampled == sampled)
			return &s->profile[i];
	if ((s->nprofiles & (s->nprofiles - 1)) == 0) {
		struct profile *more = realloc(s->profile, (s->nprofiles ? 2 * s->nprofiles : 1) * sizeof(*more));

		if (!more)
			return NULL;
		s->profile = more;
	}
	memset(&s->profile[s->nprofiles], 0, sizeof(s->profile[0]));
	s->profile[s->nprofiles].tid = tid;
	s->profile[s->nprofiles].sampled = sampled;
	return &s->profile[s->nprofiles++];
}

static int ss_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct speedscope *s = p->state;
	bool sampled = rs_record_is_sample(dr->rec);
	struct profile *t;
	char root[128];

	if (!dr->rec->has_stack)
		return 0;
	t = profile_of(s, dr->rec->tid, sampled);
	if (!t || (sampled && rs_period_add(&s->period, dr->rec) < 0))
		return -ENOMEM;
	snprintf(root, sizeof(root), "%s%s", dr->event, dr->reliable || p->o.no_verdict ? "" : " " RS_UNRELIABLE_FRAME);
	push(s, t, frame_index(s, root, NULL));
	for (size_t i = dr->nframes; i-- > 0;) {
		struct rs_func fn[RS_FUNC_MAX];
		char name[4200];
		unsigned n = rs_frame_funcs(&dr->frames[i], fn, name, sizeof(name));

		for (unsigned k = 0; k < n; k++)
			push(s, t, frame_index(s, fn[k].name, fn[k].file));
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
	uint64_t period = rs_period_ns(&s->period, p->o.sample_period_ns);

	fprintf(f, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"relstack\","
		   "\"name\":");
	rs_print_string(f, title, 256, true);
	fprintf(f, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
	for (size_t i = 0; i < s->nframes; i++) {
		char *file = strchr(s->name[i], '\n');

		*file++ = '\0';
		fprintf(f, "%s{\"name\":", i ? "," : "");
		rs_print_string(f, s->name[i], SIZE_MAX, true);
		if (*file) {
			fprintf(f, ",\"file\":");
			rs_print_string(f, file, SIZE_MAX, true);
		}
		fprintf(f, "}");
	}
	fprintf(f, "]},\"profiles\":[");
	for (size_t i = 0; i < s->nprofiles; i++) {
		struct profile *t = &s->profile[i];
		bool timed = t->sampled && period;
		uint64_t weight = timed ? period : 1;
		bool open = false;

		fprintf(f, "%s{\"type\":\"sampled\",\"name\":\"tid %u%s\",\"unit\":\"%s\",\"startValue\":0,"
			   "\"endValue\":%" PRIu64 ",\"samples\":[", i ? "," : "", t->tid, t->sampled ? " (CPU time)" : "",
			timed ? "nanoseconds" : "none", weight * t->samples);
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
			fprintf(f, "%s%" PRIu64, k ? "," : "", weight);
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
	for (size_t i = 0; i < s->nprofiles; i++)
		free(s->profile[i].idx);
	free(s->profile);
	rs_period_free(&s->period);
	free(s);
}

const struct rs_presenter_ops rs_present_speedscope = {
	.init = ss_init, .record = ss_record, .finish = ss_finish, .free = ss_free,
};
