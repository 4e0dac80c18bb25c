// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The symbolizer: finds the symbol sources of each recorded object, checks
 * every file against the recorded build-id, and answers (object, offset)
 * queries from the sorted index of symindex.c and the DWARF indexes of
 * symdwarf.c.  The search order is documented in symbolize.h.
 *
 * Objects are registered cheaply (a copy of the table record); sources are
 * resolved on first use and shared by every object of the same build-id
 * and path, so the object tables of two runs cost one load.  Everything a
 * struct rs_sym points to is owned here until rs_symbolizer_free().
 *
 * A file with another build-id is never read for symbols.  An nm text file
 * carries no build-id unless it has a "# build-id:" comment; it is then
 * held to it, and otherwise to the recorded text segment: a code symbol
 * (not a weak one, which may be data) outside it marks a file of another
 * build.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <zlib.h>

#include "relstack/relstack.h"
#include "opts-local.h"
#include "relstack-local.h"
#include "symbolize.h"
#include "symfetch.h"
#include "symsrc.h"

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"
#define NM_FILE_MAX (256u << 20)

struct map {
	char *object;
	char *file;
};

/* An opened ELF file that passed the build-id check. */
struct elf_file {
	char *path;
	int fd;
	Elf *elf;
};

struct source {
	uint8_t build_id[RELSTACK_BUILD_ID_MAX];
	uint32_t build_id_len;
	char path[RELSTACK_PATH_MAX];
	char *layout;               /* a kernel module's section layout, or NULL */
	bool resolved;

	enum rs_sym_reason reason;  /* RS_SYM_OK once names are available */
	int err;                    /* 0 or the negative code of rs_symbolizer_load() */
	char *errmsg;

	struct rs_symindex ix;
	char *names_from;

	struct elf_file dwfile;     /* the file DWARF is read from, kept open */
	struct rs_symdwarf *dw;
	char *lines_from;
};

struct object {
	struct relstack_object rec;
	struct source *src;
};

struct rs_symbolizer {
	struct rs_symbolizer_opts opts;
	struct rs_fetch *fetch;  /* debuginfod, within its bounds (symfetch.c) */
	char **debug_dirs;
	size_t n_debug_dirs;
	struct map *maps;
	size_t n_maps;
	struct object *objs;
	size_t n_objs, cap_objs;
	struct source **srcs;
	size_t n_srcs, cap_srcs;
};

const char *rs_sym_reason_str(enum rs_sym_reason reason)
{
	switch (reason) {
	case RS_SYM_OK: return "ok";
	case RS_SYM_NO_SOURCE: return "no symbol source found";
	case RS_SYM_BUILD_ID_MISMATCH: return "build-id mismatch";
	case RS_SYM_NO_SYMBOL: return "offset in no symbol";
	case RS_SYM_VDSO: return "object is the vDSO";
	case RS_SYM_BAD_SOURCE: return "symbol source unreadable or corrupt";
	case RS_SYM_BAD_HANDLE: return "no such object";
	case RS_SYM_NO_BASE: return "kernel symbols lack _stext";
	}
	return "unknown reason";
}

struct rs_symbolizer *rs_symbolizer_new(const struct rs_symbolizer_opts *opts)
{
	struct rs_symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->opts.sz = sizeof(s->opts);
	s->opts.lines = !opts;
	if (rs_opts_copy(&s->opts, sizeof(s->opts), opts) < 0) {
		free(s);
		errno = EINVAL;
		return NULL;
	}
	if (s->opts.inlines)
		s->opts.lines = true;
	if (s->opts.n_debug_dirs) {
		s->debug_dirs = calloc(s->opts.n_debug_dirs, sizeof(char *));
		if (!s->debug_dirs)
			goto fail;
		for (size_t i = 0; i < s->opts.n_debug_dirs; i++) {
			if (!s->opts.debug_dirs || !s->opts.debug_dirs[i])
				continue;
			s->debug_dirs[s->n_debug_dirs] = strdup(s->opts.debug_dirs[i]);
			if (!s->debug_dirs[s->n_debug_dirs])
				goto fail;
			s->n_debug_dirs++;
		}
	}
	s->opts.debug_dirs = NULL;
	s->fetch = rs_fetch_new(&(struct rs_fetch_opts){ .fn = s->opts.fetch_fn, .arg = s->opts.fetch_arg,
							   .deadline_ns = s->opts.fetch_deadline_ns });
	if (!s->fetch)
		goto fail;
	return s;
fail:
	rs_symbolizer_free(s);
	errno = ENOMEM;
	return NULL;
}

