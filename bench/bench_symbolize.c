// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Symbolization throughput against addr2line, eu-addr2line and
 * llvm-symbolizer-14, all measured in this run on the same addresses.
 *
 * For each target, 100,000 addresses are sampled inside functions: a
 * function drawn uniformly from `nm -n -S --defined-only` (types t T w W i,
 * size > 0), then an offset drawn uniformly inside it, from a fixed seed.
 * Every tool, relstack included, runs as its own process that reads the
 * hex addresses on stdin and writes its answers to /dev/null, so start-up,
 * parsing, loading and output are counted for all alike.  Time is the
 * child's CPU time (user + system, from wait4), which other load on the
 * machine disturbs far less than wall time; every tool is single-threaded,
 * so on an idle machine the two agree.  Best of three runs (one run for
 * tools slower than a few seconds); peak RSS is the child's ru_maxrss.
 *
 *   bench_symbolize [BIGPROG BIGPROG_SYMTAB]   run the benchmark
 *   bench_symbolize run [-n|-l|-i] [-d DIR] -e OBJ   symbolize stdin (the relstack tool)
 *
 * Modes: names (symbol table only), lines (names and file:line, against
 * addr2line -f, eu-addr2line -f and llvm-symbolizer --no-inlines, which
 * all print both), inlines (inlined frames too, against addr2line -f -i
 * and llvm-symbolizer --inlines).
 *
 * Prints `<name>: <value> <unit>` and `<name>: ratio <x> vs <peer>` with
 * x = relstack's cost / the peer's = peer rate / relstack rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decode/symbolize.h"

#define NADDR 100000
/*
 * eu-addr2line walks the DIE tree for every address (about 2k addresses/s
 * on the large program): it gets the first NADDR_SLOW addresses only, as
 * its cost per address does not depend on how many it is given.
 */
#define NADDR_SLOW 20000
#define SLOW_SECONDS 3.0

/* ---- the relstack tool ---- */

/*
 * Output is formatted by hand: printf's format parsing would cost more
 * than the lookups it prints (addr2line writes its answers with fputs).
 */
struct outbuf {
	char buf[1 << 16];
	size_t used;
};

static void out_flush(struct outbuf *o)
{
	fwrite(o->buf, 1, o->used, stdout);
	o->used = 0;
}

static void out_str(struct outbuf *o, const char *str)
{
	size_t n = strlen(str);

	if (o->used + n > sizeof(o->buf))
		out_flush(o);
	if (n > sizeof(o->buf)) {
		fwrite(str, 1, n, stdout);
		return;
	}
	memcpy(o->buf + o->used, str, n);
	o->used += n;
}

