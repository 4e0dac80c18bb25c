/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * symbolize.h - turn (object, offset) into function, file:line and inlined
 * frames.  Internal API of the decode library, used by the relstack command.
 *
 * Input is what the object table recorded (struct relstack_object: path,
 * build-id, text segment, base convention, flags) and an offset from the
 * object's base, i.e. the link-time address nm(1) prints.  Symbol sources
 * are tried in this order, and each file must carry the recorded build-id:
 *
 *   1. the object's file at its recorded path;
 *   2. DIR/.build-id/xx/yyyy.debug for each debug directory given, then
 *      /usr/lib/debug/.build-id/xx/yyyy.debug;
 *   3. the file's .gnu_debuglink target: next to the file, in its .debug/
 *      subdirectory, under each debug directory and /usr/lib/debug/ plus
 *      the file's directory;
 *   4. the debug file, then the executable, of the build-id from the
 *      debuginfod servers DEBUGINFOD_URLS names (symfetch.h);
 *   5. an nm(1)/System.map text file given with rs_symbolizer_add_map().
 *
 * The vDSO (RELSTACK_OBJECT_VDSO) skips 1; its frames say RS_SYM_VDSO
 * when neither 2, 4 nor 5 names it.
 *
 * Names come from the first full symbol table (.symtab) among 1-4, else
 * from the nm file, else from the file's .dynsym.  file:line and inlined
 * frames come from the first of 1-4 that has DWARF.  A file with another
 * build-id is never used: the frame says so, and
 * rs_symbolizer_object_error() names the file.  An nm file is held to
 * its "# build-id: HEX" comment if it has one, else to the recorded text
 * segment (a code symbol outside it marks another build).
 *
 * Kernel objects (RELSTACK_BASE_STEXT) count offsets from _stext, which
 * the symbol source must define.  The offset is looked up as given: for a
 * return address, pass the offset of the call (e.g. minus one).
 *
 * Ownership: every string in a struct rs_sym belongs to the symbolizer and
 * stays valid until rs_symbolizer_free().  A symbolizer is not thread-safe:
 * use one per thread.  The library never prints.
 */
#ifndef RS_SYMBOLIZE_H
#define RS_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relstack/entry.h"

struct rs_symbolizer;

struct rs_symbolizer_opts {
	size_t sz;                      /* sizeof(struct rs_symbolizer_opts) */
	const char *const *debug_dirs;  /* searched by build-id and debuglink, in order */
	size_t n_debug_dirs;
	bool lines;                     /* resolve file:line from DWARF */
	bool inlines;                   /* resolve inlined frames (implies lines) */
	bool no_system_debug_dir;       /* do not search /usr/lib/debug */
	/* debuginfod: what is fetched and why fetching stopped, and its deadline (symfetch.h) */
	void (*fetch_fn)(const char *line, bool gave_up, void *arg);
	void *fetch_arg;
	uint64_t fetch_deadline_ns;
};

/* Why a frame has no name, or RS_SYM_OK. */
enum rs_sym_reason {
	RS_SYM_OK = 0,
	RS_SYM_NO_SOURCE,         /* no symbol source found for the object */
	RS_SYM_BUILD_ID_MISMATCH, /* files were found, but of another build */
	RS_SYM_NO_SYMBOL,         /* the offset lies in no symbol */
	RS_SYM_VDSO,              /* the object is the vDSO, which has no file */
	RS_SYM_BAD_SOURCE,        /* the only symbol source is unreadable or corrupt */
	RS_SYM_BAD_HANDLE,        /* no such object handle */
	RS_SYM_NO_BASE,           /* kernel object whose symbols lack _stext */
};

/* Static string for @reason, e.g. "build-id mismatch". */
const char *rs_sym_reason_str(enum rs_sym_reason reason);

#define RS_SYM_MAX_INLINED 16

/* A function inlined at the address: its name and the location inside it. */
struct rs_sym_inlined {
	const char *name;
	const char *file;   /* NULL if unknown */
	unsigned line;
	unsigned column;
};

struct rs_sym {
	enum rs_sym_reason reason;
	const char *name;   /* the function (symbol table); NULL unless reason is RS_SYM_OK */
	uint64_t symoff;    /* offset of the address in the function */
	uint64_t symsize;   /* size of the function; implied by the next symbol if !size_exact */
	bool size_exact;
	/*
	 * Source location in the function itself.  Without inlines, it is the
	 * line-table location of the address; with inlines and a non-empty
	 * chain, the call site of the outermost inlined function.
	 */
	const char *file;   /* NULL if unknown */
	unsigned line;
	unsigned column;
	/* Inlined functions at the address, innermost first (opts.inlines). */
	unsigned n_inlined;
	struct rs_sym_inlined inlined[RS_SYM_MAX_INLINED];
	const char *source; /* the file the name came from */
	const char *line_source; /* the file file:line came from, or NULL */
	/*
	 * Why file:line or the inlined frames asked for are missing, e.g. "no
	 * DWARF found for the object"; NULL when nothing is missing.
	 */
	const char *line_note;
};

