// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A snapshot of a live process: its objects, then each thread stopped,
 * read and released in turn (threads.c), then each copy walked.
 *
 * The walk is the unwinder's (rs_unwind_walk() with RS_WALK_SNAPSHOT):
 * it reads only the copy, looks objects up in the snapshot's private
 * index, and gives the verdict a capture would.  It starts as a capture
 * from a signal handler's context does, at an interrupted pc
 * (RELSTACK_UNRELIABLE_ASYNC_START unless a CFI row proves the first
 * frame).  The thread's stack is the one mapping holding its stack
 * pointer; nothing is known of an alternate signal stack, so a thread
 * whose handler runs on one walks off it and is not reliable.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/objtab-local.h"
#include "capture/unwind-local.h"
#include "live/live.h"

/* A small /proc file in @buf (rs_read_small()), without its trailing newline; false if it cannot be read. */
static bool read_small(const char *path, char *buf, size_t len)
{
	size_t n = rs_read_small(path, buf, len);

	if (!n)
		return false;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return true;
}

/* The state letter and flags of /proc/PID[/task/TID]/stat, after the command's closing parenthesis. */
static bool stat_of(const char *path, char *state, unsigned long *flags)
{
	char buf[1024], *p;

	if (!read_small(path, buf, sizeof(buf)) || !(p = strrchr(buf, ')')))
		return false;
	/* ") S ppid pgrp session tty tpgid flags" */
	return sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", state, flags) == 2;
}

int rs_live_probe(pid_t pid, char *msg, size_t msglen)
{
	char path[64], state = 0;
	unsigned long flags = 0;
	int fd;

	if (pid <= 0) {
		snprintf(msg, msglen, "process %d: not a process id", (int)pid);
		return -EINVAL;
	}
	if (pid == getpid()) {
		snprintf(msg, msglen, "process %d: is relstack itself", (int)pid);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!stat_of(path, &state, &flags)) {
		snprintf(msg, msglen, "process %d: no such process", (int)pid);
		return -ESRCH;
	}
	if (flags & 0x00200000ul) { /* PF_KTHREAD */
		snprintf(msg, msglen, "process %d: is a kernel thread (no user-space stack)", (int)pid);
		return -EINVAL;
	}
	if (state == 'Z' || state == 'X') {
		snprintf(msg, msglen, "process %d: is a zombie (it has exited; its parent has not reaped it)",
			 (int)pid);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(msg, msglen, "process %d: %s", (int)pid,
			 e == EACCES || e == EPERM ? "permission denied (another user's process?)" : strerror(e));
		return e == EACCES ? -EPERM : -e;
	}
	close(fd);
	return 0;
}

/* The thread ids of @pid, ascending. */
static int list_threads(pid_t pid, pid_t **out, unsigned *n)
{
	char path[64];
	unsigned cap = 0;
	struct dirent *d;
	pid_t *v = NULL;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	*n = 0;
	while ((d = readdir(dir))) {
		if (!isdigit((unsigned char)d->d_name[0]))
			continue;
		if (*n == cap) {
			pid_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*nv));

			if (!nv) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = nv;
		}
		v[(*n)++] = (pid_t)atoi(d->d_name);
	}
	closedir(dir);
	for (unsigned i = 1; i < *n; i++)
		for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
			pid_t t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	*out = v;
	return 0;
}

/* The TracerPid of /proc/PID/status: a process another debugger traces cannot be seized. */
static int tracer_of(pid_t pid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!read_small(path, buf, sizeof(buf)) || !(p = strstr(buf, "\nTracerPid:")))
		return 0;
	return atoi(p + 11);
}

static void walk(const struct rs_live_snapshot *s, struct rs_live_thread *t, void *copy, uintptr_t lo, uintptr_t hi)
{
	struct rs_walk w;

	memset(&w, 0, sizeof(w));
	w.stack = (struct rs_stack_range){ lo, hi };
	w.pc = t->pc;
	w.fp = t->fp;
	w.sp = t->sp;
	w.reasons = RELSTACK_UNRELIABLE_ASYNC_START;
	w.flags = RELSTACK_CAPTURE_ABSOLUTE | RS_WALK_SNAPSHOT;
	w.delta = (intptr_t)((uintptr_t)copy - lo);
	w.latch = s->latch;
	t->n = rs_unwind_walk(&w, t->words, RS_LIVE_WORDS, &t->v);
}

