// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * relstack kernel: record | clean | symbols | import.  Argument parsing
 * over src/kernel/; the work, and every message's substance, is there.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/kernel.h"
#include "tools/output.h"

#define EXIT_USAGE 1
#define EXIT_INPUT 2
#define STALE_MAX 64

static const char kernel_usage[] =
	"Usage: relstack kernel SUBCOMMAND [OPTIONS]\n"
	"Kernel stacks through tracefs, relative (no kernel address in the file), with a verdict.\n"
	"\n"
	"  record [-o FILE] [-e SYSTEM:EVENT[:FILTER]]... [--stack-depth N] [-d SECONDS | -- COMMAND ARGS]\n"
	"           record the events, each with its kernel stack, into FILE\n"
	"           (default relstack-kernel.rsb), in a tracefs instance of its own;\n"
	"           --check-text TEXT also keeps the kernel's own symbolised text of them;\n"
	"           --size MIB sizes the file's ring (default 16; the oldest records make room)\n"
	"  clean    remove the tracefs instances of relstack runs that are gone\n"
	"  symbols [-o FILE]\n"
	"           write the running kernel's symbols as a System.map (link-time\n"
	"           addresses, build-id) that decodes kernel stacks without kallsyms\n"
	"  import TRACE.DAT [-o FILE]\n"
	"           convert a trace-cmd file recorded with -T (stack traces)\n"
	"  import [--raw] DIR [-o FILE] [--module-table FILE] [--kallsyms FILE]\n"
	"           convert raw tracefs output: DIR holds per_cpu/cpuN/trace_pipe_raw,\n"
	"           header_page and events/SYSTEM/EVENT/format (or its parent does),\n"
	"           and module_table, notes, kallsyms when there are (docs/kernel.md)\n"
	"\n"
	"Then: relstack report --symbols vmlinux=System.map FILE.  See relstack(1).\n";

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "relstack kernel: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'relstack kernel --help'.\n");
	return EXIT_USAGE;
}

/*
 * LeakSanitizer (sanitizer builds only; never called otherwise): the
 * tracing libraries keep small allocations of their own when they parse
 * event formats and find tracefs, which no call of theirs frees.
 */
const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"), used)) const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\nleak:libtracecmd.so\nleak:libtracefs.so\n";
}

/* ... and saying so would add lines to the command's one-line errors. */
const char *__lsan_default_options(void);
__attribute__((visibility("default"), used)) const char *__lsan_default_options(void)
{
	return "print_suppressions=0";
}

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void report_stale(void)
{
	char names[STALE_MAX][64];
	int n = rs_kinstances_stale(names, STALE_MAX, false);

	for (int i = 0; i < n && i < STALE_MAX; i++)
		fprintf(stderr, "relstack kernel: tracefs instance %s was left by a run that is gone; "
				"'relstack kernel clean' removes it\n", names[i]);
}

/* The readiness line (relstack(1)): whoever waits for the recording to start reads it. */
static void say_recording(const char *instance, void *ctx)
{
	const struct rs_krecord_opts *o = ctx;

	fprintf(stderr, "relstack kernel record: recording in tracefs instance %s into %s\n", instance, o->output);
}

