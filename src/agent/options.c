// SPDX-License-Identifier: LGPL-2.1-or-later
/* Signal names for --on-signal, read by `relstack record` and by the agent. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/options.h"

int rs_agent_signal_parse(const char *s)
{
	char *end;
	long n;

	if (!strncmp(s, "SIG", 3))
		s += 3;
	n = strtol(s, &end, 10);
	if (end != s && !*end)
		return n > 0 && n < NSIG && n != SIGKILL && n != SIGSTOP ? (int)n : 0;
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		const char *abbrev = sigabbrev_np(sig);

		if (abbrev && !strcmp(abbrev, s) && sig != SIGKILL && sig != SIGSTOP)
			return sig;
	}
	return 0;
}
