// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: what the kernel recorder and trace-cmd import read.
 * The input is taken as a raw tracefs ring-buffer page (sched_switch
 * events and kernel stacks, formats as the kernel gives them), as
 * kallsyms text, and as ELF notes, so hostile bytes reach the page
 * checks, kbuffer's walk, the stack pairing, the relative encoding and
 * its verdict, the kallsyms parser and the build-id reader.  The same
 * page then goes through the raw import's converter (relative stacks of
 * linux/patches with their layout fields, module-load events, every
 * stack a record of its own), and the bytes as a module table.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "kfixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tep_handle *tep;
static struct rs_ksyms syms;
static struct rs_ktab *kt;

static void init(void)
{
	tep = kfix_tep();
	if (rs_ksyms_parse(kfix_kallsyms, sizeof(kfix_kallsyms) - 1, &syms) < 0)
		abort();
	kt = rs_ktab_new(&syms, NULL, 0, "/nonexistent");
	if (!kt)
		abort();
}

/* A table of one module (index 0), as the module table gives it; load events add to a copy. */
static struct rs_ktab *rel_table(void)
{
	static const struct rs_kmodule m = { .index = 0, .name = "relstack_test", .text_size = 0x2000,
					     .sections = ".text=0x0 .exit.text=0x1c0" };
	struct rs_ktab *t = rs_ktab_new_rel(NULL, NULL, 0);

	if (!t || rs_ktab_add_module(t, &m) != 1)
		abort();
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int ids[] = { KFIX_SCHED_SWITCH_ID };
	struct rs_ktab *kt_rel;
	struct rs_kconv *c;
	struct rs_ksyms s;
	uint8_t bid[40];

	if (!tep)
		init();
	c = rs_kconv_new(tep, kt, NULL, ids, 1, 0);
	if (!c)
		abort();
	rs_kconv_page(c, data, size, 0);
	/* the same bytes as a second CPU's page, then what is left waiting */
	rs_kconv_page(c, data, size, 1);
	rs_kconv_finish(c);
	rs_kconv_free(c);
	kt_rel = rel_table();
	c = rs_kconv_new(tep, kt_rel, NULL, NULL, 0, 0);
	if (!c)
		abort();
	rs_kconv_standalone(c);
	rs_kconv_module_table(c, kt_rel);
	if (rs_kconv_page(c, data, size, 0) >= 0)
		rs_kconv_finish(c);
	rs_kconv_free(c);
	rs_ktab_free(kt_rel);
	{
		struct rs_kmodule mods[4];
		char err[200];

		rs_kmodtab_parse((const char *)data, size, mods, 4, err, sizeof(err));
	}
	if (rs_ksyms_parse((const char *)data, size, &s) >= 0) {
		struct rs_ktab *t = rs_ktab_new(&s, NULL, 0, "/nonexistent");
		uint64_t addrs[4], words[5];
		struct relstack_verdict v;

		for (size_t i = 0; i < 4; i++)
			addrs[i] = s.v[(i * 7) % s.n].addr + i;
		if (t)
			rs_kstack_encode(t, addrs, 4, false, words, 5, &v);
		rs_ktab_free(t);
	}
	rs_ksyms_free(&s);
	rs_knotes_build_id(data, size, bid, sizeof(bid));
	return 0;
}
