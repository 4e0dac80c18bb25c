// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The object table: every object loaded in this process, by slot.
 *
 * Owns the slots (path, build-id, executable segment, load/unload epochs),
 * the lookup index used while capturing, and the persisted images kept in
 * buffer files.
 *
 * Writers and readers
 * -------------------
 * Writers are the statedump, re-scans and image mirroring.  They hold
 * T.lock, so there is one writer at a time, and they never run in a signal
 * handler.  Readers are captures: any thread, any time, signal handlers
 * included.  They take no lock and make no system call.
 *
 * The index is a latch: two copies of a sorted array of code ranges.
 *
 *      latch.seq:   even -> readers use copy[0]      odd -> copy[1]
 *
 *      writer:  A  seq++ (now odd)  ; fence      readers move to copy[1]
 *               B  rewrite copy[0]
 *               C  seq++ (now even, release)     readers move to copy[0]
 *               D  rewrite copy[1]
 *
 *      reader:  1  s = seq (acquire); use copy[s & 1]
 *               2  binary search, all loads relaxed
 *               3  fence (acquire); retry if seq != s
 *
 * A reader never sees the copy being rewritten unless it was preempted
 * across a whole A..C or C..A' step; then the seq check (3, pairs with the
 * fence after A and the release of C) catches it and the reader retries,
 * at most RS_LATCH_TRIES times, then gives up and counts "busy".  A signal
 * handler that interrupts the writer on its own thread reads the copy the
 * writer is not touching and succeeds at once.
 *
 * Slots
 * -----
 * Slot 0 is the main executable.  A new object takes an EMPTY slot, or
 * else the UNLOADED slot that was unloaded longest ago, provided every
 * holder's horizon has passed its unload epoch (a record made before the
 * unload could still name it otherwise).  No slot: the object is counted in
 * "full" and its addresses encode as UNKNOWN, never as another index.
 *
 * Epochs count the table's changes.  Each scan that changes something is
 * one new epoch; a word made in epoch E names the object that held its
 * slot in E, i.e. load_epoch <= E < unload_epoch.
 *
 * Pins
 * ----
 * A listed range must not outlive its object: another object mapped there
 * would be named as the old one.  So the table holds a reference of its
 * own (a "pin": dlopen RTLD_NOLOAD) on every listed object the loader
 * could unload, and the loader unmaps nothing that is still referenced.
 * Permanent objects (mapped before the program started: find_permanent())
 * need none.  A pin is dropped only by rs_objtab_close_end(), for the
 * slots rs_objtab_close_begin() marked first (loader.c, steps A-D).  The
 * index flags a range RS_OBJECT_CHANGING while its slot has no pin or is
 * marked (changing()), so an unflagged range is mapped by its slot's
 * object at every instant.  Pins are taken and dropped without T.lock
 * held: the loader's lock comes before ours (a constructor running under
 * it may call into the table).  docs/unwinder.md, "Keeping the object
 * table current", says why this is complete.
 *
 * A re-scan keeps a slot for an object found at its place only if it is
 * the same file (same_identity()): a library swapped at the same address
 * is an unload and a load, build-id or not.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/cfi-parse.h"
#include "capture/cfi.h"
#include "capture/objtab.h"
#include "capture/objtab-local.h"
#include "capture/fpcheck.h"

_Static_assert(sizeof(struct rs_objtab_image_head) == 48, "image head is 48 bytes");
_Static_assert(offsetof(struct rs_objtab_image_head, epoch) == 24, "image epoch at 24");
_Static_assert(offsetof(struct rs_objtab_image_head, head_hash) == 40, "image head_hash at 40");
_Static_assert(sizeof(struct rs_objtab_record) == 384, "object record is 384 bytes");
_Static_assert(offsetof(struct rs_objtab_record, slot) == 8, "record slot at 8");
_Static_assert(offsetof(struct rs_objtab_record, build_id) == 24, "record build_id at 24");
_Static_assert(offsetof(struct rs_objtab_record, text_vaddr) == 64, "record text_vaddr at 64");
_Static_assert(offsetof(struct rs_objtab_record, load_address) == 104, "record load_address at 104");
_Static_assert(offsetof(struct rs_objtab_record, path) == 112, "record path at 112");

struct rs_latch rs_latch;

#define RS_MIRRORS 8

struct mirror {
	void *mem;
	unsigned capacity;
	bool with_addresses;
	bool used;
};


/*
 * Which file an object was mapped from, as stat(2) says at scan time: the
 * loader itself tells files apart by device and inode, and a file
 * rewritten in place keeps those but not its modification time.
 */
