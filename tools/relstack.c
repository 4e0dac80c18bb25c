// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * relstack(1): read a buffer file anywhere, after its writer is gone.
 *
 *   info     descriptor, run identity and clocks, geometry, counters,
 *            object table, event schemas
 *   dump     every record, frames as object + offset, no symbols
 *   report   every record, frames symbolised
 *   record, kernel, ps   the front ends (record.c, kernel.c, ps.c)
 *
 * dump and report read several files (a directory: the buffer files in
 * it) and present their records together.
 *
 * The command uses the public reader API (relstack/reader.h) and the
 * decode library's symbolizer.  Exit status: 0 success, 1 bad usage,
 * 2 bad input; every error is one line naming the file and the problem.
 */
#include <dirent.h>
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
#include <sys/stat.h>
#include <unistd.h>

#include <relstack/reader.h>
#include <relstack/recorder.h>
#include <relstack/relstack.h>

#include "decode/symbolize.h"
#include "relstack-local.h"
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

static int cmd_info(int argc, char **argv);
static int cmd_dump(int argc, char **argv);
static int cmd_report(int argc, char **argv);

/* Every command: the help and the messages list them from here. */
static const struct command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the command's name; returns the exit status */
} commands[] = {
	{ "info", "format descriptor, runs, clocks, counters, object table, event schemas", cmd_info },
	{ "dump", "every record, frames as object + offset (no symbols: safe to share)", cmd_dump },
	{ "report", "every record, frames symbolised (function, file:line, inlined frames)", cmd_report },
	{ "record", "run a program with the agent preloaded: crashes, samples, calls", rs_tool_record },
	{ "kernel", "kernel stacks through tracefs: record, clean, symbols, import", rs_tool_kernel },
	{ "ps", "a live process's threads, each stack with its verdict; --check", rs_tool_ps },
};

/* "info, dump, ... or ps" */
static const char *command_list(void)
{
	static char list[256];
	size_t n = RS_ARRAY_SIZE(commands), len = 0;

	for (size_t i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ",
				       commands[i].name);
	return list;
}

static void main_usage(void)
{
	printf("Usage: relstack COMMAND [OPTIONS] FILE...\n"
	       "Decode a relstack buffer file: stack traces stored as object + offset, with\n"
	       "the unwinder's verdict, readable on any machine.\n"
	       "\n"
	       "Commands:\n");
	for (size_t i = 0; i < RS_ARRAY_SIZE(commands); i++)
		printf("  %-8s %s\n", commands[i].name, commands[i].summary);
	printf("\n"
	       "Options:\n"
	       "  -h, --help       this help; 'relstack COMMAND --help' for a command's options\n"
	       "      --version    print the version\n"
	       "\n"
	       "Exit status: 0 success, 1 bad usage, 2 bad input.  See relstack(1).\n");
}

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
	"                           stacks added to the others, no [unreliable] frame\n" \
	"  -o, --output FILE        write to FILE, not standard output (pprof, which\n" \
	"                           is gzip-compressed, is never written to a terminal)\n"

/* What several FILEs mean (dump and report). */
#define FILES_TEXT \
	"FILE '-' reads standard input; a directory stands for the buffer files in it\n" \
	"(*.relstack, as relstack record names them).  Of several files, text heads\n" \
	"each one's records with \"==> FILE <==\", json gives each record a \"file\" key,\n" \
	"and the formats that add up stacks add those of every file.\n"

static const char dump_usage[] =
	"Usage: relstack dump [OPTIONS] FILE...\n"
	"Print every record, each frame as object + offset, without symbols.\n"
	FILES_TEXT
	"\n"
	RECORD_OPTIONS;

static const char report_usage[] =
	"Usage: relstack report [OPTIONS] FILE...\n"
	"Print every record with its frames symbolised.\n"
	FILES_TEXT
	"\n"
	RECORD_OPTIONS
	"  --debug-dir DIR          look for debug files under DIR too (repeatable)\n"
	"  --symbols OBJECT=FILE    nm(1)/System.map symbols for OBJECT (repeatable)\n"
	"  --no-lines               names only, no file:line\n"
	"  --no-inlines             no inlined frames\n"
	"  --no-demangle            C++ and Rust names as the symbol table holds them\n"
	"  --color WHEN             the verdict in colour: auto (on a terminal, unless\n"
	"                           NO_COLOR is set), always or never (default: auto)\n"
	"  --debuginfod URLS        fetch missing debug files by build-id from these\n"
	"                           debuginfod servers (default: $DEBUGINFOD_URLS;\n"
	"                           '' fetches nothing)\n"
	"  --top N                  the N most frequent stacks with counts and shares\n"
	"                           (text)\n";

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
	{ "output", required_argument, NULL, 'o' },
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

