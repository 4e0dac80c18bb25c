/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one rule for options structs, libbpf's OPTS_VALID: every options
 * struct starts with `size_t sz`, the size of the struct the caller was
 * compiled with.
 *
 *   - sz must cover sz itself; less is EINVAL;
 *   - a caller compiled against an older header passes a smaller struct:
 *     the fields it does not have read as their defaults;
 *   - a caller compiled against a newer header passes a larger struct:
 *     every byte beyond the struct this library knows must be zero, since
 *     a non-zero one asks for something this library cannot do (EINVAL).
 *
 * NULL options are valid and mean every default.
 */
#ifndef RELSTACK_OPTS_LOCAL_H
#define RELSTACK_OPTS_LOCAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Whether @opts (NULL or starting with size_t sz) may be read by a library whose struct has @lib_sz bytes. */
static inline bool rs_opts_valid(const void *opts, size_t lib_sz)
{
	const unsigned char *p = opts;
	size_t sz;

	if (!opts)
		return true;
	memcpy(&sz, opts, sizeof(sz));
	if (sz < sizeof(size_t))
		return false;
	for (size_t i = lib_sz; i < sz; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * Check @opts and copy the fields the caller has over @dst, which holds
 * the defaults and is @lib_sz bytes.  Returns 0, or -EINVAL with @dst
 * unchanged.
 */
static inline int rs_opts_copy(void *dst, size_t lib_sz, const void *opts)
{
	size_t sz;

	if (!rs_opts_valid(opts, lib_sz))
		return -EINVAL;
	if (!opts)
		return 0;
	memcpy(&sz, opts, sizeof(sz));
	memcpy((char *)dst + sizeof(size_t), (const char *)opts + sizeof(size_t),
	       (sz < lib_sz ? sz : lib_sz) - sizeof(size_t));
	return 0;
}

/* Whether the caller's struct has @field (libbpf's OPTS_HAS). */
#define RS_OPTS_HAS(opts, field) \
	((opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + sizeof((opts)->field))

#endif