struct identity {
	bool valid;             /* false: no file to stat (vDSO, main program, deleted, memfd) */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

#define RS_SONAME_MAX 64

/* What a scan found of one object. */
struct found {
	uintptr_t bias;
	uintptr_t start, end;   /* executable span in this process */
	uintptr_t restorer;     /* its signal-return trampoline (fpcheck.c), or 0 */
	bool records, map_worth; /* fpcheck.h */
	uintptr_t eh_hdr, eh_lo, eh_hi; /* its .eh_frame_hdr and the segment holding it, or 0 */
	struct relstack_object obj;
	struct identity id;
	char soname[RS_SONAME_MAX];     /* DT_SONAME, "" if none or longer */
	char lname[RELSTACK_PATH_MAX];  /* the loader's name for it, "" if longer */
	bool matched;
};

/* Pins of unloaded slots whose object got a new slot: dropped after the new slot's pin is taken. */
#define RS_ORPHANS 64

static struct {
	pthread_mutex_t lock;
	bool ready;
	unsigned capacity;
	uint64_t epoch;
	unsigned long long adds, subs;
	struct relstack_object slot[RS_OBJTAB_SLOTS];
	uintptr_t bias[RS_OBJTAB_SLOTS];
	uintptr_t start[RS_OBJTAB_SLOTS], end[RS_OBJTAB_SLOTS];
	uintptr_t restorer[RS_OBJTAB_SLOTS]; /* per slot, in the index only: an address */
	bool records[RS_OBJTAB_SLOTS];       /* its .eh_frame may hold frame-record rows (fpcheck.h) */
	bool map_worth[RS_OBJTAB_SLOTS];     /* a record map is worth building with an in-place table */
	struct rs_cfi_table *cfi[RS_OBJTAB_SLOTS]; /* per slot, in the index only */
	bool cfi_due[RS_OBJTAB_SLOTS];             /* loaded by this scan: its table is to be made */
	uintptr_t eh_hdr[RS_OBJTAB_SLOTS], eh_lo[RS_OBJTAB_SLOTS], eh_hi[RS_OBJTAB_SLOTS];
	struct found scan[RS_OBJTAB_SLOTS + 64];
	unsigned nscan;
	bool scan_overflow;
	struct rs_index_entry sorted[RS_OBJTAB_SLOTS];
	struct mirror mirror[RS_MIRRORS];
	_Atomic uint64_t holder[RS_OBJTAB_HOLDERS];
	_Atomic bool holder_used[RS_OBJTAB_HOLDERS];
	/* Pins (see the essay): per slot, never persisted. */
	_Atomic bool pinning;               /* our dlclose interposes the C library's */
	unsigned long long prev_subs;       /* dlpi_subs before the current scan */
	uint64_t order_next;
	uint64_t order[RS_OBJTAB_SLOTS];    /* load order: lower was seen first */
	struct identity id[RS_OBJTAB_SLOTS];
	char soname[RS_OBJTAB_SLOTS][RS_SONAME_MAX];
	char lname[RS_OBJTAB_SLOTS][RELSTACK_PATH_MAX];
	void *pin[RS_OBJTAB_SLOTS];         /* our dlopen handle, NULL if none */
	unsigned marks[RS_OBJTAB_SLOTS];    /* dlcloses under way that may let it go */
	bool permanent[RS_OBJTAB_SLOTS];    /* can never be unloaded */
	void *orphan[RS_ORPHANS];
	unsigned norphans;
	/* CFI tables of slots that left the index: freed once no copy lists them */
	struct rs_cfi_table *retired[RS_OBJTAB_SLOTS];
	unsigned nretired;
} T = { .lock = PTHREAD_MUTEX_INITIALIZER, .capacity = RS_OBJTAB_SLOTS };

/* Counters touched by readers: relaxed, each on its own. */
static _Atomic uint64_t st_full, st_unknown, st_rescans, st_busy;

void rs_objtab_count_unknown(uint64_t n)
{
	atomic_fetch_add_explicit(&st_unknown, n, memory_order_relaxed);
}

void rs_objtab_count_busy(void)
{
	atomic_fetch_add_explicit(&st_busy, 1, memory_order_relaxed);
}

/* ---- reading the loaded objects ---- */

static void read_build_id(const ElfW(Phdr) *ph, uintptr_t bias, struct relstack_object *o)
{
	const unsigned char *p = (const unsigned char *)(bias + ph->p_vaddr);
	const unsigned char *e = p + ph->p_memsz;
	size_t align = ph->p_align == 8 ? 8 : 4;

	while ((size_t)(e - p) >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
		size_t name = (n->n_namesz + align - 1) & ~(align - 1);
		size_t desc = (n->n_descsz + align - 1) & ~(align - 1);
		const unsigned char *d = p + sizeof(*n) + name;

		if (name > (size_t)(e - p) || desc > (size_t)(e - p) ||
		    sizeof(*n) + name + desc > (size_t)(e - p))
			return;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(p + sizeof(*n), "GNU", 4) == 0) {
			size_t len = n->n_descsz < RELSTACK_BUILD_ID_MAX ? n->n_descsz : RELSTACK_BUILD_ID_MAX;
			memcpy(o->build_id, d, len);
			o->build_id_len = (uint32_t)len;
			return;
		}
		p += sizeof(*n) + name + desc;
	}
}

static void set_path(struct relstack_object *o, const char *path)
{
	size_t len = strlen(path);

	if (len >= sizeof(o->path)) {
		o->flags |= RELSTACK_OBJECT_PATH_CUT;
		len = sizeof(o->path) - 1;
	}
	memcpy(o->path, path, len);
	o->path[len] = '\0';
}

/*
 * The object's dynamic section and string table.  The loader relocates
 * d_ptr entries in place on most targets, not in a read-only dynamic
 * section (the vDSO's): an address below the bias was not relocated.
 */
static const ElfW(Dyn) *dynamic_of(const struct dl_phdr_info *info, const char **strtab)
{
	const ElfW(Dyn) *dyn = NULL;

	*strtab = NULL;
	for (unsigned i = 0; i < info->dlpi_phnum && !dyn; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB) {
			uintptr_t p = (uintptr_t)d->d_un.d_ptr;

			*strtab = (const char *)(p < info->dlpi_addr ? p + info->dlpi_addr : p);
		}
	}
	return *strtab ? dyn : NULL;
}

