// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Another process's objects, from /proc/PID/maps.
 *
 * Each file mapped executable is one object: its file is opened through
 * /proc/PID/map_files (the mapped file itself, even if replaced or in
 * another mount namespace), or else /proc/PID/root/PATH checked to be the
 * same device and inode.  Its loadable segments are mapped here read-only
 * at their relative addresses, as a loader would, so that the capture
 * side's own code reads it as a loaded object (struct dl_phdr_info): the
 * frame-pointer check (fpcheck.c) and the CFI table (cfi.c) come out as
 * for an object of this process, keyed by this mapping's bias, and the
 * table is then rebased to the process's bias.  The vDSO has no file: its
 * bytes are copied from the process.
 *
 * An object whose file cannot be found or read is left out of the index
 * (its frames are unknown text, so no trace through it is reliable) and
 * says why in ->problem.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture/cfi.h"
#include "capture/fpcheck.h"
#include "capture/objtab-local.h"
#include "decode/symbolize.h"
#include "live/live.h"

/* Which file an object is: mappings of one file make one object. */
struct file_key {
	unsigned long ino;
	unsigned major, minor;
};

/* The file's segments mapped here read-only at their relative addresses. */
struct image {
	void *base; /* the reservation */
	size_t size;
	uintptr_t bias; /* local address = bias + p_vaddr */
	ElfW(Phdr) *ph;
	unsigned phnum;
};

static void image_free(struct image *im)
{
	if (im->base && im->base != MAP_FAILED)
		munmap(im->base, im->size);
	free(im->ph);
	memset(im, 0, sizeof(*im));
}

static bool phdrs_ok(const ElfW(Ehdr) *eh)
{
	return memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == RS_ELF_NATIVE_CLASS &&
	       eh->e_phentsize == sizeof(ElfW(Phdr)) && eh->e_phnum > 0 && eh->e_phnum < 4096;
}

/* The span [lo, hi) of the PT_LOAD segments, page-rounded. */
static bool load_span(const ElfW(Phdr) *ph, unsigned n, uintptr_t page, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (unsigned i = 0; i < n; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_memsz == 0 || ph[i].p_vaddr + ph[i].p_memsz < ph[i].p_vaddr)
			continue;
		if ((ph[i].p_vaddr & ~(page - 1)) < *lo)
			*lo = ph[i].p_vaddr & ~(page - 1);
		if (ph[i].p_vaddr + ph[i].p_memsz > *hi)
			*hi = ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (*hi <= *lo || (*hi - *lo) >> 20 > ((uintptr_t)1 << 20)) /* beyond 2^40 bytes */
		return false;
	*hi = (*hi + page - 1) & ~(page - 1);
	return true;
}

static int image_from_fd(int fd, struct image *im)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo, hi;
	struct stat st;
	ElfW(Ehdr) eh;
	size_t phbytes;

	memset(im, 0, sizeof(*im));
	if (fstat(fd, &st) || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || !phdrs_ok(&eh))
		return -ENOEXEC;
	phbytes = (size_t)eh.e_phnum * sizeof(ElfW(Phdr));
	im->ph = malloc(phbytes);
	if (!im->ph)
		return -ENOMEM;
	im->phnum = eh.e_phnum;
	if (pread(fd, im->ph, phbytes, (off_t)eh.e_phoff) != (ssize_t)phbytes ||
	    !load_span(im->ph, im->phnum, page, &lo, &hi)) {
		image_free(im);
		return -ENOEXEC;
	}
	im->size = hi - lo;
	im->base = mmap(NULL, im->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (im->base == MAP_FAILED) {
		im->base = NULL;
		image_free(im);
		return -ENOMEM;
	}
	im->bias = (uintptr_t)im->base - lo;
	for (unsigned i = 0; i < im->phnum; i++) {
		const ElfW(Phdr) *p = &im->ph[i];
		uintptr_t at = im->bias + (p->p_vaddr & ~(page - 1)), skew = p->p_vaddr & (page - 1);

		if (p->p_type != PT_LOAD || p->p_filesz == 0)
			continue;
		/* the file's bytes only: a reader past p_filesz sees zeros or a fault-free PROT_NONE page */
		if ((p->p_offset & (page - 1)) != skew || p->p_offset + p->p_filesz > (uint64_t)st.st_size ||
		    p->p_filesz > p->p_memsz ||
		    mmap((void *)at, p->p_filesz + skew, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd,
			 (off_t)(p->p_offset - skew)) == MAP_FAILED) {
			image_free(im);
			return -ENOEXEC;
		}
	}
	return 0;
}

