/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * decode.h - a run's records with their frames named, and the output
 * formats that present them.
 *
 * A decoder reads one run of an open buffer file: it keeps the records
 * that pass the filter, orders them by time and hands them out one by one
 * with every frame decoded (object, build-id, offset, symbol, file:line,
 * inlined frames, or the reason the frame could not be named).  A
 * presenter writes decoded records in one format.  Nothing here prints
 * to stderr or exits: errors come back as -errno, with a message for the
 * ones that name bad input.  Symbols need libelf and libdw: these
 * functions are in librelstack-decode, not librelstack.
 *
 * Ownership: a decoded record and every string it points to stay valid
 * until the next relstack_decoder__next() or relstack_decoder__free().
 */
#ifndef RELSTACK_DECODE_H
#define RELSTACK_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <relstack/entry.h>
#include <relstack/reader.h>

#ifdef __cplusplus
extern "C" {
#endif

struct relstack_decoder;
struct relstack_presenter;

/* A time bound of the filter. */
struct relstack_decode_time {
	bool set;
	bool relative; /* ns from the run's start; else wall-clock ns since the epoch */
	uint64_t ns;
};

struct relstack_decode_opts {
	size_t sz;                       /* sizeof(struct relstack_decode_opts) */
	enum relstack_run_which run;
	const char *name;                /* the file as error messages name it (NULL: "buffer file") */
	bool symbolize;                  /* name frames; else objects and offsets only */
	bool lines, inlines;             /* file:line, inlined frames (with symbolize) */
	bool demangle;                   /* C++ and Rust names as c++filt shows them */
	bool system_map;                 /* a kernel object without a map: /boot/System.map-RELEASE */
	const char *const *debug_dirs;
	size_t n_debug_dirs;
	const char *const *symbols;      /* "OBJECT=FILE": nm(1) or System.map text for OBJECT */
	size_t n_symbols;
	/* The filter: an empty list or an unset bound keeps every record. */
	const uint32_t *tids;
	size_t n_tids;
	const char *const *events;
	size_t n_events;
	struct relstack_decode_time since, until;
	/*
	 * Debug files fetched by build-id from the debuginfod servers
	 * DEBUGINFOD_URLS names (libdebuginfod, and its cache).  A server
	 * that sends nothing for DEBUGINFOD_TIMEOUT seconds (default 90,
	 * retries included) is given up, and debuginfod is then asked
	 * nothing more by this decoder.  @fetch_fn, if set, is called with
	 * one line when a download starts (what is fetched, by build-id) and
	 * one when fetching is given up (@gave_up true: why); nothing is said
	 * of a file the cache holds.  @fetch_deadline_ns (CLOCK_MONOTONIC,
	 * 0: none) ends all fetching, a download under way too: one deadline
	 * can bound several decoders.
	 */
	void (*fetch_fn)(const char *line, bool gave_up, void *arg);
	void *fetch_arg;
	uint64_t fetch_deadline_ns;
};

/* An inlined function at a frame's address, and the location inside it. */
struct relstack_decoded_inline {
	const char *symbol;
	const char *file; /* NULL if unknown */
	unsigned line;
};

struct relstack_decoded_frame {
	enum relstack_entry_kind kind;
	enum relstack_marker marker;              /* RELSTACK_ENTRY_MARKER */
	const char *problem;                      /* RELSTACK_ENTRY_INVALID: why the word names no frame */
	/* RELSTACK_ENTRY_OBJECT */
	uint32_t slot;
	const struct relstack_object *object;     /* path, build-id, flags */
	uint64_t offset;                          /* from the object's base */
	bool return_address;                      /* named at the call before it */
	bool symbolized;                          /* naming was asked for */
	const char *symbol;                       /* NULL: not named, see unnamed */
	const char *unnamed;                      /* why symbol is NULL (when symbolized) */
	uint64_t symoff, symsize;
	const char *file;                         /* cleaned path, NULL if unknown */
	unsigned line;
	const char *line_note;                    /* why file:line or inlined frames are missing */
	unsigned n_inlined;
	const struct relstack_decoded_inline *inlined; /* innermost first */
};

struct relstack_decoded_record {
	const struct relstack_record *rec;
	const char *event;   /* the event's name, or "event#ID" */
	bool reliable;       /* has a stack and its verdict is reliable */
	size_t nframes;      /* one per word, innermost first; END markers included */
	const struct relstack_decoded_frame *frames;
};

/*
 * A decoder for run @opts->run of @r (which must outlive it).  Returns 0
 * and *out, or -errno with a one-line message in @err: -ENOENT (no such
 * run), -EINVAL (an event the run does not define, a bad "OBJECT=FILE"),
 * -ENOMEM.
 */
RELSTACK_API int relstack_decoder__new(struct relstack_reader *r, const struct relstack_decode_opts *opts,
				       struct relstack_decoder **out, char *err, size_t errsize);
RELSTACK_API void relstack_decoder__free(struct relstack_decoder *d);

/* The decoded run's identity and counters. */
RELSTACK_API const struct relstack_run_info *relstack_decoder__run_info(const struct relstack_decoder *d);

/* Number of records that passed the filter. */
RELSTACK_API size_t relstack_decoder__count(const struct relstack_decoder *d);

/* The next record, by time: 1 and *out, 0 at the end, -ENOMEM. */
RELSTACK_API int relstack_decoder__next(struct relstack_decoder *d, const struct relstack_decoded_record **out);

/* Start again from the first record. */
RELSTACK_API void relstack_decoder__rewind(struct relstack_decoder *d);

/*
 * Objects whose symbols could not be used: @fn is called with one line
 * for each (once per file).  Returns 1 if a symbol source was of another
 * build or damaged (bad input), else 0.
 */
RELSTACK_API int relstack_decoder__object_errors(struct relstack_decoder *d,
						 void (*fn)(const char *line, void *arg), void *arg);

enum relstack_present_format {
	RELSTACK_PRESENT_TEXT = 0,   /* ftrace-style text */
	RELSTACK_PRESENT_JSON,       /* JSON Lines */
	RELSTACK_PRESENT_FOLDED,     /* folded stacks with counts */
	RELSTACK_PRESENT_TOP,        /* the most frequent stacks */
	RELSTACK_PRESENT_PPROF,      /* profile.proto, gzip-compressed */
	RELSTACK_PRESENT_PERF_SCRIPT,/* the text perf script prints */
	RELSTACK_PRESENT_SPEEDSCOPE, /* speedscope's JSON file format */
	RELSTACK_PRESENT_HTML,       /* one self-contained HTML flame graph */
};

struct relstack_present_opts {
	size_t sz;                   /* sizeof(struct relstack_present_opts) */
	enum relstack_present_format format;
	const struct relstack_run_info *run; /* may be NULL */
	enum relstack_run_which which;
	unsigned top;                /* RELSTACK_PRESENT_TOP: how many stacks */
	uint64_t sample_period_ns;   /* pprof, speedscope: CPU time of a "sample" record (0: estimated) */
	const char *title;           /* speedscope and html: the profile's name (NULL: the comm) */
	bool color;                  /* text: each record's verdict in colour (ANSI escapes) */
	bool no_verdict;             /* folded, top, perf-script, speedscope: no [unreliable] frame */
};

/* The format named @name ("text", "json", "folded", "pprof", ...): 0, or -EINVAL. */
RELSTACK_API int relstack_present_format_parse(const char *name, enum relstack_present_format *out);

/* A presenter writing to @f: 0 and *out, -EINVAL (bad options), -ENOMEM. */
RELSTACK_API int relstack_presenter__new(const struct relstack_present_opts *opts, FILE *f,
					 struct relstack_presenter **out);
/*
 * For several files: the records that follow come from the file @name,
 * run @run (may be NULL).  text prints a line "==> NAME <==" before the
 * first of them, json gives each a "file" key, perf-script names their
 * process from @run, pprof's time span covers every run; the formats that
 * add up stacks add those of every file.  A presenter never told a file
 * names none (the output of a single file).  @name is copied.  Returns 0
 * or -ENOMEM.
 */
RELSTACK_API int relstack_presenter__begin_file(struct relstack_presenter *p, const char *name,
						const struct relstack_run_info *run);
/* Present one record: 0 or -errno. */
RELSTACK_API int relstack_presenter__record(struct relstack_presenter *p, const struct relstack_decoded_record *dr);
/* Write what the format writes once all records are in, flush: 0 or -errno. */
RELSTACK_API int relstack_presenter__finish(struct relstack_presenter *p);
RELSTACK_API void relstack_presenter__free(struct relstack_presenter *p);

#ifdef __cplusplus
}
#endif

#endif