static void copy_name(char *dst, size_t cap, const char *src)
{
	size_t len = strlen(src);

	if (len >= cap)
		len = 0; /* cut, it would name something else: no name */
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static void read_identity(const char *path, struct identity *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (!path[0] || stat(path, &st) != 0)
		return;
	id->valid = true;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime = st.st_mtim;
}

static bool identity_equal(const struct identity *a, const struct identity *b)
{
	return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/*
 * Is the object a scan found at slot @i's place still slot @i's object?
 * The main program, the vDSO, permanent and pinned objects cannot have
 * been replaced (a file replaced on disk under a mapped object changes
 * nothing mapped).  Others are compared by the file they came from; an
 * object with no file to compare is the same only if nothing was unloaded
 * since the last scan.
 */
static bool same_identity(unsigned i, const struct found *f)
{
	if (T.permanent[i] || T.pin[i] || (T.slot[i].flags & (RELSTACK_OBJECT_MAIN | RELSTACK_OBJECT_VDSO)))
		return true;
	if (T.id[i].valid || f->id.valid)
		return identity_equal(&T.id[i], &f->id);
	return T.prev_subs == T.subs;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned *nth = data;
	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	const ElfW(Dyn) *dyn;
	const char *strtab;
	struct found *f;
	struct rs_fp_facts facts;
	bool have_text = false, is_vdso;

	if ((*nth)++ == 0 && size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		T.adds = info->dlpi_adds;
		T.subs = info->dlpi_subs;
	}
	if (T.nscan == RS_ARRAY_SIZE(T.scan)) {
		T.scan_overflow = true;
		return 0;
	}
	f = &T.scan[T.nscan];
	memset(f, 0, sizeof(*f));
	f->bias = info->dlpi_addr;
	f->obj.base = RELSTACK_BASE_LOAD_BIAS;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_NOTE && !f->obj.build_id_len)
			read_build_id(ph, info->dlpi_addr, &f->obj);
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		if (!have_text) {
			f->obj.text_vaddr = ph->p_vaddr;
			f->obj.text_offset = ph->p_offset;
			f->obj.text_size = ph->p_memsz;
			have_text = true;
		} else if (ph->p_vaddr + ph->p_memsz > f->obj.text_vaddr + f->obj.text_size) {
			/* Several executable segments: keep their span. */
			f->obj.text_size = ph->p_vaddr + ph->p_memsz - f->obj.text_vaddr;
		}
	}
	if (!have_text)
		return 0; /* nothing a stack can point into */
	f->start = info->dlpi_addr + f->obj.text_vaddr;
	f->end = f->start + f->obj.text_size;

	dyn = dynamic_of(info, &strtab);
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_SONAME)
			copy_name(f->soname, sizeof(f->soname), strtab + d->d_un.d_val);
	copy_name(f->lname, sizeof(f->lname), info->dlpi_name ? info->dlpi_name : "");
	is_vdso = vdso && (uintptr_t)info->dlpi_phdr >= vdso && (uintptr_t)info->dlpi_phdr < vdso + 4096;
	if (*nth != 1 && !is_vdso)
		read_identity(f->lname, &f->id);

	/*
	 * An object the table already holds (same place, same segment, same
	 * build-id, same file) keeps its path and flags: a re-scan after one
	 * dlopen does not resolve every path and parse every .eh_frame again.
	 */
	for (unsigned i = 0; i < T.capacity; i++) {
		const struct relstack_object *o = &T.slot[i];

		if (o->state == RELSTACK_OBJECT_LOADED && T.bias[i] == f->bias && o->text_vaddr == f->obj.text_vaddr &&
		    o->text_size == f->obj.text_size && o->build_id_len == f->obj.build_id_len &&
		    memcmp(o->build_id, f->obj.build_id, o->build_id_len) == 0 && same_identity(i, f)) {
			memcpy(f->obj.path, o->path, sizeof(f->obj.path));
			f->obj.flags = o->flags;
			f->restorer = T.restorer[i];
			T.nscan++;
			return 0;
		}
	}

	if (*nth == 1) {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		f->obj.flags |= RELSTACK_OBJECT_MAIN;
		if (n <= 0) {
			const char *fn = (const char *)getauxval(AT_EXECFN);

			set_path(&f->obj, fn ? fn : "");
		} else {
			exe[n] = '\0';
			set_path(&f->obj, exe);
		}
	} else if (is_vdso) {
		f->obj.flags |= RELSTACK_OBJECT_VDSO;
		set_path(&f->obj, "[vdso]");
	} else {
		/*
		 * dlopen() keeps the name it was given, relative or through
		 * $ORIGIN/..: record the canonical path, which a decoder on
		 * another machine or in another directory can use.
		 */
		const char *name = info->dlpi_name ? info->dlpi_name : "";
		char *canon = name[0] ? realpath(name, NULL) : NULL;

		set_path(&f->obj, canon ? canon : name);
		free(canon);
	}
	rs_fp_check(info, f->start, f->end, &facts);
	f->restorer = facts.restorer;
	f->records = facts.records;
	f->map_worth = facts.map_worth;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_EH_FRAME && ph->p_memsz >= 4 &&
		    load_segment(info, info->dlpi_addr + ph->p_vaddr, &f->eh_lo, &f->eh_hi))
			f->eh_hdr = info->dlpi_addr + ph->p_vaddr;
	}
	T.nscan++;
	return 0;
}

static int peek_counters(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *c = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	} else {
		c[0] = c[1] = ~0ull; /* no counters: always re-scan */
	}
	return 1;
}

static bool same_object(unsigned i, const struct found *f)
{
	const struct relstack_object *o = &T.slot[i];

	return T.bias[i] == f->bias && o->text_vaddr == f->obj.text_vaddr && o->text_size == f->obj.text_size &&
	       o->build_id_len == f->obj.build_id_len &&
	       memcmp(o->build_id, f->obj.build_id, o->build_id_len) == 0 &&
	       strcmp(o->path, f->obj.path) == 0 && same_identity(i, f);
}

/* ---- persisted images ---- */

void rs_objtab_image_put_head(void *mem, unsigned capacity, unsigned flags, uint64_t epoch, uint64_t full)
{
	struct rs_objtab_image_head *h = mem;

	memcpy(h->magic, RS_OBJTAB_IMAGE_MAGIC, sizeof(h->magic));
	h->version = RS_OBJTAB_IMAGE_VERSION;
	h->record_size = sizeof(struct rs_objtab_record);
	h->capacity = capacity;
	h->flags = flags;
	h->epoch = epoch;
	h->full = full;
	h->reserved = 0;
	h->head_hash = rs_hash32(RS_HASH32_INIT, h, offsetof(struct rs_objtab_image_head, head_hash));
}

static void image_write_head(void *mem, unsigned capacity, bool with_addresses)
{
	rs_objtab_image_put_head(mem, capacity, with_addresses ? RS_IMAGE_ADDRESSES : 0, T.epoch,
				 atomic_load_explicit(&st_full, memory_order_relaxed));
}

