// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * relstack record [OPTIONS] -- PROGRAM [ARGS]: run PROGRAM, unchanged,
 * with librelstack-agent.so preloaded.  The options become the agent's
 * environment variables (src/agent/options.h), so every process the
 * program forks or execs is recorded too, each into its own file.
 *
 * Everything that can be checked before the program runs is: the program
 * exists, is of the agent's class and machine and is dynamically linked
 * (the agent cannot be preloaded into any other), the output directory
 * takes a file, every --call expression compiles.  Then the command waits
 * for the program, prints where the file is and how to read it, and ends
 * as the program did: its exit status, or death by the same signal.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/callexpr.h"
#include "agent/options.h"
#include "tools/output.h"

#define EXIT_USAGE 1
#define EXIT_INPUT 2
/* as a shell says a program it could not run */
#define EXIT_NOEXEC 127

static const char record_usage[] =
	"Usage: relstack record [OPTIONS] -- PROGRAM [ARGS]\n"
	"Run PROGRAM, unchanged, with the relstack agent preloaded: its crashes, and the\n"
	"triggers below, are recorded into DIR/PROGRAM.PID.relstack (one file per process,\n"
	"forked and exec'd ones included).  Exits as PROGRAM does.\n"
	"\n"
	"  -o, --output DIR        directory of the buffer files (default: ./" RS_DEFAULT_OUTPUT ")\n"
	"  --sample HZ             record every thread's stack HZ times per second of its CPU time\n"
	"  --on-signal SIG         on signal SIG, every thread records its stack\n"
	"  --call 'FUNC [if EXPR]' record a stack at each call of FUNC whose arguments match EXPR\n"
	"                          (arg0..arg5, numbers, == != < <= > >=, &&, ||, &); repeatable\n"
	"  --size BYTES            data ring bytes per run (default 1 MiB)\n";

static __attribute__((noreturn, format(printf, 2, 3))) void fail(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rs_tool_verror(status, status == EXIT_USAGE ? "relstack record" : NULL, fmt, ap);
	va_end(ap);
}

/* The agent: RELSTACK_AGENT, else beside the command in the build tree, else the installed one. */
static void find_agent(char *out, size_t size)
{
	const char *env = getenv("RELSTACK_AGENT");
	char self[PATH_MAX];
	ssize_t n;

	if (env && *env) {
		if (access(env, R_OK) < 0)
			fail(EXIT_INPUT, "RELSTACK_AGENT=%s: %s", env, strerror(errno));
		snprintf(out, size, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			if (snprintf(out, size, "%s/../src/librelstack-agent.so", self) < (int)size &&
			    access(out, R_OK) == 0)
				return;
		}
	}
	snprintf(out, size, "%s", RELSTACK_AGENT_PATH);
	if (access(out, R_OK) < 0)
		fail(EXIT_INPUT, "%s: %s (set RELSTACK_AGENT to the agent's path)", out, strerror(errno));
}

/* PROGRAM as execvp(3) would find it. */
static void find_program(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/')) {
		snprintf(out, size, "%s", prog);
		if (access(out, X_OK) < 0)
			fail(EXIT_NOEXEC, "%s: %s", prog, strerror(errno));
		return;
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; ; ) {
		size_t len = strcspn(p, ":");
		struct stat st;

		snprintf(out, size, "%.*s%s%s", (int)len, len ? p : ".", "/", prog);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return;
		if (!p[len])
			break;
		p += len + 1;
	}
	fail(EXIT_NOEXEC, "%s: no such program in PATH", prog);
}

/*
 * What an ELF header says of the programs a file can be loaded with: its
 * class, byte order and machine, and where its program headers are.
 */
struct elf_kind {
	unsigned char class, data;
	uint16_t machine;
	uint64_t phoff;
	uint16_t phnum, phentsize;
};

static uint16_t elf16(uint16_t v, bool swap)
{
	return swap ? __builtin_bswap16(v) : v;
}

static uint32_t elf32(uint32_t v, bool swap)
{
	return swap ? __builtin_bswap32(v) : v;
}

static uint64_t elf64(uint64_t v, bool swap)
{
	return swap ? __builtin_bswap64(v) : v;
}

static bool elf_swapped(const struct elf_kind *k)
{
	return k->data != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB);
}