static void elf_file_close(struct elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	f->elf = NULL;
	f->fd = -1;
	f->path = NULL;
}

static void source_free(struct source *src)
{
	rs_symindex_fini(&src->ix);
	rs_symdwarf_free(src->dw);
	elf_file_close(&src->dwfile);
	free(src->names_from);
	free(src->lines_from);
	free(src->errmsg);
	free(src->layout);
	free(src);
}

void rs_symbolizer_free(struct rs_symbolizer *s)
{
	if (!s)
		return;
	rs_fetch_free(s->fetch);
	for (size_t i = 0; i < s->n_srcs; i++)
		source_free(s->srcs[i]);
	free(s->srcs);
	for (size_t i = 0; i < s->n_maps; i++) {
		free(s->maps[i].object);
		free(s->maps[i].file);
	}
	free(s->maps);
	for (size_t i = 0; i < s->n_debug_dirs; i++)
		free(s->debug_dirs[i]);
	free(s->debug_dirs);
	free(s->objs);
	free(s);
}

int rs_symbolizer_add_map(struct rs_symbolizer *s, const char *object, const char *nm_file)
{
	struct map *m;

	if (!object || !*object || !nm_file || !*nm_file)
		return -EINVAL;
	m = realloc(s->maps, (s->n_maps + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	s->maps = m;
	m = &s->maps[s->n_maps];
	m->object = strdup(object);
	m->file = strdup(nm_file);
	if (!m->object || !m->file) {
		free(m->object);
		free(m->file);
		return -ENOMEM;
	}
	s->n_maps++;
	return 0;
}

int rs_symbolizer_add_map_arg(struct rs_symbolizer *s, const char *arg)
{
	const char *eq = arg ? strchr(arg, '=') : NULL;
	char *object;
	int err;

	if (!eq || eq == arg || !eq[1])
		return -EINVAL;
	object = strndup(arg, (size_t)(eq - arg));
	if (!object)
		return -ENOMEM;
	err = rs_symbolizer_add_map(s, object, eq + 1);
	free(object);
	return err;
}

static struct source *source_get(struct rs_symbolizer *s, const struct relstack_object *obj, const char *layout)
{
	struct source *src;

	for (size_t i = 0; i < s->n_srcs; i++) {
		src = s->srcs[i];
		if (src->build_id_len == obj->build_id_len &&
		    !memcmp(src->build_id, obj->build_id, obj->build_id_len) &&
		    !strncmp(src->path, obj->path, sizeof(src->path)) &&
		    (src->layout ? layout && !strcmp(src->layout, layout) : !layout))
			return src;
	}
	if (s->n_srcs == s->cap_srcs) {
		size_t c = s->cap_srcs ? s->cap_srcs * 2 : 16;
		struct source **v = realloc(s->srcs, c * sizeof(*v));

		if (!v)
			return NULL;
		s->srcs = v;
		s->cap_srcs = c;
	}
	src = calloc(1, sizeof(*src));
	if (!src)
		return NULL;
	if (layout && !(src->layout = strdup(layout))) {
		free(src);
		return NULL;
	}
	memcpy(src->build_id, obj->build_id, obj->build_id_len);
	src->build_id_len = obj->build_id_len;
	memcpy(src->path, obj->path, sizeof(src->path));
	src->path[sizeof(src->path) - 1] = '\0';
	src->dwfile.fd = -1;
	rs_symindex_init(&src->ix);
	s->srcs[s->n_srcs++] = src;
	return src;
}

int rs_symbolizer_object(struct rs_symbolizer *s, const struct relstack_object *obj)
{
	return rs_symbolizer_module(s, obj, NULL);
}

int rs_symbolizer_module(struct rs_symbolizer *s, const struct relstack_object *obj, const char *layout)
{
	struct object *o;

	if (!s || !obj || obj->build_id_len > RELSTACK_BUILD_ID_MAX)
		return -EINVAL;
	if (s->n_objs >= INT_MAX)
		return -ENOSPC;
	if (s->n_objs == s->cap_objs) {
		size_t c = s->cap_objs ? s->cap_objs * 2 : 16;
		struct object *v = realloc(s->objs, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->objs = v;
		s->cap_objs = c;
	}
	o = &s->objs[s->n_objs];
	o->rec = *obj;
	o->rec.path[RELSTACK_PATH_MAX - 1] = '\0';
	/* a module whose layout is unknown: offsets from its .text (the convention of the kernel table) */
	if (!layout && (obj->flags & RELSTACK_OBJECT_KERNEL) && obj->base == RELSTACK_BASE_LOAD_BIAS)
		layout = ".text=0";
	o->src = source_get(s, &o->rec, layout);
	if (!o->src)
		return -ENOMEM;
	return (int)s->n_objs++;
}

/* ---- resolution ---- */

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

__attribute__((format(printf, 2, 3)))
static void set_error(struct source *src, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (src->errmsg)
		return; /* the first problem is the one worth reporting */
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) >= 0)
		src->errmsg = msg;
	va_end(ap);
}

/* .gnu_debuglink records its target's CRC-32, zlib's crc32(). */
static bool file_crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t r;

	while ((r = pread(fd, buf, sizeof(buf), off)) > 0) {
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	return r == 0 && (uint32_t)crc == want;
}

enum check {
	CHECK_OK,
	CHECK_MISSING,   /* no such file, or not readable */
	CHECK_NOT_ELF,
	CHECK_MISMATCH,
};

struct resolve {
	struct rs_symbolizer *s;
	const struct relstack_object *obj;
	struct source *src;
	bool want_lines;
	bool have_names;
	struct elf_file dyn;        /* first accepted file with .dynsym, for the fallback */
	bool mismatch;
	bool bad;
	const char *debuglink;      /* from the file at the recorded path */
	uint32_t debuglink_crc;
	char *tried;                /* for the "no source" message */
	uint64_t limit;             /* end of text from the symbol source, if it says */
};

static void note_tried(struct resolve *r, const char *path)
{
	size_t have = r->tried ? strlen(r->tried) : 0, add = strlen(path);
	char *t;

	if (have > 1024)
		return;
	t = realloc(r->tried, have + add + 3);
	if (!t)
		return;
	if (have) {
		memcpy(t + have, ", ", 2);
		have += 2;
	}
	memcpy(t + have, path, add + 1);
	r->tried = t;
}

/*
 * Open @path and hold it to the recorded build-id.  On CHECK_OK @f owns
 * the file.  @crc_check: the file is a debuglink target whose CRC must
 * match when no build-id can decide.
 */
static enum check open_checked(struct resolve *r, const char *path, struct elf_file *f,
			       bool crc_check, uint32_t crc)
{
	const struct relstack_object *obj = r->obj;
	const void *bid = NULL;
	ssize_t bid_len;

	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	f->elf = NULL;
	f->path = NULL;
	if (f->fd < 0)
		return CHECK_MISSING;
	note_tried(r, path);
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		elf_file_close(f);
		return CHECK_NOT_ELF;
	}
	bid_len = dwelf_elf_gnu_build_id(f->elf, &bid);
	if (bid_len < 0)
		bid_len = 0;
	if (obj->build_id_len && bid_len > 0) {
		if ((size_t)bid_len != obj->build_id_len || memcmp(bid, obj->build_id, obj->build_id_len)) {
			char want[2 * RELSTACK_BUILD_ID_MAX + 1], got[2 * RELSTACK_BUILD_ID_MAX + 1];

			rs_hex(want, obj->build_id, obj->build_id_len);
			rs_hex(got, bid, (size_t)bid_len < RELSTACK_BUILD_ID_MAX ? (size_t)bid_len : RELSTACK_BUILD_ID_MAX);
			set_error(r->src, "%s: build-id %s does not match %s (build-id %s)",
				  base_name(obj->path), want, path, got);
			r->mismatch = true;
			elf_file_close(f);
			return CHECK_MISMATCH;
		}
	} else if (crc_check && !file_crc_matches(f->fd, crc)) {
		set_error(r->src, "%s: debuglink target %s has another CRC (another build)",
			  base_name(obj->path), path);
		r->mismatch = true;
		elf_file_close(f);
		return CHECK_MISMATCH;
	} else if (obj->build_id_len && bid_len == 0 && !crc_check) {
		/* the object had a build-id, this file has none: it cannot be the same build */
		char want[2 * RELSTACK_BUILD_ID_MAX + 1];

		rs_hex(want, obj->build_id, obj->build_id_len);
		set_error(r->src, "%s: build-id %s does not match %s (no build-id)",
			  base_name(obj->path), want, path);
		r->mismatch = true;
		elf_file_close(f);
		return CHECK_MISMATCH;
	}
	f->path = strdup(path);
	if (!f->path) {
		elf_file_close(f);
		return CHECK_MISSING;
	}
	return CHECK_OK;
}

