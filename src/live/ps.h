/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `relstack ps`: the command's body (ps.c), given its parsed options. */
#ifndef RELSTACK_LIVE_PS_H
#define RELSTACK_LIVE_PS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define RS_PS_MAX 64

/* The check's answers, which are the command's exit statuses. */
#define RS_PS_SAFE 0        /* no thread inside, every stack reliable */
#define RS_PS_INSIDE 3      /* some thread is inside a given function or object */
#define RS_PS_CANNOT_TELL 4 /* some thread's stack cannot be trusted */

enum rs_ps_format { RS_PS_TEXT = 0, RS_PS_JSON, RS_PS_FOLDED };

struct rs_ps_opts {
	pid_t pid;
	pid_t tids[RS_PS_MAX]; /* only these threads, if ntids > 0 */
	unsigned ntids;
	enum rs_ps_format format;
	const char *checks[RS_PS_MAX]; /* FUNCTION, OBJECT:FUNCTION or OBJECT */
	unsigned nchecks;
	double wait_seconds; /* retry the check until safe or this long */
	bool lines;          /* file:line of each frame */
	const char *output;  /* also record the (last) snapshot into this buffer file, or NULL */
};

/*
 * Snapshot @o->pid, print its threads (or the check) on @out.  Returns
 * an RS_PS_* status (RS_PS_SAFE without checks), or -errno with a
 * one-line @msg naming the process and the problem.
 */
int rs_live_ps(const struct rs_ps_opts *o, FILE *out, char *msg, size_t msglen);

#endif