/*
 * A symbolizer with @opts (NULL: names and lines, system debug dir).  NULL
 * and errno on failure: EINVAL for options that break the rule of
 * relstack.h (sz too small, or non-zero bytes beyond this struct).
 */
struct rs_symbolizer *rs_symbolizer_new(const struct rs_symbolizer_opts *opts);

void rs_symbolizer_free(struct rs_symbolizer *s);

/*
 * Register an nm(1) or System.map text file for the objects matching
 * @object: the recorded path, or its basename.  Only files are opened
 * lazily; returns 0 or -errno (-EINVAL for an empty argument).
 */
int rs_symbolizer_add_map(struct rs_symbolizer *s, const char *object, const char *nm_file);

/*
 * Parse "OBJECT=FILE" as given to --symbols and register it.  -EINVAL if
 * there is no '=' or either side is empty.
 */
int rs_symbolizer_add_map_arg(struct rs_symbolizer *s, const char *arg);

/*
 * Register an object as recorded in an object table.  Returns a handle
 * >= 0 or -errno.  Nothing is opened yet: sources are resolved on the
 * first rs_symbolize() and shared by every handle of the same build-id
 * and path.
 */
int rs_symbolizer_object(struct rs_symbolizer *s, const struct relstack_object *obj);

/*
 * The same for a kernel module (RELSTACK_OBJECT_KERNEL, base load bias)
 * whose offsets count from its core text, with the kernel's @layout of
 * it: "SECTION=OFFSET_HEX ..." (the module table's).  A relocatable
 * symbol file (its .ko) is then read through the layout: a symbol of a
 * listed section at the section's offset plus its value.  Without a
 * layout a module counts from its .text (".text=0").
 */
int rs_symbolizer_module(struct rs_symbolizer *s, const struct relstack_object *obj, const char *layout);

/*
 * The event of a buffer file that gives a kernel module's layout: fields
 * "slot" (u32, the module's object slot) and "sections" (string).
 * docs/format.md, "Kernel modules".
 */
#define RS_KMODULE_EVENT "kernel_module"

/*
 * Resolve the sources of @handle now (otherwise done by the first
 * rs_symbolize()).  Returns 0 when names are available, else a negative
 * code: -RELSTACK_EBUILDID, -RELSTACK_ENOSYMBOLS, -RELSTACK_ECORRUPT, ...
 */
int rs_symbolizer_load(struct rs_symbolizer *s, int handle);

/*
 * Symbolize @offset in object @handle.  Always fills @out; returns 0 when
 * a name was found, otherwise -ENOENT with out->reason saying why.
 */
int rs_symbolize(struct rs_symbolizer *s, int handle, uint64_t offset, struct rs_sym *out);

/* Where a function lies in its object: offsets as rs_symbolize() takes them. */
struct rs_symextent {
	uint64_t offset;
	uint64_t size;
};

/*
 * The functions object @handle defines under @name: every symbol of that
 * name (an alias of another function, each version of a versioned
 * symbol, a local symbol of each compilation unit that has one), each as
 * the extent of the function rs_symbolize() names at its address.  Fills
 * up to @max of @out and returns how many there are (0: the object
 * defines none), or, when the object has no names, the negative code of
 * rs_symbolizer_load().  Linear in the object's symbols.
 */
int rs_symbolizer_find(struct rs_symbolizer *s, int handle, const char *name, struct rs_symextent *out,
		       size_t max);

/*
 * One line about the object's symbol sources when something went wrong,
 * naming the file, e.g. "libfoo.so: build-id 1234abcd... does not match
 * /usr/lib/libfoo.so (build-id abcd1234...)".  NULL when all is well.
 */
const char *rs_symbolizer_object_error(struct rs_symbolizer *s, int handle);

/*
 * Fill @out as the object table would record the ELF file at @path: its
 * path, build-id and executable segment, base RELSTACK_BASE_LOAD_BIAS.
 * For tools and tests that symbolize files rather than recorded traces.
 * Returns 0 or -errno (-ENOEXEC: not ELF).
 */
int rs_object_from_file(const char *path, struct relstack_object *out);

#endif
