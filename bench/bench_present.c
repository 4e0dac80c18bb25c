// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The decoder and each presenter on 100,000 records of depth 32 (a
 * recursion in this program through two functions, chosen at each level
 * by a bit of the record's number, so that stacks differ as a profile's
 * do; named from this program's own symbols and lines):
 * records per second and peak memory of decoding and presenting in each
 * format, and the size of the output.  Each format runs in a child of its
 * own, so that its peak resident memory is its own.  Printed, never
 * asserted.
 *
 * Usage: bench_present [RECORDS [FILE]]: FILE keeps the recorded buffer
 * file, to time the relstack command on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <relstack/decode.h>
#include <relstack/relstack.h>

#define DEPTH 32

static struct relstack_recorder *rec;
static int ev;

static int bench_present_down(int depth, int i);

__attribute__((noinline)) static int bench_present_other(int depth, int i)
{
	int ret = bench_present_down(depth, i);

	__asm__ volatile("" ::: "memory");
	return ret;
}

__attribute__((noinline)) static int bench_present_down(int depth, int i)
{
	int ret;

	if (depth <= 1)
		ret = relstack_recorder__record(rec, (unsigned)ev, NULL, 0, 0);
	else if (depth > 2 && (i >> (depth % 16)) & 1)
		ret = bench_present_other(depth - 2, i);
	else
		ret = bench_present_down(depth - 1, i);
	__asm__ volatile("" ::: "memory");
	return ret;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Decode @path and present it as @format into @out; prints the figures. */
static int run_format(const char *path, const char *format, const char *out, size_t n)
{
	struct relstack_decode_opts dopts = { .sz = sizeof(dopts), .name = path, .symbolize = true, .lines = true,
					      .inlines = true };
	struct relstack_present_opts popts = { .sz = sizeof(popts) };
	const struct relstack_decoded_record *dr;
	struct relstack_reader *r = relstack_reader__open(path, NULL);
	struct relstack_decoder *d;
	struct relstack_presenter *p;
	struct rusage ru;
	char err[512];
	FILE *f = fopen(out, "w");
	double t0 = now(), t;
	long size;

	if (!r || !f || relstack_present_format_parse(format, &popts.format) < 0 ||
	    relstack_decoder__new(r, &dopts, &d, err, sizeof(err)) < 0)
		return 1;
	popts.run = relstack_decoder__run_info(d);
	if (relstack_presenter__new(&popts, f, &p) < 0)
		return 1;
	while (relstack_decoder__next(d, &dr) > 0)
		if (relstack_presenter__record(p, dr) < 0)
			return 1;
	if (relstack_presenter__finish(p) < 0)
		return 1;
	t = now() - t0;
	size = ftell(f);
	fclose(f);
	getrusage(RUSAGE_SELF, &ru);
	printf("present_%s_records_per_s: %.0f records/s\n", format, (double)n / t);
	printf("present_%s_peak_rss: %.1f MiB\n", format, (double)ru.ru_maxrss / 1024.0);
	printf("present_%s_output: %ld bytes\n", format, size);
	fflush(stdout);
	relstack_presenter__free(p);
	relstack_decoder__free(d);
	relstack_reader__close(r);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const formats[] = { "text", "json", "folded", "pprof", "perf-script", "speedscope",
					       "html" };
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	char dir[] = "/tmp/rs-bench-present-XXXXXX", path[64], out[64];
	int status = 0;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/buf", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	o.size = (uint64_t)n * (DEPTH + 8) * 8 * 2;
	o.mode = RELSTACK_MODE_STOP;
	rec = relstack_recorder__open(path, &o);
	if (!rec)
		return 1;
	ev = relstack_recorder__define_event(rec, "bench", NULL, 0, 0);
	relstack_recorder__thread_init();
	for (size_t i = 0; i < n; i++)
		if (bench_present_down(DEPTH - 2, (int)i) != 0) {
			fprintf(stderr, "bench_present: record %zu: %s\n", i, strerror(errno));
			return 1;
		}
	relstack_recorder__close(rec);
	printf("present_records: %zu records of depth %d\n", n, DEPTH);
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		pid_t pid;
		int st;

		fflush(stdout);
		pid = fork();
		if (pid == 0)
			_exit(run_format(path, formats[i], out, n));
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "bench_present: %s failed\n", formats[i]);
			status = 1;
		}
	}
	unlink(out);
	if (argc > 2 && rename(path, argv[2]) != 0) {
		fprintf(stderr, "bench_present: %s: %s\n", argv[2], strerror(errno));
		status = 1;
	}
	unlink(path);
	rmdir(dir);
	return status;
}