static bool parse_event(const char *arg, struct rs_kevent_spec *e)
{
	const char *colon = strchr(arg, ':'), *filter;
	size_t slen, elen;

	if (!colon || colon == arg)
		return false;
	slen = (size_t)(colon - arg);
	filter = strchr(colon + 1, ':');
	elen = filter ? (size_t)(filter - colon - 1) : strlen(colon + 1);
	if (!elen || slen >= sizeof(e->system) || elen >= sizeof(e->event))
		return false;
	memcpy(e->system, arg, slen);
	e->system[slen] = '\0';
	memcpy(e->event, colon + 1, elen);
	e->event[elen] = '\0';
	e->filter = filter && filter[1] ? filter + 1 : NULL;
	return true;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "stack-depth", required_argument, NULL, 'D' },
		{ "duration", required_argument, NULL, 'd' },
		{ "check-text", required_argument, NULL, 'C' },
		{ "size", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rs_kevent_spec ev[RS_ARRAY_MAX];
	struct rs_krecord_opts o = { .output = "relstack-kernel.rsb", .events = ev, .stop = &stop_flag };
	struct rs_krecord_stats st;
	struct sigaction sa;
	char err[1024] = "";
	char *end;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:e:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o.output = optarg;
			break;
		case 'e':
			if (o.nevents == RS_ARRAY_MAX)
				return usage("-e: at most %s events", "64");
			if (!parse_event(optarg, &ev[o.nevents]))
				return usage("-e: expected SYSTEM:EVENT[:FILTER], not '%s'", optarg);
			o.nevents++;
			break;
		case 'D':
			o.stack_depth = (unsigned)strtoul(optarg, &end, 10);
			if (end == optarg || *end || !o.stack_depth || o.stack_depth > 255)
				return usage("--stack-depth: expected 1..255, not '%s'", optarg);
			break;
		case 'd':
			o.duration = strtod(optarg, &end);
			if (end == optarg || *end || !(o.duration > 0) || o.duration > 1e7)
				return usage("-d: expected a number of seconds, not '%s'", optarg);
			break;
		case 'C':
			o.check_text = optarg;
			break;
		case 'S':
			o.ring_size = strtoull(optarg, &end, 10) << 20;
			if (end == optarg || *end || !o.ring_size || o.ring_size > (1ull << 30))
				return usage("--size: expected MiB of the file's ring, 1..1024, not '%s'", optarg);
			break;
		case 'h':
			fputs(kernel_usage, stdout);
			return 0;
		default:
			return usage("record: unknown option or missing argument '%s'", argv[optind - 1]);
		}
	}
	if (!o.nevents)
		return usage("record: %s", "no event given (-e SYSTEM:EVENT[:FILTER])");
	if (optind < argc) {
		if (o.duration > 0)
			return usage("record: %s", "-d and a COMMAND exclude each other");
		o.argv = argv + optind;
	} else if (!(o.duration > 0)) {
		return usage("record: %s", "give -d SECONDS or -- COMMAND ARGS");
	}
	report_stale();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.on_recording = say_recording;
	o.ctx = &o;
	o.errbuf = err;
	o.errbuf_sz = sizeof(err);
	ret = rs_krecord(&o, &st);
	if (ret < 0) {
		fprintf(stderr, "relstack kernel record: %s\n", err[0] ? err : strerror(-ret));
		return EXIT_INPUT;
	}
	fprintf(stderr, "relstack kernel record: %s: %llu events, %llu with a kernel stack (%llu reliable), %llu lost\n",
		o.output, (unsigned long long)st.events, (unsigned long long)st.stacks,
		(unsigned long long)st.reliable, (unsigned long long)st.lost);
	return 0;
}

static int cmd_clean(int argc, char **argv)
{
	char names[STALE_MAX][64];
	int n;

	if (argc > 1)
		return usage("clean: no argument expected, not '%s'", argv[1]);
	n = rs_kinstances_stale(names, STALE_MAX, true);
	if (n < 0) {
		fprintf(stderr, "relstack kernel clean: tracefs: %s\n", strerror(-n));
		return EXIT_INPUT;
	}
	for (int i = 0; i < n && i < STALE_MAX; i++)
		printf("removed tracefs instance %s\n", names[i]);
	return 0;
}

/* -o FILE and -h, for symbols and import: -1 to go on (optind at the operands), else the exit status. */
static int output_option(int argc, char **argv, const char *sub, const char **out)
{
	char what[64];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt(argc, argv, "o:h")) != -1) {
		if (c == 'o') {
			*out = optarg;
		} else if (c == 'h') {
			fputs(kernel_usage, stdout);
			return 0;
		} else {
			snprintf(what, sizeof(what), "%s: unknown option or missing argument '%%s'", sub);
			return usage(what, argv[optind - 1]);
		}
	}
	return -1;
}