/* The vDSO, copied from the process: it is mapped at p_vaddr 0 of its own image. */
static int image_of_vdso(pid_t pid, uintptr_t start, uintptr_t end, struct image *im)
{
	struct iovec local, remote;
	const ElfW(Ehdr) *eh;

	memset(im, 0, sizeof(*im));
	im->size = end - start;
	im->base = mmap(NULL, im->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (im->base == MAP_FAILED) {
		im->base = NULL;
		return -ENOMEM;
	}
	local = (struct iovec){ im->base, im->size };
	remote = (struct iovec){ (void *)start, im->size };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != (ssize_t)im->size) {
		int e = errno ? errno : EIO;

		image_free(im);
		return -e;
	}
	eh = im->base;
	if (im->size < sizeof(*eh) || !phdrs_ok(eh) || eh->e_phoff > im->size ||
	    (im->size - eh->e_phoff) / sizeof(ElfW(Phdr)) < eh->e_phnum) {
		image_free(im);
		return -ENOEXEC;
	}
	im->phnum = eh->e_phnum;
	im->ph = malloc(im->phnum * sizeof(ElfW(Phdr)));
	if (!im->ph) {
		image_free(im);
		return -ENOMEM;
	}
	memcpy(im->ph, (const char *)im->base + eh->e_phoff, im->phnum * sizeof(ElfW(Phdr)));
	for (unsigned i = 0; i < im->phnum; i++) {
		/* every address the readers compute must fall inside the copy */
		if (im->ph[i].p_vaddr > im->size || im->size - im->ph[i].p_vaddr < im->ph[i].p_memsz) {
			image_free(im);
			return -ENOEXEC;
		}
	}
	im->bias = (uintptr_t)im->base;
	return 0;
}

/*
 * The process's bias of the object whose mapping @m is: the PT_LOAD
 * segment holding the mapping's file offset says which address it has.
 */
static bool remote_bias(const struct image *im, const struct rs_live_map_line *m, uintptr_t page, uintptr_t *bias)
{
	for (unsigned i = 0; i < im->phnum; i++) {
		const ElfW(Phdr) *p = &im->ph[i];
		uintptr_t poff = p->p_offset & ~(page - 1);

		if (p->p_type != PT_LOAD || m->off < poff || m->off >= p->p_offset + p->p_filesz)
			continue;
		*bias = m->start - ((p->p_vaddr & ~(page - 1)) + (m->off - poff));
		return true;
	}
	return false;
}

/* Compile the object's facts from its local image, in the process's addresses. */
static void learn(struct rs_live_object *o, const struct image *im, const char *debug_path)
{
	struct dl_phdr_info info;
	struct rs_fp_facts facts;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	memset(&info, 0, sizeof(info));
	info.dlpi_addr = im->bias;
	info.dlpi_name = o->obj.path;
	info.dlpi_phdr = im->ph;
	info.dlpi_phnum = (ElfW(Half))im->phnum;
	for (unsigned i = 0; i < im->phnum; i++) {
		const ElfW(Phdr) *p = &im->ph[i];

		if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || !p->p_memsz)
			continue;
		if (im->bias + p->p_vaddr < lo)
			lo = im->bias + p->p_vaddr;
		if (im->bias + p->p_vaddr + p->p_memsz > hi)
			hi = im->bias + p->p_vaddr + p->p_memsz;
	}
	if (hi <= lo) {
		o->problem = "no executable segment";
		return;
	}
	rs_fp_check(&info, lo, hi, &facts);
	o->restorer = facts.restorer ? facts.restorer - im->bias + o->bias : 0;
	o->cfi = rs_cfi_table_build(&info, debug_path, o->obj.build_id, o->obj.build_id_len);
	if (o->cfi)
		rs_cfi_table_rebase(o->cfi, o->bias);
	if (o->cfi ? rs_cfi_table_records(o->cfi) == 0 : !facts.records)
		o->obj.flags |= RELSTACK_OBJECT_NO_FP;
}