static uint64_t text_limit(const struct relstack_object *obj)
{
	if (obj->base != RELSTACK_BASE_LOAD_BIAS || !obj->text_size)
		return 0;
	return obj->text_vaddr + obj->text_size;
}

/* Use an accepted ELF file for whatever it offers; takes ownership of @f. */
static void take_elf(struct resolve *r, struct elf_file *f)
{
	struct source *src = r->src;
	bool keep = false;

	if (src->layout && rs_symelf_relocatable(f->elf)) {
		/*
		 * A kernel module's .ko: its symbols are section-relative, placed
		 * by the layout the kernel recorded.  Its DWARF is relocatable
		 * too, and not read.
		 */
		int n = r->have_names ? 0 : rs_symelf_load_placed(f->elf, src->layout, &src->ix);

		if (n > 0) {
			r->have_names = true;
			src->names_from = strdup(f->path);
		} else if (n < 0 || !r->have_names) {
			set_error(src, "%s: %s has no code symbols in the sections %s", base_name(r->obj->path),
				  f->path, src->layout);
			r->bad = true;
		}
		r->want_lines = false;
		elf_file_close(f);
		return;
	}
	if (!r->have_names && rs_symelf_has_type(f->elf, SHT_SYMTAB)) {
		int n = rs_symelf_load(f->elf, SHT_SYMTAB, &src->ix);

		if (n > 0) {
			r->have_names = true;
			src->names_from = strdup(f->path);
		} else if (n < 0) {
			set_error(src, "%s: symbol table of %s is corrupt", base_name(r->obj->path), f->path);
			r->bad = true;
		}
	}
	if (r->want_lines && !src->dw && rs_symelf_has_dwarf(f->elf)) {
		src->dw = rs_symdwarf_new(f->elf);
		if (src->dw) {
			src->lines_from = strdup(f->path);
			src->dwfile = *f;
			keep = true;
		}
	}
	if (!keep && !r->dyn.elf && rs_symelf_has_type(f->elf, SHT_DYNSYM)) {
		r->dyn = *f;
		keep = true;
	}
	if (!r->debuglink && !strcmp(f->path, r->obj->path)) {
		GElf_Word crc;
		const char *link = dwelf_elf_gnu_debuglink(f->elf, &crc);

		if (link && *link && !strchr(link, '/') && strlen(link) < NAME_MAX) {
			/* copy: the file may be closed before the links are searched */
			r->debuglink = strdup(link);
			r->debuglink_crc = crc;
		}
	}
	if (!keep)
		elf_file_close(f);
}

