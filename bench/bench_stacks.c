// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The stack table against inline stacks, in the same process:
 *
 *   sampler   a sampler-like run: 300 distinct stacks of depth 8 .. 56, drawn
 *             with Zipf-like frequencies (a few hot stacks, a long tail)
 *   sched     sched_switch-like kernel stacks: 40 distinct, depth 10 .. 22,
 *             the same Zipf-like draw
 *   d32       one stack of depth 32, repeated: the cost of a hit against
 *             today's inline path
 *
 * For each, with the table and with RELSTACK_RECORDER_NO_STACK_TABLE:
 * bytes per record in the ring (records only, as the reader finds them:
 * head, body, words or reference, fields, padding), stack bytes per record
 * (the words, or the reference plus the table's entry bytes spread over
 * the records), the ring a run of that many records needs, ns per record
 * written, and the reader's ns per record (open, check, iterate).
 *
 *   bench_stacks                 everything, printed as `name: value unit`
 *   bench_stacks table|inline N  N records of d32 only (bench/callgrind.sh)
 *   bench_stacks FILE            the same sizes for a buffer file a real run
 *                                wrote (relstack kernel record, relstack record):
 *                                its records as they are, and as they would be
 *                                carrying their words
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "relstack/relstack.h"

#define RECORDS 100000u
#define MAX_DEPTH 64

struct workload {
	const char *name;
	unsigned stacks, dmin, dmax;
};

static const struct workload loads[] = {
	{ "sampler", 300, 8, 56 },
	{ "sched", 40, 10, 22 },
	{ "d32", 1, 32, 32 },
};

static char dir[64], path[128];
static uint64_t (*pool)[MAX_DEPTH];
static unsigned *depth, *draw;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Stacks of the workload (frames of a few objects, sharing their outer frames), and a Zipf-like draw of them. */
static void make_load(const struct workload *w)
{
	double *cdf = malloc(w->stacks * sizeof(*cdf)), sum = 0;

	for (unsigned s = 0; s < w->stacks; s++) {
		depth[s] = w->dmin + (unsigned)(next_rand() % (w->dmax - w->dmin + 1));
		for (unsigned i = 0; i < depth[s]; i++)
			pool[s][i] = i + 4 < depth[s] ? (1ull << 63) | ((uint64_t)(1 + i % 3) << 53) | (0x1000 + next_rand() % 0x40000)
						      : 0x1000 + 64 * i; /* main, start-up: the same in every stack */
		pool[s][depth[s] - 1] = ~0ull; /* END */
		sum += 1.0 / (s + 1);
		cdf[s] = sum;
	}
	for (unsigned r = 0; r < RECORDS; r++) {
		double x = (double)(next_rand() % 1000000) / 1e6 * sum;
		unsigned lo = 0, hi = w->stacks - 1;

		while (lo < hi) {
			unsigned mid = (lo + hi) / 2;

			if (cdf[mid] < x)
				lo = mid + 1;
			else
				hi = mid;
		}
		draw[r] = lo;
	}
	free(cdf);
}

static struct relstack_recorder *open_rec(unsigned flags, uint64_t size, enum relstack_recorder_mode mode)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec;

	unlink(path);
	o.size = size;
	o.mode = mode;
	o.flags = flags;
	rec = relstack_recorder__open(path, &o);
	if (!rec) {
		perror(path);
		exit(1);
	}
	return rec;
}

static void write_load(struct relstack_recorder *rec, unsigned n)
{
	struct relstack_verdict v = { 0 };

	for (unsigned r = 0; r < n; r++) {
		unsigned s = draw[r % RECORDS];

		relstack_recorder__write(rec, RELSTACK_EVENT_STACK, pool[s], depth[s], &v, NULL, 0, 0);
	}
}

struct figures {
	double write_ns, read_ns, ring_bytes, stack_bytes;
	uint64_t entries, table_used, full, records, read_records;
};

static struct figures run(unsigned flags)
{
	struct figures f = { 0 };
	struct relstack_recorder *rec;
	struct relstack_reader *r;
	struct relstack_cursor *c;
	struct relstack_record out;
	struct relstack_stack_table_info st;
	uint64_t t0, words = 0, inline_len = 0;
	double best = 1e30;

