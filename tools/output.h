/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The relstack command's parts: options, and the commands' bodies. */
#ifndef RELSTACK_TOOL_OUTPUT_H
#define RELSTACK_TOOL_OUTPUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <relstack/decode.h>
#include <relstack/reader.h>

#define RS_ARRAY_MAX 64

struct rs_time_bound {
	bool set;
	bool relative; /* ns from the run's start; else wall-clock ns since the epoch */
	uint64_t ns;
};

/* One file dump or report reads. */
struct rs_tool_file {
	const char *name;              /* as given ("standard input" for '-'), or a directory's entry */
	char *owned;                   /* name, when it was made here (a directory's entry) */
	struct relstack_reader *r;
};

struct rs_tool_opts {
	const char *file;              /* the first FILE: info's one */
	const char *const *args;       /* every FILE argument, as given */
	size_t nargs;
	struct rs_tool_file *files;    /* dump, report: the files, each directory's buffer files in its place */
	size_t nfiles;
	const char *output;            /* -o FILE; NULL: standard output */
	char filter[512];              /* the filter options as given ("--tid 5 --event crash") */
	enum relstack_run_which run;
	uint32_t tids[RS_ARRAY_MAX];
	unsigned ntids;
	const char *events[RS_ARRAY_MAX];
	unsigned nevents;
	struct rs_time_bound since, until;
	enum relstack_present_format format; /* info: text or json only */
	const char *debug_dirs[RS_ARRAY_MAX];
	unsigned ndebug_dirs;
	const char *symbols[RS_ARRAY_MAX];
	unsigned nsymbols;
	bool lines, inlines;
	bool no_demangle;
	enum { RS_COLOR_AUTO, RS_COLOR_ALWAYS, RS_COLOR_NEVER } color; /* report, text format */
	unsigned top; /* report --top N: the N most frequent stacks (folded collection) */
	bool no_verdict; /* unreliable stacks not kept apart (folded, perf-script, speedscope, top) */
};

/* Print one line "relstack: ..." (and "Try 'HINT --help'." unless @hint is NULL), exit with @status. */
__attribute__((noreturn, format(printf, 3, 0))) void rs_tool_verror(int status, const char *hint, const char *fmt,
								    va_list ap);
/* Print one line "relstack: ..." and exit with status 2. */
__attribute__((noreturn, format(printf, 1, 2))) void rs_tool_input_error(const char *fmt, ...);

int rs_tool_info(struct relstack_reader *r, const struct rs_tool_opts *o);
/* dump (@symbolize false) and report: every record of @o->files, presented together; the exit status. */
int rs_tool_records(const struct rs_tool_opts *o, bool symbolize);
/* relstack record [OPTIONS] -- PROGRAM ARGS (tools/record.c): the program's exit status. */
int rs_tool_record(int argc, char **argv);

/* relstack kernel ... (tools/kernel.c): @argv[0] is "kernel".  Returns the exit status. */
int rs_tool_kernel(int argc, char **argv);

#endif
