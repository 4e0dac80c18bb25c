/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * present.h - what the presenters share: the presenter itself, the way
 * strings from the file are quoted, and a frame's functions as the
 * formats that show call trees name them.  Internal to the decode library
 * (and the relstack command's info, which prints the same way).
 */
#ifndef RS_PRESENT_H
#define RS_PRESENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <relstack/decode.h>

#include "decode/symbolize.h"

struct rs_presenter_ops {
	int (*init)(struct relstack_presenter *p);
	int (*record)(struct relstack_presenter *p, const struct relstack_decoded_record *dr);
	int (*finish)(struct relstack_presenter *p); /* may be NULL */
	void (*free)(struct relstack_presenter *p);  /* may be NULL */
};

struct relstack_presenter {
	struct relstack_present_opts o;
	struct relstack_run_info run; /* of the file being presented */
	bool has_run;
	/* the wall-clock span of every run presented (ns since the epoch); end 0: unknown */
	uint64_t span_start_ns, span_end_ns;
	char *file;                   /* relstack_presenter__begin_file()'s, or NULL */
	bool file_begun;              /* its records are next: text's header line is due */
	FILE *f;
	const struct rs_presenter_ops *ops;
	void *state; /* the format's own */
};

extern const struct rs_presenter_ops rs_present_text, rs_present_json, rs_present_folded, rs_present_top,
	rs_present_pprof, rs_present_perf_script, rs_present_speedscope, rs_present_html;

const char *rs_run_name(enum relstack_run_which w);
/*
 * Why run @w of @r cannot be read (@ret from relstack_reader__run_info()),
 * as one line in @err naming the file @name.  A run area the reader
 * refused may have held that run: what the reader says of each area is
 * given, so "does not hold one" is said only when no area holds anything
 * wrong.  Returns @ret.
 */
int rs_no_run_message(struct relstack_reader *r, enum relstack_run_which w, const char *name, int ret, char *err,
		      size_t size);
const char *rs_basename(const char *path);
/* @path with "." and "dir/.." folded away, in @buf (or @path itself if it does not fit). */
const char *rs_clean_path(const char *path, char *buf, size_t size);
void rs_print_hex(FILE *f, const uint8_t *p, size_t n);
/* ns since the epoch as 2026-01-02T03:04:05.123456789Z */
void rs_print_walltime(FILE *f, uint64_t ns);
/*
 * A string from the file, quoted (JSON rules; also for text: never raw).
 * Valid UTF-8 passes through; '"', '\\', control characters and DEL are
 * escaped.  A byte that is not part of valid UTF-8 keeps its value: \udcXX
 * in JSON (the lone surrogate U+DC80..U+DCFF, as Python's surrogateescape
 * reads it back), \xXX in text.  relstack(1) documents the rule.
 */
void rs_print_string(FILE *f, const char *str, size_t max, bool json);
/* The verdict's reasons by name: "a,b" in text, ["a","b"] in JSON. */
void rs_print_reasons(FILE *f, uint32_t reasons, bool json);
/* The record's event fields: " name=value..." in text, {"name":value,...} in JSON. */
void rs_print_fields(FILE *f, const struct relstack_record *rec, bool json);

/* One function of a frame: the frame's own, or one inlined into it. */
struct rs_func {
	const char *name;
	const char *file; /* NULL if unknown */
	unsigned line;
	bool inlined;
};

#define RS_FUNC_MAX (RS_SYM_MAX_INLINED + 1)

/*
 * The functions of frame @fr, outermost first (the frame's function, then
 * what was inlined into it): its count, 0 for an END marker.  A frame
 * without a name is "object+0xOFFSET", a marker "[signal]" or
 * "[unknown]", a bad word "[invalid]"; @buf holds a made-up name.
 */
unsigned rs_frame_funcs(const struct relstack_decoded_frame *fr, struct rs_func out[RS_FUNC_MAX], char *buf,
			size_t size);

/*
 * The record's stack as one line "EVENT;outer;...;inner", as the folded
 * format prints it: a malloc'd string, NULL for no memory.
 */
char *rs_folded_line(const struct relstack_decoded_record *dr);

/*
 * The frame that keeps an unreliable stack apart in the formats that add
 * up stacks, unless the options say no_verdict: in folded, --top and
 * perf-script just outside the outermost frame (under the event), in
 * speedscope after the event's name in the root frame.
 */
#define RS_UNRELIABLE_FRAME "[unreliable]"

/*
 * The CPU time one "sample" record (the sampler's) stands for: the period
 * given, or else the median interval between two samples of one thread,
 * which is the period for a thread that keeps its CPU busy.  Feed it
 * every sample record in time order.
 */
struct rs_period {
	struct { uint32_t tid; uint64_t last; } *thread;
	size_t nthreads;
	uint64_t *interval;
	size_t n, cap;
};

bool rs_record_is_sample(const struct relstack_record *rec);
/* Note sample record @rec: 0 or -ENOMEM. */
int rs_period_add(struct rs_period *pd, const struct relstack_record *rec);
/* @given if not 0, else the median interval; 0 if there is none (no thread sampled twice). */
uint64_t rs_period_ns(struct rs_period *pd, uint64_t given);
void rs_period_free(struct rs_period *pd);

/* An open-addressing table of strings to ids. */
struct rs_intern {
	char **key;
	uint64_t *id;
	size_t cap, n;
};

/* The id of @key if known (*added false), else @next, now its id (*added true); *oom on failure. */
uint64_t rs_intern(struct rs_intern *t, const char *key, uint64_t next, bool *added, bool *oom);
void rs_intern_free(struct rs_intern *t);

#endif