static bool done(const struct resolve *r)
{
	return r->have_names && (!r->want_lines || r->src->dw);
}

static void try_path(struct resolve *r, const char *path, bool crc_check, uint32_t crc)
{
	struct elf_file f;

	if (done(r))
		return;
	if (open_checked(r, path, &f, crc_check, crc) == CHECK_OK)
		take_elf(r, &f);
}

static void try_build_id(struct resolve *r, const char *dir)
{
	const struct relstack_object *obj = r->obj;
	char hexid[2 * RELSTACK_BUILD_ID_MAX + 1], path[PATH_MAX];

	if (obj->build_id_len < 2)
		return;
	rs_hex(hexid, obj->build_id, obj->build_id_len);
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dir, hexid, hexid + 2) <
	    (int)sizeof(path))
		try_path(r, path, false, 0);
}

/*
 * The debug file (then the executable) of the object's build-id from the
 * debuginfod servers DEBUGINFOD_URLS names (symfetch.c: libdebuginfod and
 * its cache, within bounds).  A server that cannot be reached, or that
 * was given up, is named in the object's list of what was tried, and
 * decoding goes on without it.
 */
static void try_debuginfod(struct resolve *r)
{
	const struct relstack_object *obj = r->obj;
	char *path = NULL, note[160];
	int fd;

	if (done(r) || obj->build_id_len < 2)
		return;
	for (int kind = 0; kind < 2 && !done(r); kind++) {
		fd = rs_fetch_find(r->s->fetch, kind, base_name(obj->path), obj->build_id, obj->build_id_len, &path);
		if (fd == -ENOSYS)
			return; /* no server named */
		if (fd < 0) {
			snprintf(note, sizeof(note), "debuginfod %s: %s", kind ? "executable" : "debuginfo",
				 fd == -ECANCELED ? "given up" : strerror(-fd));
			note_tried(r, note);
			if (fd != -ENOENT)
				break; /* the servers are down or refuse: the executable would fare no better */
			continue;
		}
		close(fd);
		try_path(r, path, false, 0);
		free(path);
		path = NULL;
	}
}

