// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `relstack ps -o FILE`: a snapshot recorded as a run of a buffer file,
 * relative like every run (no address of the process is written), so that
 * it decodes later, elsewhere, from the objects' files as any run does.
 *
 * The run keeps an object table of its own (the recorder's foreign table,
 * as the kernel recorder's): slot 0 is the process's program, then one
 * slot per other object, each with its path, build-id and text segment.
 * Each thread is one "thread" event whose words are the walk's absolute
 * addresses made relative to those slots; an address in no object of the
 * table, and any marker, is written as the marker word it stands for, so
 * no address reaches the file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "live/live.h"
#include "ring/recorder-local.h"
#include "capture/objtab.h"
#include "relstack/relstack.h"

struct thread_fields {
	uint32_t tid;
	uint32_t stack_bytes;  /* copied from the thread's stack */
	uint64_t stopped_ns;   /* the thread was stopped this long */
	char name[16];         /* /proc/PID/task/TID/comm */
	char state[4];         /* its state letter before the snapshot */
	uint32_t reserved;
};

static const struct relstack_event_field thread_schema[] = {
	{ "tid", offsetof(struct thread_fields, tid), 4, RELSTACK_FIELD_UNSIGNED },
	{ "stack_bytes", offsetof(struct thread_fields, stack_bytes), 4, RELSTACK_FIELD_UNSIGNED },
	{ "stopped_ns", offsetof(struct thread_fields, stopped_ns), 8, RELSTACK_FIELD_UNSIGNED },
	{ "name", offsetof(struct thread_fields, name), 16, RELSTACK_FIELD_STRING },
	{ "state", offsetof(struct thread_fields, state), 4, RELSTACK_FIELD_STRING },
};

/* The native entry word of an absolute walk word, with @slot[i] the slot of s->objects[i]. */
static uint64_t relative_word(const struct rs_live_snapshot *s, const unsigned *slot, uint64_t w)
{
	struct relstack_format fmt;
	const struct rs_live_object *o;
	uint64_t off;

	relstack_format_native(&fmt);
	if (w == fmt.marker_end || w == fmt.marker_unknown || w == fmt.marker_signal)
		return w; /* absolute words keep the native markers */
	o = rs_live_object_at(s, (uintptr_t)w);
	if (!o || o->problem || slot[o - s->objects] == UINT32_MAX)
		return fmt.marker_unknown;
	off = w - o->bias;
	return relstack_word_encode(&fmt, slot[o - s->objects], off);
}

int rs_live_record(const struct rs_live_snapshot *s, const char *path, char *msg, size_t msglen)
{
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	unsigned slot[RS_OBJTAB_SLOTS], next = 1, cap;
	struct relstack_recorder *rec;
	static const struct relstack_object empty;
	size_t isz;
	void *img;
	int id, ret = 0;

	ro.objtab_capacity = s->nobjects + 1 < RS_OBJTAB_SLOTS ? s->nobjects + 1 : RS_OBJTAB_SLOTS;
	rec = rs_recorder_open_foreign(path, &ro);
	if (!rec) {
		snprintf(msg, msglen, "%s: %s", path, relstack_strerror(errno));
		return -errno;
	}
	img = rs_recorder_objtab_image(rec, &isz, &cap);
	for (unsigned s_ = 0; s_ < cap; s_++) {
		struct relstack_object e = empty;

		e.slot = s_;
		rs_objtab_image_put(img, s_, &e, 0);
	}
	for (unsigned i = 0; i < s->nobjects; i++) {
		struct relstack_object o = s->objects[i].obj;
		unsigned k = (o.flags & RELSTACK_OBJECT_MAIN) ? 0 : next;

		slot[i] = UINT32_MAX;
		if (s->objects[i].problem || k >= cap || (k == 0 && (o.flags & RELSTACK_OBJECT_MAIN) == 0))
			continue;
		if (k)
			next++;
		o.slot = k;
		o.state = RELSTACK_OBJECT_LOADED;
		o.load_epoch = 1;
		o.unload_epoch = 0;
		rs_objtab_image_put(img, k, &o, 0);
		slot[i] = k;
	}
	rs_objtab_image_put_head(img, cap, 0, 1, 0);

	id = relstack_recorder__define_event(rec, "thread", thread_schema,
					     sizeof(thread_schema) / sizeof(thread_schema[0]),
					     sizeof(struct thread_fields));
	if (id < 0) {
		snprintf(msg, msglen, "%s: cannot define the thread event: %s", path, relstack_strerror(-id));
		relstack_recorder__close(rec);
		return id;
	}
	for (unsigned t = 0; t < s->nthreads && !ret; t++) {
		const struct rs_live_thread *th = &s->threads[t];
		struct thread_fields f;
		struct relstack_verdict v = th->v;
		uint64_t words[RS_LIVE_WORDS];
		size_t n = th->n < RELSTACK_WORDS_MAX ? th->n : RELSTACK_WORDS_MAX;

		if (th->err)
			continue; /* not read: nothing of it to record */
		memset(&f, 0, sizeof(f));
		f.tid = (uint32_t)th->tid;
		f.stack_bytes = (uint32_t)th->stack_bytes;
		f.stopped_ns = th->stopped_ns;
		memcpy(f.name, th->name, strnlen(th->name, sizeof(f.name) - 1)); /* comm: at most 15 characters */
		f.state[0] = th->state;
		for (size_t i = 0; i < n; i++)
			words[i] = relative_word(s, slot, th->words[i]);
		if (n < th->n)
			v.reasons |= RELSTACK_UNRELIABLE_TRUNCATED;
		v.epoch = 1;
		ret = relstack_recorder__write(rec, (unsigned)id, words, n, &v, &f, sizeof(f),
					       RELSTACK_RECORD_INTERRUPTED);
		if (ret < 0)
			snprintf(msg, msglen, "%s: thread %d not recorded: %s", path, (int)th->tid,
				 relstack_strerror(-ret));
	}
	if (relstack_recorder__close(rec) < 0 && !ret) {
		ret = -errno;
		snprintf(msg, msglen, "%s: %s", path, relstack_strerror(errno));
	}
	return ret;
}
