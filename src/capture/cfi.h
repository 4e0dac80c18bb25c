/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Compiled CFI tables: every object's call-frame information, turned
 * into a sorted table of rows when the object table scans the object
 * (never on the capture path), looked up by binary search while
 * capturing (any context, signal handlers included).
 *
 * A row holds from its code offset to the next row's: how to find the
 * CFA (the stack pointer or the frame pointer plus an offset), the
 * return address (CFA + offset, or undefined: the outermost frame of a
 * thread) and the caller's frame pointer (unchanged, CFA + offset, or
 * undefined).  Rules for other registers are not kept: the walk
 * recovers only these.  Rules the form cannot express (a CFA or a rule
 * given by a DWARF expression, as in PLT entries; a CFA on another
 * register; a signal frame's FDE; malformed CFI) give an "unsupported"
 * row, which the walk reports instead of guessing; code no FDE covers
 * has a "gap" row.
 *
 * The layout (ORC's, the kernel's compiled unwind tables, in spirit): a
 * block index, then an array of 6-byte rows and a parallel array of
 * 1-byte code offsets: 7 bytes a row, and 4 bytes per RS_CFI_BLOCK bytes
 * of code.
 *
 *	struct rs_cfi_table | first[nblocks + 1] | row[n] | ip[n]
 *
 * Code offsets (pc - bias) from base on are cut into blocks of
 * RS_CFI_BLOCK bytes; first[k] is the first row starting in block k or
 * later, and ip[i] is row i's offset inside its block.  A lookup finds
 * the block by a shift and searches only its rows, a handful.
 *
 * Lifetime.  A table is published in the object table's index with its
 * object's code range, and retired when the object leaves the index
 * (objtab.c).  Its memory is never unmapped: a retired region is
 * emptied (its pages read as zero: cap 0, no rows) and may be given to
 * another table later.  A reader that found the table under one index
 * sequence and read it while it was retired or rewritten sees the
 * sequence change at the end of its walk (rs_objtab_end()) and throws
 * the walk away; every read it made stayed inside the region, whose size
 * never changes while it holds a table (a shape read torn that would
 * not fit it is taken for an empty table).
 */
#ifndef RELSTACK_CFI_H
#define RELSTACK_CFI_H

#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relstack-local.h"
#include "unwind-arch.h"

/* The ELF class of this process's objects, the one ElfW() names. */
#define RS_ELF_NATIVE_CLASS (__ELF_NATIVE_CLASS == 64 ? ELFCLASS64 : ELFCLASS32)

/* How to find a register of the caller. */
enum rs_cfi_rule {
	RS_CFI_SAME = 0,      /* unchanged */
	RS_CFI_OFFSET = 1,    /* saved at CFA + offset */
	RS_CFI_UNDEFINED = 2, /* not recoverable; for the return address: the outermost frame */
};

/*
 * A row, as the walk uses it: the CFA is cfa_reg (the stack or the frame
 * pointer register) + cfa_off; the return address and the caller's frame
 * pointer follow their rules.
 */
struct rs_cfi_row {
	int64_t cfa_off, ra_off, fp_off;
	bool cfa_on_fp;
	/*
	 * The CFA is the word at fp + cfa_off: a function that realigned its
	 * stack through a DRAP; the caller's frame pointer is then saved at
	 * the word the frame pointer points at (the expression DW_OP_breg<fp>
	 * 0, checked when the row is made: no other DRAP row is kept), and
	 * fp_rule is RS_CFI_UNDEFINED.  Such a row comes with -ENOTSUP from a
	 * lookup: only a walk that knows this form follows it (unwind.c).
	 */
	bool cfa_deref;
	uint8_t ra_rule, fp_rule; /* enum rs_cfi_rule */
};

/* What building a table found, for benchmarks and tests. */
struct rs_cfi_stats {
	uint64_t fdes;        /* FDEs read */
	uint64_t cfi_bytes;   /* bytes of CIEs and FDEs read */
	uint64_t rows;        /* rows in the table */
	uint64_t unsupported; /* of which unsupported */
};

struct rs_cfi_table {
	_Atomic uintptr_t bias;    /* rows are keyed by pc - bias */
	/*
	 * The record map (rs_cfi_table_record_map()): fpmap_bits bits, from
	 * map_off bytes into the region, bit i for the RS_CFI_MAP_GRAIN bytes
	 * of code from offset map_base + i * RS_CFI_MAP_GRAIN.
	 */
	_Atomic uint64_t map_off;
	_Atomic uint64_t map_bits;
	_Atomic uint64_t map_base;
	_Atomic uint64_t bytes;    /* the region's size: fixed while it holds a table, 0 once emptied */
	_Atomic uint32_t base;     /* the code offset block 0 starts at */
	_Atomic uint32_t nblocks;  /* blocks of RS_CFI_BLOCK bytes */
	_Atomic uint32_t n;        /* rows */
	uint32_t reserved;
	struct rs_cfi_stats stats;
	/*
	 * An in-place table (rs_cfi_table_inplace()) has no rows: eh_hdr is
	 * its object's .eh_frame_hdr, read at each lookup, with every read
	 * inside [eh_lo, eh_hi); 0 for a compiled table.
	 */
	_Atomic uintptr_t eh_hdr, eh_lo, eh_hi;
	/* followed by _Atomic uint32_t first[nblocks + 1]; _Atomic uint16_t row[n][3]; _Atomic uint8_t ip[n] */
};

/*
 * Is @row one of a function that keeps its frame record at its frame
 * pointer there: the CFA on the frame pointer, the return address and the
 * caller's frame pointer saved in the record the frame pointer points at,
 * and (where the record tops the frame) the CFA just above it?  Only at
 * such a row does following the frame record read what following the
 * row does (docs/unwinder.md, "Every frame's proof").
 */
static inline bool rs_cfi_row_is_record(const struct rs_cfi_row *row)
{
	const int64_t w = (int64_t)sizeof(uintptr_t);

	return row->cfa_on_fp && !row->cfa_deref && row->ra_rule == RS_CFI_OFFSET && row->fp_rule == RS_CFI_OFFSET &&
	       row->cfa_off + row->fp_off == RS_ARCH_FRAME_NEXT * w && row->cfa_off + row->ra_off == RS_ARCH_FRAME_RA * w &&
	       (!RS_ARCH_RECORD_TOPS_FRAME || row->cfa_off == (int64_t)RS_ARCH_FRAME_SIZE);
}

/*
 * The record map's grain: a bit of it stands for this many bytes of code,
 * and is set only when every one of them is under a row
 * rs_cfi_row_is_record() accepts.  So a set bit for the grain holding a
 * return address minus one (the call) proves the row there, exactly; a
 * clear one proves nothing either way (the walk then looks the row up).
 * A bit per byte: the fast walk tests bit ra - start of a map whose first
 * bit is start - 1's, one instruction (rs_arch_fast_frames()).
 */
#define RS_CFI_MAP_SHIFT 0
#define RS_CFI_MAP_GRAIN (1u << RS_CFI_MAP_SHIFT)

/*
 * @t's record map: its bits (NULL if it has none set), the address its
 * first grain starts at in *origin and the number of bits in *bits.
 * Reads stay inside the region whatever it holds (a retired one has no
 * map).  Async-signal-safe.
 */
RS_HIDDEN const uint64_t *rs_cfi_table_record_map(const struct rs_cfi_table *t, uintptr_t *origin, uint64_t *bits);

/*
 * What @t's record map says of frame-record rows: 1 some, 0 none (what
 * RELSTACK_OBJECT_NO_FP says of an object), -1 it has no map (an in-place
 * table made without one).  Scan time.
 */
RS_HIDDEN int rs_cfi_table_records(const struct rs_cfi_table *t);

#define RS_CFI_BLOCK_SHIFT 8
#define RS_CFI_BLOCK (1u << RS_CFI_BLOCK_SHIFT)

/* Bytes of a compiled row: its rule and its offset in its block. */
#define RS_CFI_ROW_BYTES (3 * sizeof(uint16_t) + sizeof(uint8_t))

static inline _Atomic uint32_t *table_first(const struct rs_cfi_table *t)
{
	return (_Atomic uint32_t *)(uintptr_t)(t + 1);
}

static inline _Atomic uint16_t *table_rows(const struct rs_cfi_table *t, uint32_t nblocks)
{
	return (_Atomic uint16_t *)(uintptr_t)(table_first(t) + nblocks + 1);
}

static inline _Atomic uint8_t *table_ip(const struct rs_cfi_table *t, uint32_t nblocks, uint32_t n)
{
	return (_Atomic uint8_t *)(uintptr_t)(table_rows(t, nblocks) + (size_t)n * 3);
}

/*
 * Compile the CFI an .eh_frame_hdr at @hdr indexes, every read (the
 * header's, the FDEs' and CIEs') inside [lo, hi), keyed by pc - @bias;
 * rows past @span (the object's extent from @bias) are left out.
 * NULL with errno set: ENOENT for a header the walk cannot use (no
 * table, an encoding other than the linkers'), ENOMEM.  Scan time only:
 * allocates.
 */
RS_HIDDEN struct rs_cfi_table *rs_cfi_table_compile(uintptr_t hdr, uintptr_t lo, uintptr_t hi, uintptr_t bias,
						    uint64_t span);

/*
 * A table that reads the .eh_frame an .eh_frame_hdr at @hdr indexes in
 * place, at each lookup, every read inside [lo, hi): for an object that is
 * never unloaded, whose CFI stays mapped as long as the process lives.  It
 * keeps no rows (the program, the C library and everything else loaded
 * before main() start with one) and a lookup runs the FDE's instructions
 * up to the pc; rows come out as the compiled ones would.  With
 * @record_map, the rows are built once for its record map and dropped
 * (a pass over all of the object's CFI); without, it has none.  NULL with
 * errno set: ENOENT for a header the walk cannot use, ENOMEM.
 */
RS_HIDDEN struct rs_cfi_table *rs_cfi_table_inplace(uintptr_t hdr, uintptr_t lo, uintptr_t hi, uintptr_t bias,
						    bool record_map);

/*
 * The table of a loaded object: its .eh_frame (through PT_GNU_EH_FRAME),
 * or where it has none, its .sframe (PT_GNU_SFRAME), or else the
 * .debug_frame of its file @path or of the debug file its build-id names
 * (rs_cfi_table_debug()).  NULL with errno
 * set.  Scan time only.
 */
RS_HIDDEN struct rs_cfi_table *rs_cfi_table_build(const struct dl_phdr_info *info, const char *path,
						  const uint8_t *build_id, size_t build_id_len);

/*
 * cfi-sframe.c: the table of the .sframe section at [sec, sec + size)
 * (loaded: its PT_GNU_SFRAME segment), keyed by pc - @bias, rows past
 * @span left out.  NULL with errno set (ENOENT: not an SFrame section
 * this reader knows).
 */
#define RS_PT_GNU_SFRAME 0x6474e554 /* PT_LOOS + 0x474e554: not in every <elf.h> yet */
RS_HIDDEN struct rs_cfi_table *rs_cfi_table_from_sframe(uintptr_t sec, size_t size, uintptr_t bias, uint64_t span);

/*
 * cfi-debug.c: the table of the .debug_frame of the ELF file @path, or
 * of /usr/lib/debug/.build-id/xx/yyyy.debug for @build_id, keyed by
 * pc - @bias, rows past @span left out.  NULL with errno set (ENOENT: no
 * such section).
 */
RS_HIDDEN struct rs_cfi_table *rs_cfi_table_debug(const char *path, const uint8_t *build_id, size_t build_id_len,
						  uintptr_t bias, uint64_t span);

/* The table of the .debug_frame section bytes [sec, sec + size) (the fuzz target gives it any bytes). */
RS_HIDDEN struct rs_cfi_table *rs_cfi_table_from_debug_frame(const unsigned char *sec, size_t size, uintptr_t bias,
							     uint64_t span);

/*
 * Key @t's rows by pc - @bias from now on: a table compiled from a copy of
 * an object (another process's, mapped here from its file) serves the
 * object where that process has it.  Before @t is published only.
 */
static inline void rs_cfi_table_rebase(struct rs_cfi_table *t, uintptr_t bias)
{
	atomic_store_explicit(&t->bias, bias, memory_order_relaxed);
}

/* Retire @t (may be NULL): after no index lists it.  See "Lifetime" above. */
RS_HIDDEN void rs_cfi_table_free(struct rs_cfi_table *t);

/*
 * The row that holds at @pc (for a return address, pass the address
 * minus one: the call).  Returns 0, -ENOENT when no FDE covers @pc,
 * -ENOTSUP for an unsupported row.  Async-signal-safe.
 */
RS_HIDDEN int rs_cfi_row_at(const struct rs_cfi_table *t, uintptr_t pc, struct rs_cfi_row *row);

/*
 * The @i-th row of @t: where it starts (an address: bias + offset) in
 * *start, its rule in *row.  Returns as rs_cfi_row_at(), or -ERANGE past
 * the last row.
 */
RS_HIDDEN int rs_cfi_table_row(const struct rs_cfi_table *t, uint32_t i, uintptr_t *start, struct rs_cfi_row *row);

/* Rows in @t (0 for an emptied one). */
RS_HIDDEN uint32_t rs_cfi_table_rows(const struct rs_cfi_table *t);

#endif