void rs_objtab_image_put(void *mem, unsigned slot, const struct relstack_object *o, uint64_t load_address)
{
	struct rs_objtab_record *r =
		(struct rs_objtab_record *)((char *)mem + sizeof(struct rs_objtab_image_head)) + slot;
	_Atomic uint32_t *seq = (_Atomic uint32_t *)&r->seq;
	uint32_t s = atomic_load_explicit(seq, memory_order_relaxed);

	/* Odd while we write: a reader of a file whose writer died here rejects the record. */
	atomic_store_explicit(seq, (s | 1u) == s ? s + 2 : s | 1u, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	memset((char *)r + offsetof(struct rs_objtab_record, slot), 0,
	       sizeof(*r) - offsetof(struct rs_objtab_record, slot));
	r->slot = slot;
	r->state = (uint8_t)o->state;
	r->base = (uint8_t)o->base;
	r->flags = (uint16_t)o->flags;
	r->build_id_len = (uint8_t)o->build_id_len;
	memcpy(r->build_id, o->build_id, o->build_id_len);
	r->text_vaddr = o->text_vaddr;
	r->text_offset = o->text_offset;
	r->text_size = o->text_size;
	r->load_epoch = o->load_epoch;
	r->unload_epoch = o->unload_epoch;
	r->load_address = load_address;
	memcpy(r->path, o->path, sizeof(r->path));
	r->hash = rs_hash32(RS_HASH32_INIT, &r->slot, sizeof(*r) - offsetof(struct rs_objtab_record, slot));
	atomic_signal_fence(memory_order_seq_cst);
	s = atomic_load_explicit(seq, memory_order_relaxed);
	atomic_store_explicit(seq, s + 1, memory_order_release);
}

static void image_write_record(void *mem, unsigned slot, bool with_addresses)
{
	const struct relstack_object *o = &T.slot[slot];

	rs_objtab_image_put(mem, slot, o, with_addresses && o->state == RELSTACK_OBJECT_LOADED ? T.bias[slot] : 0);
}

static void image_write_all(void *mem, unsigned capacity, bool with_addresses)
{
	unsigned n = capacity < T.capacity ? capacity : T.capacity;

	image_write_head(mem, capacity, with_addresses);
	for (unsigned i = 0; i < n; i++)
		image_write_record(mem, i, with_addresses);
	for (unsigned i = n; i < capacity; i++) {
		struct rs_objtab_record *r =
			(struct rs_objtab_record *)((char *)mem + sizeof(struct rs_objtab_image_head)) + i;

		memset(r, 0, sizeof(*r));
		r->slot = i;
		r->hash = rs_hash32(RS_HASH32_INIT, &r->slot, sizeof(*r) - offsetof(struct rs_objtab_record, slot));
	}
}

static void mirrors_write_slot(unsigned slot)
{
	for (unsigned m = 0; m < RS_MIRRORS; m++) {
		if (!T.mirror[m].used || slot >= T.mirror[m].capacity)
			continue;
		image_write_record(T.mirror[m].mem, slot, T.mirror[m].with_addresses);
	}
}

static void mirrors_write_heads(void)
{
	for (unsigned m = 0; m < RS_MIRRORS; m++)
		if (T.mirror[m].used)
			image_write_head(T.mirror[m].mem, T.mirror[m].capacity, T.mirror[m].with_addresses);
}

/* The smallest capacity any mirror has: slots beyond it would not persist. */
static unsigned usable_capacity(void)
{
	unsigned cap = T.capacity;

	for (unsigned m = 0; m < RS_MIRRORS; m++)
		if (T.mirror[m].used && T.mirror[m].capacity < cap)
			cap = T.mirror[m].capacity;
	return cap;
}

/* ---- the index ---- */

static int cmp_range(const void *a, const void *b)
{
	const struct rs_index_entry *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void latch_write_copy(struct rs_index *ix, const struct rs_index_entry *sorted, unsigned n, uint64_t epoch)
{
	unsigned span = 1, span_log2 = 0;

	while (span < n) {
		span *= 2;
		span_log2++;
	}
	for (unsigned i = 0; i < span; i++)
		atomic_store_explicit(&ix->starts[i], i < n ? sorted[i].start : UINTPTR_MAX,
				      memory_order_relaxed);
	atomic_store_explicit(&ix->span_log2, span_log2, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++) {
		atomic_store_explicit(&ix->r[i].start, sorted[i].start, memory_order_relaxed);
		atomic_store_explicit(&ix->r[i].end, sorted[i].end, memory_order_relaxed);
		atomic_store_explicit(&ix->r[i].bias, sorted[i].bias, memory_order_relaxed);
		atomic_store_explicit(&ix->r[i].restorer, sorted[i].restorer, memory_order_relaxed);
		atomic_store_explicit(&ix->r[i].cfi, (uintptr_t)sorted[i].cfi, memory_order_relaxed);
		atomic_store_explicit(&ix->r[i].slot_flags,
				      (uint64_t)sorted[i].slot | (uint64_t)sorted[i].flags << 32,
				      memory_order_relaxed);
	}
	atomic_store_explicit(&ix->n, n, memory_order_relaxed);
	atomic_store_explicit(&ix->epoch, epoch, memory_order_relaxed);
}

int rs_objtab_index_build(struct rs_latch *latch, struct rs_index_entry *e, unsigned n, uint64_t epoch)
{
	if (n > RS_INDEX_MAX)
		return -E2BIG;
	qsort(e, n, sizeof(*e), cmp_range);
	for (unsigned i = 1; i < n; i++)
		if (e[i].start < e[i - 1].end)
			return -EINVAL; /* overlapping ranges: no address may belong to two objects */
	atomic_store_explicit(&latch->seq, 0, memory_order_relaxed);
	latch_write_copy(&latch->copy[0], e, n, epoch);
	latch_write_copy(&latch->copy[1], e, n, epoch);
	return 0;
}

/* Pins: may the object go at any moment?  See the essay. */
static bool changing(unsigned i)
{
	return !T.permanent[i] && (!T.pin[i] || T.marks[i]);
}

static void publish_index(void)
{
	unsigned n = 0;
	uint64_t s;

	for (unsigned i = 0; i < T.capacity; i++) {
		if (T.slot[i].state != RELSTACK_OBJECT_LOADED)
			continue;
		T.sorted[n].start = T.start[i];
		T.sorted[n].end = T.end[i];
		T.sorted[n].bias = T.bias[i];
		T.sorted[n].restorer = T.restorer[i];
		T.sorted[n].cfi = T.cfi[i];
		T.sorted[n].slot = i;
		T.sorted[n].flags = T.slot[i].flags | (changing(i) ? RS_OBJECT_CHANGING : 0);
		n++;
	}
	qsort(T.sorted, n, sizeof(T.sorted[0]), cmp_range);

	s = atomic_load_explicit(&rs_latch.seq, memory_order_relaxed);
	/* A */
	atomic_store_explicit(&rs_latch.seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	/* B */
	latch_write_copy(&rs_latch.copy[(s + 1) & 1 ? 0 : 1], T.sorted, n, T.epoch);
	/* C: pairs with the reader's acquire load of seq (1) */
	atomic_store_explicit(&rs_latch.seq, s + 2, memory_order_release);
	/* D */
	latch_write_copy(&rs_latch.copy[(s + 2) & 1 ? 0 : 1], T.sorted, n, T.epoch);
	/* after D: a reader still holding one finds seq changed (cfi.h, "Lifetime") */
	while (T.nretired)
		rs_cfi_table_free(T.retired[--T.nretired]);
}

/* Take @slot's CFI table out of the slot; publish_index() frees it. */
static void retire_cfi(unsigned slot)
{
	if (T.cfi[slot] && T.nretired < RS_ARRAY_SIZE(T.retired))
		T.retired[T.nretired++] = T.cfi[slot];
	T.cfi[slot] = NULL; /* (a full list keeps a table forever: never freed under a reader) */
}

/* ---- scanning ---- */

static uint64_t horizon(void)
{
	uint64_t h = UINT64_MAX;
	bool any = false;

	for (unsigned i = 0; i < RS_OBJTAB_HOLDERS; i++) {
		if (!atomic_load_explicit(&T.holder_used[i], memory_order_relaxed))
			continue; /* stable: T.lock is held */
		uint64_t v = atomic_load_explicit(&T.holder[i], memory_order_relaxed);

		any = true;
		if (v < h)
			h = v;
	}
	return any ? h : 0;
}

static int pick_slot(void)
{
	unsigned cap = usable_capacity();
	uint64_t hz = horizon();
	int best = -1;

	for (unsigned i = 1; i < cap; i++)
		if (T.slot[i].state == RELSTACK_OBJECT_EMPTY)
			return (int)i;
	for (unsigned i = 1; i < cap; i++) {
		if (T.slot[i].state != RELSTACK_OBJECT_UNLOADED || T.slot[i].unload_epoch > hz)
			continue;
		if (best < 0 || T.slot[i].unload_epoch < T.slot[best].unload_epoch)
			best = (int)i;
	}
	return best;
}

static void find_permanent(void);

/*
 * Slot @s has its table (or none): RELSTACK_OBJECT_NO_FP when it proves no
 * frame-record row anywhere, the one thing the flag says: by its record
 * map where it has one, else by what fpcheck.c read of its .eh_frame.
 */
static void table_made(unsigned s)
{
	int records = T.cfi[s] ? rs_cfi_table_records(T.cfi[s]) : 0;

	if (records < 0)
		records = T.records[s];
	if (records)
		T.slot[s].flags &= ~RELSTACK_OBJECT_NO_FP;
	else
		T.slot[s].flags |= RELSTACK_OBJECT_NO_FP;
}

/* compile_one()'s: a table for each slot still due whose object the loader lists. */
static int compile_one(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	for (unsigned s = 0; s < T.capacity; s++) {
		if (!T.cfi_due[s] || T.slot[s].state != RELSTACK_OBJECT_LOADED || T.bias[s] != info->dlpi_addr)
			continue;
		T.cfi[s] = rs_cfi_table_build(info, (T.slot[s].flags & RELSTACK_OBJECT_VDSO) ? NULL : T.slot[s].path,
					      T.slot[s].build_id, T.slot[s].build_id_len);
		table_made(s);
		T.cfi_due[s] = false;
	}
	return 0;
}

/*
 * The CFI tables (cfi.h) of the objects this scan loaded, before the
 * index publishes them.  An object that can never be unloaded (every one
 * the program started with) gets an in-place table of its .eh_frame,
 * which costs nothing to make: a process's start pays no compilation.
 * Any other object, or one with no .eh_frame, gets a compiled table,
 * made inside the loader's iteration, where the object cannot go away
 * while it is read.
 */
static void make_tables(void)
{
	bool compile = false;

	for (unsigned s = 0; s < T.capacity; s++) {
		if (!T.cfi_due[s])
			continue;
		if (T.permanent[s] && T.eh_hdr[s] &&
		    (T.cfi[s] = rs_cfi_table_inplace(T.eh_hdr[s], T.eh_lo[s], T.eh_hi[s], T.bias[s], T.map_worth[s]))) {
			table_made(s);
			T.cfi_due[s] = false;
		} else {
			compile = true;
		}
	}
	if (compile)
		dl_iterate_phdr(compile_one, NULL);
	for (unsigned s = 0; s < T.capacity; s++) {
		if (T.cfi_due[s])
			table_made(s); /* an object gone already, or one without CFI: no table */
		T.cfi_due[s] = false;
	}
}

static int scan_locked(bool force)
{
	unsigned nth = 0, changed = 0;
	uint64_t epoch;

	if (T.ready && !force) {
		unsigned long long c[2];

		dl_iterate_phdr(peek_counters, c);
		if (c[0] == T.adds && c[1] == T.subs)
			return 0;
	}
	T.nscan = 0;
	T.scan_overflow = false;
	T.prev_subs = T.subs;
	dl_iterate_phdr(scan_one, &nth);

	epoch = T.epoch + 1;
	/* Unload what is gone; mark what is still there. */
	for (unsigned i = 0; i < T.capacity; i++) {
		bool still = false;

		if (T.slot[i].state != RELSTACK_OBJECT_LOADED)
			continue;
		for (unsigned k = 0; k < T.nscan && !still; k++) {
			if (!T.scan[k].matched && same_object(i, &T.scan[k])) {
				T.scan[k].matched = true;
				still = true;
			}
		}
		if (!still) {
			T.slot[i].state = RELSTACK_OBJECT_UNLOADED;
			T.slot[i].unload_epoch = epoch;
			retire_cfi(i);
			/*
			 * A pinned object cannot have gone: it is still mapped, and
			 * found again under another path (a link to it changed).
			 * Its pin goes once the new slot has one.
			 */
			if (T.pin[i] && T.norphans < RS_ORPHANS)
				T.orphan[T.norphans++] = T.pin[i];
			T.pin[i] = NULL;
			changed++;
			mirrors_write_slot(i);
		}
	}
	/* Load what is new. */
	for (unsigned k = 0; k < T.nscan; k++) {
		struct found *f = &T.scan[k];
		int s;

		if (f->matched)
			continue;
		if ((f->obj.flags & RELSTACK_OBJECT_MAIN) && T.slot[0].state != RELSTACK_OBJECT_LOADED)
			s = 0;
		else
			s = pick_slot();
		if (s < 0) {
			atomic_fetch_add_explicit(&st_full, 1, memory_order_relaxed);
			continue;
		}
		T.slot[s] = f->obj;
		T.slot[s].slot = (uint32_t)s;
		T.slot[s].state = RELSTACK_OBJECT_LOADED;
		T.slot[s].load_epoch = epoch;
		T.slot[s].unload_epoch = 0;
		T.bias[s] = f->bias;
		T.start[s] = f->start;
		T.end[s] = f->end;
		T.restorer[s] = f->restorer;
		T.records[s] = f->records;
		T.map_worth[s] = f->map_worth;
		retire_cfi((unsigned)s);
		T.cfi_due[s] = true;
		T.eh_hdr[s] = f->eh_hdr;
		T.eh_lo[s] = f->eh_lo;
		T.eh_hi[s] = f->eh_hi;
		T.id[s] = f->id;
		memcpy(T.soname[s], f->soname, sizeof(f->soname));
		memcpy(T.lname[s], f->lname, sizeof(f->lname));
		T.order[s] = ++T.order_next;
		T.permanent[s] = false;
		T.pin[s] = NULL; /* marks stay: they belong to the dlcloses under way */
		changed++;
		mirrors_write_slot((unsigned)s);
	}
	if (!T.ready)
		find_permanent();
	make_tables();
	T.ready = true;
	if (!changed)
		return 0;
	T.epoch = epoch;
	atomic_fetch_add_explicit(&st_rescans, 1, memory_order_relaxed);
	publish_index();
	mirrors_write_heads();
	return (int)changed;
}

/* ---- pins ---- */

#define RS_BIT(set, i) ((set)[(i) / 64] & (1ull << ((i) % 64)))
#define RS_SET_BIT(set, i) ((set)[(i) / 64] |= 1ull << ((i) % 64))

static const char *base_name(const char *p)
{
	const char *b = strrchr(p, '/');

	return b ? b + 1 : p;
}

/*
 * The slot a DT_NEEDED name stands for: the loaded object first seen
 * with that soname (or, without one, that file name), as the loader
 * finds an object already loaded under the name.  -1 if none.
 */
static int resolve_needed(const char *name)
{
	int best = -1;

	for (unsigned k = 0; k < T.capacity; k++) {
		bool match;

		if (T.slot[k].state != RELSTACK_OBJECT_LOADED)
			continue;
		if (strchr(name, '/'))
			match = strcmp(T.lname[k], name) == 0;
		else if (T.soname[k][0])
			match = strcmp(T.soname[k], name) == 0;
		else
			match = T.lname[k][0] && strcmp(base_name(T.lname[k]), name) == 0;
		if (match && (best < 0 || T.order[k] < T.order[best]))
			best = (int)k;
	}
	return best;
}

static int slot_at(uintptr_t bias, uintptr_t text_start)
{
	for (unsigned k = 0; k < T.capacity; k++)
		if (T.slot[k].state == RELSTACK_OBJECT_LOADED && T.bias[k] == bias &&
		    T.start[k] == bias + T.slot[k].text_vaddr && T.start[k] == text_start)
			return (int)k;
	return -1;
}

/*
 * A set of slots closed under DT_NEEDED.  Walked inside dl_iterate_phdr,
 * where no object can be unloaded, so every dynamic section read is
 * mapped.  @seed_bias: an object whose needs count even if it is not
 * listed (the one a dlclose closes).  @skip_permanent: permanent objects
 * stay out (they hold the pins of nothing).
 */
struct closure {
	uint64_t *set;
	uintptr_t seed_bias;
	bool has_seed, skip_permanent, changed;
};

static int closure_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct closure *c = data;
	uintptr_t text = 0;
	const ElfW(Dyn) *dyn;
	const char *strtab;
	bool seed = c->has_seed && info->dlpi_addr == c->seed_bias;
	int s;

	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum && !text; i++)
		if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
			text = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	s = slot_at(info->dlpi_addr, text);
	if (seed && s >= 0 && !RS_BIT(c->set, (unsigned)s) && !(c->skip_permanent && T.permanent[s])) {
		RS_SET_BIT(c->set, (unsigned)s);
		c->changed = true;
	}
	if (!seed && (s < 0 || !RS_BIT(c->set, (unsigned)s)))
		return 0;
	dyn = dynamic_of(info, &strtab);
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
		int k;

		if (d->d_tag != DT_NEEDED)
			continue;
		k = resolve_needed(strtab + d->d_un.d_val);
		if (k < 0 || RS_BIT(c->set, (unsigned)k) || (c->skip_permanent && T.permanent[k]))
			continue;
		RS_SET_BIT(c->set, (unsigned)k);
		c->changed = true;
	}
	return 0;
}