int rs_live_snapshot_take(pid_t pid, const pid_t *tids, unsigned ntids, struct rs_live_snapshot **out, char *msg,
			  size_t msglen)
{
	struct rs_live_snapshot *s;
	pid_t *all = NULL;
	unsigned nall = 0;
	char path[96];
	int e;

	*out = NULL;
	e = rs_live_probe(pid, msg, msglen);
	if (e)
		return e;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(msg, msglen, "process %d: out of memory", (int)pid);
		return -ENOMEM;
	}
	s->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!read_small(path, s->comm, sizeof(s->comm)))
		snprintf(s->comm, sizeof(s->comm), "?");
	e = rs_live_objects_read(s, msg, msglen);
	if (e)
		goto fail;
	e = list_threads(pid, &all, &nall);
	if (e) {
		snprintf(msg, msglen, "process %d: %s", (int)pid,
			 e == -ENOENT ? "exited during the snapshot" : strerror(-e));
		goto fail;
	}
	for (unsigned i = 0; i < ntids; i++) {
		bool found = false;

		for (unsigned j = 0; j < nall && !found; j++)
			found = all[j] == tids[i];
		if (!found) {
			snprintf(msg, msglen, "process %d: has no thread %d", (int)pid, (int)tids[i]);
			e = -ESRCH;
			goto fail;
		}
	}
	s->threads = calloc(ntids ? ntids : nall, sizeof(*s->threads));
	if (!s->threads) {
		e = -ENOMEM;
		snprintf(msg, msglen, "process %d: out of memory", (int)pid);
		goto fail;
	}
	s->nthreads = ntids ? ntids : nall;
	for (unsigned i = 0; i < s->nthreads; i++) {
		struct rs_live_thread *t = &s->threads[i];
		unsigned long flags;

		t->tid = ntids ? tids[i] : all[i];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)t->tid);
		if (!read_small(path, t->name, sizeof(t->name)))
			snprintf(t->name, sizeof(t->name), "?");
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)t->tid);
		if (!stat_of(path, &t->state, &flags))
			t->state = '?';
	}
	/* every thread read first, then walked: no walk makes a thread wait */
	{
		void **copies = calloc(s->nthreads, sizeof(*copies));
		uintptr_t *ranges = calloc(2 * (size_t)s->nthreads, sizeof(*ranges));
		bool changing;

		if (!copies || !ranges) {
			free(copies);
			free(ranges);
			e = -ENOMEM;
			snprintf(msg, msglen, "process %d: out of memory", (int)pid);
			goto fail;
		}
		for (unsigned i = 0; i < s->nthreads && !e; i++)
			e = rs_live_thread_read(s, &s->threads[i], &copies[i], &ranges[2 * i], &ranges[2 * i + 1]);
		/*
		 * Objects loaded or unloaded since they were read: a frame may be
		 * in code the index describes wrongly.  Maps that cannot be read
		 * again (the process exited meanwhile) prove nothing either way.
		 */
		changing = !e && (rs_live_maps_read(s, msg, msglen) != 0 || s->exec_digest_now != s->exec_digest);
		for (unsigned i = 0; i < s->nthreads; i++) {
			if (copies[i] && !e) {
				walk(s, &s->threads[i], copies[i], ranges[2 * i], ranges[2 * i + 1]);
				if (changing)
					s->threads[i].v.reasons |= RELSTACK_UNRELIABLE_OBJECTS_CHANGING;
			}
			free(copies[i]);
		}
		free(copies);
		free(ranges);
		if (e) {
			int tracer = tracer_of(pid);

			if (tracer > 0)
				snprintf(msg, msglen, "process %d: is traced by process %d (a debugger): ptrace refused",
					 (int)pid, tracer);
			else
				snprintf(msg, msglen,
					 "process %d: permission denied (ptrace refused: another user's process, or %s)",
					 (int)pid, "kernel.yama.ptrace_scope");
			goto fail;
		}
	}
	free(all);
	*out = s;
	return 0;
fail:
	free(all);
	rs_live_snapshot_free(s);
	return e;
}

void rs_live_snapshot_free(struct rs_live_snapshot *s)
{
	if (!s)
		return;
	rs_live_objects_free(s);
	free(s->threads);
	free(s);
}