static void try_debuglink(struct resolve *r)
{
	const char *obj_path = r->obj->path, *slash = strrchr(obj_path, '/');
	int dlen = slash ? (int)(slash - obj_path) : 0;
	char path[PATH_MAX];

	if (!r->debuglink)
		return;
	/* next to the file, unless that is the file itself */
	if (snprintf(path, sizeof(path), "%.*s%s%s", dlen, obj_path, slash ? "/" : "", r->debuglink) <
		    (int)sizeof(path) && strcmp(path, obj_path))
		try_path(r, path, true, r->debuglink_crc);
	if (snprintf(path, sizeof(path), "%.*s%s.debug/%s", dlen, obj_path, slash ? "/" : "", r->debuglink) <
	    (int)sizeof(path))
		try_path(r, path, true, r->debuglink_crc);
	for (size_t i = 0; i < r->s->n_debug_dirs; i++) {
		if (snprintf(path, sizeof(path), "%s/%.*s/%s", r->s->debug_dirs[i], dlen, obj_path,
			     r->debuglink) < (int)sizeof(path))
			try_path(r, path, true, r->debuglink_crc);
	}
	if (!r->s->opts.no_system_debug_dir &&
	    snprintf(path, sizeof(path), SYSTEM_DEBUG_DIR "/%.*s/%s", dlen, obj_path, r->debuglink) <
		    (int)sizeof(path))
		try_path(r, path, true, r->debuglink_crc);
}

static const struct map *map_for(const struct rs_symbolizer *s, const struct relstack_object *obj)
{
	for (size_t i = 0; i < s->n_maps; i++) {
		const char *o = s->maps[i].object;

		if (!strcmp(o, obj->path) || !strcmp(o, base_name(obj->path)))
			return &s->maps[i];
	}
	return NULL;
}

/* 1 if @path starts with the ELF magic, 0 if not, -errno if it cannot be read. */
static int is_elf_file(const char *path)
{
	unsigned char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, magic, sizeof(magic), 0);
	ret = n < 0 ? -errno : n == (ssize_t)sizeof(magic) && !memcmp(magic, "\177ELF", 4);
	close(fd);
	return ret;
}