static void closure_locked(struct closure *c)
{
	/* objects list their dependencies after themselves: one pass mostly suffices */
	for (unsigned pass = 0; pass < T.capacity; pass++) {
		c->changed = false;
		dl_iterate_phdr(closure_one, c);
		if (!c->changed)
			break;
	}
}

/*
 * The objects that can never be unloaded: the main program, the vDSO,
 * the dynamic loader, preloaded objects, and everything they need: the
 * loader maps them all before the program starts and never unloads one.
 * An object missed here is only treated as one that could go.
 */
static void find_permanent(void)
{
	uint64_t set[RS_OBJTAB_CAND_WORDS] = { 0 };
	uintptr_t interp = (uintptr_t)getauxval(AT_BASE);
	const char *preload = getenv("LD_PRELOAD");
	struct closure c = { set, 0, false, false, false };

	for (unsigned i = 0; i < T.capacity; i++) {
		T.permanent[i] = false;
		if (T.slot[i].state == RELSTACK_OBJECT_LOADED &&
		    ((T.slot[i].flags & (RELSTACK_OBJECT_MAIN | RELSTACK_OBJECT_VDSO)) || T.bias[i] == interp))
			RS_SET_BIT(set, i);
	}
	while (preload && *preload) {
		char name[RELSTACK_PATH_MAX];
		size_t len = strcspn(preload, " :");
		int k;

		if (len && len < sizeof(name)) {
			memcpy(name, preload, len);
			name[len] = '\0';
			k = resolve_needed(name);
			if (k >= 0)
				RS_SET_BIT(set, (unsigned)k);
		}
		preload += len + (preload[len] != '\0');
	}
	closure_locked(&c);
	for (unsigned i = 0; i < T.capacity; i++)
		T.permanent[i] = RS_BIT(set, i) != 0;
}

