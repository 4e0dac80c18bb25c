// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * relstack ps PID: every thread's stack of a live process with its
 * verdict, and the consistency check (--check).  Options only: the
 * snapshot and its presentation are src/live/.
 *
 * Exit status: 0 success (with --check: safe), 1 bad usage, 2 bad input
 * (no such process, permission denied, a zombie or kernel thread, a
 * --check target that names nothing in the process), 3 some thread
 * inside, 4 some stack cannot be trusted.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/ps.h"
#include "tools/ps.h"

static const char ps_usage[] =
	"Usage: relstack ps [OPTIONS] PID\n"
	"Stop each thread of a live process in turn (ptrace: no SIGSTOP), copy its\n"
	"registers and stack, release it, and print its stack with the unwinder's\n"
	"verdict.\n"
	"\n"
	"  --tid TID                only this thread (repeatable)\n"
	"  --format text|json|folded  output format (default: text)\n"
	"  --no-lines               names only, no file:line\n"
	"  -o FILE                  also record the snapshot into the buffer file FILE\n"
	"                           (a run of its own: relative, no address of the\n"
	"                           process; read it with relstack report)\n"
	"  --check TARGET           is any thread inside TARGET? (repeatable)\n"
	"                           TARGET: FUNCTION, OBJECT:FUNCTION or OBJECT\n"
	"                           (OBJECT: a path, a file name, or a file name up\n"
	"                           to a dot: libc for libc.so.6; a FUNCTION no object\n"
	"                           defines, or an OBJECT not loaded, is bad input)\n"
	"  --wait SECONDS           with --check: take fresh snapshots until safe,\n"
	"                           for at most SECONDS\n"
	"\n"
	"Exit status: 0 success (with --check: no thread inside and every stack\n"
	"reliable), 1 bad usage, 2 bad input, 3 some thread inside, 4 some stack\n"
	"cannot be trusted.\n";

enum { OPT_TID = 256, OPT_FORMAT, OPT_CHECK, OPT_WAIT, OPT_NO_LINES };

static const struct option ps_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "check", required_argument, NULL, OPT_CHECK },
	{ "wait", required_argument, NULL, OPT_WAIT },
	{ "no-lines", no_argument, NULL, OPT_NO_LINES },
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 },
};

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "relstack: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'relstack ps --help'.\n");
	return 1;
}

static bool parse_id(const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 0x3fffffff)
		return false;
	*out = (pid_t)v;
	return true;
}

int rs_tool_ps(int argc, char **argv)
{
	struct rs_ps_opts o;
	char msg[512];
	int c, ret;

	memset(&o, 0, sizeof(o));
	o.lines = true;
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", ps_opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(ps_usage, stdout);
			return 0;
		case OPT_TID:
			if (o.ntids == RS_PS_MAX)
				return usage("too many --tid (at most %s)", "64");
			if (!parse_id(optarg, &o.tids[o.ntids++]))
				return usage("--tid: '%s' is not a thread id", optarg);
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") == 0)
				o.format = RS_PS_TEXT;
			else if (strcmp(optarg, "json") == 0)
				o.format = RS_PS_JSON;
			else if (strcmp(optarg, "folded") == 0)
				o.format = RS_PS_FOLDED;
			else
				return usage("--format: '%s' is not text, json or folded", optarg);
			break;
		case OPT_CHECK:
			if (o.nchecks == RS_PS_MAX)
				return usage("too many --check (at most %s)", "64");
			if (!optarg[0] || strcmp(optarg, ":") == 0)
				return usage("--check: '%s' names no function or object", optarg);
			o.checks[o.nchecks++] = optarg;
			break;
		case OPT_WAIT: {
			char *end;

			errno = 0;
			o.wait_seconds = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(o.wait_seconds >= 0 && o.wait_seconds <= 86400))
				return usage("--wait: '%s' is not a number of seconds (0 to 86400)", optarg);
			break;
		}
		case OPT_NO_LINES:
			o.lines = false;
			break;
		case 'o':
			o.output = optarg;
			break;
		default:
			return usage("%s", "bad option");
		}
	}
	if (o.wait_seconds > 0 && !o.nchecks)
		return usage("%s", "--wait needs --check");
	if (optind != argc - 1)
		return usage("%s", optind == argc ? "missing PID" : "one PID only");
	if (!parse_id(argv[optind], &o.pid))
		return usage("'%s' is not a process id", argv[optind]);
	ret = rs_live_ps(&o, stdout, msg, sizeof(msg));
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "relstack: standard output: %s\n", strerror(errno));
		return 2;
	}
	if (ret < 0) {
		fprintf(stderr, "relstack: %s\n", msg);
		return 2;
	}
	return ret;
}
