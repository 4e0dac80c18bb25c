/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The agent's parts: the recording set-up (agent.c) and the --call interposer (call.c). */
#ifndef RELSTACK_AGENT_LOCAL_H
#define RELSTACK_AGENT_LOCAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct relstack_recorder;

/*
 * The agent's recorder for one record, or NULL while there is none; every
 * non-NULL return is paired with rs_agent_rec_put().  Async-signal-safe.
 */
struct relstack_recorder *rs_agent_rec_get(void);
void rs_agent_rec_put(void);

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