static unsigned long long peek_subs(void)
{
	unsigned long long c[2];

	dl_iterate_phdr(peek_counters, c);
	return c[1];
}

/*
 * Pin every listed object that could be unloaded and has no pin yet: a
 * reference of our own, taken without the table's lock (the loader's
 * lock comes first: a constructor running under it may call into the
 * table).  A pin is kept only if it holds the object the slot describes:
 * at the slot's load bias, and either nothing was unloaded since the scan
 * or the file is still the slot's.
 */
static void pin_pending(void)
{
	uint64_t tried[RS_OBJTAB_CAND_WORDS] = { 0 };
	void *orphans[RS_ORPHANS];
	unsigned norphans;
	bool changed = false;

	if (!atomic_load_explicit(&T.pinning, memory_order_relaxed))
		return;
	for (;;) {
		char name[RELSTACK_PATH_MAX];
		struct identity id = { 0 }, now;
		unsigned long long subs = 0;
		uint64_t load_epoch = 0;
		struct link_map *lm = NULL;
		uintptr_t bias = 0;
		unsigned s = 0;
		bool ok = false;
		void *h;

		pthread_mutex_lock(&T.lock);
		for (unsigned i = 1; i < T.capacity; i++) {
			if (T.slot[i].state == RELSTACK_OBJECT_LOADED && !T.permanent[i] && !T.pin[i] &&
			    T.lname[i][0] && !RS_BIT(tried, i)) {
				s = i;
				break;
			}
		}
		if (s) {
			memcpy(name, T.lname[s], sizeof(name));
			bias = T.bias[s];
			load_epoch = T.slot[s].load_epoch;
			id = T.id[s];
			subs = T.subs;
		}
		pthread_mutex_unlock(&T.lock);
		if (!s)
			break;
		RS_SET_BIT(tried, s);
		h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm->l_addr == bias) {
			read_identity(name, &now);
			ok = peek_subs() == subs || identity_equal(&id, &now);
		}
		pthread_mutex_lock(&T.lock);
		if (ok && T.slot[s].state == RELSTACK_OBJECT_LOADED && T.slot[s].load_epoch == load_epoch &&
		    T.bias[s] == bias && !T.pin[s]) {
			T.pin[s] = h;
			h = NULL;
			changed = true;
		}
		pthread_mutex_unlock(&T.lock);
		if (h)
			rs_loader_real_dlclose(h);
	}
	pthread_mutex_lock(&T.lock);
	if (changed)
		publish_index();
	norphans = T.norphans;
	memcpy(orphans, T.orphan, norphans * sizeof(orphans[0]));
	T.norphans = 0;
	pthread_mutex_unlock(&T.lock);
	for (unsigned i = 0; i < norphans; i++)
		rs_loader_real_dlclose(orphans[i]);
}

