// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The demo's plugin: the demo dlopens it, routes requests through it,
 * unloads it and loads it again.  Stacks recorded while it is loaded run
 * through its functions, so the report has frames in an object that was
 * unloaded before the crash.
 */
#include <stdint.h>
#include <string.h>

#include <relstack/relstack.h>
#include <relstack/recorder.h>

#include "demo.h"

#define PLUGIN_API __attribute__((visibility("default")))

PLUGIN_API int demo_plugin_filter(struct demo_ctx *ctx, uint32_t worker, uint32_t id);

static __attribute__((noinline)) int plugin_check_quota(struct demo_ctx *ctx, uint32_t worker, uint32_t id)
{
	struct demo_request_fields f = { .worker = worker, .request = id };

	strncpy(f.route, id % 2 ? "/api/items" : "/api/users", sizeof(f.route) - 1);
	relstack_recorder__record(ctx->rec, ctx->ev_request, &f, sizeof(f), 0);
	__asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
	return (int)(id % 3);
}

static __attribute__((noinline)) int plugin_authorize(struct demo_ctx *ctx, uint32_t worker, uint32_t id)
{
	int r = plugin_check_quota(ctx, worker, id);

	__asm__ volatile("" ::: "memory");
	return r;
}

int demo_plugin_filter(struct demo_ctx *ctx, uint32_t worker, uint32_t id)
{
	int r = plugin_authorize(ctx, worker, id);

	__asm__ volatile("" ::: "memory");
	return r;
}
