/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symfetch.h - debug files fetched by build-id from debuginfod servers
 * (symfetch.c), within bounds: a silent server is given up after
 * DEBUGINFOD_TIMEOUT seconds, and every find ends at the caller's
 * deadline.  Internal to the decode library.  Nothing here prints: what
 * is fetched, and why fetching stopped, go to the caller's callback.
 */
#ifndef RS_SYMFETCH_H
#define RS_SYMFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rs_fetch_opts {
	/* one line when a download starts, and one when fetching is given up (@gave_up) */
	void (*fn)(const char *line, bool gave_up, void *arg);
	void *arg;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0: none */
};

struct rs_fetch;

/* A fetcher (its libdebuginfod client is made at the first find): NULL for no memory. */
/* @n bytes of @p as lower-case hex digits at @out (2 * @n + 1 bytes): a build-id as debuginfod and .build-id paths spell it. */
void rs_hex(char *out, const uint8_t *p, size_t n);

struct rs_fetch *rs_fetch_new(const struct rs_fetch_opts *opts);
void rs_fetch_free(struct rs_fetch *f);

/*
 * The debug file (or with @executable the executable) of @build_id from
 * the servers DEBUGINFOD_URLS names, for the object @object (its name in
 * the lines said).  Returns an open fd and *path (malloc'd), or -errno:
 * -ENOSYS (no server named), -ENOENT (the servers have none),
 * -ETIME (timed out or ran out of time: the fetcher has given up),
 * -ECANCELED (given up before), or libdebuginfod's other errors.
 */
int rs_fetch_find(struct rs_fetch *f, bool executable, const char *object, const uint8_t *build_id,
		  size_t build_id_len, char **path);

#endif
