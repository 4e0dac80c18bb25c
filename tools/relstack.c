// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * relstack(1): read a buffer file anywhere, after its writer is gone.
 *
 *   info     descriptor, run identity and clocks, geometry, counters,
 *            object table, event schemas
 *   dump     every record, frames as object + offset, no symbols
 *   report   every record, frames symbolised
 *
 * The command uses the public reader API (relstack/reader.h) and the
 * decode library's symbolizer.  Exit status: 0 success, 1 bad usage,
 * 2 bad input; every error is one line naming the file and the problem.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <relstack/reader.h>
#include <relstack/recorder.h>
#include <relstack/relstack.h>

#include "decode/symbolize.h"
#include "tools/output.h"
#include "tools/ps.h"

#define EXIT_USAGE 1
#define EXIT_INPUT 2

static const char *prog = "relstack";

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(EXIT_USAGE);
}

void rs_tool_verror(int status, const char *hint, const char *fmt, va_list ap)
{
	fprintf(stderr, "relstack: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	if (hint)
		fprintf(stderr, "Try '%s --help'.\n", hint);
	exit(status);
}

void rs_tool_input_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rs_tool_verror(EXIT_INPUT, NULL, fmt, ap);
	va_end(ap);
}

static const char main_usage[] =
	"Usage: relstack COMMAND [OPTIONS] FILE\n"
	"Decode a relstack buffer file: stack traces stored as object + offset, with\n"
	"the unwinder's verdict, readable on any machine.\n"
	"\n"
	"Commands:\n"
	"  info     format descriptor, runs, clocks, counters, object table, event schemas\n"
	"  dump     every record, frames as object + offset (no symbols: safe to share)\n"
	"  report   every record, frames symbolised (function, file:line, inlined frames)\n"
	"  record   run a program with the agent preloaded: crashes, samples, calls\n"
	"  kernel   kernel stacks through tracefs: record, clean, symbols, import\n"
	"  ps       a live process's threads, each stack with its verdict; --check\n"
	"\n"
	"Options:\n"
	"  -h, --help       this help; 'relstack COMMAND --help' for a command's options\n"
	"      --version    print the version\n"
	"\n"
	"Exit status: 0 success, 1 bad usage, 2 bad input.  See relstack(1).\n";

static const char info_usage[] =
	"Usage: relstack info [--run current|previous] [--format text|json] FILE\n"
	"Print the format descriptor, the run's identity, clocks and geometry, its\n"
	"counters (lost, overwritten, skipped), stack table (size, entries, hit rate,\n"
	"stacks written inline because it was full), object table and event schemas.\n"
	"FILE '-' reads standard input.\n"
	"\n"
	"  --run current|previous   which run of the file (default: current)\n"
	"  --format text|json       output format (default: text)\n";

/* The options dump and report share. */
#define RECORD_OPTIONS \
	"  --run current|previous   which run of the file (default: current)\n" \
	"  --tid TID                only this thread (repeatable)\n" \
	"  --event NAME             only this event (repeatable)\n" \
	"  --since TIME             only records at or after TIME\n" \
	"  --until TIME             only records at or before TIME\n" \
	"                           TIME: +SECONDS from the run's start, or UTC\n" \
	"                           YYYY-MM-DDTHH:MM:SS[.fraction]\n" \
	"  --format FORMAT          text (default), json, folded, pprof, perf-script,\n" \
	"                           speedscope or html\n" \
	"  --no-verdict             folded, perf-script, speedscope, top: unreliable\n" \
	"                           stacks added to the others, no [unreliable] frame\n"

static const char dump_usage[] =
	"Usage: relstack dump [OPTIONS] FILE\n"
	"Print every record, each frame as object + offset, without symbols.\n"
	"FILE '-' reads standard input.\n"
	"\n"
	RECORD_OPTIONS;

