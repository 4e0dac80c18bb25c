// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Raw tracefs output of a kernel with the relative-stacktrace patches,
 * made by hand (format files, header page, pages annotated field by
 * field, a module table), imported into a buffer file and read back with
 * the public reader and decoder.  No kernel needed: the words and their
 * layout are what the patches' format file describes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "decode/symbolize.h"
#include "kernel/kernel.h"
#include "kfiles.h"
#include "kfixture.h"
#include "relstack/decode.h"
#include "relstack/reader.h"

#define PAGE 4096
#define STEXT 0xffffffff81000000ull
#define CORE_SCHEDULE_20 (0xffffffff821fb620ull + 0x20 - STEXT) /* schedule+0x20, as a relative word */
#define CORE_SYSCALL_10 (0xffffffff810000baull + 0x10 - STEXT)  /* entry_SYSCALL_64_after_hwframe+0x10 */
/* the 64-bit layout of the patches: module bit 63, index bits 53..62 */
#define KMOD(idx, off) (1ull << 63 | (uint64_t)(idx) << 53 | (uint64_t)(off))
#define KEND (~0ull)
#define KNO_TEXT (~0ull - 1)

static const char *ko_path; /* the fixture module, built by meson (kmod_fixture.c) */

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

struct page {
	uint8_t b[PAGE];
	size_t len;      /* data bytes so far */
	uint64_t ts;     /* the page's time stamp, then the last event's */
};

struct dir {
	char path[64];
	char out[96];
	char err[512];
	struct page cpu[2];
	struct rs_kraw_stats st;
};

/* ---- the directory ---- */

static int setup(void **state)
{
	struct dir *d = calloc(1, sizeof(*d));

	strcpy(d->path, "/tmp/relstack-kraw-XXXXXX");
	assert_non_null(mkdtemp(d->path));
	snprintf(d->out, sizeof(d->out), "%s.rsb", d->path);
	kfix_put_text(d->path, "header_page", header_page);
	kfix_put_text(d->path, "events/ftrace/kernel_stack_rel/format", kfix_kernel_stack_rel_format);
	kfix_put_text(d->path, "events/ftrace/kernel_stack/format", kfix_kernel_stack_format);
	kfix_put_text(d->path, "events/module/module_text_rel/format", kfix_module_text_rel_format);
	kfix_put_text(d->path, "events/sched/sched_switch/format", kfix_sched_switch_format);
	kfix_put_text(d->path, "events/sched/enable", "0\n"); /* not an event: skipped */
	for (int i = 0; i < 2; i++)
		d->cpu[i].ts = 1000;
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct dir *d = *state;
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d->path, d->out);
	assert_int_equal(system(cmd), 0);
	free(d);
	return 0;
}

/* ---- pages ---- */

/* One event at time @ts: a 4-byte header (type_len = length / 4 in bits 0..4, time delta above), then its data. */
static void put_event(struct page *p, uint64_t ts, const void *data, size_t len)
{
	uint32_t hdr = (uint32_t)(len / 4) | (uint32_t)(ts - p->ts) << 5;

	assert_true(len % 4 == 0 && len / 4 <= 28 && ts >= p->ts && ts - p->ts < (1u << 27));
	memcpy(p->b + 16 + p->len, &hdr, 4);
	memcpy(p->b + 16 + p->len + 4, data, len);
	p->len += 4 + len;
	p->ts = ts;
}

#define SIZE_OF_WORDS INT32_MIN

struct rel {
	int32_t pid;
	uint8_t reliable, module_bit, index_shift, index_bits;
	int32_t size;    /* SIZE_OF_WORDS: the number of words */
};

/* Which field a test changes from the layout of 64-bit kernels. */
enum rel_field { R_NONE, R_RELIABLE, R_MODULE_BIT, R_INDEX_SHIFT, R_INDEX_BITS, R_SIZE };

static struct rel REL_(enum rel_field what, int value)
{
	struct rel r = { .pid = 100, .reliable = 1, .module_bit = 63, .index_shift = 53, .index_bits = 10,
			  .size = SIZE_OF_WORDS };