static int cmd_symbols(int argc, char **argv)
{
	const char *out = NULL;
	struct rs_ksyms s;
	uint8_t bid[RELSTACK_BUILD_ID_MAX];
	int ret, bid_len;
	FILE *f;

	ret = output_option(argc, argv, "symbols", &out);
	if (ret >= 0)
		return ret;
	if (optind < argc)
		return usage("symbols: unexpected argument '%s'", argv[optind]);
	ret = rs_ksyms_read("/proc/kallsyms", &s);
	if (ret < 0) {
		fprintf(stderr, "relstack kernel symbols: /proc/kallsyms: %s\n",
			ret == -ENOENT ? "no kernel addresses (run as root)" : strerror(-ret));
		return EXIT_INPUT;
	}
	bid_len = rs_kernel_build_id(bid, sizeof(bid));
	f = out ? fopen(out, "we") : stdout;
	if (!f) {
		fprintf(stderr, "relstack kernel symbols: %s: %s\n", out, strerror(errno));
		rs_ksyms_free(&s);
		return EXIT_INPUT;
	}
	ret = rs_ksyms_write_map(&s, rs_kaslr_offset(&s, "/proc/config.gz"), bid, bid_len > 0 ? (size_t)bid_len : 0, f);
	if ((out && fclose(f) != 0) || ret < 0) {
		fprintf(stderr, "relstack kernel symbols: %s: cannot write\n", out ? out : "standard output");
		ret = -EIO;
	}
	rs_ksyms_free(&s);
	return ret < 0 ? EXIT_INPUT : 0;
}

static int import_raw(const char *dir, const char *out, const char *kallsyms, const char *modtab)
{
	struct rs_kraw_opts o = { .dir = dir, .output = out, .kallsyms = kallsyms, .module_table = modtab };
	struct rs_kraw_stats st;
	char err[1024] = "";
	int ret;

	o.errbuf = err;
	o.errbuf_sz = sizeof(err);
	ret = rs_kimport_raw(&o, &st);
	if (ret < 0) {
		fprintf(stderr, "relstack kernel import: %s\n", err[0] ? err : strerror(-ret));
		return EXIT_INPUT;
	}
	fprintf(stderr, "relstack kernel import: %s: %llu records from %llu pages of %u CPUs, %llu kernel stacks "
		"(%llu reliable), %llu modules, %llu lost\n", out, (unsigned long long)st.events,
		(unsigned long long)st.pages, st.cpus, (unsigned long long)st.stacks, (unsigned long long)st.reliable,
		(unsigned long long)st.modules, (unsigned long long)st.lost);
	if (st.unknown_index || st.beyond_text || st.no_text || st.modules_full)
		fprintf(stderr, "relstack kernel import: written as UNKNOWN: %llu words of a module index the module "
			"table does not list, %llu beyond their text, %llu in no text; %llu modules found no slot\n",
			(unsigned long long)st.unknown_index, (unsigned long long)st.beyond_text,
			(unsigned long long)st.no_text, (unsigned long long)st.modules_full);
	return 0;
}

static int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "raw", no_argument, NULL, 'r' },
		{ "kallsyms", required_argument, NULL, 'k' },
		{ "module-table", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = "relstack-kernel.rsb", *in = NULL, *kallsyms = NULL, *modtab = NULL;
	bool raw = false;
	char err[1024] = "";
	struct stat sb;
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'r':
			raw = true;
			break;
		case 'k':
			kallsyms = optarg;
			break;
		case 'm':
			modtab = optarg;
			break;
		case 'h':
			fputs(kernel_usage, stdout);
			return 0;
		default:
			return usage("import: unknown option or missing argument '%s'", argv[optind - 1]);
		}
	}
	if (optind + 1 < argc)
		return usage("import: one TRACE.DAT or DIR only, '%s' is extra", argv[optind + 1]);
	in = optind < argc ? argv[optind] : NULL;
	if (!in)
		return usage("import: %s", "missing TRACE.DAT or DIR");
	if (raw || (stat(in, &sb) == 0 && S_ISDIR(sb.st_mode)))
		return import_raw(in, out, kallsyms, modtab);
	if (kallsyms || modtab)
		return usage("import: %s is for a raw directory, not a trace-cmd file",
			     kallsyms ? "--kallsyms" : "--module-table");
	ret = rs_kimport(in, out, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "relstack kernel import: %s\n", err[0] ? err : strerror(-ret));
		return EXIT_INPUT;
	}
	fprintf(stderr, "relstack kernel import: %s: %d events\n", out, ret);
	return 0;
}

int rs_tool_kernel(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (!sub)
		return usage("%s", "missing SUBCOMMAND (record, clean, symbols or import)");
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(kernel_usage, stdout);
		return 0;
	}
	if (!strcmp(sub, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(sub, "clean"))
		return cmd_clean(argc - 1, argv + 1);
	if (!strcmp(sub, "symbols"))
		return cmd_symbols(argc - 1, argv + 1);
	if (!strcmp(sub, "import"))
		return cmd_import(argc - 1, argv + 1);
	return usage("unknown subcommand '%s' (record, clean, symbols or import)", sub);
}
