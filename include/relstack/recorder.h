/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * relstack/recorder.h - the flight recorder: stacks and events into a file
 * that survives the crash of the process writing it.
 *
 * A recorder owns one buffer file, mapped shared.  The file keeps TWO runs:
 * the current one and the one before it.  Opening a recorder starts a new
 * run in the area of the older of the two, so the most recent run (read or
 * not, crashed or closed) stays decodable as the *previous* run, with its
 * own object table and event schemas; the run before that is overwritten.
 *
 * Records are written lock-free from any thread and from signal handlers.
 * A record whose write call returned is in the file, whatever happens to
 * the process afterwards (SIGKILL included); a record cut short by the
 * death of its writer is never accepted by the reader (relstack/reader.h).
 * The data survive the process, not the machine: call
 * relstack_recorder__flush() for that.  A child forked while a recorder
 * is open may go on recording into the same run (the file is shared).
 *
 * docs/format.md, "The buffer file", specifies the file.
 */
#ifndef RELSTACK_RECORDER_H
#define RELSTACK_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include <relstack/entry.h>

#ifdef __cplusplus
extern "C" {
#endif

struct relstack_recorder;
struct relstack_verdict;

enum relstack_recorder_mode {
	RELSTACK_MODE_OVERWRITE = 0, /* flight recorder: the oldest records make room */
	RELSTACK_MODE_STOP = 1,      /* keep the oldest; refuse (and count) records once full */
};

/* relstack_recorder_opts.flags */
#define RELSTACK_RECORDER_ABSOLUTE 0x1u /* allow absolute stacks: the file then holds addresses */
/*
 * Every record carries its words: the run's stack table (docs/format.md) stays
 * empty.  Without it, a relative stack the table holds, or can still take, is
 * stored once and records name it.
 */
#define RELSTACK_RECORDER_NO_STACK_TABLE 0x2u

struct relstack_recorder_opts {
	size_t sz;                        /* sizeof(struct relstack_recorder_opts) */
	uint64_t size;                    /* data ring bytes per run; 0: 1 MiB.  Rounded up to a
					     power of two, 64 KiB .. 1 GiB.  Each run also keeps a
					     stack table of size / 2 bytes.  New files only: an
					     existing file keeps its geometry */
	enum relstack_recorder_mode mode; /* for the new run */
	unsigned flags;                   /* RELSTACK_RECORDER_* */
	unsigned objtab_capacity;         /* object slots persisted per run; 0: 256, at most 1023
					     (with 4-byte entry words: 0: 127, at most 127).
					     New files only.  While the recorder is open, objects
					     beyond it encode as UNKNOWN, so a program with more
					     loaded objects asks for more */
};
#define RELSTACK_RECORDER_OPTS_INIT { .sz = sizeof(struct relstack_recorder_opts) }

/*
 * Open (or create) the buffer file @path and start a new run in it.
 * A new file is created mode 0600, and appears at @path only once whole
 * (an empty file there is replaced the same way); a symbolic link as last
 * component is refused (ELOOP), so is anything but a regular file.  A
 * crash at any point of this call leaves the most recent run whole and
 * the file one the next call opens.  An existing file
 * that is not a relstack buffer (RELSTACK_EMAGIC), of another version
 * (RELSTACK_EVERSION) or damaged (RELSTACK_ECORRUPT) is left untouched.
 * One recorder per file at a time (EBUSY).  @opts may be NULL.  Takes the
 * object table's statedump if nobody has.  Where records can carry the
 * CPU's time stamp counter (docs/format.md, "Record times"), the first
 * open of a process spends 2 ms measuring its rate; later opens reuse it.
 * Returns NULL and sets errno on failure.  Not async-signal-safe.
 */
RELSTACK_API struct relstack_recorder *relstack_recorder__open(const char *path,
								const struct relstack_recorder_opts *opts);

/*
 * End the run (marked closed in the file), unmap and close.  Every writer
 * must have stopped, and a crash handler installed with this recorder is
 * uninstalled first.  Returns 0 or -errno (the run is closed either way).
 */
RELSTACK_API int relstack_recorder__close(struct relstack_recorder *rec);

/* msync(2) the file: the records so far survive a machine crash.  Not async-signal-safe. */
RELSTACK_API int relstack_recorder__flush(struct relstack_recorder *rec);

/* Field types of an event schema (the size is given separately). */
enum relstack_field_type {
	RELSTACK_FIELD_UNSIGNED = 1, /* size 1, 2, 4 or 8 */
	RELSTACK_FIELD_SIGNED = 2,   /* size 1, 2, 4 or 8 */
	RELSTACK_FIELD_HEX = 3,      /* unsigned, shown in hex; size 1, 2, 4 or 8 */
	RELSTACK_FIELD_STRING = 4,   /* fixed char array, NUL-padded */
	RELSTACK_FIELD_BYTES = 5,    /* opaque */
};

#define RELSTACK_EVENT_NAME_MAX 47 /* characters */
#define RELSTACK_FIELD_NAME_MAX 23
#define RELSTACK_EVENT_FIELDS_MAX 16
#define RELSTACK_FIELDS_SIZE_MAX 1024
#define RELSTACK_WORDS_MAX 256

struct relstack_event_field {
	const char *name;
	uint16_t offset; /* in the fields passed to relstack_recorder__record() */
	uint16_t size;
	enum relstack_field_type type;
};

/* Built-in events, defined in every run. */
#define RELSTACK_EVENT_STACK 0u /* a stack, no fields */
#define RELSTACK_EVENT_CRASH 1u /* fields: struct relstack_crash_fields */

struct relstack_crash_fields {
	int32_t signo;
	int32_t code;    /* si_code */
	int32_t errno_;  /* si_errno */
	uint32_t pid;    /* si_pid for a signal sent by a process */
	uint64_t addr;   /* si_addr of a fault; withheld (0 + RELSTACK_CRASH_ADDR_HIDDEN) above 64 KiB
			    unless the run may hold addresses */
	uint64_t flags;  /* RELSTACK_CRASH_* */
};
#define RELSTACK_CRASH_ADDR_HIDDEN 0x1u /* addr withheld: the run holds no addresses */

/*
 * Define an event: @name (unique in the run), @n fields within
 * @fields_size bytes.  The schema is stored in the file, so readers decode
 * the fields without this program.  Returns the event id (>= 2) or
 * -EINVAL (bad name, field beyond fields_size, bad type/size), -EEXIST
 * (name defined with another layout), -ENOSPC (64 schemas per run).
 * Defining the same event again returns its id.  Not async-signal-safe.
 */
RELSTACK_API int relstack_recorder__define_event(struct relstack_recorder *rec, const char *name,
						 const struct relstack_event_field *fields, unsigned n,
						 size_t fields_size);

/* relstack_recorder__record*() flags */
#define RELSTACK_RECORD_ABSOLUTE 0x1u /* absolute addresses (needs RELSTACK_RECORDER_ABSOLUTE) */
#define RELSTACK_RECORD_NO_STACK 0x2u /* fields only */
/*
 * Outside signal handlers only: if a frame lies in no object the table
 * knows (a library dlopen'd since the last scan), re-scan the loaded
 * objects and capture again.  The re-scan takes a lock and makes system
 * calls, but only when the loader's counters show a change.
 */
#define RELSTACK_RECORD_RESCAN 0x4u
/*
 * relstack_recorder__write() only: the first word is an interrupted
 * instruction (relstack_capture_context()'s first word), not a return
 * address, so a decoder names it at the address itself.
 * relstack_recorder__record_context() says so by itself.
 */
#define RELSTACK_RECORD_INTERRUPTED 0x8u

/*
 * Record the calling thread's stack, from the caller of this function
 * outwards, as event @event_id, with @fields_size bytes of @fields (the
 * event's schema says what they are).
 * Async-signal-safe without RELSTACK_RECORD_RESCAN: no lock, no
 * allocation, no system call (see relstack_recorder__thread_init() for the
 * thread's first record), bounded work, errno preserved.  Returns 0, or a
 * negative errno, the record then counted as lost: -ENOSPC (stop mode: full; overwrite mode: the next
 * chunks all had a writer inside a record), -E2BIG (@fields_size is not the
 * event's size), -ENOENT (event not defined), -EPERM (absolute stack not
 * allowed), -EINVAL (unknown flags, NULL fields).
 */
RELSTACK_API int relstack_recorder__record(struct relstack_recorder *rec, unsigned event_id,
					   const void *fields, size_t fields_size, unsigned flags);

/* The same for the context a signal handler received (its third argument). */
RELSTACK_API int relstack_recorder__record_context(struct relstack_recorder *rec, const void *ucontext,
						   unsigned event_id, const void *fields, size_t fields_size,
						   unsigned flags);

/*
 * Record entry words the caller already has (from relstack_capture() or a
 * foreign source), made in object table epoch @v->epoch with verdict @v.
 * @words are absolute addresses if @flags has RELSTACK_RECORD_ABSOLUTE.
 * Async-signal-safe like relstack_recorder__record().
 */
RELSTACK_API int relstack_recorder__write(struct relstack_recorder *rec, unsigned event_id,
					  const uint64_t *words, size_t n, const struct relstack_verdict *v,
					  const void *fields, size_t fields_size, unsigned flags);

/*
 * Prepare the calling thread for recording: the unwinder learns its stack
 * (relstack_thread_register()), and its thread id is read now, so that no
 * later record of this thread makes a system call (the first record
 * otherwise calls gettid(2) once).  Call it at the start of every thread
 * that records.  Not async-signal-safe.  Returns 0 or -errno.
 */
RELSTACK_API int relstack_recorder__thread_init(void);

/*
 * The crash handler.  On SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT it
 * records the faulting context's stack with its verdict as a
 * RELSTACK_EVENT_CRASH event (struct relstack_crash_fields), on an
 * alternate signal stack, then gives the signal to the handler that was
 * installed before (or the default action), so the signal takes its
 * course: the process still dumps core or dies as it would have.
 * The alternate stack is set up for the calling thread (unless it has
 * one); other threads get theirs with relstack_crash_handler__thread_init()
 * (a fault on a thread without one is still recorded, unless its stack
 * overflowed; the 64 KiB stack it maps stays mapped when the thread ends).
 * One recorder at a time.  Returns 0 or -errno (-EBUSY if installed
 * already).  Not async-signal-safe.
 */
RELSTACK_API int relstack_recorder__install_crash_handler(struct relstack_recorder *rec);
RELSTACK_API int relstack_crash_handler__thread_init(void);
/* Restore the handlers that were there before.  0, or -ENOENT if none was installed. */
RELSTACK_API int relstack_crash_handler__uninstall(void);

#ifdef __cplusplus
}
#endif
#endif