	switch (what) {
	case R_NONE: break;
	case R_RELIABLE: r.reliable = (uint8_t)value; break;
	case R_MODULE_BIT: r.module_bit = (uint8_t)value; break;
	case R_INDEX_SHIFT: r.index_shift = (uint8_t)value; break;
	case R_INDEX_BITS: r.index_bits = (uint8_t)value; break;
	case R_SIZE: r.size = value; break;
	}
	return r;
}

#define REL() REL_(R_NONE, 0)

static void put_rel(struct page *p, uint64_t ts, struct rel r, const uint64_t *words, size_t n)
{
	uint8_t e[16 + 8 * 8] = { 0 };
	uint16_t type = KFIX_KERNEL_STACK_REL_ID;
	int32_t size = r.size != SIZE_OF_WORDS ? r.size : (int32_t)n;

	assert_true(n <= 8);
	memcpy(e + 0, &type, 2);                        /* common_type */
	memcpy(e + 4, &r.pid, 4);                       /* common_pid */
	memcpy(e + KFIX_REL_SIZE, &size, 4);            /* size: words in caller[] */
	e[KFIX_REL_RELIABLE] = r.reliable;              /* 0 unchecked, 1 reliable, 2 refused */
	e[KFIX_REL_MODULE_BIT] = r.module_bit;          /* the layout of the words */
	e[KFIX_REL_INDEX_SHIFT] = r.index_shift;
	e[KFIX_REL_INDEX_BITS] = r.index_bits;
	memcpy(e + KFIX_REL_CALLER, words, n * 8);      /* caller[] */
	put_event(p, ts, e, KFIX_REL_CALLER + n * 8);
}

static void put_abs(struct page *p, uint64_t ts, const uint64_t *addrs, int32_t n)
{
	uint8_t e[16 + 8 * 8] = { 0 };
	uint16_t type = KFIX_KERNEL_STACK_ID;
	int32_t pid = 100;

	memcpy(e + 0, &type, 2);                /* common_type */
	memcpy(e + 4, &pid, 4);                 /* common_pid */
	memcpy(e + 8, &n, 4);                   /* size */
	memcpy(e + 16, addrs, (size_t)n * 8);   /* caller[] */
	put_event(p, ts, e, 16 + (size_t)n * 8);
}

/* The module-load event: fixed fields, then name, build-id and sections where their __data_loc say. */
static void put_module_load(struct page *p, uint64_t ts, uint32_t index, const char *name, const uint8_t *bid,
			    size_t bid_len, uint32_t text_size, const char *sections)
{
	uint8_t e[112] = { 0 };
	uint16_t type = KFIX_MODULE_TEXT_REL_ID;
	size_t nl = strlen(name) + 1, sl = strlen(sections) + 1, at = 28;
	uint32_t loc;

	assert_true(at + nl + bid_len + sl <= sizeof(e));
	memcpy(e + 0, &type, 2);                          /* common_type */
	memcpy(e + 8, &index, 4);                         /* index */
	loc = (uint32_t)(nl << 16 | at);                  /* name: length << 16 | offset */
	memcpy(e + 12, &loc, 4);
	memcpy(e + at, name, nl);
	at += nl;
	loc = (uint32_t)(bid_len << 16 | at);             /* build_id */
	memcpy(e + 16, &loc, 4);
	memcpy(e + at, bid, bid_len);
	at += bid_len;
	memcpy(e + 20, &text_size, 4);                    /* text_size */
	loc = (uint32_t)(sl << 16 | at);                  /* sections */
	memcpy(e + 24, &loc, 4);
	memcpy(e + at, sections, sl);
	at += sl;
	put_event(p, ts, e, (at + 3) & ~(size_t)3);
}

/* Page headers (time stamp 1000, commit), and each CPU's page as its trace_pipe_raw. */
static void write_pages(struct dir *d)
{
	for (int i = 0; i < 2; i++) {
		uint64_t ts = 1000, commit = d->cpu[i].len;
		char rel[64];

		memcpy(d->cpu[i].b, &ts, 8);
		memcpy(d->cpu[i].b + 8, &commit, 8);
		snprintf(rel, sizeof(rel), "per_cpu/cpu%d/trace_pipe_raw", i);
		kfix_put(d->path, rel, d->cpu[i].b, PAGE);
	}
}

static int import(struct dir *d, const char *kallsyms)
{
	struct rs_kraw_opts o = { .dir = d->path, .output = d->out, .kallsyms = kallsyms,
				  .errbuf = d->err, .errbuf_sz = sizeof(d->err) };

	write_pages(d);
	d->err[0] = '\0';
	return rs_kimport_raw(&o, &d->st);
}