/* Open the file of mapping @m: the very file through map_files, else the path under the process's root. */
static int open_mapped(pid_t pid, const struct rs_live_map_line *m, char *open_path, size_t len)
{
	char mf[96];
	struct stat st;
	int fd;

	snprintf(open_path, len, "/proc/%d/root%s", (int)pid, m->path);
	fd = open(open_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == m->ino &&
	    st.st_dev == makedev(m->major, m->minor))
		return fd;
	if (fd >= 0)
		close(fd);
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%lx-%lx", (int)pid, (unsigned long)m->start,
		 (unsigned long)m->end);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		snprintf(open_path, len, "%s", mf);
	return fd;
}

static int add_object(struct rs_live_snapshot *s, unsigned *cap)
{
	if (s->nobjects == *cap) {
		struct rs_live_object *no = realloc(s->objects, (*cap = *cap ? *cap * 2 : 32) * sizeof(*no));

		if (!no)
			return -ENOMEM;
		s->objects = no;
	}
	memset(&s->objects[s->nobjects], 0, sizeof(s->objects[0]));
	return (int)s->nobjects++;
}

static void set_path(struct relstack_object *obj, const char *path)
{
	size_t n = strlen(path);

	if (n >= sizeof(obj->path)) {
		obj->flags |= RELSTACK_OBJECT_PATH_CUT;
		n = sizeof(obj->path) - 1;
	}
	memcpy(obj->path, path, n);
	obj->path[n] = '\0';
}

/* The object for file mapping @m: found by its device and inode, or made. */
static int file_object(struct rs_live_snapshot *s, const struct rs_live_map_line *m, struct file_key *keys, unsigned *cap)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct rs_live_object *o;
	struct image im;
	char path[4096];
	int i, fd, e;
	char *del;

	for (unsigned k = 0; k < s->nobjects; k++) {
		if (keys[k].ino != m->ino || keys[k].major != m->major || keys[k].minor != m->minor ||
		    s->objects[k].obj.flags & RELSTACK_OBJECT_VDSO)
			continue;
		o = &s->objects[k];
		if (m->start < o->start)
			o->start = m->start;
		if (m->end > o->end)
			o->end = m->end;
		return 0;
	}
	i = add_object(s, cap);
	if (i < 0)
		return i;
	keys[i] = (struct file_key){ m->ino, m->major, m->minor };
	o = &s->objects[i];
	o->start = m->start;
	o->end = m->end;
	snprintf(path, sizeof(path), "%s", m->path);
	del = strstr(path, " (deleted)");
	if (del && del[10] == '\0')
		*del = '\0';
	set_path(&o->obj, path);
	o->obj.state = RELSTACK_OBJECT_LOADED;
	o->obj.base = RELSTACK_BASE_LOAD_BIAS;
	fd = open_mapped(s->pid, m, o->open_path, sizeof(o->open_path));
	if (fd < 0) {
		o->problem = "its file cannot be opened";
		return 0;
	}
	e = image_from_fd(fd, &im);
	close(fd);
	if (e) {
		o->problem = "its file is not a readable ELF object";
		return 0;
	}
	{
		struct relstack_object fo;

		/* the build-id and text segment as the object table records them */
		if (rs_object_from_file(o->open_path, &fo) == 0) {
			memcpy(o->obj.build_id, fo.build_id, sizeof(fo.build_id));
			o->obj.build_id_len = fo.build_id_len;
			o->obj.text_vaddr = fo.text_vaddr;
			o->obj.text_offset = fo.text_offset;
			o->obj.text_size = fo.text_size;
		}
	}
	if (!remote_bias(&im, m, page, &o->bias))
		o->problem = "its mapping matches no segment of its file";
	else
		learn(o, &im, o->open_path);
	image_free(&im);
	return 0;
}

static int vdso_object(struct rs_live_snapshot *s, const struct rs_live_map_line *m, struct file_key *keys, unsigned *cap)
{
	struct rs_live_object *o;
	struct image im;
	int i = add_object(s, cap);

	if (i < 0)
		return i;
	keys[i] = (struct file_key){ 0, 0, 0 };
	o = &s->objects[i];
	o->start = m->start;
	o->end = m->end;
	o->obj.state = RELSTACK_OBJECT_LOADED;
	o->obj.base = RELSTACK_BASE_LOAD_BIAS;
	o->obj.flags = RELSTACK_OBJECT_VDSO;
	set_path(&o->obj, "[vdso]");
	if (image_of_vdso(s->pid, m->start, m->end, &im)) {
		o->problem = "its bytes cannot be read";
		return 0;
	}
	o->bias = m->start;
	learn(o, &im, NULL);
	image_free(&im);
	return 0;
}

