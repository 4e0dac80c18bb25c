/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kfiles.h - the files of a kernel fixture tree (a tracefs output
 * directory, a /sys and /proc root) written by the kernel part's tests:
 * each write must succeed (cmocka asserts), parents are made on the way.
 */
#ifndef RS_KFILES_H
#define RS_KFILES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

/* @rel under @root, with its missing parent directories, holding @len bytes of @data. */
static inline void kfix_put(const char *root, const char *rel, const void *data, size_t len)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0700);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static inline void kfix_put_text(const char *root, const char *rel, const char *text)
{
	kfix_put(root, rel, text, strlen(text));
}

#endif