/* The header of the ELF file open at @fd: false when it is not one (a script, say). */
static bool elf_kind_read(int fd, struct elf_kind *k)
{
	union {
		unsigned char ident[EI_NIDENT];
		Elf32_Ehdr e32;
		Elf64_Ehdr e64;
	} h;
	ssize_t n = pread(fd, &h, sizeof(h), 0);
	bool swap;

	if (n < (ssize_t)sizeof(h.e32) || memcmp(h.ident, ELFMAG, SELFMAG) ||
	    (h.ident[EI_DATA] != ELFDATA2LSB && h.ident[EI_DATA] != ELFDATA2MSB))
		return false;
	k->class = h.ident[EI_CLASS];
	k->data = h.ident[EI_DATA];
	swap = elf_swapped(k);
	if (k->class == ELFCLASS64) {
		if (n < (ssize_t)sizeof(h.e64))
			return false;
		k->machine = elf16(h.e64.e_machine, swap);
		k->phoff = elf64(h.e64.e_phoff, swap);
		k->phnum = elf16(h.e64.e_phnum, swap);
		k->phentsize = elf16(h.e64.e_phentsize, swap);
	} else {
		/* an unknown class too: e_machine lies at the same offset in every class */
		k->machine = elf16(h.e32.e_machine, swap);
		k->phoff = elf32(h.e32.e_phoff, swap);
		k->phnum = elf16(h.e32.e_phnum, swap);
		k->phentsize = elf16(h.e32.e_phentsize, swap);
	}
	return true;
}

/* "64-bit x86-64", and the byte order when @other's differs. */
static const char *elf_kind_name(const struct elf_kind *k, const struct elf_kind *other, char *buf, size_t size)
{
	static const struct {
		uint16_t machine;
		const char *name;
	} machines[] = {
		{ EM_386, "i386" },   { EM_X86_64, "x86-64" }, { EM_AARCH64, "aarch64" }, { EM_ARM, "arm" },
		{ EM_RISCV, "riscv" }, { EM_PPC64, "ppc64" },  { EM_S390, "s390" },
	};
	char bits[16], machine[24];
	const char *order = "";

	if (k->class == ELFCLASS32 || k->class == ELFCLASS64)
		snprintf(bits, sizeof(bits), "%d-bit", k->class == ELFCLASS32 ? 32 : 64);
	else
		snprintf(bits, sizeof(bits), "ELF class %u", (unsigned)k->class);
	snprintf(machine, sizeof(machine), "ELF machine %u", (unsigned)k->machine);
	for (size_t i = 0; i < sizeof(machines) / sizeof(machines[0]); i++)
		if (machines[i].machine == k->machine)
			snprintf(machine, sizeof(machine), "%s", machines[i].name);
	if (k->data != other->data)
		order = k->data == ELFDATA2LSB ? " little-endian" : " big-endian";
	snprintf(buf, size, "%s%s %s", bits, order, machine);
	return buf;
}

/*
 * The agent is preloaded only into programs of its own class, byte order
 * and machine (the dynamic loader skips it in any other, and the program
 * would run unrecorded); and only into a program with an interpreter: a
 * static ELF executable has none, so nothing preloads into it.
 */
static void check_dynamic(const char *path, const char *agent)
{
	struct elf_kind want, have;
	int fd = open(agent, O_RDONLY | O_CLOEXEC);
	bool ok, interp = false;
	char a[64], b[64];
	size_t phent;

	if (fd < 0)
		fail(EXIT_INPUT, "%s: %s", agent, strerror(errno));
	ok = elf_kind_read(fd, &want);
	close(fd);
	if (!ok)
		fail(EXIT_INPUT, "%s: not an ELF file: cannot be the agent", agent);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail(EXIT_NOEXEC, "%s: %s", path, strerror(errno));
	if (!elf_kind_read(fd, &have)) {
		close(fd); /* a script: its interpreter gets the agent */
		return;
	}
	if (have.class != want.class || have.data != want.data || have.machine != want.machine) {
		close(fd);
		fail(EXIT_INPUT, "%s: a %s program, the agent needs a %s one: it cannot be preloaded", path,
		     elf_kind_name(&have, &want, a, sizeof(a)), elf_kind_name(&want, &have, b, sizeof(b)));
	}
	phent = have.class == ELFCLASS32 ? sizeof(Elf32_Phdr) : sizeof(Elf64_Phdr);
	if (have.phentsize != phent) {
		close(fd);
		fail(EXIT_INPUT, "%s: e_phentsize %u, expected %zu: not a program the agent can be preloaded into",
		     path, (unsigned)have.phentsize, phent);
	}
	for (unsigned i = 0; i < have.phnum && !interp; i++) {
		uint32_t type; /* p_type: the first field of both classes' program headers */

		if (pread(fd, &type, sizeof(type), (off_t)(have.phoff + (uint64_t)i * have.phentsize)) !=
		    (ssize_t)sizeof(type))
			break;
		interp = elf32(type, elf_swapped(&have)) == PT_INTERP;
	}
	close(fd);
	if (!interp)
		fail(EXIT_INPUT, "%s: statically linked: the agent cannot be preloaded", path);
}