static void try_map(struct resolve *r, const struct map *m)
{
	const struct relstack_object *obj = r->obj;
	struct source *src = r->src;
	struct rs_nminfo info;
	char *buf = NULL;
	size_t len = 0;
	int err, n;

	err = is_elf_file(m->file);
	if (err > 0) {
		/*
		 * An ELF file given as a symbol file: held to the build-id like
		 * any other, and mapped, not read whole (nor held to the nm
		 * file's size limit: debug files are large).
		 */
		struct elf_file f;
		enum check c = open_checked(r, m->file, &f, false, 0);

		if (c == CHECK_OK)
			take_elf(r, &f);
		else if (c != CHECK_MISMATCH)
			r->bad = true;
		return;
	}
	if (!err)
		err = rs_read_file(m->file, NM_FILE_MAX, &buf, &len);
	if (err) {
		set_error(src, "%s: cannot read symbol file %s: %s", base_name(obj->path), m->file,
			  relstack_strerror(err));
		r->bad = true;
		return;
	}
	note_tried(r, m->file);
	n = obj->base == RELSTACK_BASE_STEXT ? rs_nmfile_parse_kernel(buf, len, &src->ix, &info)
					      : rs_nmfile_parse(buf, len, &src->ix, &info);
	free(buf);
	if (n < 0) {
		set_error(src, "%s: cannot parse symbol file %s: %s", base_name(obj->path), m->file,
			  relstack_strerror(n));
		r->bad = true;
		return;
	}
	if (info.build_id_len && obj->build_id_len &&
	    (info.build_id_len != obj->build_id_len || memcmp(info.build_id, obj->build_id, obj->build_id_len))) {
		char want[2 * RELSTACK_BUILD_ID_MAX + 1], got[2 * sizeof(info.build_id) + 1];

		rs_hex(want, obj->build_id, obj->build_id_len);
		rs_hex(got, info.build_id, info.build_id_len);
		set_error(src, "%s: build-id %s does not match symbol file %s (build-id %s)",
			  base_name(obj->path), want, m->file, got);
		r->mismatch = true;
		goto reject;
	}
	if (n == 0) {
		if (info.bad_lines)
			set_error(src, "%s: symbol file %s is not nm output (line %zu)", base_name(obj->path),
				  m->file, info.first_bad_line);
		else
			set_error(src, "%s: symbol file %s has no code symbols", base_name(obj->path), m->file);
		r->bad = true;
		goto reject;
	}
	if (!info.build_id_len && text_limit(obj)) {
		/*
		 * No build-id to check: every code symbol must lie in the recorded
		 * text.  A weak symbol (nm's W, w) may be data as well as code, as
		 * glibc's data_start in every executable is: it decides nothing.
		 */
		for (size_t i = 0; i < src->ix.n; i++) {
			uint64_t a = src->ix.addr[i];

			if (rs_symentry_weak(&src->ix.ent[i]))
				continue;
			if (a < obj->text_vaddr || a >= text_limit(obj)) {
				set_error(src, "%s: symbol file %s is of another build: %s at 0x%llx lies outside "
					  "the recorded text [0x%llx, 0x%llx)", base_name(obj->path), m->file,
					  src->ix.pool + src->ix.ent[i].name, (unsigned long long)a,
					  (unsigned long long)obj->text_vaddr, (unsigned long long)text_limit(obj));
				r->mismatch = true;
				goto reject;
			}
		}
	}
	r->have_names = true;
	r->limit = info.etext;
	src->names_from = strdup(m->file);
	return;
reject:
	rs_symindex_fini(&src->ix);
	rs_symindex_init(&src->ix);
}