/* Note a filter option as given, for the line saying that nothing matched it. */
static void note_filter(struct rs_tool_opts *o, const char *opt, const char *arg)
{
	size_t len = strlen(o->filter);

	if (len < sizeof(o->filter) - 1)
		snprintf(o->filter + len, sizeof(o->filter) - len, "%s--%s %s", len ? " " : "", opt, arg);
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
	while ((c = getopt_long(argc, argv, "+ho:", long_opts, &idx)) != -1) {
		bool dec = c == OPT_TID || c == OPT_EVENT || c == OPT_SINCE || c == OPT_UNTIL || c == OPT_NO_VERDICT ||
			   c == 'o';
		bool sym = c == OPT_DEBUG_DIR || c == OPT_SYMBOLS || c == OPT_NO_LINES || c == OPT_NO_INLINES ||
			   c == OPT_TOP || c == OPT_NO_DEMANGLE || c == OPT_DEBUGINFOD || c == OPT_COLOR;

		/* every option that can be out of place is long (or -o): name it, not its argument */
		if ((dec && !decode_opts) || (sym && !symbol_opts))
			usage_error("%s: option '%s%s' does not apply here", argv[0], c == 'o' ? "-" : "--",
				    c == 'o' ? "o" : long_opts[idx].name);
		switch (c) {
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'o':
			if (!optarg[0])
				usage_error("%s: -o: an empty file name", argv[0]);
			o->output = optarg;
			break;
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
			note_filter(o, "tid", optarg);
			break;
		}
		case OPT_EVENT:
			if (o->nevents == RS_ARRAY_MAX)
				usage_error("--event: at most %d", RS_ARRAY_MAX);
			o->events[o->nevents++] = optarg;
			note_filter(o, "event", optarg);
			break;
		case OPT_SINCE:
			if (!parse_time(optarg, &o->since))
				usage_error("--since: '%s' is not +SECONDS or YYYY-MM-DDTHH:MM:SS[.fraction]", optarg);
			note_filter(o, "since", optarg);
			break;
		case OPT_UNTIL:
			if (!parse_time(optarg, &o->until))
				usage_error("--until: '%s' is not +SECONDS or YYYY-MM-DDTHH:MM:SS[.fraction]", optarg);
			note_filter(o, "until", optarg);
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
			/*
			 * libdebuginfod reads its servers from the environment; ''
			 * switches off what the environment names
			 */
			if (optarg[0] ? setenv("DEBUGINFOD_URLS", optarg, 1) != 0 : unsetenv("DEBUGINFOD_URLS") != 0)
				usage_error("--debuginfod: '%s': %s", optarg, strerror(errno));
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
	/* --top is a format of its own, made of text: every other format is named, folded too */
	if (o->top && o->format != RELSTACK_PRESENT_TEXT)
		usage_error("%s: --top prints the most frequent stacks as text: it does not apply to --format %s",
			    argv[0], format);
	if (o->no_verdict && !o->top && o->format != RELSTACK_PRESENT_FOLDED &&
	    o->format != RELSTACK_PRESENT_PERF_SCRIPT && o->format != RELSTACK_PRESENT_SPEEDSCOPE)
		usage_error("%s: --no-verdict applies to folded, perf-script, speedscope and --top, not --format %s",
			    argv[0], format);
	if (o->top)
		o->format = RELSTACK_PRESENT_TOP;
	/* gzip bytes would garble the terminal: one line, and the way round it */
	if (o->format == RELSTACK_PRESENT_PPROF && !o->output && isatty(STDOUT_FILENO)) {
		fprintf(stderr, "relstack: %s: --format pprof writes gzip-compressed bytes, not for a terminal: "
			"give -o FILE, or redirect standard output\n", argv[0]);
		exit(EXIT_USAGE);
	}
	if (optind == argc)
		usage_error("%s: missing FILE", argv[0]);
	if (!decode_opts && optind + 1 < argc)
		usage_error("%s: one FILE only, '%s' is extra", argv[0], argv[optind + 1]);
	o->file = argv[optind];
	o->args = (const char *const *)argv + optind;
	o->nargs = (size_t)(argc - optind);
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

/* Open @*name ('-': standard input, then so named), or exit 2 with the reader's one-line reason. */
static struct relstack_reader *open_file(const char **name)
{
	static const char mem_name[] = "(memory)";
	char err[512] = "";
	struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
	struct relstack_reader *r;

	if (strcmp(*name, "-") == 0) {
		size_t len;
		void *buf = read_stdin(&len);

		*name = "standard input";
		r = relstack_reader__open_mem(buf, len, &ro);
		free(buf);
		/* the reader names bytes in memory so; the user gave standard input */
		if (!r && !strncmp(err, mem_name, sizeof(mem_name) - 1))
			rs_tool_input_error("%s%s", *name, err + sizeof(mem_name) - 1);
	} else {
		r = relstack_reader__open(*name, &ro);
	}
	if (!r) {
		if (err[0])
			rs_tool_input_error("%s", err);
		rs_tool_input_error("%s: %s", *name, relstack_strerror(errno));
	}
	return r;
}

/* The buffer files relstack record writes: NAME.PID[.N].relstack. */
static int is_buffer_file(const struct dirent *e)
{
	size_t len = strlen(e->d_name);

	return e->d_name[0] != '.' && len > 9 && strcmp(e->d_name + len - 9, ".relstack") == 0;
}

static void push_file(struct rs_tool_opts *o, const char *name)
{
	if (o->nfiles % 16 == 0) {
		struct rs_tool_file *more = realloc(o->files, (o->nfiles + 16) * sizeof(*more));

		if (!more)
			rs_tool_input_error("%s: out of memory", name);
		o->files = more;
	}
	o->files[o->nfiles++] = (struct rs_tool_file){ .name = name };
}

/* Add @name to @o's files, or a directory's buffer files in name order; exit 2 if it has none. */
static void add_file(struct rs_tool_opts *o, const char *name)
{
	struct dirent **list;
	struct stat st;
	int n;

	if (strcmp(name, "-") == 0 || stat(name, &st) != 0 || !S_ISDIR(st.st_mode)) {
		push_file(o, name); /* what is wrong with it, the reader says */
		return;
	}
	n = scandir(name, &list, is_buffer_file, alphasort);
	if (n < 0)
		rs_tool_input_error("%s: %s", name, strerror(errno));
	if (n == 0)
		rs_tool_input_error("%s: a directory with no buffer file (*.relstack) in it", name);
	for (int i = 0; i < n; i++) {
		char *path;

		if (asprintf(&path, "%s%s%s", name, name[strlen(name) - 1] == '/' ? "" : "/", list[i]->d_name) < 0)
			rs_tool_input_error("%s: out of memory", name);
		push_file(o, path);
		o->files[o->nfiles - 1].owned = path;
		free(list[i]);
	}
	free(list);
}

/* Standard output written whole, or exit 2: the status of a command that prints. */
static int flushed(int ret)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "relstack: standard output: %s\n", strerror(errno));
		return EXIT_INPUT;
	}
	return ret;
}