static void out_num(struct outbuf *o, uint64_t v, unsigned base)
{
	char tmp[24];
	int i = sizeof(tmp);

	do {
		tmp[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (o->used + sizeof(tmp) > sizeof(o->buf))
		out_flush(o);
	memcpy(o->buf + o->used, tmp + i, sizeof(tmp) - (size_t)i);
	o->used += sizeof(tmp) - (size_t)i;
}

static void out_loc(struct outbuf *o, const char *file, unsigned line)
{
	out_str(o, file ? file : "??");
	out_str(o, ":");
	out_num(o, line, 10);
	out_str(o, "\n");
}

static uint64_t parse_addr(const char *p)
{
	uint64_t v = 0;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	for (;; p++) {
		unsigned c = (unsigned char)*p;

		if (c - '0' < 10)
			v = v << 4 | (c - '0');
		else if ((c | 0x20) - 'a' < 6)
			v = v << 4 | ((c | 0x20) - 'a' + 10);
		else
			return v;
	}
}

static int run_tool(int argc, char **argv)
{
	struct rs_symbolizer_opts o = { .sz = sizeof(o), .lines = true };
	const char *obj_path = NULL, *dirs[16];
	static struct outbuf out;
	struct relstack_object obj;
	struct rs_symbolizer *s;
	char line[256];
	int h, opt, err;

	while ((opt = getopt(argc, argv, "nlid:e:")) != -1) {
		switch (opt) {
		case 'n': o.lines = false; break;
		case 'l': o.lines = true; break;
		case 'i': o.inlines = true; break;
		case 'd':
			if (o.n_debug_dirs < 16)
				dirs[o.n_debug_dirs++] = optarg;
			break;
		case 'e': obj_path = optarg; break;
		default: return 2;
		}
	}
	o.debug_dirs = dirs;
	if (!obj_path)
		return 2;
	err = rs_object_from_file(obj_path, &obj);
	if (err) {
		fprintf(stderr, "bench_symbolize: %s: %s\n", obj_path, strerror(-err));
		return 1;
	}
	s = rs_symbolizer_new(&o);
	if (!s)
		return 1;
	h = rs_symbolizer_object(s, &obj);
	if (h < 0 || rs_symbolizer_load(s, h) < 0) {
		fprintf(stderr, "bench_symbolize: %s\n", rs_symbolizer_object_error(s, h));
		rs_symbolizer_free(s);
		return 1;
	}
	while (fgets_unlocked(line, sizeof(line), stdin)) {
		struct rs_sym sym;

		if (rs_symbolize(s, h, parse_addr(line), &sym) == 0) {
			out_str(&out, sym.name);
			out_str(&out, "+0x");
			out_num(&out, sym.symoff, 16);
			out_str(&out, "\n");
		} else {
			out_str(&out, "?? (");
			out_str(&out, rs_sym_reason_str(sym.reason));
			out_str(&out, ")\n");
		}
		if (!o.lines)
			continue;
		for (unsigned k = 0; k < sym.n_inlined; k++) {
			out_str(&out, sym.inlined[k].name ? sym.inlined[k].name : "??");
			out_str(&out, " (inlined) ");
			out_loc(&out, sym.inlined[k].file, sym.inlined[k].line);
		}
		out_loc(&out, sym.file, sym.line);
	}
	out_flush(&out);
	rs_symbolizer_free(s);
	return 0;
}

/* ---- sampling ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	/* xorshift64*: fixed seed, same addresses on every run */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

struct fn {
	uint64_t addr, size;
};

/* Sample NADDR addresses inside the functions nm lists for @nm_target into @out_path. */
static int sample(const char *nm_target, const char *out_path)
{
	char cmd[4096], line[4096];
	struct fn *fns = NULL;
	size_t n = 0, cap = 0;
	FILE *p, *out, *head;

	snprintf(cmd, sizeof(cmd), "nm -n -S --defined-only '%s' 2>/dev/null", nm_target);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, sz;
		char type;

		if (sscanf(line, "%llx %llx %c", &a, &sz, &type) != 3 || sz == 0 || !strchr("tTwWi", type))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			fns = realloc(fns, cap * sizeof(*fns));
			if (!fns)
				exit(1);
		}
		fns[n++] = (struct fn){ a, sz };
	}
	pclose(p);
	if (n == 0) {
		free(fns);
		return -1;
	}
	out = fopen(out_path, "w");
	if (!out) {
		free(fns);
		return -1;
	}
	head = snprintf(cmd, sizeof(cmd), "%s.head", out_path) < (int)sizeof(cmd) ? fopen(cmd, "w") : NULL;
	if (!head) {
		fclose(out);
		free(fns);
		return -1;
	}
	rng = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < NADDR; i++) {
		struct fn *f = &fns[next_rand() % n];
		unsigned long long a = f->addr + next_rand() % f->size;

		fprintf(out, "0x%llx\n", a);
		if (i < NADDR_SLOW)
			fprintf(head, "0x%llx\n", a);
	}
	fclose(head);
	fclose(out);
	free(fns);
	return (int)n;
}

/* ---- measuring a process ---- */

struct result {
	double rate;   /* addresses per second */
	double rss_mb;
	bool ok;
};