static const char report_usage[] =
	"Usage: relstack report [OPTIONS] FILE\n"
	"Print every record with its frames symbolised.  FILE '-' reads standard input.\n"
	"\n"
	RECORD_OPTIONS
	"  --debug-dir DIR          look for debug files under DIR too (repeatable)\n"
	"  --symbols OBJECT=FILE    nm(1)/System.map symbols for OBJECT (repeatable)\n"
	"  --no-lines               names only, no file:line\n"
	"  --no-inlines             no inlined frames\n"
	"  --no-demangle            C++ and Rust names as the symbol table holds them\n"
	"  --color WHEN             the verdict in colour: auto (on a terminal),\n"
	"                           always or never (default: auto)\n"
	"  --debuginfod URLS        fetch missing debug files by build-id from these\n"
	"                           debuginfod servers (default: $DEBUGINFOD_URLS)\n"
	"  --top N                  the N most frequent stacks with counts and shares\n";

enum {
	OPT_RUN = 256,
	OPT_TID,
	OPT_EVENT,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_FORMAT,
	OPT_DEBUG_DIR,
	OPT_SYMBOLS,
	OPT_NO_LINES,
	OPT_NO_INLINES,
	OPT_TOP,
	OPT_NO_DEMANGLE,
	OPT_DEBUGINFOD,
	OPT_COLOR,
	OPT_NO_VERDICT,
};

static const struct option long_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "run", required_argument, NULL, OPT_RUN },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
	{ "symbols", required_argument, NULL, OPT_SYMBOLS },
	{ "no-lines", no_argument, NULL, OPT_NO_LINES },
	{ "no-inlines", no_argument, NULL, OPT_NO_INLINES },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
	{ "debuginfod", required_argument, NULL, OPT_DEBUGINFOD },
	{ "color", required_argument, NULL, OPT_COLOR },
	{ "no-verdict", no_argument, NULL, OPT_NO_VERDICT },
	{ NULL, 0, NULL, 0 },
};

/* A time bound: relative to the run's start, or wall-clock. */
static bool parse_time(const char *s, struct rs_time_bound *t)
{
	char *end;

	if (s[0] == '+') {
		double secs = strtod(s + 1, &end);

		if (end == s + 1 || *end || secs < 0 || secs > 1e9)
			return false;
		t->set = true;
		t->relative = true;
		t->ns = (uint64_t)(secs * 1e9 + 0.5);
		return true;
	} else {
		struct tm tm;
		const char *rest;
		uint64_t frac = 0, scale = 1000000000ull;
		time_t secs;

		memset(&tm, 0, sizeof(tm));
		rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
		if (!rest)
			return false;
		if (*rest == '.') {
			rest++;
			if (*rest < '0' || *rest > '9')
				return false;
			while (*rest >= '0' && *rest <= '9') {
				if (scale > 1) {
					scale /= 10;
					frac += (uint64_t)(*rest - '0') * scale;
				}
				rest++;
			}
		}
		if (*rest == 'Z')
			rest++;
		if (*rest)
			return false;
		secs = timegm(&tm);
		if (secs < 0)
			return false;
		t->set = true;
		t->relative = false;
		t->ns = (uint64_t)secs * 1000000000ull + frac;
		return true;
	}
}

static void parse_args(int argc, char **argv, const char *usage, bool decode_opts, bool symbol_opts,
		       struct rs_tool_opts *o)
{
	const char *format = "text";
	int c, idx;

	o->lines = true;
	o->inlines = true;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", long_opts, &idx)) != -1) {
		bool dec = c == OPT_TID || c == OPT_EVENT || c == OPT_SINCE || c == OPT_UNTIL || c == OPT_NO_VERDICT;
		bool sym = c == OPT_DEBUG_DIR || c == OPT_SYMBOLS || c == OPT_NO_LINES || c == OPT_NO_INLINES ||
			   c == OPT_TOP || c == OPT_NO_DEMANGLE || c == OPT_DEBUGINFOD || c == OPT_COLOR;

