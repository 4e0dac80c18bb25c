/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's parts: the recording set-up (agent.c) and the --call interposer (call.c). */
#ifndef RELSTACK_AGENT_LOCAL_H
#define RELSTACK_AGENT_LOCAL_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/callexpr.h"
#include "agent/options.h"

struct relstack_recorder;

/*
 * The agent's recorder for one record, or NULL while there is none; every
 * non-NULL return is paired with rs_agent_rec_put().  Async-signal-safe.
 */
struct relstack_recorder *rs_agent_rec_get(void);
void rs_agent_rec_put(void);

/* One --call function: its filter, where its calls go, its counts (call.c, call-filter.c). */
struct rs_call_fields {
	char function[RS_CALL_NAME_MAX + 1];
};

struct rs_call_hook {
	struct rs_call_filter f;
	void *real;
	int event;
	_Atomic uint64_t matched, unmatched;
	struct rs_call_fields fields;
};

extern struct rs_call_hook rs_call_hooks[RS_CALLS_MAX];

/* A thread's counts of unmatched calls, listed while the thread lives (call.c). */
struct rs_call_counts {
	uint64_t unmatched[RS_CALLS_MAX];
	struct rs_call_counts *next;
	int listed;
};
extern __thread struct rs_call_counts rs_call_tls __attribute__((tls_model("initial-exec")));
/* List the calling thread's counts; at its end, add them to the totals and unlist them. */
void rs_call_thread_start(void);
void rs_call_thread_end(void);
/* In a forked child: only the calling thread is left, and counting starts again. */
void rs_call_fork_child(void);
/* Set while the thread records a call: calls made meanwhile are not the program's. */
extern __thread int rs_call_busy __attribute__((tls_model("initial-exec")));

/* Compile the RELSTACK_CALL specifications and define their events.  0 or -errno. */
int rs_call_setup(struct relstack_recorder *rec, const char *specs);
/* Point every loaded object's bindings of the called functions at the interposer. */
void rs_call_patch_all(void);
/* Record each function's counts of matched and unmatched calls. */
void rs_call_counts(struct relstack_recorder *rec);
/* The events again, in a new recorder (a forked child's). */
int rs_call_define(struct relstack_recorder *rec);

/* crash.c: if the crash handler holds @signo, read and set the action it chains to instead. */
int rs_crash_handler_chain(int signo, const struct sigaction *act, struct sigaction *old);

#endif
