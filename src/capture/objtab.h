/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The object table: internal interface.
 *
 * One table per process (slot 0 = main executable).  Lookups go through a
 * latch (two copies of a sorted range index, picked by the low bit of a
 * sequence count), so a reader in a signal handler that interrupted the
 * writer still reads a complete copy.  See objtab.c for the essay.
 *
 * The persisted form (the "image") is what a buffer file keeps in its
 * scratch area; its layout is specified in docs/format.md, "The object
 * table".
 */
#ifndef RELSTACK_OBJTAB_H
#define RELSTACK_OBJTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relstack/entry.h"
#include "relstack-local.h"

/*
 * Capacity of the in-process table: every slot index the native word can
 * name (docs/format.md: 10 index bits in 64-bit words, 7 in 32-bit ones,
 * the highest index value the marker's).
 */
#if UINTPTR_MAX == UINT64_MAX
#define RS_OBJTAB_SLOTS 1023u
#else
#define RS_OBJTAB_SLOTS 127u
#endif

/*
 * Result of a lookup.  found == false: the address lies in no indexed
 * object (or the table kept changing, counted as busy).
 */
struct rs_lookup {
	bool found;
	uint32_t slot;
	uint32_t flags;
	uintptr_t bias;
	uintptr_t restorer; /* the object's signal-return trampoline, or 0 */
	const struct rs_cfi_table *cfi; /* its compiled CFI table (cfi.h), or NULL */
	uintptr_t start, end;
	uint64_t epoch;
};

/*
 * In the lookup index only, never in a slot or an image: the object may be
 * unmapped at any moment (it holds no pin, or a dlclose is letting it go),
 * so an address in its range may belong to another object already.  A
 * capture gives such a frame the UNKNOWN word and the reason
 * "objects-changing".  See "Pins" in objtab.c.
 */
#define RS_OBJECT_CHANGING 0x80000000u

/* Lock-free, allocation-free, syscall-free: safe in signal handlers. */
RS_HIDDEN bool rs_objtab_lookup(uintptr_t addr, struct rs_lookup *out);

/*
 * Re-scan if dl_iterate_phdr's adds/subs counters moved since the last
 * scan (or always, with @force), then pin the objects that need a pin.
 * Takes the writer mutex and calls the loader: never call it from a
 * signal handler.  Returns slots changed or -errno.
 */
RS_HIDDEN int rs_objtab_scan(bool force);

/*
 * The dlclose() of loader.c, around the C library's: close_begin() marks
 * the listed objects that @handle's close may let go (the object and its
 * dependencies, permanent ones excepted) as changing, in @cand;
 * close_end() drops their pins, re-scans, pins again what is still
 * loaded and clears the marks.  @real_dlclose drops a pin.
 */
#define RS_OBJTAB_CAND_WORDS ((RS_OBJTAB_SLOTS + 63) / 64)
RS_HIDDEN void rs_objtab_close_begin(void *handle, uint64_t cand[RS_OBJTAB_CAND_WORDS]);
RS_HIDDEN void rs_objtab_close_end(const uint64_t cand[RS_OBJTAB_CAND_WORDS]);

/* loader.c: the C library's dlclose(), and whether ours interposes it for the whole process. */
RS_HIDDEN int rs_loader_real_dlclose(void *handle);
RS_HIDDEN bool rs_loader_interposed(void);

/*
 * Test hook: drop every slot and limit the table to @capacity slots
 * (main executable included), then take a new statedump.  Not for
 * concurrent use with captures.
 */
RS_HIDDEN int rs_objtab_reset(unsigned capacity);

/*
 * Test hook: pin (the default when our dlclose interposes the C
 * library's) or not (as when it does not); takes effect at the next
 * rs_objtab_reset().
 */
RS_HIDDEN void rs_objtab_set_pinning(bool on);

/*
 * Retention: a holder (a recorder) tells the table the oldest epoch any
 * record it still retains was made in.  A slot unloaded at epoch U is
 * reused only when every holder's horizon is >= U.  With no holders the
 * horizon is 0: unloaded slots are never reused.
 */
#define RS_OBJTAB_HOLDERS 16
RS_HIDDEN int rs_objtab_hold(uint64_t horizon);          /* returns a holder id or -ENOSPC */
RS_HIDDEN void rs_objtab_hold_update(int id, uint64_t horizon);
RS_HIDDEN void rs_objtab_release(int id);