int rs_objtab_scan(bool force)
{
	int ret;

	pthread_mutex_lock(&T.lock);
	ret = scan_locked(force);
	pthread_mutex_unlock(&T.lock);
	pin_pending();
	return ret;
}

/* The object @handle's link map is, if it is one: read where the list cannot change. */
struct find_handle {
	const void *handle;
	bool found;
	uintptr_t bias;
};

static int find_handle_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_handle *f = data;

	(void)info;
	(void)size;
	for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
		if (l == f->handle) {
			f->found = true;
			f->bias = l->l_addr;
			break;
		}
	}
	return 1;
}

void rs_objtab_close_begin(void *handle, uint64_t cand[RS_OBJTAB_CAND_WORDS])
{
	struct find_handle fh = { handle, false, 0 };
	struct closure c = { cand, 0, false, true, false };
	bool any = false;

	memset(cand, 0, RS_OBJTAB_CAND_WORDS * sizeof(cand[0]));
	if (!atomic_load_explicit(&T.pinning, memory_order_relaxed) || !handle)
		return;
	pthread_mutex_lock(&T.lock);
	dl_iterate_phdr(find_handle_one, &fh);
	if (fh.found && T.ready) {
		c.seed_bias = fh.bias;
		c.has_seed = true;
		closure_locked(&c);
		for (unsigned i = 0; i < T.capacity; i++) {
			if (RS_BIT(cand, i)) {
				T.marks[i]++;
				any = true;
			}
		}
		if (any)
			publish_index();
	}
	pthread_mutex_unlock(&T.lock);
}

void rs_objtab_close_end(const uint64_t cand[RS_OBJTAB_CAND_WORDS])
{
	void *drop[RS_OBJTAB_SLOTS];
	unsigned n = 0;
	bool any = false;

	for (unsigned w = 0; w < RS_OBJTAB_CAND_WORDS; w++)
		any |= cand[w] != 0;
	if (!any)
		return;
	/* C: the marks were published in close_begin(); now the pins may go */
	pthread_mutex_lock(&T.lock);
	for (unsigned i = 0; i < T.capacity; i++) {
		if (RS_BIT(cand, i) && T.pin[i]) {
			drop[n++] = T.pin[i];
			T.pin[i] = NULL;
		}
	}
	pthread_mutex_unlock(&T.lock);
	for (unsigned i = 0; i < n; i++)
		rs_loader_real_dlclose(drop[i]);
	/* D */
	rs_objtab_scan(false);
	pthread_mutex_lock(&T.lock);
	for (unsigned i = 0; i < T.capacity; i++)
		if (RS_BIT(cand, i) && T.marks[i])
			T.marks[i]--;
	publish_index();
	pthread_mutex_unlock(&T.lock);
}

