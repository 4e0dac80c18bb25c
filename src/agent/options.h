/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's settings: environment variables, so that the agent works
 * under `relstack record` and without it (a service unit, a container).
 * `relstack record` sets them from its options; docs/relstack.1 lists them.
 */
#ifndef RELSTACK_AGENT_OPTIONS_H
#define RELSTACK_AGENT_OPTIONS_H

#define RS_ENV_OUTPUT "RELSTACK_OUTPUT"       /* directory of the buffer files */
#define RS_ENV_SIZE "RELSTACK_SIZE"           /* data ring bytes per run */
#define RS_ENV_SAMPLE "RELSTACK_SAMPLE"       /* sampler frequency, Hz of CPU time per thread */
#define RS_ENV_ON_SIGNAL "RELSTACK_ON_SIGNAL" /* signal that makes every thread record its stack */
#define RS_ENV_CALL "RELSTACK_CALL"           /* --call specifications, one per line */
#define RS_DEFAULT_OUTPUT "relstack-record"    /* in the working directory */
#define RS_SAMPLE_MAX 100000
#define RS_CALLS_MAX 16                        /* one interposer stub each */

/* The signal named @s ("USR1", "SIGUSR1", "10"), or 0. */
int rs_agent_signal_parse(const char *s);

#endif