static int cmd_info(int argc, char **argv)
{
	struct rs_tool_opts o;
	struct relstack_reader *r;
	int ret;

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, info_usage, false, false, &o);
	r = open_file(&o.file);
	ret = rs_tool_info(r, &o);
	relstack_reader__close(r);
	return flushed(ret);
}

static int records(int argc, char **argv, const char *usage, bool symbolize)
{
	struct rs_tool_opts o;
	bool stdin_taken = false;
	int ret;

	memset(&o, 0, sizeof(o));
	parse_args(argc, argv, usage, true, symbolize, &o);
	for (size_t i = 0; i < o.nargs; i++) {
		if (strcmp(o.args[i], "-") == 0) {
			if (stdin_taken)
				usage_error("%s: standard input ('-') is one file: given twice", argv[0]);
			stdin_taken = true;
		}
		add_file(&o, o.args[i]);
	}
	/* every file is opened before anything is printed: a bad one is named first */
	for (size_t i = 0; i < o.nfiles; i++)
		o.files[i].r = open_file(&o.files[i].name);
	ret = rs_tool_records(&o, symbolize);
	for (size_t i = 0; i < o.nfiles; i++) {
		relstack_reader__close(o.files[i].r);
		free(o.files[i].owned);
	}
	free(o.files);
	return flushed(ret);
}

static int cmd_dump(int argc, char **argv)
{
	return records(argc, argv, dump_usage, false);
}

static int cmd_report(int argc, char **argv)
{
	return records(argc, argv, report_usage, true);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2)
		usage_error("missing COMMAND (%s)", command_list());
	cmd = argv[1];
	if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
		main_usage();
		return 0;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("relstack %s\n", RELSTACK_VERSION);
		return 0;
	}
	for (size_t i = 0; i < RS_ARRAY_SIZE(commands); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	usage_error("unknown command '%s' (%s)", cmd, command_list());
	return EXIT_USAGE;
}
