// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * /proc/PID/maps, read and parsed.  The text comes from another process's
 * kernel view, but is parsed as untrusted (fuzz/fuzz_maps.c): a line that
 * is not a mapping is skipped, never misread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "live/live.h"

char *rs_live_read_file(const char *path, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int e = fd < 0 ? errno : ENOMEM;

		if (fd >= 0)
			close(fd);
		free(buf);
		errno = e;
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

bool rs_live_map_line_parse(const char *line, struct rs_live_map_line *m)
{
	unsigned long s, e, off, ino;
	int pos = 0;

	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &s, &e, m->perms, &off, &m->major, &m->minor, &ino, &pos) <
		    7 ||
	    pos == 0 || e <= s || strlen(m->perms) != 4)
		return false;
	m->start = s;
	m->end = e;
	m->off = off;
	m->ino = ino;
	m->path = line + pos;
	return true;
}

uint64_t rs_live_digest_line(uint64_t h, const char *line)
{
	for (; *line; line++)
		h = (h ^ (unsigned char)*line) * 0x100000001b3ull;
	return (h ^ '\n') * 0x100000001b3ull;
}

int rs_live_maps_parse(char *buf, struct rs_live_map **out, unsigned *nout, uint64_t *digest)
{
	struct rs_live_map *maps = NULL;
	unsigned n = 0, cap = 0;
	char *line, *save = NULL;

	*digest = RS_LIVE_DIGEST_START;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct rs_live_map_line m;

		if (!rs_live_map_line_parse(line, &m))
			continue;
		if (m.perms[2] == 'x')
			*digest = rs_live_digest_line(*digest, line);
		if (n == cap) {
			struct rs_live_map *nm = realloc(maps, (cap = cap ? cap * 2 : 64) * sizeof(*nm));

			if (!nm) {
				free(maps);
				return -ENOMEM;
			}
			maps = nm;
		}
		maps[n++] = (struct rs_live_map){ m.start, m.end, m.perms[2] == 'x' };
	}
	*out = maps;
	*nout = n;
	return 0;
}

int rs_live_maps_read(struct rs_live_snapshot *s, char *msg, size_t msglen)
{
	struct rs_live_map *maps = NULL;
	uint64_t digest;
	char path[64], *buf;
	unsigned n = 0;
	size_t len;
	int e;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	buf = rs_live_read_file(path, &len);
	if (!buf) {
		e = errno;
		snprintf(msg, msglen, "process %d: %s: %s", (int)s->pid, path, strerror(e));
		return -e;
	}
	e = rs_live_maps_parse(buf, &maps, &n, &digest);
	free(buf);
	if (e) {
		snprintf(msg, msglen, "process %d: out of memory", (int)s->pid);
		return e;
	}
	if (n == 0) {
		free(maps);
		snprintf(msg, msglen, "process %d: %s is empty (a kernel thread, or a process that exited)", (int)s->pid,
			 path);
		return -ESRCH;
	}
	free(s->maps);
	s->maps = maps;
	s->nmaps = n;
	s->exec_digest_now = digest;
	return 0;
}
