/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* relstack ps: its options (ps.c); the body is src/live/ps.c. */
#ifndef RELSTACK_TOOL_PS_H
#define RELSTACK_TOOL_PS_H

/* Parse `relstack ps ARGS` (argv[0] is "ps"), run it; returns the exit status. */
int rs_tool_ps(int argc, char **argv);

#endif
