/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kfixture.h - a kernel for tests and fuzzing of the kernel part: the
 * formats of sched_switch and kernel_stack as the kernel gives them, and
 * a kallsyms text with the functions a verdict looks for.  The addresses
 * are those of the kernel the fuzz seed pages were captured on.  Then
 * the two events of linux/patches: kernel_stack_rel (relative words and
 * the layout that explains them) and the module-load event.
 */
#ifndef RS_KFIXTURE_H
#define RS_KFIXTURE_H

#include <stdlib.h>

#include <traceevent/event-parse.h>

#define KFIX_SCHED_SWITCH_ID 372
#define KFIX_KERNEL_STACK_ID 4
#define KFIX_KERNEL_STACK_REL_ID 13
#define KFIX_MODULE_TEXT_REL_ID 500

/* The fields every event starts with, and the blank line that ends them. */
#define KFIX_COMMON_FIELDS                                                           \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"           \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"           \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"   \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"                       \
	"\n"

static const char kfix_sched_switch_format[] =
	"name: sched_switch\n"
	"ID: 372\n"
	"format:\n"
	KFIX_COMMON_FIELDS
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"prev_pid=%d next_pid=%d\", REC->prev_pid, REC->next_pid\n";

static const char kfix_kernel_stack_format[] =
	"name: kernel_stack\n"
	"ID: 4\n"
	"format:\n"
	KFIX_COMMON_FIELDS
	"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
	"\n"
	"print fmt: \"\\t=> %ps\\n\", (void *)REC->caller[0]\n";

static const char kfix_kernel_stack_rel_format[] =
	"name: kernel_stack_rel\n"
	"ID: 13\n"
	"format:\n"
	KFIX_COMMON_FIELDS
	"\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
	"\tfield:unsigned char reliable;\toffset:12;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char module_bit;\toffset:13;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char index_shift;\toffset:14;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char index_bits;\toffset:15;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
	"\n"
	"print fmt: \"\\t=> %lx\\n\", REC->caller[0]\n";

/* Its fields, for pages made by hand. */
#define KFIX_REL_SIZE 8
#define KFIX_REL_RELIABLE 12
#define KFIX_REL_MODULE_BIT 13
#define KFIX_REL_INDEX_SHIFT 14
#define KFIX_REL_INDEX_BITS 15
#define KFIX_REL_CALLER 16

static const char kfix_module_text_rel_format[] =
	"name: module_text_rel\n"
	"ID: 500\n"
	"format:\n"
	KFIX_COMMON_FIELDS
	"\tfield:unsigned int index;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:1;\n"
	"\tfield:__data_loc u8[] build_id;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int text_size;\toffset:20;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc char[] sections;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"%u %s\", REC->index, __get_str(name)\n";

/* The kernel the seed pages came from: its text and the functions a verdict looks for. */
static const char kfix_kallsyms[] =
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

/* A parser that knows the four events. */
static inline struct tep_handle *kfix_tep(void)
{
	struct tep_handle *tep = tep_alloc();
	struct tep_event *ev;

	tep_set_long_size(tep, 8);
	tep_set_page_size(tep, 4096);
	if (tep_parse_format(tep, &ev, kfix_sched_switch_format, sizeof(kfix_sched_switch_format) - 1, "sched") ||
	    tep_parse_format(tep, &ev, kfix_kernel_stack_format, sizeof(kfix_kernel_stack_format) - 1, "ftrace") ||
	    tep_parse_format(tep, &ev, kfix_kernel_stack_rel_format, sizeof(kfix_kernel_stack_rel_format) - 1,
			     "ftrace") ||
	    tep_parse_format(tep, &ev, kfix_module_text_rel_format, sizeof(kfix_module_text_rel_format) - 1,
			     "module"))
		abort();
	return tep;
}

#endif
