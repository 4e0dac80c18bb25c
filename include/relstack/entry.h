/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * relstack/entry.h - entry words, the format descriptor, the object table.
 *
 * An entry word is one stack frame in position-independent form: the
 * object-table slot of the object the address lies in, and the offset of
 * the address from that object's base (its load bias, so the offset equals
 * the link-time address that nm(1) prints).  Bit positions and marker
 * values are not constants of this header: they live in a format
 * descriptor, which every buffer carries, and decoders read them from
 * there.  docs/format.md is the specification.
 */
#ifndef RELSTACK_ENTRY_H
#define RELSTACK_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RELSTACK_API __attribute__((visibility("default")))

/*
 * The format descriptor, exactly as stored on disk (little-endian, 64
 * bytes).  relstack_format_init() fills the standard layout for a word
 * size; relstack_format__validate() checks one read from a file.
 */
struct relstack_format {
	uint8_t word_size;        /* 4 or 8 bytes per entry word */
	uint8_t byte_order;       /* RELSTACK_LITTLE_ENDIAN or RELSTACK_BIG_ENDIAN */
	uint8_t flag_bit;         /* object flag: clear = main object */
	uint8_t index_shift;      /* lowest bit of the slot index */
	uint8_t index_bits;       /* width of the slot index */
	uint8_t offset_bits;      /* width of the offset (at bit 0) when the flag is set */
	uint8_t main_offset_bits; /* width of the offset (at bit 0) when the flag is clear */
	uint8_t reserved0;        /* zero */
	uint16_t marker_slot;     /* index value that marks a marker word */
	uint16_t max_slot;        /* highest slot index that names an object */
	uint32_t reserved1;       /* zero */
	uint64_t marker_end;      /* closes a reliable trace */
	uint64_t marker_unknown;  /* code in no known object */
	uint64_t marker_signal;   /* a signal frame: the next entry is the interrupted pc */
	uint64_t reserved2[3];    /* zero */
};

#define RELSTACK_LITTLE_ENDIAN 1
#define RELSTACK_BIG_ENDIAN 2

/* Slot 0 is always the main executable (flag bit clear). */
#define RELSTACK_MAIN_SLOT 0u

/* Fill @fmt with the standard layout for 4- or 8-byte words.  -EINVAL otherwise. */
RELSTACK_API int relstack_format_init(struct relstack_format *fmt, unsigned word_size);

/* The layout this process writes: 8-byte words on LP64, 4-byte on ILP32. */
RELSTACK_API void relstack_format_native(struct relstack_format *fmt);

/*
 * Check a descriptor.  Returns 0, or -EINVAL with *field (if non-NULL) set
 * to a static string naming the offending field and what is wrong with it,
 * e.g. "index_bits: index field overlaps the object flag".
 */
RELSTACK_API int relstack_format__validate(const struct relstack_format *fmt, const char **field);

enum relstack_entry_kind {
	RELSTACK_ENTRY_OBJECT = 1, /* slot and offset are valid */
	RELSTACK_ENTRY_MARKER,     /* marker is valid */
	RELSTACK_ENTRY_INVALID,    /* reason says why */
};

enum relstack_marker {
	RELSTACK_MARKER_END = 1,
	RELSTACK_MARKER_UNKNOWN,
	RELSTACK_MARKER_SIGNAL,
};

/* Why a word decodes to nothing.  Per entry: one bad word loses nothing else. */
enum relstack_entry_reason {
	RELSTACK_REASON_NONE = 0,
	RELSTACK_REASON_RESERVED_MARKER, /* marker slot, but not a defined marker value */
	RELSTACK_REASON_RESERVED_SLOT,   /* flag set with slot index 0, or beyond max_slot */
	RELSTACK_REASON_WIDE_WORD,       /* bits set above the word size */
	RELSTACK_REASON_EMPTY_SLOT,      /* slot holds no object (object-table check) */
	RELSTACK_REASON_BEYOND_OBJECT,   /* offset outside the object's text (object-table check) */
	RELSTACK_REASON_SLOT_REUSED,     /* slot held another object when the trace was taken */
	RELSTACK_REASON_BAD_SLOT_RECORD, /* the slot's persisted record failed validation */
};

struct relstack_entry {
	enum relstack_entry_kind kind;
	enum relstack_marker marker;       /* RELSTACK_ENTRY_MARKER */
	enum relstack_entry_reason reason; /* RELSTACK_ENTRY_INVALID */
	uint32_t slot;                     /* RELSTACK_ENTRY_OBJECT */
	uint64_t offset;                   /* RELSTACK_ENTRY_OBJECT */
};

/*
 * Decode one word by the bit positions of @fmt (which must have passed
 * relstack_format__validate()).  Never fails: a word that names nothing
 * comes back as RELSTACK_ENTRY_INVALID with a reason.
 */
RELSTACK_API void relstack_word_decode(const struct relstack_format *fmt, uint64_t word,
				       struct relstack_entry *out);

