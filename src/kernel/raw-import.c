// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A directory of raw tracefs output into a relstack buffer file: what a
 * kernel (a test guest, a machine without relstack) sends out of one
 * tracefs instance, decoded on another machine.
 *
 *   DIR/header_page                      the instance's events/header_page
 *   DIR/events/SYSTEM/EVENT/format       the formats of the events in the pages
 *                                        (both from DIR/.. when DIR has none: the
 *                                        directory of another instance of the same
 *                                        kernel, beside the main one)
 *   DIR/per_cpu/cpuN/trace_pipe_raw      the raw pages of CPU N, end to end
 *   DIR/module_table                     the patches' module table (optional; another
 *                                        file given instead, e.g. the table at the
 *                                        end of the boot names modules unloaded since)
 *   DIR/notes                            /sys/kernel/notes: the kernel's build-id (optional)
 *   DIR/kallsyms                         /proc/kallsyms, for absolute stacks only (optional)
 *
 * Relative stacks (kernel_stack_rel) need nothing else: their words are
 * offsets already, translated by the layout each event carries, with the
 * modules of the module table and of the module-load events in the
 * pages.  Absolute stacks (kernel_stack) need the same boot's kallsyms;
 * without it their addresses are UNKNOWN, never written.
 *
 * Every file is hostile input: the header page's fields are checked
 * before the page size is believed, format files must parse, the module
 * table is checked line by line, each page by the converter.  The first
 * problem stops the import with one line naming the file and the field.
 * Every stack is a record of its own (rs_kconv_standalone()): the pages
 * come from triggers this program did not set up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include "kernel/kernel.h"
#include "relstack-local.h"
#include "relstack/recorder.h"
#include "relstack/relstack.h"
#include "ring/recorder-local.h"

#define SMALL_FILE_MAX (4u << 20)  /* format files, header page, module table, notes */
#define PAGE_MIN 4096u
#define PAGE_MAX (1u << 20)
#define MODULES_MAX 1024u

struct raw {
	const struct rs_kraw_opts *o;
	char path[PATH_MAX];
	char fmtdir[PATH_MAX];
	size_t page_size;
	struct tep_handle *tep;
	unsigned cpus[KRAW_CPUS_MAX];
	unsigned ncpus;
	uint64_t raw_bytes;
};

#define fail(o, err, ...) rs_kfail((o)->errbuf, (o)->errbuf_sz, (err), __VA_ARGS__)

/* @base/@rel into r->path: 0, or -ENAMETOOLONG. */
static int vat(struct raw *r, const char *base, const char *fmt, va_list ap)
{
	char rel[PATH_MAX];
	int n = vsnprintf(rel, sizeof(rel), fmt, ap);

	if (n < 0 || (size_t)n >= sizeof(rel) ||
	    (size_t)snprintf(r->path, sizeof(r->path), "%s/%s", base, rel) >= sizeof(r->path))
		return -ENAMETOOLONG;
	return 0;
}

/* DIR/@rel */
__attribute__((format(printf, 2, 3))) static int at(struct raw *r, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vat(r, r->o->dir, fmt, ap);
	va_end(ap);
	return ret;
}

/* @rel of the directory with the formats: DIR, or its parent (an instance's directory beside the main one) */
__attribute__((format(printf, 2, 3))) static int fmt_at(struct raw *r, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vat(r, r->fmtdir, fmt, ap);
	va_end(ap);
	return ret;
}