		/* every option that can be out of place is long: name it, not its argument */
		if ((dec && !decode_opts) || (sym && !symbol_opts))
			usage_error("%s: option '--%s' does not apply here", argv[0], long_opts[idx].name);
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case OPT_RUN:
			if (strcmp(optarg, "current") == 0)
				o->run = RELSTACK_RUN_CURRENT;
			else if (strcmp(optarg, "previous") == 0)
				o->run = RELSTACK_RUN_PREVIOUS;
			else
				usage_error("--run: expected 'current' or 'previous', not '%s'", optarg);
			break;
		case OPT_TID: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (end == optarg || *end || v > UINT32_MAX)
				usage_error("--tid: '%s' is not a thread id", optarg);
			if (o->ntids == RS_ARRAY_MAX)
				usage_error("--tid: at most %d", RS_ARRAY_MAX);
			o->tids[o->ntids++] = (uint32_t)v;
			break;
		}
		case OPT_EVENT:
			if (o->nevents == RS_ARRAY_MAX)
				usage_error("--event: at most %d", RS_ARRAY_MAX);
			o->events[o->nevents++] = optarg;
			break;
		case OPT_SINCE:
			if (!parse_time(optarg, &o->since))
				usage_error("--since: '%s' is not +SECONDS or YYYY-MM-DDTHH:MM:SS[.fraction]", optarg);
			break;
		case OPT_UNTIL:
			if (!parse_time(optarg, &o->until))
				usage_error("--until: '%s' is not +SECONDS or YYYY-MM-DDTHH:MM:SS[.fraction]", optarg);
			break;
		case OPT_FORMAT:
			if (relstack_present_format_parse(optarg, &o->format) < 0 || o->format == RELSTACK_PRESENT_TOP ||
			    (!decode_opts && o->format != RELSTACK_PRESENT_TEXT && o->format != RELSTACK_PRESENT_JSON))
				usage_error("--format: expected %s, not '%s'", decode_opts ?
					    "text, json, folded, pprof, perf-script, speedscope or html" :
					    "text or json", optarg);
			format = optarg;
			break;
		case OPT_COLOR:
			if (strcmp(optarg, "auto") == 0)
				o->color = RS_COLOR_AUTO;
			else if (strcmp(optarg, "always") == 0)
				o->color = RS_COLOR_ALWAYS;
			else if (strcmp(optarg, "never") == 0)
				o->color = RS_COLOR_NEVER;
			else
				usage_error("--color: '%s' is not auto, always or never", optarg);
			break;
		case OPT_DEBUGINFOD:
			/* libdebuginfod reads its servers from the environment */
			if (!optarg[0] || setenv("DEBUGINFOD_URLS", optarg, 1) != 0)
				usage_error("--debuginfod: '%s' names no server", optarg);
			break;
		case OPT_DEBUG_DIR:
			if (o->ndebug_dirs == RS_ARRAY_MAX)
				usage_error("--debug-dir: at most %d", RS_ARRAY_MAX);
			o->debug_dirs[o->ndebug_dirs++] = optarg;
			break;
		case OPT_SYMBOLS:
			if (!strchr(optarg, '=') || optarg[0] == '=' || optarg[strlen(optarg) - 1] == '=')
				usage_error("--symbols: expected OBJECT=FILE, not '%s'", optarg);
			if (o->nsymbols == RS_ARRAY_MAX)
				usage_error("--symbols: at most %d", RS_ARRAY_MAX);
			o->symbols[o->nsymbols++] = optarg;
			break;
		case OPT_NO_LINES:
			o->lines = false;
			o->inlines = false;
			break;
		case OPT_NO_INLINES:
			o->inlines = false;
			break;
		case OPT_NO_DEMANGLE:
			o->no_demangle = true;
			break;
		case OPT_NO_VERDICT:
			o->no_verdict = true;
			break;
		case OPT_TOP: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (end == optarg || *end || v == 0 || v > 1000000)
				usage_error("--top: '%s' is not a count from 1", optarg);
			o->top = (unsigned)v;
			break;
		}
		case ':':
			usage_error("%s: option '%s' needs an argument", argv[0], argv[optind - 1]);
			break;
		default:
			usage_error("%s: unknown option '%s'", argv[0], argv[optind - 1]);
		}
	}
	if (o->top && o->format != RELSTACK_PRESENT_TEXT && o->format != RELSTACK_PRESENT_FOLDED)
		usage_error("%s: --top prints text, not --format %s", argv[0],
			    o->format == RELSTACK_PRESENT_JSON ? "json" : "other than text");
	if (o->no_verdict && !o->top && o->format != RELSTACK_PRESENT_FOLDED &&
	    o->format != RELSTACK_PRESENT_PERF_SCRIPT && o->format != RELSTACK_PRESENT_SPEEDSCOPE)
		usage_error("%s: --no-verdict applies to folded, perf-script, speedscope and --top, not --format %s",
			    argv[0], format);
	if (o->top)
		o->format = RELSTACK_PRESENT_TOP;
	if (optind == argc)
		usage_error("%s: missing FILE", argv[0]);
	if (optind + 1 < argc)
		usage_error("%s: one FILE only, '%s' is extra", argv[0], argv[optind + 1]);
	o->file = argv[optind];
}