/*
 * Encode (slot, offset) by @fmt.  Returns the marker word for
 * RELSTACK_MARKER_UNKNOWN when the offset does not fit the field or the
 * slot is not an object slot: never a word that would name another object.
 */
RELSTACK_API uint64_t relstack_word_encode(const struct relstack_format *fmt, uint32_t slot,
					   uint64_t offset);

/* The word of marker @m in @fmt; 0 for an undefined marker. */
RELSTACK_API uint64_t relstack_word_marker(const struct relstack_format *fmt, enum relstack_marker m);

RELSTACK_API const char *relstack_marker_name(enum relstack_marker m);
RELSTACK_API const char *relstack_reason_name(enum relstack_entry_reason r);

/* ---- the object table of this process ---- */

enum relstack_object_state {
	RELSTACK_OBJECT_EMPTY = 0,
	RELSTACK_OBJECT_LOADED = 1,
	RELSTACK_OBJECT_UNLOADED = 2,
};

/* How an object's offsets are counted. */
enum relstack_object_base {
	RELSTACK_BASE_LOAD_BIAS = 0, /* user objects: offset = address - load bias */
	RELSTACK_BASE_STEXT = 1,     /* kernel: offset from _stext */
};

#define RELSTACK_OBJECT_VDSO 0x1u        /* the kernel's vDSO: no file */
#define RELSTACK_OBJECT_MAIN 0x2u        /* the main executable */
#define RELSTACK_OBJECT_PATH_CUT 0x4u    /* path longer than the record keeps */
#define RELSTACK_OBJECT_NO_FP 0x8u       /* its CFI proves no frame record anywhere (or it has none) */
#define RELSTACK_OBJECT_KERNEL 0x10u     /* the kernel or a module: its frames are named as the kernel names them */

#define RELSTACK_PATH_MAX 256
#define RELSTACK_BUILD_ID_MAX 40

/* One slot of the object table.  Holds no absolute address. */
struct relstack_object {
	uint32_t slot;
	enum relstack_object_state state;
	enum relstack_object_base base;
	uint32_t flags;               /* RELSTACK_OBJECT_* */
	char path[RELSTACK_PATH_MAX]; /* NUL-terminated */
	uint8_t build_id[RELSTACK_BUILD_ID_MAX];
	uint32_t build_id_len;        /* 0: the object has none */
	uint64_t text_vaddr;          /* p_vaddr of the executable segment */
	uint64_t text_offset;         /* p_offset of the executable segment */
	uint64_t text_size;           /* p_memsz of the executable segment */
	uint64_t load_epoch;          /* table epoch that made the slot this object's */
	uint64_t unload_epoch;        /* table epoch that unloaded it; 0 while loaded */
};

/*
 * Take the statedump (first call) or re-scan the loaded objects now, and
 * record dlopen/dlclose changes since the last scan.  Not for signal
 * handlers.  Returns the number of slots that changed, or -errno.
 */
RELSTACK_API int relstack_objtab__refresh(void);

/* Copy slot @slot of the process's table.  -ENOENT for an empty slot, -ERANGE beyond. */
RELSTACK_API int relstack_objtab_get(uint32_t slot, struct relstack_object *out);

struct relstack_objtab_stats {
	uint64_t epoch;        /* changes so far; an entry word is valid for the epoch it was made in */
	uint32_t capacity;     /* object slots, main executable included */
	uint32_t loaded;       /* slots in state LOADED */
	uint32_t unloaded;     /* slots in state UNLOADED, kept for retained records */
	uint64_t full;         /* objects that found no free slot: their entries become UNKNOWN */
	uint64_t unknown;      /* addresses in no known object: their entries became UNKNOWN */
	uint64_t rescans;      /* scans that found a change */
	uint64_t busy;         /* lookups that gave up because the table changed under them */
};

RELSTACK_API void relstack_objtab_stats(struct relstack_objtab_stats *st);

/* Flags for relstack_encode(). */
#define RELSTACK_ENCODE_RESCAN 0x1u /* on a miss, re-scan once (never in a signal handler) */

/*
 * Encode @n code addresses into entry words of the native format.
 * Without RELSTACK_ENCODE_RESCAN this is async-signal-safe: no lock, no
 * allocation, no system call, errno untouched.  An address in no known
 * object becomes the UNKNOWN marker.  If @epoch is non-NULL it receives
 * the table epoch the words are valid for.  Returns the number of words
 * that name an object.
 */
RELSTACK_API size_t relstack_encode(const uintptr_t *addrs, uint64_t *words, size_t n,
				    unsigned flags, uint64_t *epoch);

/*
 * The inverse, in this process: the address a native word stands for, if
 * its slot is still loaded.  0 when it is not (or for a marker).
 */
RELSTACK_API uintptr_t relstack_word_address(uint64_t word);

#ifdef __cplusplus
}
#endif
#endif
