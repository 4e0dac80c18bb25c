// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's module table, as the relative-stacktrace patches publish
 * it (the module_table file of a tracefs instance, and the module-load
 * event's fields): per module its index in relative words, name,
 * build-id, core text size and the offsets of the executable sections of
 * its core text.  No address.  The text is hostile input: every item is
 * checked, and the first that is wrong is named with its line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"
#include "relstack-local.h"

#define ITEM_MAX 128

/* A hex number, with or without 0x, below 2^60: 0, or -EINVAL. */
static int parse_hex(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		int d = rs_hexval(*s);

		if (d < 0 || v >> 56)
			return -EINVAL;
		v = v << 4 | (unsigned)d;
	}
	*out = v;
	return 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= RS_KMODNAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '-'))
			return false;
	return true;
}

int rs_ksections_check(const char *sections, uint64_t text_size, char *err, size_t errsz)
{
	const char *p = sections;
	char seen[RS_KSECTIONS_MAX];
	size_t nseen = 0;

	if (strlen(sections) >= RS_KSECTIONS_MAX) {
		snprintf(err, errsz, "sections: longer than %d bytes", RS_KSECTIONS_MAX - 1);
		return -EINVAL;
	}
	while (*p) {
		char item[ITEM_MAX], *eq;
		size_t len = strcspn(p, " \t");
		uint64_t off;

		if (!len) {
			p++;
			continue;
		}
		if (len >= sizeof(item)) {
			snprintf(err, errsz, "section item '%.20s...' is too long", p);
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		p += len;
		eq = strchr(item, '=');
		if (item[0] != '.' || !eq || eq == item + 1) {
			snprintf(err, errsz, "section item '%s': expected .SECTION=OFFSET", item);
			return -EINVAL;
		}
		*eq = '\0';
		if (parse_hex(eq + 1, &off) < 0 || off >= text_size) {
			snprintf(err, errsz, "section %s: offset '%s' is not a hex number below the text size 0x%" PRIx64,
				 item, eq + 1, text_size);
			return -EINVAL;
		}
		/* seen: the names so far, each followed by a space */
		for (size_t k = 0; k < nseen;) {
			size_t l = strlen(seen + k);

			if (!strcmp(seen + k, item)) {
				snprintf(err, errsz, "section %s is listed twice", item);
				return -EINVAL;
			}
			k += l + 1;
		}
		memcpy(seen + nseen, item, strlen(item) + 1);
		nseen += strlen(item) + 1;
	}
	return 0;
}

/* One line's module: 0, or -EINVAL with what is wrong. */
static int parse_line(char *line, struct rs_kmodule *m, char *err, size_t errsz)
{
	char *tok[5], *save = NULL, *rest;
	unsigned long long idx;
	uint64_t size;
	char *end;
	size_t bl;

	for (int i = 0; i < 5; i++) {
		tok[i] = strtok_r(i ? NULL : line, " \t", &save);
		if (!tok[i]) {
			snprintf(err, errsz, "expected INDEX NAME BUILD_ID TEXT_SIZE STATE, found %d items", i);
			return -EINVAL;
		}
	}
	rest = strtok_r(NULL, "", &save);
	memset(m, 0, sizeof(*m));
	errno = 0;
	idx = strtoull(tok[0], &end, 10);
	if (*end || end == tok[0] || tok[0][0] == '-' || idx >= (1ull << RS_KREL_INDEX_BITS_MAX) - 1) {
		snprintf(err, errsz, "index '%s' is not a module index (0..%u)", tok[0],
			 (1u << RS_KREL_INDEX_BITS_MAX) - 2);
		return -EINVAL;
	}
	m->index = (uint32_t)idx;
	if (!name_ok(tok[1])) {
		snprintf(err, errsz, "name '%.64s' is not a module name", tok[1]);
		return -EINVAL;
	}
	strcpy(m->name, tok[1]);
	bl = strlen(tok[2]);
	if (strcmp(tok[2], "-")) {
		if (bl % 2 || bl > 2 * RELSTACK_BUILD_ID_MAX) {
			snprintf(err, errsz, "build-id '%.90s' is not an even number of hex digits, at most %d",
				 tok[2], 2 * RELSTACK_BUILD_ID_MAX);
			return -EINVAL;
		}
		for (size_t i = 0; i < bl; i += 2) {
			int hi = rs_hexval(tok[2][i]), lo = rs_hexval(tok[2][i + 1]);

			if (hi < 0 || lo < 0) {
				snprintf(err, errsz, "build-id '%.90s' is not hex", tok[2]);
				return -EINVAL;
			}
			m->bid[i / 2] = (uint8_t)(hi << 4 | lo);
		}
		m->bid_len = bl / 2;
		/* the kernel writes zeros for a module without one */
		while (m->bid_len && !m->bid[m->bid_len - 1])
			m->bid_len--;
		if (m->bid_len)
			m->bid_len = bl / 2;
	}
	if (parse_hex(tok[3], &size) < 0 || !size) {
		snprintf(err, errsz, "text size '%.32s' is not a hex number above 0", tok[3]);
		return -EINVAL;
	}
	m->text_size = size;
	if (!strcmp(tok[4], "gone")) {
		m->gone = true;
	} else if (strcmp(tok[4], "live")) {
		snprintf(err, errsz, "state '%.32s' (expected live or gone)", tok[4]);
		return -EINVAL;
	}
	if (rest) {
		if (rs_ksections_check(rest, m->text_size, err, errsz) < 0)
			return -EINVAL;
		snprintf(m->sections, sizeof(m->sections), "%s", rest);
	}
	return 0;
}

int rs_kmodtab_parse(const char *buf, size_t len, struct rs_kmodule *out, size_t max, char *err, size_t errsz)
{
	size_t n = 0, lineno = 0, pos = 0;

	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		char line[1024], why[300];

		lineno++;
		if (l >= sizeof(line) || memchr(buf + pos, '\0', l)) {
			snprintf(err, errsz, "line %zu: not a text line of at most %zu bytes", lineno, sizeof(line) - 1);
			return -EINVAL;
		}
		memcpy(line, buf + pos, l);
		line[l] = '\0';
		pos += l + 1;
		if (l && line[l - 1] == '\r')
			line[--l] = '\0';
		if (!line[strspn(line, " \t")] || line[0] == '#')
			continue;
		if (n == max) {
			snprintf(err, errsz, "line %zu: more than %zu modules", lineno, max);
			return -EINVAL;
		}
		if (parse_line(line, &out[n], why, sizeof(why)) < 0) {
			snprintf(err, errsz, "line %zu: %s", lineno, why);
			return -EINVAL;
		}
		for (size_t k = 0; k < n; k++) {
			if (out[k].index == out[n].index) {
				snprintf(err, errsz, "line %zu: index %" PRIu32 " is listed twice", lineno, out[n].index);
				return -EINVAL;
			}
		}
		n++;
	}
	return (int)n;
}