/* The largest buffer file read from standard input. */
#define STDIN_MAX ((size_t)1 << (sizeof(size_t) > 4 ? 32 : 31)) /* (the doubling below stays in a size_t) */

/* Read all of standard input, or exit 2. */
static void *read_stdin(size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		rs_tool_input_error("standard input: out of memory");
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			if (cap >= STDIN_MAX)
				rs_tool_input_error("standard input: larger than any buffer file");
			cap *= 2;
			nb = realloc(buf, cap);
			if (!nb)
				rs_tool_input_error("standard input: out of memory");
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, stdin);
		n += got;
		if (got == 0) {
			if (ferror(stdin))
				rs_tool_input_error("standard input: %s", strerror(errno));
			break;
		}
	}
	*len = n;
	return buf;
}

/* Open @o->file ('-': standard input), or exit 2 with the reader's one-line reason. */
static struct relstack_reader *open_file(struct rs_tool_opts *o)
{
	static const char mem_name[] = "(memory)";
	char err[512] = "";
	struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r;

	if (strcmp(o->file, "-") == 0) {
		size_t len;
		void *buf = read_stdin(&len);

		o->file = "standard input";
		r = relstack_reader__open_mem(buf, len, &ro);
		free(buf);
		/* the reader names bytes in memory so; the user gave standard input */
		if (!r && !strncmp(err, mem_name, sizeof(mem_name) - 1))
			rs_tool_input_error("%s%s", o->file, err + sizeof(mem_name) - 1);
	} else {
		r = relstack_reader__open(o->file, &ro);
	}
	if (!r) {
		if (err[0])
			rs_tool_input_error("%s", err);
		rs_tool_input_error("%s: %s", o->file, relstack_strerror(errno));
	}
	return r;
}

int main(int argc, char **argv)
{
	struct rs_tool_opts o;
	struct relstack_reader *r;
	const char *cmd;
	int ret;

	memset(&o, 0, sizeof(o));
	if (argc < 2)
		usage_error("missing COMMAND (info, dump or report)");
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		fputs(main_usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("relstack %s\n", RELSTACK_VERSION);
		return 0;
	}
	if (strcmp(cmd, "record") == 0)
		return rs_tool_record(argc - 1, argv + 1);
	if (strcmp(cmd, "kernel") == 0)
		return rs_tool_kernel(argc - 1, argv + 1);
	if (strcmp(cmd, "ps") == 0)
		return rs_tool_ps(argc - 1, argv + 1);
	if (strcmp(cmd, "info") == 0) {
		parse_args(argc - 1, argv + 1, info_usage, false, false, &o);
		r = open_file(&o);
		ret = rs_tool_info(r, &o);
	} else if (strcmp(cmd, "dump") == 0) {
		parse_args(argc - 1, argv + 1, dump_usage, true, false, &o);
		r = open_file(&o);
		ret = rs_tool_records(r, &o, false);
	} else if (strcmp(cmd, "report") == 0) {
		parse_args(argc - 1, argv + 1, report_usage, true, true, &o);
		r = open_file(&o);
		ret = rs_tool_records(r, &o, true);
	} else {
		usage_error("unknown command '%s' (info, dump, report or record)", cmd);
		return EXIT_USAGE;
	}
	relstack_reader__close(r);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "relstack: standard output: %s\n", strerror(errno));
		return EXIT_INPUT;
	}
	return ret;
}