/* DIR exists (made if missing) and takes a new file; its absolute path, for the program's children. */
static void check_output(const char *dir, char *out, size_t size)
{
	char probe[PATH_MAX + 32];
	int fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		fail(EXIT_INPUT, "%s: cannot make the output directory: %s", dir, strerror(errno));
	if (!realpath(dir, out))
		fail(EXIT_INPUT, "%s: %s", dir, strerror(errno));
	(void)size;
	snprintf(probe, sizeof(probe), "%s/.relstack-probe-XXXXXX", out);
	fd = mkstemp(probe);
	if (fd < 0)
		fail(EXIT_INPUT, "%s: output directory not writable: %s", dir, strerror(errno));
	close(fd);
	unlink(probe);
}

static void set_env(const char *name, const char *value)
{
	if (value ? setenv(name, value, 1) : unsetenv(name))
		fail(EXIT_INPUT, "environment: %s", strerror(errno));
}

/* The buffer files in DIR before the run, sorted: the run's are the others. */
struct names {
	char **v;
	size_t n;
};

static bool is_buffer_file(const char *name)
{
	size_t len = strlen(name);

	return len >= 9 && !strcmp(name + len - 9, ".relstack");
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_files(const char *dir, struct names *before)
{
	DIR *dp = opendir(dir);
	struct dirent *d;
	size_t cap = 0;

	before->v = NULL;
	before->n = 0;
	while (dp && (d = readdir(dp))) {
		if (!is_buffer_file(d->d_name))
			continue;
		if (before->n == cap) {
			char **v = realloc(before->v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!v)
				fail(EXIT_INPUT, "out of memory");
			before->v = v;
		}
		before->v[before->n] = strdup(d->d_name);
		if (!before->v[before->n++])
			fail(EXIT_INPUT, "out of memory");
	}
	if (dp)
		closedir(dp);
	if (before->n)
		qsort(before->v, before->n, sizeof(*before->v), cmp_name);
}

/*
 * Print where process @pid's file is: DIR/NAME.PID.relstack or
 * DIR/NAME.PID.N.relstack, the newest one where exec made several (the
 * program the process ended as), and how many other files the run made.
 */
static bool print_files(const char *dir, pid_t pid, const struct names *before)
{
	char tag[32], best[PATH_MAX + 256] = "";
	struct timespec best_t = { 0, 0 };
	unsigned made = 0;
	struct dirent *d;
	DIR *dp = opendir(dir);

	if (!dp)
		return false;
	snprintf(tag, sizeof(tag), ".%d.", (int)pid);
	while ((d = readdir(dp))) {
		const char *t = strstr(d->d_name, tag), *name = d->d_name;
		char path[PATH_MAX + 256];
		struct statx st;
		struct timespec born;

		if (!is_buffer_file(name) || (before->n && bsearch(&name, before->v, before->n, sizeof(*before->v),
								   cmp_name)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (statx(AT_FDCWD, path, 0, STATX_BTIME | STATX_MTIME, &st) < 0)
			continue;
		made++;
		/* an exec'd program's file is made after its predecessor's; without birth times, written after */
		if (st.stx_mask & STATX_BTIME)
			born = (struct timespec){ st.stx_btime.tv_sec, st.stx_btime.tv_nsec };
		else
			born = (struct timespec){ st.stx_mtime.tv_sec, st.stx_mtime.tv_nsec };
		if (t && strspn(t + strlen(tag), "0123456789.") == strlen(t + strlen(tag)) - 8 &&
		    (born.tv_sec > best_t.tv_sec || (born.tv_sec == best_t.tv_sec && born.tv_nsec >= best_t.tv_nsec))) {
			best_t = born;
			memcpy(best, path, sizeof(best));
		}
	}
	closedir(dp);
	if (!best[0])
		return false;
	fprintf(stderr, "relstack: recorded in %s\nrelstack: read it with: relstack report %s\n", best, best);
	if (made > 1)
		fprintf(stderr, "relstack: and %u more file%s of the processes it forked or exec'd, in %s\n",
			made - 1, made > 2 ? "s" : "", dir);
	return true;
}

static pid_t child_pid;

static void forward(int signo)
{
	if (child_pid > 0)
		kill(child_pid, signo);
}

int rs_tool_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "sample", required_argument, NULL, 'S' },
		{ "on-signal", required_argument, NULL, 'G' },
		{ "call", required_argument, NULL, 'C' },
		{ "size", required_argument, NULL, 'Z' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = RS_DEFAULT_OUTPUT, *sample = NULL, *onsig = NULL, *size = NULL;
	char calls[RS_CALLS_MAX * 512] = "", agent[PATH_MAX], prog[PATH_MAX], dir[PATH_MAX];
	char preload[2 * PATH_MAX + 2];
	struct rs_call_filter seen[RS_CALLS_MAX];
	unsigned ncalls = 0;
	int c, status, pipefd[2], err = 0;
	const char *old_preload;
	struct names before;
	struct sigaction sa;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(record_usage, stdout);
			exit(0);
		case 'o':
			out = optarg;
			break;
		case 'S': {
			char *end;
			long hz = strtol(optarg, &end, 10);

			if (end == optarg || *end || hz < 1 || hz > RS_SAMPLE_MAX)
				fail(EXIT_USAGE, "--sample: '%s' is not a frequency from 1 to %d Hz", optarg, RS_SAMPLE_MAX);
			sample = optarg;
			break;
		}
		case 'G':
			if (!rs_agent_signal_parse(optarg))
				fail(EXIT_USAGE, "--on-signal: '%s' is not a signal that can be caught", optarg);
			onsig = optarg;
			break;
		case 'C': {
			char msg[128];
			int col;

			if (ncalls == RS_CALLS_MAX)
				fail(EXIT_USAGE, "--call: at most %d functions", RS_CALLS_MAX);
			if (strchr(optarg, '\n') || strlen(optarg) >= 512)
				fail(EXIT_USAGE, "--call: one line of fewer than 512 characters");
			col = rs_call_parse(optarg, &seen[ncalls], msg, sizeof(msg));
			if (col < 0)
				fail(EXIT_USAGE, "--call '%s': column %d: %s", optarg, -col, msg);
			for (unsigned i = 0; i < ncalls; i++)
				if (!strcmp(seen[i].function, seen[ncalls].function))
					fail(EXIT_USAGE, "--call: '%s' given twice: join the conditions with ||",
					     seen[i].function);
			ncalls++;
			strcat(calls, optarg);
			strcat(calls, "\n");
			break;
		}
		case 'Z': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 0);

			if (end == optarg || *end || v > (1ull << 30))
				fail(EXIT_USAGE, "--size: '%s' is not a size up to 1 GiB", optarg);
			size = optarg;
			break;
		}
		case ':':
			fail(EXIT_USAGE, "record: option '%s' needs an argument", argv[optind - 1]);
		default:
			fail(EXIT_USAGE, "record: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		fail(EXIT_USAGE, "record: missing PROGRAM (relstack record [OPTIONS] -- PROGRAM [ARGS])");

	find_program(argv[optind], prog, sizeof(prog));
	find_agent(agent, sizeof(agent));
	check_dynamic(prog, agent);
	check_output(out, dir, sizeof(dir));

	old_preload = getenv("LD_PRELOAD");
	snprintf(preload, sizeof(preload), "%s%s%s", agent, old_preload && *old_preload ? ":" : "",
		 old_preload ? old_preload : "");
	set_env("LD_PRELOAD", preload);
	set_env(RS_ENV_OUTPUT, dir);
	set_env(RS_ENV_SAMPLE, sample);
	set_env(RS_ENV_ON_SIGNAL, onsig);
	set_env(RS_ENV_CALL, ncalls ? calls : NULL);
	set_env(RS_ENV_SIZE, size);

	list_files(dir, &before);
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		fail(EXIT_INPUT, "pipe: %s", strerror(errno));
	fflush(NULL);
	child_pid = fork();
	if (child_pid < 0)
		fail(EXIT_INPUT, "fork: %s", strerror(errno));
	if (child_pid == 0) {
		execv(prog, argv + optind);
		err = errno;
		if (write(pipefd[1], &err, sizeof(err)) < 0)
			_exit(EXIT_NOEXEC);
		_exit(EXIT_NOEXEC);
	}
	close(pipefd[1]);
	/* like a shell: the terminal's signals reach the program itself; others are passed on */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sa.sa_handler = forward;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (read(pipefd[0], &err, sizeof(err)) == (ssize_t)sizeof(err)) {
		waitpid(child_pid, &status, 0);
		fail(EXIT_NOEXEC, "%s: %s", prog, strerror(err));
	}
	close(pipefd[0]);
	while (waitpid(child_pid, &status, 0) < 0)
		if (errno != EINTR)
			fail(EXIT_INPUT, "waitpid: %s", strerror(errno));
	if (!print_files(dir, child_pid, &before))
		fprintf(stderr, "relstack: %s left no buffer file in %s (see the agent's message above)\n", prog, dir);
	if (WIFSIGNALED(status)) {
		struct rlimit nocore = { 0, 0 };
		sigset_t set;

		/* the same death, without a second core dump */
		setrlimit(RLIMIT_CORE, &nocore);
		fflush(NULL);
		sa.sa_handler = SIG_DFL;
		sigaction(WTERMSIG(status), &sa, NULL);
		sigemptyset(&set);
		sigaddset(&set, WTERMSIG(status));
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}
