// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Debug files fetched by build-id from debuginfod servers, through
 * libdebuginfod (DEBUGINFOD_URLS names the servers; its cache keeps what
 * was fetched), with bounds libdebuginfod does not give.
 *
 * libdebuginfod waits DEBUGINFOD_TIMEOUT seconds (default 90) for each
 * try and tries three times (DEBUGINFOD_RETRY_LIMIT), for every object:
 * a server that accepts and never answers holds one object for minutes,
 * and then the next.  Here:
 *
 *   - a find whose servers send nothing for DEBUGINFOD_TIMEOUT seconds,
 *     retries included, is cancelled from the progress callback;
 *   - the caller's deadline cancels any find, a download under way too;
 *   - after either, or a find that timed out inside libdebuginfod
 *     (-ETIME), nothing more is asked: the fetcher has given up.
 *
 * libdebuginfod 0.188 takes a cancelled find for "not found" and leaves
 * its mark of that (an empty file) in the cache, which would keep the
 * next run from asking for ten minutes: a cancel of ours removes it.
 *
 * The progress callback is called only while servers are asked, never
 * for a file the cache holds: it says, once per find, what is fetched.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "symfetch.h"

/* libdebuginfod's DEBUGINFOD_TIMEOUT when the environment gives none (debuginfod_find_debuginfo(3)). */
#define DEFAULT_TIMEOUT_S 90

enum stop { GOING, SILENT, DEADLINE };

struct rs_fetch {
	struct rs_fetch_opts o;
	debuginfod_client *client;
	bool given_up;
	/* the find under way, for progress() */
	const char *what;          /* "debuginfo" or "executable" */
	const char *object;
	const uint8_t *build_id;
	size_t build_id_len;
	char *stale_url;           /* the client's URL before the find: not a sign of data */
	uint64_t start_ns, silence_ns;
	time_t start_s;
	bool said;
	enum stop stop;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void rs_hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

__attribute__((format(printf, 3, 4))) static void say(struct rs_fetch *f, bool gave_up, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!f->o.fn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	f->o.fn(line, gave_up, f->o.arg);
}

/* Whether a byte has come: the client names the server it took data from. */
static bool data_came(struct rs_fetch *f, debuginfod_client *c)
{
	const char *url = debuginfod_get_url(c);

	return url && (!f->stale_url || strcmp(url, f->stale_url) != 0);
}

static int progress(debuginfod_client *c, long a, long b)
{
	struct rs_fetch *f = debuginfod_get_user_data(c);
	uint64_t now = now_ns();

	(void)a;
	(void)b;
	if (!f->said) {
		char id[2 * 64 + 1];

		rs_hex(id, f->build_id, f->build_id_len < 64 ? f->build_id_len : 64);
		say(f, false, "%s: fetching its %s from debuginfod (build-id %s)", f->object, f->what, id);
		f->said = true;
	}
	if (f->o.deadline_ns && now >= f->o.deadline_ns) {
		f->stop = DEADLINE;
		return 1;
	}
	if (f->silence_ns && now - f->start_ns >= f->silence_ns && !data_came(f, c)) {
		f->stop = SILENT;
		return 1;
	}
	return 0;
}

struct rs_fetch *rs_fetch_new(const struct rs_fetch_opts *opts)
{
	struct rs_fetch *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (opts)
		f->o = *opts;
	return f;
}

void rs_fetch_free(struct rs_fetch *f)
{
	if (!f)
		return;
	if (f->client)
		debuginfod_end(f->client);
	free(f->stale_url);
	free(f);
}

/* DEBUGINFOD_TIMEOUT in ns, as libdebuginfod reads it (0 or less: no limit). */
static uint64_t silence_ns(void)
{
	const char *env = getenv("DEBUGINFOD_TIMEOUT");
	long s = env ? atol(env) : DEFAULT_TIMEOUT_S;

	return s > 0 ? (uint64_t)s * 1000000000u : 0;
}

/*
 * libdebuginfod's cache directory (debuginfod_find_debuginfo(3)):
 * $DEBUGINFOD_CACHE_PATH, else the old $HOME/.debuginfod_client_cache
 * if it exists, else $XDG_CACHE_HOME/debuginfod_client, else
 * $HOME/.cache/debuginfod_client.
 */
static bool cache_dir(char *out, size_t size)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME"), *xdg;
	struct stat st;