/* ---- reading back ---- */

struct got {
	char event[48];
	bool has_stack;
	uint32_t reasons;
	size_t nwords;
	struct relstack_entry e[16];
	int64_t ts, cpu;
};

/* The records of the file, stacks' words decoded and checked against the object table. */
static size_t read_back(struct dir *d, struct got *g, size_t max, struct relstack_object *objs, unsigned *nobjs)
{
	struct relstack_reader *r = relstack_reader__open(d->out, NULL);
	const struct relstack_format *fmt;
	struct relstack_cursor *cur;
	struct relstack_record rec;
	size_t n = 0;

	assert_non_null(r);
	fmt = relstack_reader__format(r);
	cur = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
	while (relstack_cursor__next(cur, &rec) > 0 && n < max) {
		snprintf(g[n].event, sizeof(g[n].event), "%s", rec.event_name ? rec.event_name : "?");
		g[n].has_stack = rec.has_stack;
		g[n].reasons = rec.reasons;
		g[n].nwords = rec.nwords;
		g[n].ts = g[n].cpu = -1;
		relstack_record__field_int(&rec, "ts_ns", &g[n].ts);
		relstack_record__field_int(&rec, "cpu", &g[n].cpu);
		for (size_t i = 0; i < rec.nwords && i < 16; i++) {
			relstack_word_decode(fmt, rec.words[i], &g[n].e[i]);
			relstack_reader__check_entry(r, RELSTACK_RUN_CURRENT, rec.epoch, &g[n].e[i]);
		}
		n++;
	}
	relstack_cursor__free(cur);
	*nobjs = 0;
	for (unsigned s = 0; objs && s < relstack_reader__object_count(r, RELSTACK_RUN_CURRENT) && s < 8; s++)
		if (relstack_reader__object(r, RELSTACK_RUN_CURRENT, s, &objs[s], NULL, NULL) == 0)
			*nobjs = s + 1;
	relstack_reader__close(r);
	return n;
}

/* The first record of event @name, or NULL. */
static const struct got *find(const struct got *g, size_t n, const char *name, size_t nth)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].event, name) && nth-- == 0)
			return &g[i];
	return NULL;
}

static void assert_frame(const struct relstack_entry *e, uint32_t slot, uint64_t offset)
{
	assert_int_equal(e->kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e->slot, slot);
	assert_int_equal(e->offset, offset);
}

static void assert_marker(const struct relstack_entry *e, enum relstack_marker m)
{
	assert_int_equal(e->kind, RELSTACK_ENTRY_MARKER);
	assert_int_equal(e->marker, m);
}

static const char modtab[] =
	"0 relstack_test 0123456789abcdef0123456789abcdef01234567 0x2000 live .text=0x0 .exit.text=0x1c0\n";

/* ---- the tests ---- */

static void core_and_module_words_become_entries_of_the_kernel_and_of_the_module_table_s_module(void **state)
{
	struct dir *d = *state;
	static const uint64_t w[] = { KMOD(0, 0x40), CORE_SCHEDULE_20, CORE_SYSCALL_10, KEND };
	struct relstack_object objs[8];
	const struct got *s;
	struct got g[8];
	unsigned nobjs;
	size_t n;

	kfix_put_text(d->path, "module_table", modtab);
	put_rel(&d->cpu[0], 1500, REL(), w, 4);
	assert_int_equal(import(d, NULL), 0);
	assert_int_equal(d->st.stacks, 1);
	assert_int_equal(d->st.reliable, 1);
	assert_int_equal(d->st.modules, 1);
	n = read_back(d, g, 8, objs, &nobjs);
	s = find(g, n, "kernel_stack_rel", 0);
	assert_non_null(s);
	assert_true(s->has_stack);
	assert_int_equal(s->reasons, 0);
	assert_int_equal(s->ts, 1500);
	assert_int_equal(s->cpu, 0);
	assert_int_equal(s->nwords, 4);
	assert_frame(&s->e[0], 1, 0x40);
	assert_frame(&s->e[1], 0, CORE_SCHEDULE_20);
	assert_frame(&s->e[2], 0, CORE_SYSCALL_10);
	assert_marker(&s->e[3], RELSTACK_MARKER_END);
	/* the objects: the core kernel at _stext, the module named from the table, no address */
	assert_int_equal(nobjs, 2);
	assert_string_equal(objs[0].path, "vmlinux");
	assert_int_equal(objs[0].base, RELSTACK_BASE_STEXT);
	assert_string_equal(objs[1].path, "relstack_test");
	assert_int_equal(objs[1].base, RELSTACK_BASE_LOAD_BIAS);
	assert_true(objs[1].flags & RELSTACK_OBJECT_KERNEL);
	assert_int_equal(objs[1].text_size, 0x2000);
	assert_int_equal(objs[1].build_id_len, 20);
	assert_int_equal(objs[1].build_id[0], 0x01);
	assert_int_equal(objs[1].state, RELSTACK_OBJECT_LOADED);
	/* and the module's layout for the decoder, before any stack */
	assert_string_equal(g[0].event, RS_KMODULE_EVENT);
}

