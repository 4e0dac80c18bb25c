// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The record calls: capture, encode, write.  Async-signal-safe throughout
 * (see ring-write.c for the one system call of a thread's first record):
 * the stack words live on the caller's stack, the schemas are read
 * without a lock (a schema is published before its id is returned), and
 * errno is preserved.
 */
#include <errno.h>
#include <stdatomic.h>

#include "relstack/relstack.h"
#include "ring/recorder-local.h"

static int check_event(struct relstack_recorder *rec, unsigned event_id, size_t fields_size)
{
	if (event_id >= RS_SCHEMAS ||
	    atomic_load_explicit((_Atomic uint32_t *)&rec->schemas[event_id].seq, memory_order_acquire) != 2)
		return -ENOENT;
	if (fields_size != rec->schema_size[event_id])
		return -E2BIG;
	return 0;
}

static int refuse(struct relstack_recorder *rec, int err)
{
	atomic_fetch_add_explicit((_Atomic uint64_t *)&rec->run->lost, 1, memory_order_relaxed);
	return err;
}

static int put_as(struct relstack_recorder *rec, unsigned event_id, const uint64_t *words, size_t n,
		  uint32_t reasons, uint64_t epoch, const void *fields, size_t fields_size, unsigned flags,
		  bool tid_given, uint32_t tid)
{
	struct rs_rec_in in = {
		.kind = (flags & RELSTACK_RECORD_NO_STACK) ? RS_REC_EVENT :
			(flags & RELSTACK_RECORD_ABSOLUTE) ? RS_REC_STACK_ABS : RS_REC_STACK_REL,
		.flags = (flags & RELSTACK_RECORD_INTERRUPTED) && n && !(flags & RELSTACK_RECORD_NO_STACK) ?
				 RS_REC_F_INTERRUPTED : 0,
		.event_id = (uint16_t)event_id,
		.reasons = reasons,
		.epoch = epoch,
		.words = words,
		.nwords = (flags & RELSTACK_RECORD_NO_STACK) ? 0 : n,
		.fields = fields,
		.fields_size = fields_size,
		.tid_given = tid_given,
		.tid = tid,
	};

	/* a relative stack the run's table holds, or now takes, is named, not copied (stacktab.c) */
	if (in.kind == RS_REC_STACK_REL && in.nwords && rec->ring.stacks.head) {
		in.ref = rs_stacktab_ref(&rec->ring, words, n);
		if (in.ref)
			in.kind = RS_REC_STACK_REF;
	}
	return rs_ring_write(&rec->ring, &in);
}

static inline int put(struct relstack_recorder *rec, unsigned event_id, const uint64_t *words, size_t n,
		      uint32_t reasons, uint64_t epoch, const void *fields, size_t fields_size, unsigned flags)
{
	return put_as(rec, event_id, words, n, reasons, epoch, fields, fields_size, flags, false, 0);
}

static inline __attribute__((always_inline)) int precheck(struct relstack_recorder *rec, unsigned event_id, const void *fields,
		    size_t fields_size, unsigned flags)
{
	int ret;

	if (!rec)
		return -EINVAL;
	if (flags & ~(RELSTACK_RECORD_ABSOLUTE | RELSTACK_RECORD_NO_STACK | RELSTACK_RECORD_RESCAN |
		      RELSTACK_RECORD_INTERRUPTED))
		return refuse(rec, -EINVAL);
	if ((flags & RELSTACK_RECORD_ABSOLUTE) && !(rec->flags & RELSTACK_RECORDER_ABSOLUTE))
		return refuse(rec, -EPERM);
	if (fields_size && !fields)
		return refuse(rec, -EINVAL);
	ret = check_event(rec, event_id, fields_size);
	return ret < 0 ? refuse(rec, ret) : 0;
}

__attribute__((noinline))
int relstack_recorder__record(struct relstack_recorder *rec, unsigned event_id, const void *fields,
			      size_t fields_size, unsigned flags)
{
	uint64_t words[RS_MAX_WORDS];
	struct relstack_verdict v = { 0 };
	int saved = errno, ret, n = 0;

	ret = precheck(rec, event_id, fields, fields_size, flags);
	if (ret < 0)
		goto out;
	if (!(flags & RELSTACK_RECORD_NO_STACK)) {
		/* skip 1: the first word is the return address into our caller, not into us */
		n = relstack_capture(words, RS_MAX_WORDS, 1,
				     (flags & RELSTACK_RECORD_ABSOLUTE) ? RELSTACK_CAPTURE_ABSOLUTE : 0, &v);
		/*
		 * An object loaded since the last scan, or one the table could not
		 * vouch for (no pin yet, or a dlclose under way): scan, pin, and
		 * capture again from here.  What is still in doubt after that stays
		 * in the verdict.
		 */
		if (rs_unlikely((flags & RELSTACK_RECORD_RESCAN) &&
				(v.reasons & (RELSTACK_UNRELIABLE_UNKNOWN_TEXT | RELSTACK_UNRELIABLE_OBJECTS_CHANGING))) &&
		    (relstack_objtab__refresh() > 0 || (v.reasons & RELSTACK_UNRELIABLE_OBJECTS_CHANGING)))
			n = relstack_capture(words, RS_MAX_WORDS, 1,
					     (flags & RELSTACK_RECORD_ABSOLUTE) ? RELSTACK_CAPTURE_ABSOLUTE : 0, &v);
		if (n < 0)
			n = 0;
	}
	ret = put(rec, event_id, words, (size_t)n, v.reasons, v.epoch, fields, fields_size, flags);
out:
	errno = saved;
	return ret;
}

int relstack_recorder__record_context(struct relstack_recorder *rec, const void *ucontext, unsigned event_id,
				      const void *fields, size_t fields_size, unsigned flags)
{
	uint64_t words[RS_MAX_WORDS];
	struct relstack_verdict v = { 0 };
	int saved = errno, ret, n = 0;

	ret = precheck(rec, event_id, fields, fields_size, flags);
	if (ret < 0)
		goto out;
	if (!ucontext) {
		ret = refuse(rec, -EINVAL);
		goto out;
	}
	if (!(flags & RELSTACK_RECORD_NO_STACK)) {
		n = relstack_capture_context(ucontext, words, RS_MAX_WORDS,
					     (flags & RELSTACK_RECORD_ABSOLUTE) ? RELSTACK_CAPTURE_ABSOLUTE : 0, &v);
		if (n < 0)
			n = 0;
	}
	ret = put(rec, event_id, words, (size_t)n, v.reasons, v.epoch, fields, fields_size,
		  flags | RELSTACK_RECORD_INTERRUPTED);
out:
	errno = saved;
	return ret;
}

static int write_as(struct relstack_recorder *rec, unsigned event_id, const uint64_t *words, size_t n,
		    const struct relstack_verdict *v, const void *fields, size_t fields_size, unsigned flags,
		    bool tid_given, uint32_t tid)
{
	/* errno needs no saving here: nothing below sets it (gettid(2) cannot fail, nor can the clock read) */
	int ret = precheck(rec, event_id, fields, fields_size, flags);

	if (ret == 0 && n && !words)
		ret = refuse(rec, -EINVAL);
	if (ret == 0)
		ret = put_as(rec, event_id, words, n, v ? v->reasons : 0, v ? v->epoch : 0, fields, fields_size,
			     flags, tid_given, tid);
	return ret;
}

int relstack_recorder__write(struct relstack_recorder *rec, unsigned event_id, const uint64_t *words, size_t n,
			     const struct relstack_verdict *v, const void *fields, size_t fields_size,
			     unsigned flags)
{
	return write_as(rec, event_id, words, n, v, fields, fields_size, flags, false, 0);
}

int rs_recorder_write_tid(struct relstack_recorder *rec, uint32_t tid, unsigned event_id, const uint64_t *words,
			  size_t n, const struct relstack_verdict *v, const void *fields, size_t fields_size,
			  unsigned flags)
{
	return write_as(rec, event_id, words, n, v, fields, fields_size, flags, true, tid);
}
