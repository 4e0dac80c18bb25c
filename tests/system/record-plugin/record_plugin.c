// SPDX-License-Identifier: LGPL-2.1-or-later
/* A plugin record_target finds only through its own DT_RUNPATH (test_record.py). */
#include <stdio.h>

int record_plugin_hello(void);
__attribute__((visibility("default"))) int record_plugin_hello(void)
{
	return puts("plugin loaded") < 0;
}
