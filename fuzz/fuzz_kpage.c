// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target: what the kernel recorder and trace-cmd import read.
 * The input is taken as a raw tracefs ring-buffer page (sched_switch
 * events and kernel stacks, formats as the kernel gives them), as
 * kallsyms text, and as ELF notes, so hostile bytes reach the page
 * checks, kbuffer's walk, the stack pairing, the relative encoding and
 * its verdict, the kallsyms parser and the build-id reader.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "kernel/kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char sched_switch_format[] =
	"name: sched_switch\n"
	"ID: 372\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"prev_pid=%d next_pid=%d\", REC->prev_pid, REC->next_pid\n";

static const char kernel_stack_format[] =
	"name: kernel_stack\n"
	"ID: 4\n"
	"format:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
	"\n"
	"print fmt: \"\\t=> %ps\\n\", (void *)REC->caller[0]\n";

/* The kernel the seed pages came from: its text and the functions a verdict looks for. */
static const char kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"
	"ffffffff810000ba T entry_SYSCALL_64_after_hwframe\n"
	"ffffffff81000df0 T asm_sysvec_apic_timer_interrupt\n"
	"ffffffff81000e10 T asm_exc_page_fault\n"
	"ffffffff81248fd0 T ret_from_fork_asm\n"
	"ffffffff812fbf18 t common_startup_64\n"
	"ffffffff821fa6c0 t __schedule\n"
	"ffffffff821fb620 T schedule\n"
	"ffffffff8220bb08 T _etext\n"
	"ffffffff83783000 T _sinittext\n"
	"ffffffff837f8910 T _einittext\n";

static struct tep_handle *tep;
static struct rs_ksyms syms;
static struct rs_ktab *kt;

static void init(void)
{
	struct tep_event *ev;

	tep = tep_alloc();
	tep_set_long_size(tep, 8);
	tep_set_page_size(tep, 4096);
	if (tep_parse_format(tep, &ev, sched_switch_format, sizeof(sched_switch_format) - 1, "sched") ||
	    tep_parse_format(tep, &ev, kernel_stack_format, sizeof(kernel_stack_format) - 1, "ftrace"))
		abort();
	if (rs_ksyms_parse(kallsyms, sizeof(kallsyms) - 1, &syms) < 0)
		abort();
	kt = rs_ktab_new(&syms, NULL, 0, "/nonexistent");
	if (!kt)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int ids[] = { 372 };
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