static void resolve(struct rs_symbolizer *s, struct object *o)
{
	struct source *src = o->src;
	const struct relstack_object *obj = &o->rec;
	const struct map *m = map_for(s, obj);
	struct resolve r = {
		.s = s, .obj = obj, .src = src,
		.want_lines = s->opts.lines,
		.dyn = { .fd = -1 },
	};

	src->resolved = true;
	/* the vDSO has no file, but may have a debug file by build-id or an nm file */
	if (!(obj->flags & RELSTACK_OBJECT_VDSO) && obj->path[0] && obj->path[0] != '[')
		try_path(&r, obj->path, false, 0);
	for (size_t i = 0; i < s->n_debug_dirs && !done(&r); i++)
		try_build_id(&r, s->debug_dirs[i]);
	if (!s->opts.no_system_debug_dir && !done(&r))
		try_build_id(&r, SYSTEM_DEBUG_DIR);
	if (!done(&r))
		try_debuglink(&r);
	try_debuginfod(&r);
	if (!r.have_names && m)
		try_map(&r, m);
	if (!r.have_names) {
		/* last resort: the dynamic symbols of an accepted file */
		struct elf_file *f = r.dyn.elf ? &r.dyn : src->dwfile.elf ? &src->dwfile : NULL;

		if (f && rs_symelf_load(f->elf, SHT_DYNSYM, &src->ix) > 0) {
			r.have_names = true;
			src->names_from = strdup(f->path);
		}
	}
	elf_file_close(&r.dyn);
	free((char *)r.debuglink);

	if (r.have_names) {
		rs_symindex_seal(&src->ix, text_limit(obj) ? text_limit(obj) : r.limit);
		src->reason = RS_SYM_OK;
		if (obj->base == RELSTACK_BASE_STEXT && !src->ix.has_stext) {
			src->reason = RS_SYM_NO_BASE;
			src->err = -RELSTACK_ENOSYMBOLS;
			set_error(src, "%s: symbols from %s have no _stext, the base of kernel offsets",
				  base_name(obj->path), src->names_from ? src->names_from : "?");
		} else {
			free(src->errmsg); /* a mismatching candidate does not matter once names are found */
			src->errmsg = NULL;
		}
	} else if (r.mismatch) {
		src->reason = RS_SYM_BUILD_ID_MISMATCH;
		src->err = -RELSTACK_EBUILDID;
	} else if (obj->flags & RELSTACK_OBJECT_VDSO) {
		src->reason = RS_SYM_VDSO;
		src->err = -RELSTACK_ENOSYMBOLS;
		free(src->errmsg);
		src->errmsg = NULL; /* nothing went wrong: the vDSO simply has no file */
	} else if (r.bad) {
		src->reason = RS_SYM_BAD_SOURCE;
		src->err = -RELSTACK_ECORRUPT;
	} else {
		src->reason = RS_SYM_NO_SOURCE;
		src->err = -RELSTACK_ENOSYMBOLS;
		set_error(src, "%s: no symbol source found (tried: %s)", base_name(obj->path),
			  r.tried ? r.tried : "nothing");
	}
	free(r.tried);
}

int rs_symbolizer_load(struct rs_symbolizer *s, int handle)
{
	struct object *o;

	if (!s || handle < 0 || (size_t)handle >= s->n_objs)
		return -EINVAL;
	o = &s->objs[handle];
	if (!o->src->resolved)
		resolve(s, o);
	return o->src->err;
}

const char *rs_symbolizer_object_error(struct rs_symbolizer *s, int handle)
{
	if (rs_symbolizer_load(s, handle) == -EINVAL)
		return NULL;
	return s->objs[handle].src->errmsg;
}

static void fill_lines(struct rs_symbolizer *s, struct source *src, uint64_t addr, struct rs_sym *out)
{
	struct rs_dwinline in[RS_SYM_MAX_INLINED];
	struct rs_dwloc loc;
	int n = 0;

	if (rs_symdwarf_line(src->dw, addr, &loc) == 0) {
		out->file = loc.file;
		out->line = loc.line;
		out->column = loc.column;
		out->line_source = src->lines_from;
	} else {
		out->line_note = "no DWARF line for the address";
	}
	if (!s->opts.inlines)
		return;
	if (!out->line_note)
		out->line_note = rs_symdwarf_inlines_missing(src->dw, addr);
	n = rs_symdwarf_inlines(src->dw, addr, in, RS_SYM_MAX_INLINED);
	if (n <= 0)
		return;
	/* innermost first: each frame's location is the call site of the one inside it */
	out->inlined[0] = (struct rs_sym_inlined){ in[0].name, out->file, out->line, out->column };
	for (int k = 1; k < n; k++)
		out->inlined[k] = (struct rs_sym_inlined){ in[k].name, in[k - 1].call.file,
							   in[k - 1].call.line, in[k - 1].call.column };
	out->file = in[n - 1].call.file;
	out->line = in[n - 1].call.line;
	out->column = in[n - 1].call.column;
	out->n_inlined = (unsigned)n;
}