/* A whole small file, NUL-terminated: 0, -ENOENT, -EFBIG or -errno. */
static int slurp(const char *path, size_t max, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	size_t n = 0, cap = 4096;
	char *b = NULL;
	ssize_t got;

	if (fd < 0)
		return -errno;
	for (;;) {
		if (n + 1 >= cap || !b) {
			char *nb;

			if (b)
				cap *= 2;
			if (cap > max + 1)
				cap = max + 1;
			if (n + 1 >= cap) {
				err = -EFBIG;
				break;
			}
			nb = realloc(b, cap);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			b = nb;
		}
		got = read(fd, b + n, cap - 1 - n);
		if (got < 0) {
			err = -errno;
			break;
		}
		if (!got)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

/*
 * One field of the header page ("field: TYPE NAME; offset:N; size:N;"):
 * 0 with its offset and size, -ENOENT when absent.
 */
static int header_field(const char *text, const char *name, long *off, long *size)
{
	const char *p = text;
	size_t nl = strlen(name);

	while ((p = strstr(p, "field:"))) {
		const char *semi = strchr(p, ';'), *end = strchr(p, '\n');

		if (!end)
			end = p + strlen(p);
		if (semi && semi < end && (size_t)(semi - p) > nl && !memcmp(semi - nl, name, nl) &&
		    (semi[-(long)nl - 1] == ' ' || semi[-(long)nl - 1] == '\t')) {
			const char *o = strstr(semi, "offset:"), *s = strstr(semi, "size:");

			if (!o || !s || o > end || s > end)
				return -EINVAL;
			*off = strtol(o + 7, NULL, 10);
			*size = strtol(s + 5, NULL, 10);
			return 0;
		}
		p = end;
	}
	return -ENOENT;
}

/* header_page: the page size, and the commit field's place and size (what kbuffer assumes). */
static int read_header_page(struct raw *r)
{
	long toff = -1, tsize = -1, coff = -1, csize = -1, doff = -1, dsize = -1;
	size_t len;
	char *buf;
	int ret;

	if (at(r, "header_page") < 0)
		return fail(r->o, -ENAMETOOLONG, "%s: path too long", r->o->dir);
	snprintf(r->fmtdir, sizeof(r->fmtdir), "%s", r->o->dir);
	if (access(r->path, F_OK) < 0 && at(r, "..") == 0) {
		snprintf(r->fmtdir, sizeof(r->fmtdir), "%s", r->path);
		fmt_at(r, "header_page");
	}
	ret = slurp(r->path, SMALL_FILE_MAX, &buf, &len);
	if (ret < 0)
		return fail(r->o, ret, "%s: %s (a raw tracefs directory, or its parent, has events/header_page)",
			    r->path, strerror(-ret));
	if (header_field(buf, "timestamp", &toff, &tsize) < 0 || toff != 0 || tsize != 8)
		ret = fail(r->o, -EINVAL, "%s: field timestamp: expected offset 0, size 8", r->path);
	else if (header_field(buf, "commit", &coff, &csize) < 0 || coff != 8 || csize != 8)
		ret = fail(r->o, -EINVAL, "%s: field commit: expected offset 8, size 8 (pages of 64-bit kernels)",
			   r->path);
	else if (header_field(buf, "data", &doff, &dsize) < 0 || doff != 16 || dsize < (long)(PAGE_MIN - 16) ||
		 dsize > (long)(PAGE_MAX - 16) || (dsize + 16) % PAGE_MIN)
		ret = fail(r->o, -EINVAL, "%s: field data: expected offset 16 and a size that makes the page a "
			   "multiple of %u bytes up to %u", r->path, PAGE_MIN, PAGE_MAX);
	else
		r->page_size = (size_t)dsize + 16;
	free(buf);
	return ret;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

/* Every events/SYSTEM/EVENT/format into r->tep. */
static int read_formats(struct raw *r)
{
	char sysdir[PATH_MAX];
	struct dirent *sd;
	DIR *d;
	int ret = 0, nformats = 0;

	if (fmt_at(r, "events") < 0)
		return fail(r->o, -ENAMETOOLONG, "%s: path too long", r->fmtdir);
	snprintf(sysdir, sizeof(sysdir), "%s", r->path);
	d = opendir(sysdir);
	if (!d)
		return fail(r->o, -errno, "%s: %s (a raw tracefs directory has events/SYSTEM/EVENT/format)", sysdir,
			    strerror(errno));
	while (!ret && (sd = readdir(d))) {
		struct dirent *ed;
		DIR *e;

		if (sd->d_name[0] == '.' || fmt_at(r, "events/%s", sd->d_name) < 0)
			continue;
		e = opendir(r->path);
		while (!ret && e && (ed = readdir(e))) {
			size_t len;
			char *buf;

			if (ed->d_name[0] == '.' || fmt_at(r, "events/%s/%s/format", sd->d_name, ed->d_name) < 0)
				continue;
			ret = slurp(r->path, SMALL_FILE_MAX, &buf, &len);
			if (ret == -ENOENT || ret == -ENOTDIR) {
				ret = 0; /* a file of the system (enable, filter), not an event */
				continue;
			}
			if (ret < 0) {
				ret = fail(r->o, ret, "%s: %s", r->path, strerror(-ret));
				break;
			}
			if (tep_parse_event(r->tep, buf, len, sd->d_name) != TEP_ERRNO__SUCCESS)
				ret = fail(r->o, -EINVAL, "%s: not an event format libtraceevent can parse", r->path);
			else
				nformats++;
			free(buf);
		}
		if (e)
			closedir(e);
	}
	closedir(d);
	if (!ret && !nformats)
		ret = fail(r->o, -ENOENT, "%s: holds no events/SYSTEM/EVENT/format", r->fmtdir);
	return ret;
}

/* The CPUs of per_cpu/cpuN/trace_pipe_raw, sorted, and their bytes. */
static int find_cpus(struct raw *r)
{
	struct dirent *de;
	DIR *d;

	if (at(r, "per_cpu") < 0)
		return fail(r->o, -ENAMETOOLONG, "%s: path too long", r->o->dir);
	d = opendir(r->path);
	if (!d)
		return fail(r->o, -errno, "%s: %s (a raw tracefs directory has per_cpu/cpuN/trace_pipe_raw)", r->path,
			    strerror(errno));
	while ((de = readdir(d))) {
		unsigned long cpu;
		struct stat sb;
		char *end;

		if (strncmp(de->d_name, "cpu", 3) || !de->d_name[3])
			continue;
		cpu = strtoul(de->d_name + 3, &end, 10);
		if (*end || cpu >= KRAW_CPUS_MAX || r->ncpus == KRAW_CPUS_MAX) {
			closedir(d);
			return fail(r->o, -EINVAL, "%s/per_cpu/%s: not a CPU below %u", r->o->dir, de->d_name,
				    KRAW_CPUS_MAX);
		}
		if (at(r, "per_cpu/%s/trace_pipe_raw", de->d_name) < 0 || stat(r->path, &sb) < 0)
			continue;
		if ((uint64_t)sb.st_size % r->page_size) {
			closedir(d);
			return fail(r->o, -EINVAL, "%s: %lld bytes, not a whole number of %zu-byte pages (header_page)",
				    r->path, (long long)sb.st_size, r->page_size);
		}
		r->raw_bytes += (uint64_t)sb.st_size;
		r->cpus[r->ncpus++] = (unsigned)cpu;
	}
	closedir(d);
	if (!r->ncpus)
		return fail(r->o, -ENOENT, "%s/per_cpu: no cpuN/trace_pipe_raw", r->o->dir);
	qsort(r->cpus, r->ncpus, sizeof(r->cpus[0]), cmp_uint);
	return 0;
}

/* Every page of every CPU through @c.  0, or -errno with the file and page named. */
static int convert_pages(struct raw *r, struct rs_kconv *c, bool flush_each)
{
	unsigned char *page = malloc(r->page_size);
	int ret = 0;

	if (!page)
		return fail(r->o, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < r->ncpus && !ret; i++) {
		uint64_t n = 0;
		ssize_t got;
		int fd;

		at(r, "per_cpu/cpu%u/trace_pipe_raw", r->cpus[i]);
		fd = open(r->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			ret = fail(r->o, -errno, "%s: %s", r->path, strerror(errno));
			break;
		}
		while ((got = read(fd, page, r->page_size)) > 0) {
			int k;

			if ((size_t)got != r->page_size) {
				ret = fail(r->o, -EIO, "%s: page %llu cut short", r->path, (unsigned long long)n);
				break;
			}
			k = rs_kconv_page(c, page, r->page_size, r->cpus[i]);
			if (k < 0) {
				const char *why = rs_kconv_error(c);

				ret = fail(r->o, k, "%s: page %llu (offset 0x%llx): %s", r->path, (unsigned long long)n,
					   (unsigned long long)(n * r->page_size),
					   why ? why : k == -ENOMEM ? "out of memory"
						     : "page header: commit beyond the page (not a ring-buffer page)");
				break;
			}
			n++;
			if (flush_each)
				rs_kconv_flush(c);
		}
		if (got < 0 && !ret)
			ret = fail(r->o, -errno, "%s: %s", r->path, strerror(errno));
		close(fd);
	}
	free(page);
	return ret;
}

/* The optional files: the kernel's build-id, kallsyms, the module table, into a new table. */
static int make_table(struct raw *r, struct rs_ksyms *syms, struct rs_ktab **out)
{
	uint8_t bid[RELSTACK_BUILD_ID_MAX];
	struct rs_kmodule *mods = NULL;
	const char *ksyms = r->o->kallsyms;
	int bid_len = 0, n = 0, ret;
	size_t len;
	char *buf;

	if (at(r, "notes") == 0 && slurp(r->path, SMALL_FILE_MAX, &buf, &len) == 0) {
		bid_len = rs_knotes_build_id(buf, len, bid, sizeof(bid));
		free(buf);
		if (bid_len < 0)
			return fail(r->o, -EINVAL, "%s: holds no GNU build-id note", r->path);
	}
	if (!ksyms && at(r, "kallsyms") == 0 && access(r->path, F_OK) == 0)
		ksyms = r->path;
	if (ksyms) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s", ksyms);
		ret = rs_ksyms_read(path, syms);
		if (ret < 0)
			return fail(r->o, ret, "%s: %s", path,
				    ret == -ENOENT ? "no _stext, or every address 0 (read without root?)" : strerror(-ret));
	}
	*out = rs_ktab_new_rel(ksyms ? syms : NULL, bid, bid_len > 0 ? (size_t)bid_len : 0);
	if (!*out)
		return fail(r->o, -errno, "kernel object table: %s", strerror(errno));
	if (r->o->module_table)
		snprintf(r->path, sizeof(r->path), "%s", r->o->module_table);
	else if (at(r, "module_table") < 0)
		return 0;
	ret = slurp(r->path, SMALL_FILE_MAX, &buf, &len);
	if (ret == -ENOENT && !r->o->module_table)
		return 0;
	if (ret < 0)
		return fail(r->o, ret, "%s: %s", r->path, strerror(-ret));
	mods = calloc(MODULES_MAX, sizeof(*mods));
	if (!mods) {
		free(buf);
		return fail(r->o, -ENOMEM, "out of memory");
	}
	{
		char why[400];

		n = rs_kmodtab_parse(buf, len, mods, MODULES_MAX, why, sizeof(why));
		free(buf);
		if (n < 0) {
			free(mods);
			return fail(r->o, n, "%s: %s", r->path, why);
		}
	}
	for (int i = 0; i < n; i++)
		rs_ktab_add_module(*out, &mods[i]); /* -ENOSPC is counted by the table */
	free(mods);
	return 0;
}

int rs_kimport_raw(const struct rs_kraw_opts *o, struct rs_kraw_stats *st)
{
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *rec = NULL;
	struct rs_kconv *pre = NULL, *c = NULL;
	struct rs_krecord_stats ks;
	struct rs_krel_stats rs;
	struct rs_ktab *kt = NULL;
	struct rs_ksyms syms;
	struct raw *r;
	struct stat sb;
	int ret;

	memset(st, 0, sizeof(*st));
	memset(&syms, 0, sizeof(syms));
	if (stat(o->dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return fail(o, -ENOTDIR, "%s: not a directory of raw tracefs output", o->dir);
	r = calloc(1, sizeof(*r));
	if (!r)
		return fail(o, -ENOMEM, "out of memory");
	r->o = o;
	ret = read_header_page(r);
	if (ret < 0)
		goto out;
	r->tep = tep_alloc();
	if (!r->tep) {
		ret = fail(o, -ENOMEM, "out of memory");
		goto out;
	}
	tep_set_long_size(r->tep, 8);
	tep_set_page_size(r->tep, (int)r->page_size);
	ret = read_formats(r);
	if (!ret)
		ret = find_cpus(r);
	if (!ret)
		ret = make_table(r, &syms, &kt);
	if (ret < 0)
		goto out;
	/* first the module-load events of every CPU: a stack on one CPU may name a module loaded on another */
	pre = rs_kconv_new(r->tep, kt, NULL, NULL, 0, 0);
	if (!pre) {
		ret = fail(o, -errno, "converter: %s", strerror(errno));
		goto out;
	}
	if (rs_kconv_error(pre)) {
		ret = fail(o, -EINVAL, "%s/events: %s", o->dir, rs_kconv_error(pre));
		goto out;
	}
	rs_kconv_standalone(pre);
	rs_kconv_module_table(pre, kt);
	ret = convert_pages(r, pre, true);
	if (ret < 0)
		goto out;
	ro.size = r->raw_bytes * 4 > (1ull << 30) ? 1ull << 30 : r->raw_bytes * 4;
	if (ro.size < (16ull << 20))
		ro.size = 16ull << 20;
	rec = rs_recorder_open_foreign(o->output, &ro);
	if (!rec) {
		ret = fail(o, -errno, "%s: %s", o->output, relstack_strerror(errno));
		goto out;
	}
	{
		size_t isz;
		unsigned cap;
		void *img = rs_recorder_objtab_image(rec, &isz, &cap);

		rs_ktab_publish(kt, img, cap);
	}
	c = rs_kconv_new(r->tep, kt, rec, NULL, 0, 0);
	if (!c) {
		ret = fail(o, -errno, "converter: %s", strerror(errno));
		goto out;
	}
	rs_kconv_standalone(c);
	rs_kconv_module_table(c, kt);
	ret = rs_kconv_write_modules(c, kt);
	if (ret < 0) {
		ret = fail(o, ret, "%s: %s", o->output, relstack_strerror(ret));
		goto out;
	}
	ret = convert_pages(r, c, false);
	if (ret < 0)
		goto out;
	ret = rs_kconv_finish(c);
	if (ret < 0) {
		ret = fail(o, ret, "%s: %s", o->output, relstack_strerror(ret));
		goto out;
	}
	rs_kconv_stats(c, &ks);
	rs_kconv_rel_stats(c, &rs);
	if (ks.lost)
		rs_recorder_count_lost(rec, ks.lost);
	st->events = ks.events;
	st->stacks = ks.stacks;
	st->reliable = ks.reliable;
	st->lost = ks.lost;
	st->pages = ks.pages;
	st->cpus = r->ncpus;
	st->modules = rs_ktab_count(kt) - 1;
	st->modules_full = rs_ktab_full(kt);
	st->unknown_index = rs.unknown_index;
	st->beyond_text = rs.beyond_text;
	st->no_text = rs.no_text;
	ret = 0;
out:
	if (rec)
		relstack_recorder__close(rec);
	rs_kconv_free(c);
	rs_kconv_free(pre);
	rs_ktab_free(kt);
	rs_ksyms_free(&syms);
	if (r->tep)
		tep_free(r->tep);
	free(r);
	return ret;
}