int rs_objtab_reset(unsigned capacity)
{
	void **pins;
	unsigned n = 0;
	int ret;

	if (capacity < 1 || capacity > RS_OBJTAB_SLOTS)
		return -EINVAL;
	pins = calloc(RS_OBJTAB_SLOTS, sizeof(*pins));
	if (!pins)
		return -ENOMEM;
	pthread_mutex_lock(&T.lock);
	for (unsigned i = 0; i < RS_OBJTAB_SLOTS; i++) {
		if (T.pin[i])
			pins[n++] = T.pin[i];
		T.pin[i] = NULL;
	}
	for (unsigned i = 0; i < RS_OBJTAB_SLOTS; i++)
		retire_cfi(i);
	memset(T.slot, 0, sizeof(T.slot));
	T.capacity = capacity;
	T.ready = false;
	atomic_store_explicit(&st_full, 0, memory_order_relaxed);
	ret = scan_locked(true);
	if (ret == 0)
		publish_index();
	pthread_mutex_unlock(&T.lock);
	pin_pending();
	/* after the new pins: what is still listed stays mapped */
	for (unsigned i = 0; i < n; i++)
		rs_loader_real_dlclose(pins[i]);
	free(pins);
	return ret < 0 ? ret : 0;
}

void rs_objtab_set_pinning(bool on)
{
	atomic_store_explicit(&T.pinning, on, memory_order_relaxed);
}

/* The statedump, as soon as the library is loaded. */
__attribute__((constructor)) static void objtab_statedump(void)
{
	atomic_store_explicit(&T.pinning, rs_loader_interposed(), memory_order_relaxed);
	rs_objtab_scan(true);
}

/* ---- holders and mirrors ---- */

/*
 * Holders come and go under T.lock, which horizon() also holds: a scan
 * never sees a holder half set up.  Only the horizon itself moves without
 * the lock (rs_objtab_hold_update(), from the recorder's write path).
 */
int rs_objtab_hold(uint64_t h)
{
	int id = -ENOSPC;

	pthread_mutex_lock(&T.lock);
	for (unsigned i = 0; i < RS_OBJTAB_HOLDERS && id < 0; i++) {
		if (atomic_load_explicit(&T.holder_used[i], memory_order_relaxed))
			continue;
		atomic_store_explicit(&T.holder[i], h, memory_order_relaxed);
		atomic_store_explicit(&T.holder_used[i], true, memory_order_relaxed);
		id = (int)i;
	}
	pthread_mutex_unlock(&T.lock);
	return id;
}

void rs_objtab_hold_update(int id, uint64_t h)
{
	if (id >= 0 && id < RS_OBJTAB_HOLDERS)
		atomic_store_explicit(&T.holder[id], h, memory_order_relaxed);
}

void rs_objtab_release(int id)
{
	if (id < 0 || id >= RS_OBJTAB_HOLDERS)
		return;
	pthread_mutex_lock(&T.lock);
	atomic_store_explicit(&T.holder_used[id], false, memory_order_relaxed);
	pthread_mutex_unlock(&T.lock);
}

int rs_objtab_mirror_attach(void *mem, size_t size, unsigned capacity, bool with_addresses)
{
	int id = -ENOSPC;

	if (!mem || capacity < 1 || size < rs_objtab_image_size(capacity))
		return -EINVAL;
	pthread_mutex_lock(&T.lock);
	if (!T.ready)
		scan_locked(true);
	for (unsigned m = 0; m < RS_MIRRORS; m++) {
		if (T.mirror[m].used)
			continue;
		T.mirror[m] = (struct mirror){ mem, capacity, with_addresses, true };
		image_write_all(mem, capacity, with_addresses);
		id = (int)m;
		break;
	}
	pthread_mutex_unlock(&T.lock);
	return id;
}

void rs_objtab_mirror_detach(int id)
{
	if (id < 0 || id >= RS_MIRRORS)
		return;
	pthread_mutex_lock(&T.lock);
	T.mirror[id].used = false;
	pthread_mutex_unlock(&T.lock);
}

int rs_objtab_image_write(void *mem, size_t size, unsigned capacity, bool with_addresses)
{
	if (!mem || capacity < 1 || size < rs_objtab_image_size(capacity))
		return -EINVAL;
	pthread_mutex_lock(&T.lock);
	if (!T.ready)
		scan_locked(true);
	image_write_all(mem, capacity, with_addresses);
	pthread_mutex_unlock(&T.lock);
	return 0;
}

/* ---- public ---- */

int relstack_objtab__refresh(void)
{
	return rs_objtab_scan(false);
}

int relstack_objtab_get(uint32_t slot, struct relstack_object *out)
{
	int ret = 0;

	pthread_mutex_lock(&T.lock);
	if (!T.ready)
		scan_locked(true);
	if (slot >= T.capacity)
		ret = -ERANGE;
	else if (T.slot[slot].state == RELSTACK_OBJECT_EMPTY)
		ret = -ENOENT;
	else
		*out = T.slot[slot];
	pthread_mutex_unlock(&T.lock);
	return ret;
}

void relstack_objtab_stats(struct relstack_objtab_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&T.lock);
	st->epoch = T.epoch;
	st->capacity = T.capacity;
	for (unsigned i = 0; i < T.capacity; i++) {
		st->loaded += T.slot[i].state == RELSTACK_OBJECT_LOADED;
		st->unloaded += T.slot[i].state == RELSTACK_OBJECT_UNLOADED;
	}
	pthread_mutex_unlock(&T.lock);
	st->full = atomic_load_explicit(&st_full, memory_order_relaxed);
	st->unknown = atomic_load_explicit(&st_unknown, memory_order_relaxed);
	st->rescans = atomic_load_explicit(&st_rescans, memory_order_relaxed);
	st->busy = atomic_load_explicit(&st_busy, memory_order_relaxed);
}
