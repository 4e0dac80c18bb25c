// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The demo: a small server that records stacks at named events from
 * several threads, routes requests through a plugin it loads, unloads and
 * loads again, and finally crashes.  Everything it recorded is in FILE,
 * which outlives it; `relstack report FILE` decodes it.
 *
 *   relstack-demo FILE PLUGIN
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <relstack/relstack.h>
#include <relstack/recorder.h>

#include "demo.h"

static struct demo_ctx ctx;
static int (*plugin_filter)(struct demo_ctx *, uint32_t, uint32_t);
static void *plugin;
static uint32_t generation;

struct worker {
	pthread_t thread;
	uint32_t id;
	uint32_t requests;
};

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "relstack-demo: %s: %s\n", what, detail);
	exit(1);
}

static void plugin_event(const char *action)
{
	struct demo_plugin_fields f = { .generation = generation };

	strncpy(f.action, action, sizeof(f.action) - 1);
	relstack_recorder__record(ctx.rec, ctx.ev_plugin, &f, sizeof(f), 0);
}

static void load_plugin(const char *path)
{
	void *sym;

	plugin = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!plugin)
		die(path, dlerror());
	sym = dlsym(plugin, "demo_plugin_filter");
	if (!sym)
		die(path, "no demo_plugin_filter");
	memcpy(&plugin_filter, &sym, sizeof(plugin_filter));
	relstack_objtab__refresh(); /* give the new object its slot now */
	generation++;
	plugin_event("load");
	__asm__ volatile("" ::: "memory"); /* no tail call: keep this frame in the trace */
}

static void unload_plugin(void)
{
	plugin_event("unload");
	plugin_filter = NULL;
	dlclose(plugin);
	relstack_objtab__refresh(); /* its slot turns UNLOADED, and keeps its record */
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) int handle_request(uint32_t worker, uint32_t id)
{
	int r = plugin_filter(&ctx, worker, id);

	__asm__ volatile("" ::: "memory");
	return r;
}

static __attribute__((noinline)) void serve(struct worker *w)
{
	for (uint32_t i = 0; i < w->requests; i++)
		handle_request(w->id, w->id * 100 + i);
	__asm__ volatile("" ::: "memory");
}

static void *worker_main(void *arg)
{
	relstack_recorder__thread_init(); /* this thread's stack range and id, learnt once */
	serve(arg);
	return NULL;
}

static void run_workers(unsigned n, uint32_t requests)
{
	struct worker w[8];

	for (unsigned i = 0; i < n; i++) {
		w[i] = (struct worker){ .id = i + 1, .requests = requests };
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]))
			die("pthread_create", "failed");
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(w[i].thread, NULL);
}

/* The bug the demo ends with: a cache that was never allocated. */
struct cache {
	int *slots;
};

/* Keep the crash path as written, without clones or constant propagation. */
#ifdef __clang__
#define DEMO_AS_WRITTEN __attribute__((noinline))
#else
#define DEMO_AS_WRITTEN __attribute__((noipa))
#endif

static DEMO_AS_WRITTEN void cache_flush(struct cache *c)
{
	c->slots[7] = 0;
	__asm__ volatile("" ::: "memory");
}

static DEMO_AS_WRITTEN void shutdown_server(void)
{
	struct cache c = { NULL };

	cache_flush(&c);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	struct relstack_recorder_opts opts = RELSTACK_RECORDER_OPTS_INIT;
	static const struct relstack_event_field request_fields[] = {
		{ "worker", offsetof(struct demo_request_fields, worker), 4, RELSTACK_FIELD_UNSIGNED },
		{ "request", offsetof(struct demo_request_fields, request), 4, RELSTACK_FIELD_UNSIGNED },
		{ "route", offsetof(struct demo_request_fields, route), 16, RELSTACK_FIELD_STRING },
	};
	static const struct relstack_event_field plugin_fields[] = {
		{ "action", offsetof(struct demo_plugin_fields, action), 8, RELSTACK_FIELD_STRING },
		{ "generation", offsetof(struct demo_plugin_fields, generation), 4, RELSTACK_FIELD_UNSIGNED },
	};
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: relstack-demo FILE PLUGIN\n");
		return 1;
	}
	opts.size = 256 * 1024;
	ctx.rec = relstack_recorder__open(argv[1], &opts);
	if (!ctx.rec)
		die(argv[1], relstack_strerror(-errno));
	ret = relstack_recorder__install_crash_handler(ctx.rec);
	if (ret < 0)
		die("crash handler", relstack_strerror(ret));
	ret = relstack_recorder__define_event(ctx.rec, "request", request_fields, 3,
					      sizeof(struct demo_request_fields));
	if (ret < 0)
		die("request event", relstack_strerror(ret));
	ctx.ev_request = (unsigned)ret;
	ret = relstack_recorder__define_event(ctx.rec, "plugin", plugin_fields, 2,
					      sizeof(struct demo_plugin_fields));
	if (ret < 0)
		die("plugin event", relstack_strerror(ret));
	ctx.ev_plugin = (unsigned)ret;

	load_plugin(argv[2]);
	run_workers(3, 2);
	unload_plugin();
	load_plugin(argv[2]);
	run_workers(2, 1);

	shutdown_server(); /* never returns: SIGSEGV, recorded by the crash handler */
	return 0;
}
