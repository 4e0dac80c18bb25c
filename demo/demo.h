/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the demo program and its plugin share. */
#ifndef RELSTACK_DEMO_H
#define RELSTACK_DEMO_H

#include <stdint.h>

struct relstack_recorder;

struct demo_ctx {
	struct relstack_recorder *rec;
	unsigned ev_request;
	unsigned ev_plugin;
};

/* Fields of the "request" event. */
struct demo_request_fields {
	uint32_t worker;
	uint32_t request;
	char route[16];
};

/* Fields of the "plugin" event. */
struct demo_plugin_fields {
	char action[8];
	uint32_t generation;
	uint32_t reserved;
};

#endif