static bool run_once(char *const argv[], const char *input, double *secs, long *rss_kb)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return false;
	if (pid == 0) {
		int in = open(input, O_RDONLY), nul = open("/dev/null", O_WRONLY);

		if (in < 0 || nul < 0)
			_exit(127);
		dup2(in, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		return false;
	*secs = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	*rss_kb = ru.ru_maxrss;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static struct result measure_n(char *const argv[], const char *input, int naddr)
{
	struct result r = { 0 };
	double best = 1e30, secs;
	long rss = 0, kb;

	for (int i = 0; i < 3; i++) {
		if (!run_once(argv, input, &secs, &kb))
			return r;
		if (secs < best)
			best = secs;
		if (kb > rss)
			rss = kb;
		if (secs > SLOW_SECONDS)
			break;
	}
	r.rate = naddr / best;
	r.rss_mb = (double)rss / 1024.0;
	r.ok = true;
	return r;
}

static struct result measure(char *const argv[], const char *input)
{
	return measure_n(argv, input, NADDR);
}

static void print_result(const char *target, const char *mode, const char *tool, struct result r)
{
	if (!r.ok) {
		printf("# symbolize.%s.%s.%s: failed to run\n", target, mode, tool);
		return;
	}
	printf("symbolize.%s.%s.%s: %.0f addr/s\n", target, mode, tool, r.rate);
	printf("symbolize.%s.%s.%s.peak_rss: %.1f MB\n", target, mode, tool, r.rss_mb);
}

static void print_ratio(const char *target, const char *mode, struct result self, const char *peer,
			struct result p)
{
	if (self.ok && p.ok)
		printf("symbolize.%s.%s: ratio %.3f vs %s\n", target, mode, p.rate / self.rate, peer);
}

static void bench_target(const char *self, const char *target, const char *obj, const char *nm_target,
			 const char *tmpdir, bool has_dwarf)
{
	char addrs[4096];
	int nfn;

	snprintf(addrs, sizeof(addrs), "%s/%s.addrs", tmpdir, target);
	nfn = sample(nm_target, addrs);
	if (nfn <= 0) {
		printf("# symbolize.%s: no functions listed by nm for %s, skipped\n", target, nm_target);
		return;
	}
	printf("# symbolize.%s: %s, %d functions, %d addresses (eu-addr2line: the first %d)\n", target, obj,
	       nfn, NADDR, NADDR_SLOW);
	fflush(stdout);

	char *names[] = { (char *)self, "run", "-n", "-e", (char *)obj, NULL };
	char *lines[] = { (char *)self, "run", "-l", "-e", (char *)obj, NULL };
	char *a2l[] = { "addr2line", "-f", "-e", (char *)obj, NULL };
	char *eu[] = { "eu-addr2line", "-f", "-e", (char *)obj, NULL };
	char objarg[4200];

	snprintf(objarg, sizeof(objarg), "--obj=%s", obj);
	char *llvm[] = { "llvm-symbolizer-14", "--no-inlines", objarg, NULL };
	char *inl[] = { (char *)self, "run", "-i", "-e", (char *)obj, NULL };
	char *a2li[] = { "addr2line", "-f", "-i", "-e", (char *)obj, NULL };
	char *llvmi[] = { "llvm-symbolizer-14", "--inlines", objarg, NULL };
	struct result rn = measure(names, addrs);
	struct result rl = has_dwarf ? measure(lines, addrs) : (struct result){ 0 };
	struct result pa = measure(a2l, addrs);
	char addrs_head[4200];

	snprintf(addrs_head, sizeof(addrs_head), "%s.head", addrs);
	struct result pe = measure_n(eu, addrs_head, NADDR_SLOW);
	struct result pl = measure(llvm, addrs);
	/* inlined frames too (eu-addr2line -i is left out: it takes minutes) */
	struct result ri = has_dwarf ? measure(inl, addrs) : (struct result){ 0 };
	struct result pai = has_dwarf ? measure(a2li, addrs) : (struct result){ 0 };
	struct result pli = has_dwarf ? measure(llvmi, addrs) : (struct result){ 0 };

	print_result(target, "names", "relstack", rn);
	if (has_dwarf)
		print_result(target, "lines", "relstack", rl);
	print_result(target, "peer", "addr2line", pa);
	print_result(target, "peer", "eu-addr2line", pe);
	print_result(target, "peer", "llvm-symbolizer", pl);
	print_ratio(target, "names", rn, "addr2line", pa);
	print_ratio(target, "names", rn, "eu-addr2line", pe);
	print_ratio(target, "names", rn, "llvm-symbolizer", pl);
	if (has_dwarf) {
		print_ratio(target, "lines", rl, "addr2line", pa);
		print_ratio(target, "lines", rl, "eu-addr2line", pe);
		print_ratio(target, "lines", rl, "llvm-symbolizer", pl);
		print_result(target, "inlines", "relstack", ri);
		print_result(target, "inlines", "addr2line-i", pai);
		print_result(target, "inlines", "llvm-symbolizer-inlines", pli);
		print_ratio(target, "inlines", ri, "addr2line -i", pai);
		print_ratio(target, "inlines", ri, "llvm-symbolizer --inlines", pli);
	}
	fflush(stdout);
	unlink(addrs);
	unlink(addrs_head);
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so.")) {
		snprintf(data, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char self[4096], libc[4096] = "", libc_dbg[4096], tmpdir[4096];
	struct relstack_object obj;
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "run"))
		return run_tool(argc - 1, argv + 1);

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	snprintf(tmpdir, sizeof(tmpdir), "%s/relstack-bench-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;

	/* libc: the copy this process runs, its symbols in the Debian debug file */
	dl_iterate_phdr(find_libc, libc);
	if (libc[0] && rs_object_from_file(libc, &obj) == 0 && obj.build_id_len > 1) {
		char hexid[2 * RELSTACK_BUILD_ID_MAX + 1];

		for (uint32_t i = 0; i < obj.build_id_len; i++)
			sprintf(hexid + 2 * i, "%02x", obj.build_id[i]);
		snprintf(libc_dbg, sizeof(libc_dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", hexid, hexid + 2);
		if (access(libc_dbg, R_OK) == 0)
			bench_target(self, "libc", libc, libc_dbg, tmpdir, true);
		else
			printf("# symbolize.libc: %s missing (Debian package libc6-dbg), skipped\n", libc_dbg);
	}
	if (argc > 2) {
		/* absolute, as the object table records paths */
		char *big = realpath(argv[1], NULL), *big_symtab = realpath(argv[2], NULL);

		if (!big || !big_symtab)
			return 1;
		bench_target(self, "bigprog", big, big, tmpdir, true);
		bench_target(self, "bigprog-symtab", big_symtab, big_symtab, tmpdir, false);
		free(big);
		free(big_symtab);
	} else {
		printf("# symbolize.bigprog: not given, skipped\n");
	}
	rmdir(tmpdir);
	return 0;
}