int rs_symbolize(struct rs_symbolizer *s, int handle, uint64_t offset, struct rs_sym *out)
{
	struct source *src;
	struct rs_symhit hit;
	uint64_t addr = offset;

	memset(out, 0, offsetof(struct rs_sym, inlined));
	out->source = NULL;
	out->line_source = NULL;
	out->line_note = NULL;
	if (!s || handle < 0 || (size_t)handle >= s->n_objs) {
		out->reason = RS_SYM_BAD_HANDLE;
		return -ENOENT;
	}
	src = s->objs[handle].src;
	if (rs_unlikely(!src->resolved))
		resolve(s, &s->objs[handle]);
	if (src->reason != RS_SYM_OK) {
		out->reason = src->reason;
		return -ENOENT;
	}
	if (s->objs[handle].rec.base == RELSTACK_BASE_STEXT)
		addr += src->ix.stext;
	if (src->dw)
		fill_lines(s, src, addr, out);
	else if (s->opts.lines)
		out->line_note = "no DWARF found for the object";
	if (rs_symindex_lookup(&src->ix, addr, &hit) < 0) {
		out->reason = RS_SYM_NO_SYMBOL;
		return -ENOENT;
	}
	out->name = hit.name;
	out->symoff = addr - hit.start;
	out->symsize = hit.size;
	out->size_exact = hit.sized;
	out->source = src->names_from;
	return 0;
}

int rs_symbolizer_find(struct rs_symbolizer *s, int handle, const char *name, struct rs_symextent *out,
		       size_t max)
{
	const struct source *src;
	struct rs_symhit hit;
	size_t pos = 0;
	uint64_t base;
	int err = rs_symbolizer_load(s, handle), n = 0;

	if (err < 0)
		return err;
	src = s->objs[handle].src;
	if (src->reason != RS_SYM_OK)
		return -RELSTACK_ENOSYMBOLS;
	base = s->objs[handle].rec.base == RELSTACK_BASE_STEXT ? src->ix.stext : 0;
	while (rs_symindex_find(&src->ix, name, &pos, &hit) == 0 && n < INT_MAX) {
		if ((size_t)n < max)
			out[n] = (struct rs_symextent){ hit.start - base, hit.size };
		n++;
	}
	return n;
}

int rs_object_from_file(const char *path, struct relstack_object *out)
{
	const void *bid = NULL;
	ssize_t bid_len;
	size_t n;
	Elf *elf;
	int fd, err = 0;

	if (strlen(path) >= sizeof(out->path))
		return -ENAMETOOLONG;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	memset(out, 0, sizeof(*out));
	out->state = RELSTACK_OBJECT_LOADED;
	out->base = RELSTACK_BASE_LOAD_BIAS;
	strcpy(out->path, path);
	bid_len = dwelf_elf_gnu_build_id(elf, &bid);
	if (bid_len > 0) {
		n = (size_t)bid_len < RELSTACK_BUILD_ID_MAX ? (size_t)bid_len : RELSTACK_BUILD_ID_MAX;
		memcpy(out->build_id, bid, n);
		out->build_id_len = (uint32_t)n;
	}
	/* as the object table records it: the span of the executable segments */
	if (elf_getphdrnum(elf, &n) == 0) {
		bool have_text = false;

		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
			    !ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
				continue;
			if (!have_text) {
				out->text_vaddr = ph.p_vaddr;
				out->text_offset = ph.p_offset;
				out->text_size = ph.p_memsz;
				have_text = true;
			} else if (ph.p_vaddr + ph.p_memsz > out->text_vaddr + out->text_size) {
				out->text_size = ph.p_vaddr + ph.p_memsz - out->text_vaddr;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}