int rs_live_objects_read(struct rs_live_snapshot *s, char *msg, size_t msglen)
{
	char path[64], exe[4096], *buf, *line, *save = NULL;
	struct rs_index_entry *e = NULL;
	struct file_key *keys = calloc(RS_INDEX_MAX, sizeof(*keys));
	unsigned cap = 0, n = 0;
	ssize_t exelen;
	size_t len;
	int ret = 0;

	if (!keys) {
		snprintf(msg, msglen, "process %d: out of memory", (int)s->pid);
		return -ENOMEM;
	}
	ret = rs_live_maps_read(s, msg, msglen);
	if (ret) {
		free(keys);
		return ret;
	}
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)s->pid);
	exelen = readlink(path, exe, sizeof(exe) - 1);
	exe[exelen > 0 ? exelen : 0] = '\0';
	s->exec_digest = RS_LIVE_DIGEST_START;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	buf = rs_live_read_file(path, &len);
	if (!buf) {
		ret = -errno;
		free(keys);
		snprintf(msg, msglen, "process %d: %s: %s", (int)s->pid, path, strerror(-ret));
		return ret;
	}
	for (line = strtok_r(buf, "\n", &save); line && ret == 0; line = strtok_r(NULL, "\n", &save)) {
		struct rs_live_map_line m;

		if (!rs_live_map_line_parse(line, &m) || m.perms[2] != 'x')
			continue;
		s->exec_digest = rs_live_digest_line(s->exec_digest, line);
		if (s->nobjects >= RS_INDEX_MAX) {
			ret = -E2BIG;
			break;
		}
		if (strcmp(m.path, "[vdso]") == 0)
			ret = vdso_object(s, &m, keys, &cap);
		else if (m.path[0] == '/')
			ret = file_object(s, &m, keys, &cap);
		/* anonymous executable memory (generated code) is in no object: its frames are unknown text */
	}
	free(buf);
	free(keys);
	e = calloc(RS_INDEX_MAX, sizeof(*e));
	if (!ret && !e)
		ret = -ENOMEM;
	if (ret) {
		free(e);
		snprintf(msg, msglen, "process %d: its objects: %s", (int)s->pid, strerror(-ret));
		return ret;
	}
	/* the main executable is slot 0, as in a recorded object table */
	for (unsigned i = 0; i < s->nobjects; i++) {
		struct rs_live_object *o = &s->objects[i];

		if (exe[0] && strcmp(o->obj.path, exe) == 0 && i != 0) {
			struct rs_live_object t = *o;

			memmove(&s->objects[1], &s->objects[0], i * sizeof(*o));
			s->objects[0] = t;
		}
	}
	for (unsigned i = 0; i < s->nobjects; i++) {
		struct rs_live_object *o = &s->objects[i];

		o->obj.slot = i;
		if (i == 0 && exe[0] && strcmp(o->obj.path, exe) == 0)
			o->obj.flags |= RELSTACK_OBJECT_MAIN;
		if (o->problem)
			continue;
		e[n++] = (struct rs_index_entry){ o->start, o->end, o->bias, o->restorer, o->cfi, i, o->obj.flags };
	}
	s->latch = calloc(1, sizeof(*s->latch));
	if (!s->latch) {
		free(e);
		snprintf(msg, msglen, "process %d: out of memory", (int)s->pid);
		return -ENOMEM;
	}
	ret = rs_objtab_index_build(s->latch, e, n, 1);
	free(e);
	if (ret)
		snprintf(msg, msglen, "process %d: its objects make no index: %s", (int)s->pid, strerror(-ret));
	return ret;
}

const struct rs_live_object *rs_live_object_at(const struct rs_live_snapshot *s, uintptr_t addr)
{
	for (unsigned i = 0; i < s->nobjects; i++)
		if (addr - s->objects[i].start < s->objects[i].end - s->objects[i].start)
			return &s->objects[i];
	return NULL;
}

void rs_live_objects_free(struct rs_live_snapshot *s)
{
	for (unsigned i = 0; i < s->nobjects; i++)
		rs_cfi_table_free(s->objects[i].cfi);
	free(s->objects);
	free(s->maps);
	free(s->latch);
	s->objects = NULL;
	s->maps = NULL;
	s->latch = NULL;
	s->nobjects = s->nmaps = 0;
}