	/* sizes: every record kept (stop mode, a ring that holds them all) */
	rec = open_rec(flags, 64u << 20, RELSTACK_MODE_STOP);
	write_load(rec, RECORDS);
	relstack_recorder__close(rec);
	r = relstack_reader__open(path, NULL);
	if (!r) {
		perror(path);
		exit(1);
	}
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(c, &out) > 0) {
		words += out.nwords;
		inline_len += (48 + out.nwords * 8 + 15) / 16 * 16; /* its length if it carried its words */
		f.records++;
	}
	relstack_cursor__free(c);
	relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, &st);
	relstack_reader__close(r);

	/*
	 * Time: the write path warm (a 4 MiB ring lapped first, so no page is
	 * touched for the first time, and the stacks in the table, as in a long
	 * run), best of five; then the reader over that ring, full of records (best of five).
	 */
	rec = open_rec(flags, 4u << 20, RELSTACK_MODE_OVERWRITE);
	write_load(rec, RECORDS);
	for (int rep = 0; rep < 5; rep++) {
		t0 = now_ns();
		write_load(rec, RECORDS);
		t0 = now_ns() - t0;
		if ((double)t0 / RECORDS < best)
			best = (double)t0 / RECORDS;
	}
	relstack_recorder__close(rec);
	f.write_ns = best;
	f.read_ns = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		uint64_t n = 0;

		t0 = now_ns();
		r = relstack_reader__open(path, NULL);
		c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
		while (relstack_cursor__next(c, &out) > 0)
			n++;
		relstack_cursor__free(c);
		relstack_reader__close(r);
		if ((double)(now_ns() - t0) / (double)n < f.read_ns)
			f.read_ns = (double)(now_ns() - t0) / (double)n;
		f.read_records = n;
	}
	/*
	 * A record naming an entry is 64 bytes (48 fixed, the 8-byte reference,
	 * padding); one carrying its words takes them (the inline records of a
	 * table that filled are counted at the average length).
	 */
	f.ring_bytes = ((double)st.ref_records * 64 + (double)inline_len * (double)st.inline_records / (double)f.records) /
		       (double)f.records;
	if (flags)
		f.ring_bytes = (double)inline_len / (double)f.records;
	f.entries = st.entries;
	f.table_used = st.used;
	f.full = st.full;
	f.stack_bytes = flags ? (double)words * 8 / (double)f.records
			      : (8.0 * (double)st.ref_records + (double)words * 8 * (double)st.inline_records / (double)f.records +
				 (double)st.used) / (double)f.records;
	return f;
}

static void all(void)
{
	for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
		const struct workload *w = &loads[i];
		struct figures t, n;

		make_load(w);
		t = run(0);
		n = run(RELSTACK_RECORDER_NO_STACK_TABLE);
		printf("stacks_%s_entries: %llu distinct stacks stored, %llu bytes of entries, %llu inline for lack of room\n",
		       w->name, (unsigned long long)t.entries, (unsigned long long)t.table_used, (unsigned long long)t.full);
		printf("stacks_%s_record_bytes_table: %.1f bytes/record\n", w->name, t.ring_bytes);
		printf("stacks_%s_record_bytes_inline: %.1f bytes/record\n", w->name, n.ring_bytes);
		printf("stacks_%s_record_bytes_table: ratio %.3f vs inline (%.1f %% smaller)\n", w->name,
		       t.ring_bytes / n.ring_bytes, 100.0 * (1 - t.ring_bytes / n.ring_bytes));
		printf("stacks_%s_stack_bytes_table: %.1f bytes/record (reference + entries spread over the records)\n",
		       w->name, t.stack_bytes);
		printf("stacks_%s_stack_bytes_inline: %.1f bytes/record\n", w->name, n.stack_bytes);
		printf("stacks_%s_stack_bytes_table: ratio %.3f vs inline (%.1f %% less stack data)\n", w->name,
		       t.stack_bytes / n.stack_bytes, 100.0 * (1 - t.stack_bytes / n.stack_bytes));
		printf("stacks_%s_ring_for_%u_records_table: %.1f MiB (+ %.2f MiB of table used)\n", w->name, RECORDS,
		       t.ring_bytes * RECORDS / 1048576.0, (double)t.table_used / 1048576.0);
		printf("stacks_%s_ring_for_%u_records_inline: %.1f MiB\n", w->name, RECORDS,
		       n.ring_bytes * RECORDS / 1048576.0);
		printf("stacks_%s_write_table: %.1f ns/record\n", w->name, t.write_ns);
		printf("stacks_%s_write_inline: %.1f ns/record\n", w->name, n.write_ns);
		printf("stacks_%s_write_table: ratio %.2f vs inline\n", w->name, t.write_ns / n.write_ns);
		printf("stacks_%s_read_table: %.1f ns/record (%llu records in a 4 MiB ring)\n", w->name, t.read_ns,
		       (unsigned long long)t.read_records);
		printf("stacks_%s_read_inline: %.1f ns/record (%llu records in a 4 MiB ring)\n", w->name, n.read_ns,
		       (unsigned long long)n.read_records);
		printf("stacks_%s_read_table: ratio %.2f vs inline\n", w->name, t.read_ns / n.read_ns);
	}
}

