// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Folded stacks ("EVENT;outer;...;inner COUNT", sorted: flamegraph.pl's
 * input) and --top, the most frequent stacks with their shares.  Both
 * count identical lines, so both collect every record's line first.
 *
 * An unreliable stack is "EVENT;[unreliable];outer;...;inner": its own
 * tower under the event in a flame graph, its own line in --top (the
 * last " => "), never added to a reliable stack of the same frames.  The
 * event stays the root, so its width is still all its records.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/present.h"

struct folded {
	char **line;
	size_t n, cap;
};

struct stack_count {
	const char *folded;
	size_t count;
};

static int folded_init(struct relstack_presenter *p)
{
	p->state = calloc(1, sizeof(struct folded));
	return p->state ? 0 : -ENOMEM;
}

/* The record's folded line, with the unreliable frame after the event if @verdict: malloc'd, NULL for no memory. */
static char *stack_line(const struct relstack_decoded_record *dr, bool verdict)
{
	char *line = rs_folded_line(dr), *marked;
	size_t len, event;

	if (!line || dr->reliable || !verdict)
		return line;
	len = strlen(line);
	event = strcspn(line, ";");
	marked = malloc(len + sizeof(";" RS_UNRELIABLE_FRAME));
	if (marked)
		snprintf(marked, len + sizeof(";" RS_UNRELIABLE_FRAME), "%.*s;%s%s", (int)event, line,
			 RS_UNRELIABLE_FRAME, line + event);
	free(line);
	return marked;
}

static int folded_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct folded *s = p->state;

	if (!dr->rec->has_stack)
		return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		char **more = realloc(s->line, cap * sizeof(*more));

		if (!more)
			return -ENOMEM;
		s->line = more;
		s->cap = cap;
	}
	s->line[s->n] = stack_line(dr, !p->o.no_verdict);
	if (!s->line[s->n])
		return -ENOMEM;
	s->n++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_count(const void *a, const void *b)
{
	const struct stack_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->folded, y->folded);
}

/* The N most frequent stacks, innermost frame first, with counts and shares. */
static void print_top(FILE *f, const struct stack_count *sc, size_t n, size_t total, unsigned top)
{
	for (size_t i = 0; i < n && i < top; i++) {
		const char *p = strchr(sc[i].folded, ';'), *end;
		int evlen = (int)(p ? (size_t)(p - sc[i].folded) : strlen(sc[i].folded));

		fprintf(f, "#%zu %.*s %zu of %zu (%.1f%%)\n", i + 1, evlen, sc[i].folded, sc[i].count, total,
			100.0 * (double)sc[i].count / (double)total);
		for (end = sc[i].folded + strlen(sc[i].folded); p && end > p;) {
			const char *start = end;

			while (start > p && start[-1] != ';')
				start--;
			fprintf(f, " => %.*s\n", (int)(end - start), start);
			end = start - 1;
		}
	}
}

static int folded_finish(struct relstack_presenter *p)
{
	struct folded *s = p->state;
	struct stack_count *sc = calloc(s->n ? s->n : 1, sizeof(*sc));
	size_t n = 0;

	if (!sc)
		return -ENOMEM;
	if (s->n)
		qsort(s->line, s->n, sizeof(*s->line), cmp_str);
	for (size_t i = 0; i < s->n;) {
		size_t k = i;

		while (k < s->n && strcmp(s->line[k], s->line[i]) == 0)
			k++;
		sc[n].folded = s->line[i];
		sc[n++].count = k - i;
		i = k;
	}
	if (p->o.format == RELSTACK_PRESENT_TOP) {
		qsort(sc, n, sizeof(*sc), cmp_count);
		print_top(p->f, sc, n, s->n, p->o.top);
	} else {
		for (size_t i = 0; i < n; i++)
			fprintf(p->f, "%s %zu\n", sc[i].folded, sc[i].count);
	}
	free(sc);
	return 0;
}

static void folded_free(struct relstack_presenter *p)
{
	struct folded *s = p->state;

	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->line[i]);
	free(s->line);
	free(s);
}

const struct rs_presenter_ops rs_present_folded = {
	.init = folded_init, .record = folded_record, .finish = folded_finish, .free = folded_free,
};
const struct rs_presenter_ops rs_present_top = {
	.init = folded_init, .record = folded_record, .finish = folded_finish, .free = folded_free,
};
