/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * relstack - reliable, relocatable stack traces on Linux.
 *
 * Conventions: int functions return 0 (or a count) on success and a
 * negative errno, or a negative RELSTACK_E* code, on failure;
 * relstack_strerror() names either.  Pointer functions return NULL and set
 * errno.  Functions marked async-signal-safe take no lock, allocate
 * nothing, make no system call and preserve errno.
 *
 * Options structs (struct relstack_*_opts) start with `size_t sz`, set to
 * sizeof the struct the caller was compiled with, and follow one rule
 * everywhere: sz smaller than sz itself is EINVAL; fields an older
 * caller's struct lacks take their defaults; a newer caller's struct may
 * be larger only if every byte beyond the fields this library knows is
 * zero, otherwise EINVAL.  NULL options mean every default.
 */
#ifndef RELSTACK_RELSTACK_H
#define RELSTACK_RELSTACK_H

#include <relstack/entry.h>
#include <relstack/unwind.h>
#include <relstack/recorder.h>
#include <relstack/reader.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes beyond errno (returned negated). */
enum {
	RELSTACK_EFORMAT = 1000, /* malformed format descriptor */
	RELSTACK_ECORRUPT,       /* corrupt data */
	RELSTACK_EVERSION,       /* unsupported format version */
	RELSTACK_EMAGIC,         /* not a relstack file */
	RELSTACK_EBUILDID,       /* build-id mismatch */
	RELSTACK_ENOSYMBOLS,     /* no symbols found */
	RELSTACK_ETRUNCATED,     /* file shorter than its header says */
};

RELSTACK_API const char *relstack_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