/* ---- the persisted image ---- */

#define RS_OBJTAB_IMAGE_MAGIC "RSOBJTB1"
#define RS_OBJTAB_IMAGE_VERSION 1u

struct rs_objtab_image_head {
	char magic[8];          /* RS_OBJTAB_IMAGE_MAGIC, no NUL */
	uint32_t version;       /* RS_OBJTAB_IMAGE_VERSION */
	uint32_t record_size;   /* sizeof(struct rs_objtab_record) */
	uint32_t capacity;      /* records that follow */
	uint32_t flags;         /* RS_IMAGE_ADDRESSES */
	uint64_t epoch;         /* latest table epoch written */
	uint64_t full;          /* objects refused for lack of a slot */
	uint32_t head_hash;     /* rs_hash32 of the bytes before this field */
	uint32_t reserved;      /* zero */
};
#define RS_IMAGE_ADDRESSES 0x1u /* records carry load addresses (absolute stacks) */

/*
 * One slot.  seq is odd while the writer updates the record: a reader that
 * sees an odd seq, or a hash that does not match, rejects the record.
 */
struct rs_objtab_record {
	uint32_t seq;
	uint32_t hash;          /* rs_hash32 of the record from .slot to the end */
	uint32_t slot;
	uint8_t state;          /* enum relstack_object_state */
	uint8_t base;           /* enum relstack_object_base */
	uint16_t flags;         /* RELSTACK_OBJECT_* */
	uint8_t build_id_len;
	uint8_t reserved0[7];   /* zero */
	uint8_t build_id[RELSTACK_BUILD_ID_MAX];
	uint64_t text_vaddr;
	uint64_t text_offset;
	uint64_t text_size;
	uint64_t load_epoch;
	uint64_t unload_epoch;
	uint64_t load_address;  /* load bias; 0 unless the image has RS_IMAGE_ADDRESSES */
	char path[RELSTACK_PATH_MAX];
	uint8_t reserved1[16];  /* zero */
};

static inline size_t rs_objtab_image_size(unsigned capacity)
{
	return sizeof(struct rs_objtab_image_head) + (size_t)capacity * sizeof(struct rs_objtab_record);
}

/*
 * A mirror keeps an image current: it is written in full when attached and
 * after every change.  @mem must stay valid until detached.  Returns a
 * mirror id or -errno.  @capacity may be smaller than the table; slots
 * beyond it are then refused (UNKNOWN) for every holder alike.
 */
RS_HIDDEN int rs_objtab_mirror_attach(void *mem, size_t size, unsigned capacity, bool with_addresses);
RS_HIDDEN void rs_objtab_mirror_detach(int id);

/*
 * Write an image head, and one slot's record, for a table kept by
 * someone else (the kernel's objects, src/kernel/): the record is odd
 * while written, as a mirror's.
 */
RS_HIDDEN void rs_objtab_image_put_head(void *mem, unsigned capacity, unsigned flags, uint64_t epoch,
					uint64_t full);
RS_HIDDEN void rs_objtab_image_put(void *mem, unsigned slot, const struct relstack_object *o,
				   uint64_t load_address);

/* Write a one-off image of the current table (for tests and snapshots). */
RS_HIDDEN int rs_objtab_image_write(void *mem, size_t size, unsigned capacity, bool with_addresses);

/*
 * Reader side: validate the image head (the records are checked one by one
 * by rs_objtab_image_record()).  On error *why names the field and what is
 * wrong.
 */
RS_HIDDEN int rs_objtab_image_check(const void *mem, size_t size, const char **why);

/*
 * Record @slot of a checked image as a struct relstack_object.  Returns 0,
 * -ENOENT for an empty slot, -ERANGE beyond capacity, -RELSTACK_ECORRUPT
 * for a torn or damaged record (*why says which check failed).
 */
RS_HIDDEN int rs_objtab_image_record(const void *mem, size_t size, uint32_t slot,
				     struct relstack_object *out, uint64_t *load_address,
				     const char **why);

/*
 * Check a decoded entry against an image: empty slot, offset beyond the
 * object's text, slot reused since @epoch.  Fills out->reason and turns
 * the entry INVALID when a check fails.
 */
RS_HIDDEN void rs_objtab_image_check_entry(const void *mem, size_t size, uint64_t epoch,
					   struct relstack_entry *e);

#endif