static void the_kernel_s_reliable_field_is_the_verdict_and_only_1_with_end_is_reliable(void **state)
{
	struct dir *d = *state;
	static const uint64_t w[] = { CORE_SCHEDULE_20, CORE_SYSCALL_10, KEND };
	const struct got *s;
	struct got g[8];
	unsigned nobjs;
	size_t n;

	put_rel(&d->cpu[0], 1100, REL_(R_RELIABLE, 2), w, 2);  /* the kernel's reliable unwinder refused it */
	put_rel(&d->cpu[0], 1200, REL_(R_RELIABLE, 0), w, 2);  /* not checked */
	put_rel(&d->cpu[0], 1300, REL_(R_RELIABLE, 1), w, 2);  /* said reliable, but no END came */
	put_rel(&d->cpu[1], 1400, REL_(R_RELIABLE, 2), w, 3);  /* refused, whatever its END */
	assert_int_equal(import(d, NULL), 0);
	assert_int_equal(d->st.reliable, 0);
	n = read_back(d, g, 8, NULL, &nobjs);
	assert_int_equal(n, 4);
	s = find(g, n, "kernel_stack_rel", 0);
	assert_int_equal(s->reasons, RELSTACK_UNRELIABLE_KERNEL_REFUSED);
	assert_int_equal(s->nwords, 2);
	s = find(g, n, "kernel_stack_rel", 1);
	assert_int_equal(s->reasons, RELSTACK_UNRELIABLE_UNCHECKED);
	s = find(g, n, "kernel_stack_rel", 2);
	assert_int_equal(s->reasons, RELSTACK_UNRELIABLE_END_UNPROVEN);
	s = find(g, n, "kernel_stack_rel", 3);
	assert_int_equal(s->reasons, RELSTACK_UNRELIABLE_KERNEL_REFUSED);
	assert_int_equal(s->nwords, 2); /* no END in a trace that is not reliable */
	assert_int_equal(s->cpu, 1);
}