	if (!home)
		home = "/";
	if (env && env[0])
		return snprintf(out, size, "%s", env) < (int)size;
	if (snprintf(out, size, "%s/.debuginfod_client_cache", home) < (int)size && stat(out, &st) == 0)
		return true;
	xdg = getenv("XDG_CACHE_HOME");
	if (xdg && xdg[0])
		return snprintf(out, size, "%s/debuginfod_client", xdg) < (int)size;
	return snprintf(out, size, "%s/.cache/debuginfod_client", home) < (int)size;
}

/* A cancelled find left "not found" in the cache: it was not found out, so the mark goes. */
static void forget_miss(struct rs_fetch *f)
{
	char dir[4096], path[4096 + 2 * 64 + 32], id[2 * 64 + 1];
	struct stat st;

	if (!cache_dir(dir, sizeof(dir)))
		return;
	rs_hex(id, f->build_id, f->build_id_len < 64 ? f->build_id_len : 64);
	if (snprintf(path, sizeof(path), "%s/%s/%s", dir, id, f->what) >= (int)sizeof(path))
		return;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 && st.st_mtime >= f->start_s)
		unlink(path);
}

int rs_fetch_find(struct rs_fetch *f, bool executable, const char *object, const uint8_t *build_id,
		  size_t build_id_len, char **path)
{
	const char *urls = getenv("DEBUGINFOD_URLS"), *url;
	int fd;

	*path = NULL;
	if (!urls || !urls[0])
		return -ENOSYS;
	if (f->given_up)
		return -ECANCELED;
	if (build_id_len < 2 || build_id_len > 64)
		return -EINVAL;
	if (f->o.deadline_ns && now_ns() >= f->o.deadline_ns) {
		f->given_up = true;
		say(f, true, "debuginfod: the time for fetching is over: not asked for %s or any other object",
		    object);
		return -ECANCELED;
	}
	if (!f->client) {
		f->client = debuginfod_begin();
		if (!f->client) {
			f->given_up = true;
			return -ENOMEM;
		}
		debuginfod_set_user_data(f->client, f);
		debuginfod_set_progressfn(f->client, progress);
	}
	free(f->stale_url);
	url = debuginfod_get_url(f->client);
	f->stale_url = url ? strdup(url) : NULL;
	f->what = executable ? "executable" : "debuginfo";
	f->object = object;
	f->build_id = build_id;
	f->build_id_len = build_id_len;
	f->start_ns = now_ns();
	f->start_s = time(NULL);
	f->silence_ns = silence_ns();
	f->said = false;
	f->stop = GOING;
	fd = executable ? debuginfod_find_executable(f->client, build_id, (int)build_id_len, path)
			: debuginfod_find_debuginfo(f->client, build_id, (int)build_id_len, path);
	if (f->stop != GOING) {
		if (fd >= 0) {
			close(fd);
			free(*path);
			*path = NULL;
		} else {
			forget_miss(f);
		}
		f->given_up = true;
		if (f->stop == SILENT)
			say(f, true, "debuginfod: %s sent nothing in %llu s for %s's %s: not asked again", urls,
			    (unsigned long long)(f->silence_ns / 1000000000u), object, f->what);
		else
			say(f, true, "debuginfod: the time for fetching ran out during %s's %s: not asked again",
			    object, f->what);
		return -ETIME;
	}
	if (fd == -ETIME) {
		f->given_up = true;
		say(f, true, "debuginfod: %s timed out for %s's %s: not asked again", urls, object, f->what);
	}
	return fd;
}
