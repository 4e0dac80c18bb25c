// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Encoding one code address with about fifty objects loaded, against the
 * loader's own lookups: _dl_find_object(), dladdr(), and a dl_iterate_phdr
 * walk that stops at the matching object.
 *
 *   bench_lookup               time every method, print ns per address and ratios
 *   bench_lookup METHOD N      do N lookups of METHOD only (for callgrind: the
 *                              instruction count of N2 minus N1 lookups, divided
 *                              by N2 - N1, is the cost of one; set-up cancels out)
 *
 * Addresses are uniformly random objects, then a uniformly random offset in
 * that object's executable segment: one per call ("random"), or 32 per
 * call as when a whole stack is encoded ("random_batch"); or runs of 32
 * addresses in one object ("run", consecutive frames of one library).
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "relstack/relstack.h"

#define NOBJS 48
#define NADDR (1u << 16)
#define RUN 32

struct range {
	uintptr_t lo, hi;
};

static struct range ranges[512];
static unsigned nranges;
static uintptr_t addrs[NADDR], run_addrs[NADDR];
static uint64_t words[NADDR];
static volatile uintptr_t sink;

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
	for (unsigned i = 0; i < info->dlpi_phnum && nranges < 512; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && ph->p_memsz) {
			ranges[nranges].lo = info->dlpi_addr + ph->p_vaddr;
			ranges[nranges].hi = ranges[nranges].lo + ph->p_memsz;
			nranges++;
		}
	}
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uintptr_t random_in(const struct range *r)
{
	return r->lo + next() % (r->hi - r->lo);
}

static void setup(void)
{
	for (int i = 0; i < NOBJS; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/librs_bench_obj%d.so", BENCH_OBJ_DIR, i);
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "bench_lookup: %s\n", dlerror());
			exit(2);
		}
	}
	relstack_objtab__refresh();
	dl_iterate_phdr(collect, NULL);
	for (unsigned i = 0; i < NADDR; i++)
		addrs[i] = random_in(&ranges[next() % nranges]);
	for (unsigned i = 0; i < NADDR; i += RUN) {
		const struct range *r = &ranges[next() % nranges];

		for (unsigned k = 0; k < RUN; k++)
			run_addrs[i + k] = random_in(r);
	}
}

struct walk {
	uintptr_t addr;
	uintptr_t found;
};

static int walk_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct walk *w = data;

	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && w->addr - lo < ph->p_memsz) {
			w->found = info->dlpi_addr;
			return 1;
		}
	}
	return 0;
}

/* Each method does n lookups; returns addresses looked up. */
static size_t m_relstack_random(size_t n)
{
	for (size_t i = 0; i < n; i++)
		relstack_encode(&addrs[i % NADDR], &words[i % NADDR], 1, 0, NULL);
	return n;
}

/* @n addresses of @src, 32 per call: the shape of encoding a whole stack. */
static size_t encode_by_32(const uintptr_t *src, size_t n)
{
	size_t done = 0;

	while (done < n) {
		size_t at = done % NADDR;

		relstack_encode(&src[at], &words[at], RUN, 0, NULL);
		done += RUN;
	}
	return done;
}

static size_t m_relstack_random_batch(size_t n)
{
	return encode_by_32(addrs, n);
}

static size_t m_relstack_run(size_t n)
{
	return encode_by_32(run_addrs, n);
}

static size_t m_dl_find_object(size_t n)
{
	struct dl_find_object r;

	for (size_t i = 0; i < n; i++) {
		_dl_find_object((void *)addrs[i % NADDR], &r);
		sink = (uintptr_t)r.dlfo_map_start;
	}
	return n;
}

static size_t m_dladdr(size_t n)
{
	Dl_info di;

	for (size_t i = 0; i < n; i++) {
		dladdr((void *)addrs[i % NADDR], &di);
		sink = (uintptr_t)di.dli_fbase;
	}
	return n;
}

static size_t m_dl_iterate_phdr(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct walk w = { addrs[i % NADDR], 0 };

		dl_iterate_phdr(walk_cb, &w);
		sink = w.found;
	}
	return n;
}

static const struct method {
	const char *name;
	size_t (*run)(size_t);
	size_t per_rep; /* lookups per timed repetition */
} methods[] = {
	{ "relstack_random", m_relstack_random, 2000000 },
	{ "relstack_random_batch", m_relstack_random_batch, 2000000 },
	{ "relstack_run", m_relstack_run, 4000000 },
	{ "dl_find_object", m_dl_find_object, 1000000 },
	{ "dladdr", m_dladdr, 20000 },
	{ "dl_iterate_phdr", m_dl_iterate_phdr, 200000 },
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b);

/*
 * What keeping the table current costs: a re-scan after one object is
 * loaded, and after it is unloaded again, with the ~50 others in place.
 * Median of 21, in microseconds.
 */
static void time_refresh(void)
{
	char path[4096];
	double load[21], unload[21];

	snprintf(path, sizeof(path), "%s/librs_bench_obj%d.so", BENCH_OBJ_DIR, NOBJS);
	for (int r = 0; r < 21; r++) {
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		double t0;

		if (!h) {
			fprintf(stderr, "bench_lookup: %s\n", dlerror());
			exit(2);
		}
		t0 = now_ns();
		relstack_objtab__refresh();
		load[r] = (now_ns() - t0) / 1e3;
		dlclose(h);
		t0 = now_ns();
		relstack_objtab__refresh();
		unload[r] = (now_ns() - t0) / 1e3;
	}
	qsort(load, 21, sizeof(load[0]), cmp_double);
	qsort(unload, 21, sizeof(unload[0]), cmp_double);
	printf("objtab_refresh_after_dlopen: %.1f us\n", load[10]);
	printf("objtab_refresh_after_dlclose: %.1f us\n", unload[10]);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of 7 repetitions, in ns per address. */
static double time_method(const struct method *m)
{
	double reps[7];

	m->run(m->per_rep / 10); /* warm up */
	for (int r = 0; r < 7; r++) {
		double t0 = now_ns();
		size_t n = m->run(m->per_rep);

		reps[r] = (now_ns() - t0) / (double)n;
	}
	qsort(reps, 7, sizeof(reps[0]), cmp_double);
	return reps[3];
}

int main(int argc, char **argv)
{
	double ns[sizeof(methods) / sizeof(methods[0])];
	struct relstack_objtab_stats st;

	setup();
	if (argc == 3) {
		for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
			if (strcmp(argv[1], methods[i].name) == 0) {
				methods[i].run(strtoul(argv[2], NULL, 10));
				return 0;
			}
		fprintf(stderr, "bench_lookup: unknown method '%s'\n", argv[1]);
		return 1;
	}
	relstack_objtab_stats(&st);
	printf("lookup_objects: %u objects\n", st.loaded);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		ns[i] = time_method(&methods[i]);
		printf("lookup_%s_time: %.2f ns/address\n", methods[i].name, ns[i]);
	}
	time_refresh();
	for (size_t i = 0; i < 3; i++)
		for (size_t k = 3; k < sizeof(methods) / sizeof(methods[0]); k++)
			printf("lookup_%s_time: ratio %.3f vs %s\n", methods[i].name, ns[i] / ns[k], methods[k].name);
	return 0;
}
