// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nm(1) and System.map text files as a symbol source.
 *
 * Accepted lines, fields separated by blanks:
 *
 *   ADDR TYPE NAME            nm, nm -n, System.map, /proc/kallsyms
 *   ADDR SIZE TYPE NAME       nm -S
 *   # build-id: HEX           a comment binding the file to one build
 *
 * NAME is the rest of the line (nm -C prints blanks inside names); a
 * trailing "[module]" as in kallsyms stays part of it.  Only code symbols
 * (types t T w W i) enter the index; weak ones (w W) may also be data
 * (nm gives untyped weak symbols W), so they name code but never decide
 * that a file is of another build (symbolize.c); "_etext" is remembered to bound the
 * last unsized symbol.  Undefined symbols (no address), other comments,
 * file headers of nm on several files and blank lines are skipped; any
 * other line is counted as bad and skipped, so one damaged line loses
 * one symbol.  The parser reads a length-bounded buffer and never assumes
 * a NUL terminator.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "relstack-local.h"
#include "symsrc.h"

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A hex number of 1..16 digits spanning [p, e) exactly. */
static bool parse_hex(const char *p, const char *e, uint64_t *v)
{
	uint64_t x = 0;

	if (p == e || e - p > 16)
		return false;
	for (; p < e; p++) {
		int d = rs_hexval(*p);

		if (d < 0)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

static const char *skip_blank(const char *p, const char *e)
{
	while (p < e && is_blank(*p))
		p++;
	return p;
}

static const char *token_end(const char *p, const char *e)
{
	while (p < e && !is_blank(*p))
		p++;
	return p;
}

static void parse_comment(const char *p, const char *e, struct rs_nminfo *info)
{
	static const char key[] = "build-id";
	const char *q;

	p = skip_blank(p + 1, e);
	if ((size_t)(e - p) < sizeof(key) - 1 || memcmp(p, key, sizeof(key) - 1))
		return;
	p += sizeof(key) - 1;
	if (p < e && *p == ':')
		p++;
	p = skip_blank(p, e);
	q = token_end(p, e);
	if (q == p || (q - p) % 2 || (size_t)(q - p) / 2 > sizeof(info->build_id))
		return;
	for (size_t i = 0; p + 1 < q; p += 2, i++) {
		int hi = rs_hexval(p[0]), lo = rs_hexval(p[1]);

		if (hi < 0 || lo < 0) {
			info->build_id_len = 0;
			return;
		}
		info->build_id[i] = (uint8_t)(hi << 4 | lo);
		info->build_id_len = i + 1;
	}
}

static bool is_code_type(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W' || t == 'i';
}

static unsigned rank_of(char t)
{
	/* every accepted type is code: +4 */
	if (t == 'T' || t == 'i')
		return RS_SYMRANK_GLOBAL + 4;
	if (t == 'W' || t == 'w')
		return RS_SYMRANK_WEAK + 4;
	return RS_SYMRANK_LOCAL + 4;
}

/*
 * Of several kernel symbols at one address, the one kallsyms names
 * (scripts/kallsyms sorts them so, and the kernel prints the first): not
 * weak, then not a name the linker script provides (__start_X, __stop_X,
 * __end_X, __X_start, __X_end), then the fewest leading underscores;
 * then the order of the file.
 */
static unsigned kallsyms_rank(char t, const char *name, size_t len)
{
	bool weak = t == 'w' || t == 'W', linker = false;
	size_t us = 0;

	if (len >= 8 && name[0] == '_' && name[1] == '_')
		linker = !memcmp(name + 2, "start_", 6) || !memcmp(name + 2, "stop_", 5) ||
			 !memcmp(name + 2, "end_", 4) || !memcmp(name + len - 6, "_start", 6) ||
			 !memcmp(name + len - 4, "_end", 4);
	while (us < len && name[us] == '_')
		us++;
	return 127u - (weak ? 64u : 0u) - (linker ? 32u : 0u) - (us < 31 ? (unsigned)us : 31u);
}

/* One line [p, e).  Returns 1 for a symbol added, 0 for a skipped line, -1 bad, -errno. */
static int parse_line(const char *p, const char *e, struct rs_symindex *ix, struct rs_nminfo *info, bool kernel)
{
	const char *t0, *t1, *t2, *name;
	uint64_t addr, size = 0;
	char type;

	p = skip_blank(p, e);
	while (e > p && is_blank(e[-1]))
		e--;
	if (p == e)
		return 0;
	if (*p == '#') {
		parse_comment(p, e, info);
		return 0;
	}
	if (e[-1] == ':')
		return 0; /* "file.o:" header of nm on several files */

	t0 = token_end(p, e);
	if (!parse_hex(p, t0, &addr)) {
		/* "                 U name": undefined, no address */
		if (t0 - p == 1 && (*p == 'U' || *p == 'w' || *p == 'v'))
			return 0;
		return -1;
	}
	p = skip_blank(t0, e);
	t1 = token_end(p, e);
	if (t1 == p)
		return -1;
	if (t1 - p == 1) {
		type = *p;
		name = skip_blank(t1, e);
	} else {
		if (!parse_hex(p, t1, &size))
			return -1;
		p = skip_blank(t1, e);
		t2 = token_end(p, e);
		if (t2 - p != 1)
			return -1;
		type = *p;
		name = skip_blank(t2, e);
	}
	if (name == e)
		return -1;
	if ((e - name == 6 && !memcmp(name, "_etext", 6)) || (e - name == 5 && !memcmp(name, "etext", 5))) {
		info->etext = addr; /* the end of text, not a function */
		return 0;
	}
	if (!is_code_type(type)) {
		/* _stext is the kernel base even when typed otherwise */
		if (!(e - name == 6 && !memcmp(name, "_stext", 6)))
			return 0;
	}
	int err = rs_symindex_add(ix, addr, size, name, (size_t)(e - name),
				  kernel ? kallsyms_rank(type, name, (size_t)(e - name)) : rank_of(type));

	return err ? err : 1;
}

static int parse(const char *buf, size_t len, struct rs_symindex *ix, struct rs_nminfo *info, bool kernel)
{
	const char *p = buf, *end = buf + len;

	memset(info, 0, sizeof(*info));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		int r;

		info->lines++;
		r = parse_line(p, e, ix, info, kernel);
		if (r < -1)
			return r;
		if (r == 1)
			info->symbols++;
		if (r == -1) {
			if (!info->bad_lines)
				info->first_bad_line = info->lines;
			info->bad_lines++;
		}
		p = nl ? nl + 1 : end;
	}
	return (int)(info->symbols > INT32_MAX ? INT32_MAX : info->symbols);
}

int rs_read_file(const char *path, size_t max, char **bufp, size_t *lenp)
{
	struct stat st;
	size_t len = 0, cap;
	char *buf;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto out;
	}
	cap = S_ISREG(st.st_mode) && (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : 65536;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (len + 1 >= cap) {
			char *nb;

			if (cap >= max) {
				free(buf);
				err = -EFBIG;
				goto out;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			free(buf);
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
out:
	close(fd);
	return err;
}

int rs_nmfile_parse(const char *buf, size_t len, struct rs_symindex *ix, struct rs_nminfo *info)
{
	return parse(buf, len, ix, info, false);
}

int rs_nmfile_parse_kernel(const char *buf, size_t len, struct rs_symindex *ix, struct rs_nminfo *info)
{
	return parse(buf, len, ix, info, true);
}
