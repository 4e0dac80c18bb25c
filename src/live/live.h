/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Snapshots of live processes, for `relstack ps`: internal interface of
 * src/live/ (objects.c, threads.c, snapshot.c, ps.c).
 *
 * A snapshot is taken in two steps.  First the process's objects, from
 * /proc/PID/maps: each executable file mapping's file is opened through
 * /proc/PID/map_files (the very file mapped, in whatever mount namespace)
 * or /proc/PID/root, mapped here read-only at its segments' relative
 * positions, and its CFI table compiled and rebased to where the process
 * has it; the vDSO is copied from the process.  They make a private
 * object index.  Then each thread in turn is seized and interrupted
 * (ptrace: the process sees no SIGSTOP), its registers and the stack
 * from below its stack pointer up to the top of the mapping that holds
 * it are read, and it is released at once; its copy is walked afterwards
 * by the unwinder's own walk over a snapshot (RS_WALK_SNAPSHOT), with the
 * same verdict rules as a live capture.  No thread stays stopped while
 * another is read or while anything is walked.
 *
 * Errors: int functions return 0 or -errno and fill a one-line message
 * naming the process or thread; nothing here prints.
 */
#ifndef RELSTACK_LIVE_H
#define RELSTACK_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "relstack/entry.h"
#include "relstack/unwind.h"

struct rs_cfi_table;
struct rs_latch;

/* Words kept per thread: a deeper stack is TRUNCATED, as a capture's. */
#define RS_LIVE_WORDS 512

/* One object of the process: an ELF file mapped executable, or the vDSO. */
struct rs_live_object {
	struct relstack_object obj; /* path as the process names it, build-id, text segment */
	char open_path[4096];       /* where this process found its file (the symbolizer's path) */
	uintptr_t start, end;       /* its executable span in the process */
	uintptr_t bias;             /* its load bias in the process */
	uintptr_t restorer;         /* its signal-return trampoline there, or 0 */
	struct rs_cfi_table *cfi;   /* rebased to bias, or NULL */
	const char *problem;        /* why it is left out of the index (its frames are unknown text), or NULL */
};

/* A mapping of /proc/PID/maps. */
struct rs_live_map {
	uintptr_t start, end;
	bool exec;
};

struct rs_live_thread {
	pid_t tid;
	char name[64];     /* /proc/PID/task/TID/comm */
	char state;        /* its state letter before the snapshot (R, S, D, T, t) */
	int err;           /* 0: read; -ESRCH: it ended meanwhile; else why it could not be read */
	const char *what;  /* the step that failed ("attach", "stop", "registers", "stack"), or NULL */
	uintptr_t pc, sp, fp;
	uint64_t words[RS_LIVE_WORDS]; /* absolute addresses and markers (RELSTACK_CAPTURE_ABSOLUTE) */
	size_t n;
	struct relstack_verdict v;
	uint64_t stopped_ns; /* from the interrupt to the release */
	size_t stack_bytes;  /* bytes of stack copied */
};

struct rs_live_snapshot {
	pid_t pid;
	char comm[64];
	struct rs_live_object *objects;
	unsigned nobjects;
	struct rs_live_map *maps;
	unsigned nmaps;
	struct rs_live_thread *threads;
	unsigned nthreads;
	struct rs_latch *latch; /* the private index of objects[] */
	/*
	 * A digest of the executable mappings the objects were read from, and
	 * of those the last rs_live_maps_read() saw: when they differ, objects
	 * came or went during the snapshot.
	 */
	uint64_t exec_digest, exec_digest_now;
};

/*
 * Check that @pid is a process whose threads can be snapshot: one that
 * exists, is not a zombie nor a kernel thread nor this process.  Returns
 * 0, or -ESRCH, -EPERM, -EINVAL (zombie, kernel thread, this process)
 * with @msg saying which.
 */
int rs_live_probe(pid_t pid, char *msg, size_t msglen);

/* maps.c: one line of /proc/PID/maps. */
struct rs_live_map_line {
	uintptr_t start, end, off;
	char perms[5];
	unsigned major, minor;
	unsigned long ino;
	const char *path; /* into the line; "" for anonymous memory */
};

/* A whole /proc file, NUL-terminated (malloc'd); NULL with errno set. */
char *rs_live_read_file(const char *path, size_t *len);
/* Parse one line; false for a line that is not a mapping. */
bool rs_live_map_line_parse(const char *line, struct rs_live_map_line *m);
/* FNV-1a over a line, to tell whether the executable mappings changed. */
#define RS_LIVE_DIGEST_START 0xcbf29ce484222325ull
uint64_t rs_live_digest_line(uint64_t h, const char *line);
/* Every mapping of the text @buf (cut into lines in place), and the digest of the executable ones.  0 or -ENOMEM. */
int rs_live_maps_parse(char *buf, struct rs_live_map **out, unsigned *n, uint64_t *digest);

/* objects.c: read /proc/PID/maps into s->maps, s->objects and the private index. */
int rs_live_objects_read(struct rs_live_snapshot *s, char *msg, size_t msglen);
/* maps.c: re-read only s->maps and exec_digest_now (a thread's stack created after the first read). */
int rs_live_maps_read(struct rs_live_snapshot *s, char *msg, size_t msglen);
void rs_live_objects_free(struct rs_live_snapshot *s);
/* The object whose executable span holds @addr, or NULL. */
const struct rs_live_object *rs_live_object_at(const struct rs_live_snapshot *s, uintptr_t addr);

/*
 * threads.c: stop, read and release thread @t->tid of @s->pid; the stack
 * copy is returned in *@copy (malloc'd, @*lo its first address) for the
 * walk.  Per-thread failures are left in @t (err, what); returns -EPERM
 * only when ptrace is refused, which holds for every thread.
 */
int rs_live_thread_read(struct rs_live_snapshot *s, struct rs_live_thread *t, void **copy, uintptr_t *lo,
			uintptr_t *hi);

/*
 * snapshot.c: the whole snapshot of @pid, or of the threads @tids
 * (@ntids > 0) only.  0 or -errno with @msg.
 */
int rs_live_snapshot_take(pid_t pid, const pid_t *tids, unsigned ntids, struct rs_live_snapshot **out, char *msg,
			  size_t msglen);
void rs_live_snapshot_free(struct rs_live_snapshot *s);

/*
 * record.c: @s recorded into the buffer file @path as a run of its own, a
 * "thread" event per thread read (tid, stack_bytes, stopped_ns, name,
 * state) with its verdict, relative to the run's object table of @s's
 * objects.  0 or -errno with @msg.
 */
int rs_live_record(const struct rs_live_snapshot *s, const char *path, char *msg, size_t msglen);

#endif