/* Sizes of the current run of a buffer file, with its table and as if every stack were inline. */
static int file_figures(const char *file)
{
	struct relstack_reader *r = relstack_reader__open(file, NULL);
	struct relstack_stack_table_info st;
	struct relstack_cursor *c;
	struct relstack_record o;
	uint64_t n = 0, words = 0, inline_len = 0, rel_inline = 0, rel_ref = 0, rel = 0;
	double len;

	if (!r) {
		perror(file);
		return 1;
	}
	relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, &st);
	c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (c && relstack_cursor__next(c, &o) > 0) {
		n++;
		words += o.nwords;
		inline_len += (48 + o.nwords * 8 + o.fields_size + 15) / 16 * 16;
		if (o.has_stack && !o.absolute && o.nwords) {
			rel++;
			rel_inline += (48 + o.nwords * 8 + o.fields_size + 15) / 16 * 16;
			rel_ref += (48 + 8 + o.fields_size + 15) / 16 * 16;
		}
	}
	relstack_cursor__free(c);
	relstack_reader__close(r);
	if (!n) {
		fprintf(stderr, "%s: no records\n", file);
		return 1;
	}
	/*
	 * A record naming an entry: 48 fixed bytes, the 8-byte reference, its
	 * fields, padded.  Relative stack records are taken as naming one in
	 * the share the table says (exact when all or none do).
	 */
	len = (double)(inline_len - rel_inline) +
	      (rel ? ((double)rel_ref * st.ref_records + (double)rel_inline * st.inline_records) / (double)rel : 0);
	printf("stacks_file_records: %llu records, %.1f words/record, %llu entries, %llu of them name one, %llu inline "
	       "for lack of room\n", (unsigned long long)n, (double)words / n, (unsigned long long)st.entries,
	       (unsigned long long)st.ref_records, (unsigned long long)st.full);
	printf("stacks_file_record_bytes_table: %.1f bytes/record\n", len / n);
	printf("stacks_file_record_bytes_inline: %.1f bytes/record\n", (double)inline_len / n);
	printf("stacks_file_record_bytes_table: ratio %.3f vs inline (%.1f %% smaller)\n", len / inline_len,
	       100.0 * (1 - len / inline_len));
	printf("stacks_file_stack_bytes_table: %.1f bytes/record\n", (8.0 * st.ref_records + st.used) / n);
	printf("stacks_file_stack_bytes_inline: %.1f bytes/record\n", 8.0 * words / n);
	printf("stacks_file_stack_bytes_table: ratio %.3f vs inline (%.1f %% less stack data)\n",
	       (8.0 * st.ref_records + st.used) / (8.0 * words), 100.0 * (1 - (8.0 * st.ref_records + st.used) / (8.0 * words)));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2)
		return file_figures(argv[1]);
	pool = malloc(sizeof(*pool) * 512);
	depth = malloc(sizeof(*depth) * 512);
	draw = malloc(sizeof(*draw) * RECORDS);
	snprintf(dir, sizeof(dir), "/tmp/rs-bench-stacks-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/buf", dir);
	if (argc == 3) {
		/* N records of the repeated depth-32 stack, with the table or inline (for callgrind) */
		unsigned long n = strtoul(argv[2], NULL, 0);
		struct relstack_recorder *rec;

		make_load(&loads[2]);
		rec = open_rec(strcmp(argv[1], "inline") == 0 ? RELSTACK_RECORDER_NO_STACK_TABLE : 0, 4u << 20,
			       RELSTACK_MODE_OVERWRITE);
		write_load(rec, (unsigned)n);
		relstack_recorder__close(rec);
	} else {
		all();
	}
	unlink(path);
	rmdir(dir);
	return 0;
}