static void no_text_is_unknown_and_makes_a_reliable_stack_unreliable(void **state)
{
	struct dir *d = *state;
	static const uint64_t w[] = { KNO_TEXT, CORE_SCHEDULE_20, KEND };
	const struct got *s;
	struct got g[8];
	unsigned nobjs;

	put_rel(&d->cpu[0], 1100, REL(), w, 3);
	assert_int_equal(import(d, NULL), 0);
	assert_int_equal(d->st.no_text, 1);
	read_back(d, g, 8, NULL, &nobjs);
	s = find(g, 8, "kernel_stack_rel", 0);
	assert_int_equal(s->reasons, RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	assert_marker(&s->e[0], RELSTACK_MARKER_UNKNOWN);
	assert_frame(&s->e[1], 0, CORE_SCHEDULE_20);
	assert_int_equal(s->nwords, 2);
}

static void a_module_index_the_table_does_not_list_is_unknown_and_counted_never_another_module(void **state)
{
	struct dir *d = *state;
	static const uint64_t w[] = { KMOD(7, 0x10), KMOD(0, 0x3000), KMOD(0, 0x10), KEND };
	const struct got *s;
	struct got g[8];
	unsigned nobjs;

	kfix_put_text(d->path, "module_table", modtab);
	put_rel(&d->cpu[0], 1100, REL(), w, 4);
	assert_int_equal(import(d, NULL), 0);
	assert_int_equal(d->st.unknown_index, 1);
	assert_int_equal(d->st.beyond_text, 1); /* 0x3000 lies beyond the module's 0x2000 bytes */
	read_back(d, g, 8, NULL, &nobjs);
	s = find(g, 8, "kernel_stack_rel", 0);
	assert_int_equal(s->reasons, RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	assert_marker(&s->e[0], RELSTACK_MARKER_UNKNOWN);
	assert_marker(&s->e[1], RELSTACK_MARKER_UNKNOWN);
	assert_frame(&s->e[2], 1, 0x10);
}

static void a_module_loaded_on_another_cpu_is_named_by_its_load_event(void **state)
{
	struct dir *d = *state;
	static const uint8_t bid[] = { 0xaa, 0xbb, 0xcc, 0xdd };
	static const uint64_t w[] = { KMOD(3, 0x1c4), CORE_SYSCALL_10, KEND };
	struct relstack_object objs[8];
	const struct got *s;
	struct got g[8];
	unsigned nobjs;

	/* CPU 0's pages are read first: its stack names a module whose load event is on CPU 1 */
	put_rel(&d->cpu[0], 3000, REL(), w, 3);
	put_module_load(&d->cpu[1], 2000, 3, "relstack_test", bid, sizeof(bid), 0x800, ".text=0x0 .exit.text=0x1c0");
	assert_int_equal(import(d, NULL), 0);
	assert_int_equal(d->st.modules, 1);
	assert_int_equal(d->st.unknown_index, 0);
	read_back(d, g, 8, objs, &nobjs);
	assert_int_equal(nobjs, 2);
	assert_string_equal(objs[1].path, "relstack_test");
	assert_int_equal(objs[1].text_size, 0x800);
	assert_int_equal(objs[1].build_id_len, 4);
	s = find(g, 8, "kernel_stack_rel", 0);
	assert_int_equal(s->reasons, 0);
	assert_frame(&s->e[0], 1, 0x1c4);
	assert_non_null(find(g, 8, RS_KMODULE_EVENT, 0));
	assert_non_null(find(g, 8, "module_text_rel", 0)); /* the kernel's event itself is kept */
}

static void an_unloaded_module_keeps_decoding_and_its_reload_takes_a_new_slot(void **state)
{
	struct dir *d = *state;
	static const uint64_t before[] = { KMOD(0, 0x20), CORE_SYSCALL_10, KEND };
	static const uint64_t after[] = { KMOD(1, 0x24), CORE_SYSCALL_10, KEND };
	struct relstack_object objs[8];
	const struct got *s;
	struct got g[8];
	unsigned nobjs;

	kfix_put_text(d->path, "module_table",
		 "0 relstack_test 0123 0x2000 gone .text=0x0\n"
		 "1 relstack_test 0123 0x2000 live .text=0x0\n");
	put_rel(&d->cpu[0], 1100, REL(), before, 3);
	put_rel(&d->cpu[0], 1200, REL(), after, 3);
	assert_int_equal(import(d, NULL), 0);
	read_back(d, g, 8, objs, &nobjs);
	assert_int_equal(nobjs, 3);
	assert_int_equal(objs[1].state, RELSTACK_OBJECT_UNLOADED);
	assert_int_equal(objs[2].state, RELSTACK_OBJECT_LOADED);
	s = find(g, 8, "kernel_stack_rel", 0);
	assert_frame(&s->e[0], 1, 0x20); /* checked against the table: the slot held it then */
	assert_int_equal(s->reasons, 0);
	s = find(g, 8, "kernel_stack_rel", 1);
	assert_frame(&s->e[0], 2, 0x24);
}

static void absolute_stacks_are_made_relative_with_the_boot_s_kallsyms_and_unknown_without(void **state)
{
	struct dir *d = *state;
	static const uint64_t a[] = { 0xffffffff821fb620ull + 0x20, 0xffffffff810000baull + 0x10 };
	const struct got *s;
	struct got g[8];
	unsigned nobjs;

	kfix_put_text(d->path, "ksyms.txt", kfix_kallsyms);
	put_abs(&d->cpu[0], 1100, a, 2);
	assert_int_equal(import(d, NULL), 0);
	read_back(d, g, 8, NULL, &nobjs);
	s = find(g, 8, "kernel_stack", 0);
	assert_marker(&s->e[0], RELSTACK_MARKER_UNKNOWN);
	assert_marker(&s->e[1], RELSTACK_MARKER_UNKNOWN);
	assert_true(s->reasons & RELSTACK_UNRELIABLE_UNKNOWN_TEXT);
	{
		char ks[128];

		snprintf(ks, sizeof(ks), "%s/ksyms.txt", d->path);
		assert_int_equal(import(d, ks), 0);
	}
	read_back(d, g, 8, NULL, &nobjs);
	s = find(g, 8, "kernel_stack", 0);
	assert_frame(&s->e[0], 0, CORE_SCHEDULE_20);
	assert_frame(&s->e[1], 0, CORE_SYSCALL_10);
	assert_int_equal(s->reasons, 0); /* the system call entry ends it: whole */
	assert_marker(&s->e[2], RELSTACK_MARKER_END);
}

/* The import of @d fails with one line that holds each of the strings after @d. */
static void assert_refused(struct dir *d, ...)
{
	const char *want;
	va_list ap;

	if (import(d, NULL) >= 0)
		fail_msg("imported, expected an error");
	assert_null(strchr(d->err, '\n'));
	va_start(ap, d);
	while ((want = va_arg(ap, const char *))) {
		if (!strstr(d->err, want))
			fail_msg("'%s' is not in the error '%s'", want, d->err);
	}
	va_end(ap);
	assert_int_equal(access(d->out, F_OK), -1); /* no file is left behind for a refused directory */
}

static void hostile_layout_fields_are_refused_with_a_line_naming_the_field(void **state)
{
	struct dir *d = *state;
	static const uint64_t w[] = { CORE_SCHEDULE_20, KEND };
	static const struct { enum rel_field what; int value; const char *field; } bad[] = {
		{ R_INDEX_BITS, 0, "index_bits 0" },
		{ R_INDEX_BITS, 21, "index_bits 21" },
		{ R_MODULE_BIT, 64, "module_bit 64" },
		{ R_MODULE_BIT, 200, "module_bit 200" },
		{ R_INDEX_SHIFT, 0, "index_shift 0" },
		{ R_INDEX_SHIFT, 60, "index_shift 60" },
		{ R_RELIABLE, 3, "reliable 3" },
		{ R_SIZE, 9, "size 9" },
		{ R_SIZE, -2, "size -2" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&d->cpu[0], 0, sizeof(d->cpu[0]));
		d->cpu[0].ts = 1000;
		put_rel(&d->cpu[0], 1100, REL_(bad[i].what, bad[i].value), w, 2);
		assert_refused(d, "cpu0/trace_pipe_raw", "page 0", "kernel_stack_rel", bad[i].field, NULL);
	}
}

static void a_hostile_module_table_is_refused_with_its_line(void **state)
{
	struct dir *d = *state;
	static const struct { const char *table, *why; } bad[] = {
		{ "0 m 0123 0x100 live\n1 m xyz 0x100 live\n", "line 2: build-id 'xyz'" },
		{ "0 m 0123 0x100 loaded\n", "state 'loaded'" },
		{ "0 m 0123 0x100 live .text=0x100\n", "section .text: offset '0x100'" },
		{ "0 m 0123 0x100 live .text=0x0 .text=0x10\n", "section .text is listed twice" },
		{ "0 m 0123 0x100 live text=0x0\n", "section item 'text=0x0'" },
		{ "0 m 0123 0x100 live\n0 n 0123 0x100 live\n", "index 0 is listed twice" },
		{ "1048575 m 0123 0x100 live\n", "index '1048575'" },
		{ "0 m/x 0123 0x100 live\n", "name 'm/x'" },
		{ "0 m 0123 0 live\n", "text size '0'" },
		{ "0 m 0123\n", "found 3 items" },
	};

	put_rel(&d->cpu[0], 1100, REL(), (const uint64_t[]){ KEND }, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		kfix_put_text(d->path, "module_table", bad[i].table);
		assert_refused(d, "module_table", bad[i].why, NULL);
	}
}

static void a_build_id_of_zeros_is_none_and_sections_are_kept_as_the_kernel_wrote_them(void **state)
{
	static const char table[] = "# a comment line\n"
				    "3 relstack_test 0000000000000000000000000000000000000000 1000 live .text=0x0 "
				    ".static_call.text=0x340 .exit.text=0x348\n"
				    "4 other 00ff 0x10 gone\n";
	struct rs_kmodule m[2];
	char err[200];

	(void)state;
	assert_int_equal(rs_kmodtab_parse(table, sizeof(table) - 1, m, 2, err, sizeof(err)), 2);
	assert_int_equal(m[0].index, 3);
	assert_int_equal(m[0].bid_len, 0);
	assert_int_equal(m[0].text_size, 0x1000);
	assert_false(m[0].gone);
	assert_string_equal(m[0].sections, ".text=0x0 .static_call.text=0x340 .exit.text=0x348");
	assert_int_equal(m[1].bid_len, 2); /* zeros inside a build-id are its bytes */
	assert_true(m[1].gone);
	assert_string_equal(m[1].sections, "");
	assert_int_equal(rs_kmodtab_parse(table, sizeof(table) - 1, m, 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "line 3: more than 1 modules");
}

static void a_header_page_of_another_layout_and_pages_cut_short_are_refused(void **state)
{
	struct dir *d = *state;

	kfix_put_text(d->path, "header_page", "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
				   "\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
				   "\tfield: char data;\toffset:12;\tsize:4084;\tsigned:1;\n");
	assert_refused(d, "header_page", "field commit", NULL);
	kfix_put_text(d->path, "header_page", header_page);
	write_pages(d);
	kfix_put(d->path, "per_cpu/cpu1/trace_pipe_raw", d->cpu[1].b, PAGE - 1);
	{
		struct rs_kraw_opts o = { .dir = d->path, .output = d->out, .errbuf = d->err, .errbuf_sz = sizeof(d->err) };

		assert_true(rs_kimport_raw(&o, &d->st) < 0);
		assert_non_null(strstr(d->err, "cpu1/trace_pipe_raw: 4095 bytes, not a whole number of 4096-byte pages"));
	}
	kfix_put_text(d->path, "events/ftrace/kernel_stack_rel/format", "name: kernel_stack_rel\nID: 13\nformat:\n"
							      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
							      "\n\tfield:int size;"
							      "\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"%d\", REC->size\n");
	assert_refused(d, "format of kernel_stack_rel", "field reliable", NULL);
}

/* ---- decoding: System.map for the core, the .ko through the module table's layout ---- */

static void frames_are_named_from_system_map_and_from_the_ko_through_its_section_layout(void **state)
{
	struct dir *d = *state;
	struct relstack_object ko;
	struct relstack_decode_opts o = { .sz = sizeof(o), .symbolize = true };
	const struct relstack_decoded_record *dr;
	struct relstack_decoder *dec;
	struct relstack_reader *r;
	char table[256], bid[2 * RELSTACK_BUILD_ID_MAX + 1], map[160], mod[160], err[256];
	const char *syms[2] = { map, mod };
	/* .text at 0, .text.unlikely at 0x40 of the module's core text (the fixture's layout, kmod_fixture.c) */
	const uint64_t w[] = { KMOD(0, 0x40 + 2), KMOD(0, 0x4 + 3), CORE_SCHEDULE_20, CORE_SYSCALL_10, KEND };
	bool seen = false;

	assert_int_equal(rs_object_from_file(ko_path, &ko), 0);
	assert_true(ko.build_id_len > 0);
	for (uint32_t i = 0; i < ko.build_id_len; i++)
		sprintf(bid + 2 * i, "%02x", ko.build_id[i]);
	snprintf(table, sizeof(table), "0 kmod_fixture %s 0x80 live .text=0x0 .text.unlikely=0x40\n", bid);
	kfix_put_text(d->path, "module_table", table);
	kfix_put_text(d->path, "System.map", kfix_kallsyms);
	put_rel(&d->cpu[0], 1100, REL(), w, 5);
	assert_int_equal(import(d, NULL), 0);

	snprintf(map, sizeof(map), "vmlinux=%s/System.map", d->path);
	snprintf(mod, sizeof(mod), "kmod_fixture=%s", ko_path);
	o.symbols = syms;
	o.n_symbols = 2;
	r = relstack_reader__open(d->out, NULL);
	assert_non_null(r);
	assert_int_equal(relstack_decoder__new(r, &o, &dec, err, sizeof(err)), 0);
	while (relstack_decoder__next(dec, &dr) > 0) {
		if (!dr->rec->has_stack)
			continue;
		assert_true(dr->reliable);
		assert_int_equal(dr->nframes, 5);
		/* section .text.unlikely, 2 bytes in: the .ko's symbol there, not .text's at the same value */
		assert_string_equal(dr->frames[0].symbol, "kfix_mod_cold");
		assert_int_equal(dr->frames[0].symoff, 2);
		assert_string_equal(dr->frames[1].symbol, "kfix_mod_b");
		assert_int_equal(dr->frames[1].symoff, 3);
		/* unsized, as the kernel sizes a module's symbols: up to the next one */
		assert_int_equal(dr->frames[1].symsize, 0x40 - 4);
		assert_string_equal(dr->frames[2].symbol, "schedule");
		assert_int_equal(dr->frames[2].symoff, 0x20);
		assert_string_equal(dr->frames[3].symbol, "entry_SYSCALL_64_after_hwframe");
		assert_int_equal(dr->frames[3].symoff, 0x10);
		seen = true;
	}
	assert_true(seen);
	relstack_decoder__free(dec);
	relstack_reader__close(r);
}

static void a_ko_of_another_build_is_refused_never_a_wrong_name(void **state)
{
	struct dir *d = *state;
	struct relstack_decode_opts o = { .sz = sizeof(o), .symbolize = true };
	const struct relstack_decoded_record *dr;
	struct relstack_decoder *dec;
	struct relstack_reader *r;
	char mod[160], err[256];
	const char *syms[1] = { mod };
	const uint64_t w[] = { KMOD(0, 0x4 + 3), KEND };
	bool seen = false;

	kfix_put_text(d->path, "module_table", "0 kmod_fixture 0123456789abcdef0123456789abcdef01234567 0x80 live .text=0x0\n");
	put_rel(&d->cpu[0], 1100, REL(), w, 2);
	assert_int_equal(import(d, NULL), 0);
	snprintf(mod, sizeof(mod), "kmod_fixture=%s", ko_path);
	o.symbols = syms;
	o.n_symbols = 1;
	r = relstack_reader__open(d->out, NULL);
	assert_int_equal(relstack_decoder__new(r, &o, &dec, err, sizeof(err)), 0);
	while (relstack_decoder__next(dec, &dr) > 0) {
		if (!dr->rec->has_stack)
			continue;
		assert_null(dr->frames[0].symbol);
		assert_string_equal(dr->frames[0].unnamed, "build-id mismatch");
		seen = true;
	}
	assert_true(seen);
	relstack_decoder__free(dec);
	relstack_reader__close(r);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(core_and_module_words_become_entries_of_the_kernel_and_of_the_module_table_s_module, setup, teardown),
		cmocka_unit_test_setup_teardown(the_kernel_s_reliable_field_is_the_verdict_and_only_1_with_end_is_reliable, setup, teardown),
		cmocka_unit_test_setup_teardown(no_text_is_unknown_and_makes_a_reliable_stack_unreliable, setup, teardown),
		cmocka_unit_test_setup_teardown(a_module_index_the_table_does_not_list_is_unknown_and_counted_never_another_module, setup, teardown),
		cmocka_unit_test_setup_teardown(a_module_loaded_on_another_cpu_is_named_by_its_load_event, setup, teardown),
		cmocka_unit_test_setup_teardown(an_unloaded_module_keeps_decoding_and_its_reload_takes_a_new_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(absolute_stacks_are_made_relative_with_the_boot_s_kallsyms_and_unknown_without, setup, teardown),
		cmocka_unit_test_setup_teardown(hostile_layout_fields_are_refused_with_a_line_naming_the_field, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hostile_module_table_is_refused_with_its_line, setup, teardown),
		cmocka_unit_test(a_build_id_of_zeros_is_none_and_sections_are_kept_as_the_kernel_wrote_them),
		cmocka_unit_test_setup_teardown(a_header_page_of_another_layout_and_pages_cut_short_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(frames_are_named_from_system_map_and_from_the_ko_through_its_section_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(a_ko_of_another_build_is_refused_never_a_wrong_name, setup, teardown),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: test_kraw KMOD_FIXTURE.ko\n");
		return 2;
	}
	ko_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, NULL);
}
