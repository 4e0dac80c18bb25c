/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kernel.h - kernel stacks for relstack: the kernel's symbols, its object
 * table, relative entry words with a verdict, and the tracefs recorder.
 * Internal API of the kernel part, used by the relstack command, the
 * tests, the benchmarks and the fuzz targets.
 *
 * The kernel object table is the user-space object table's twin: slot 0
 * is the core kernel (offsets from _stext, the relative-stacktrace
 * convention), every module one more slot (offsets from its .text).  It
 * is built from /proc/kallsyms, /sys/kernel/notes, /proc/modules and
 * /sys/module/NAME/{sections/.text,notes/}; a root prefix points all of
 * those at a fixture tree instead.  No absolute address leaves this part:
 * addresses become entry words here, and an address in no text becomes
 * the UNKNOWN marker.
 *
 * Functions return 0 or a count, or -errno; pointer functions return NULL
 * and set errno.  Nothing here prints or exits.
 */
#ifndef RS_KERNEL_H
#define RS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decode/symbolize.h"
#include "relstack/entry.h"
#include "relstack/unwind.h"

/* One line into @errbuf (when there is one); returns @err, for "return rs_kfail(...)". */
__attribute__((format(printf, 4, 5))) int rs_kfail(char *errbuf, size_t sz, int err, const char *fmt, ...);

/* ---- the kernel's symbols (/proc/kallsyms, or the copy trace-cmd keeps) ---- */

struct rs_ksym {
	uint64_t addr;
	char type;      /* nm type letter */
	char *name;
};

struct rs_ksyms {
	struct rs_ksym *v;  /* core kernel symbols, in the file's order (module symbols are left out) */
	size_t n;
	uint64_t text, stext, etext, sinittext, einittext; /* 0 when absent */
	size_t bad_lines;   /* lines that were neither a symbol nor blank */
	bool hidden;        /* every address read 0: kallsyms is restricted (kptr_restrict) */
};

/*
 * Parse kallsyms text ("ADDR TYPE NAME [MODULE]" per line) from a
 * length-bounded buffer.  Returns the number of core symbols, or -errno
 * (-ENOMEM; -ENOENT when the text has no _stext, or every address is 0:
 * then @out holds no symbol, only .hidden).
 */
int rs_ksyms_parse(const char *buf, size_t len, struct rs_ksyms *out);
int rs_ksyms_read(const char *path, struct rs_ksyms *out);
void rs_ksyms_free(struct rs_ksyms *s);

/*
 * Write @s as a System.map: a "# build-id: HEX" line (when @bid_len),
 * then "ADDR TYPE NAME" per symbol, every address minus @kaslr_offset
 * (the link-time address).  Of symbols at one address only the first is
 * written: it is the one the kernel prints.  Returns 0 or -errno.
 */
int rs_ksyms_write_map(const struct rs_ksyms *s, uint64_t kaslr_offset, const uint8_t *bid, size_t bid_len,
		       FILE *f);

/* The KASLR offset: the running _text minus its link-time address (CONFIG_PHYSICAL_START from @config_gz). */
uint64_t rs_kaslr_offset(const struct rs_ksyms *s, const char *config_gz);

/*
 * The GNU build-id in a buffer of ELF notes (/sys/kernel/notes,
 * /sys/module/NAME/notes/.note.gnu.build-id).  Returns its length
 * (at most @max), or -ENOENT.
 */
int rs_knotes_build_id(const void *buf, size_t len, uint8_t *out, size_t max);
/* The running kernel's, from /sys/kernel/notes: its length, or -errno (-ENOENT: none). */
int rs_kernel_build_id(uint8_t *out, size_t max);

/* ---- the kernel object table ---- */

struct rs_ktab;

/*
 * A table over @syms (whose _stext.._einittext is the core kernel's
 * text), with the core's build-id, and the modules found under @root
 * ("" for this machine).  Slot 0 is the core kernel, path "vmlinux".
 */
struct rs_ktab *rs_ktab_new(const struct rs_ksyms *syms, const uint8_t *bid, size_t bid_len, const char *root);
void rs_ktab_free(struct rs_ktab *kt);

/*
 * Re-read the modules under the root: a new module takes a new slot; a
 * module gone keeps its slot, marked unloaded (records may name it), as
 * a dlclose'd object does.  Returns the number of slots changed, or -errno.
 */
int rs_ktab_scan_modules(struct rs_ktab *kt);

unsigned rs_ktab_count(const struct rs_ktab *kt);
const struct relstack_object *rs_ktab_object(const struct rs_ktab *kt, unsigned slot);
uint64_t rs_ktab_epoch(const struct rs_ktab *kt);
/* Modules that found no slot (their addresses encode as UNKNOWN). */
uint64_t rs_ktab_full(const struct rs_ktab *kt);

/* Write the table as an object table image (capacity @cap): the run's copy. */
void rs_ktab_publish(const struct rs_ktab *kt, void *image, unsigned cap);

/*
 * Relativise a kernel stack as ftrace recorded it (innermost first) and
 * give it a verdict.  Every address becomes an entry word (the UNKNOWN
 * marker when it lies in no text).  The trace is reliable only when every
 * address lies in kernel text, no interrupt or exception entry was
 * crossed, the stack is whole (@truncated false) and its last address is
 * in a function where a task's stack starts (system call entry,
 * ret_from_fork, the startup code of a CPU, or an interrupt entry taken
 * from user mode); it then ends with the END marker.  Otherwise
 * v->reasons says why: RELSTACK_UNRELIABLE_UNKNOWN_TEXT,
 * _INTERRUPT_FRAME, _TRUNCATED, _END_UNPROVEN.  ULONG_MAX ends the stack
 * (older kernels pad with it).  @cap must be at least @n + 1.  Returns
 * the number of words.
 */
size_t rs_kstack_encode(const struct rs_ktab *kt, const uint64_t *addrs, size_t n, bool truncated,
			uint64_t *words, size_t cap, struct relstack_verdict *v);

/* ---- relative kernel stacks (the kernel_stack_rel event of linux/patches) ---- */

/*
 * The bit layout a kernel_stack_rel event carries in its fields: read
 * from every event, never assumed.  A word with bit @module_bit clear is
 * an offset from _stext; set, bits @index_shift.. (@index_bits wide) are
 * the module's index in the kernel's module table and the bits below
 * the offset from the module's core text.  The index of all ones is the
 * kernel's marker index: END is the word of all ones, NO_TEXT (an
 * address in no text) the one below it.
 */
struct rs_krel_layout {
	unsigned module_bit, index_shift, index_bits;
};

#define RS_KREL_INDEX_BITS_MAX 20u
#define RS_KSECTIONS_MAX 640  /* "SECTION=OFFSET_HEX ..." of one module, NUL included */
#define RS_KMODNAME_MAX 56    /* the kernel's MODULE_NAME_LEN */

/*
 * Check a layout for @word_bits-bit words.  Returns 0, or -EINVAL with a
 * message naming the field in @err: module_bit beyond the word,
 * index_bits 0 or above RS_KREL_INDEX_BITS_MAX, index_shift 0, the index
 * reaching the module bit.
 */
int rs_krel_layout_check(const struct rs_krel_layout *l, unsigned word_bits, char *err, size_t errsz);

/* A module of the kernel's module table (file or module-load event): no address. */
struct rs_kmodule {
	uint32_t index;               /* never reused in a boot */
	char name[RS_KMODNAME_MAX];
	uint8_t bid[RELSTACK_BUILD_ID_MAX];
	size_t bid_len;
	uint64_t text_size;
	bool gone;                    /* unloaded since */
	char sections[RS_KSECTIONS_MAX]; /* executable sections of its core text and their offsets */
};

/*
 * Parse the kernel's module table text ("INDEX NAME BUILD_ID TEXT_SIZE
 * STATE [SECTION=OFFSET]..." per line, numbers in hex but INDEX; a
 * build-id of zeros, or "-", is none) into @out (at most @max).  Returns the number of modules, or -EINVAL with
 * "line N: what is wrong" in @err.
 */
int rs_kmodtab_parse(const char *buf, size_t len, struct rs_kmodule *out, size_t max, char *err, size_t errsz);

/*
 * Check a "SECTION=OFFSET_HEX ..." list against a text of @text_size
 * bytes: section names start with '.', offsets lie in the text, no name
 * twice.  0, or -EINVAL with the message in @err.
 */
int rs_ksections_check(const char *sections, uint64_t text_size, char *err, size_t errsz);

/*
 * A table for stacks that are relative already: slot 0 the core kernel
 * (base _stext; its text size unknown, so every offset the word format
 * holds), with @bid as its build-id.  Modules come with
 * rs_ktab_add_module().  When @syms is given (absolute stacks of the same
 * data), its text and verdict facts are used as rs_ktab_new() does.
 */
struct rs_ktab *rs_ktab_new_rel(const struct rs_ksyms *syms, const uint8_t *bid, size_t bid_len);

/*
 * Give module @m (by its kernel index) a slot: loaded, or unloaded when
 * m->gone, and valid for every record the table's relative words name
 * (an index is never reused in a boot).  A second add of an index keeps
 * the first.  Returns the slot, -EEXIST for an index already known,
 * -ENOSPC when the table is full (counted: its words become UNKNOWN).
 */
int rs_ktab_add_module(struct rs_ktab *kt, const struct rs_kmodule *m);

/* The slot of kernel module index @index, or -1. */
int rs_ktab_slot_of_index(const struct rs_ktab *kt, uint32_t index);
/* The kernel index of module slot @slot, or -1. */
int64_t rs_ktab_index_of_slot(const struct rs_ktab *kt, unsigned slot);
/* The section list of a module slot ("" when unknown). */
const char *rs_ktab_sections(const struct rs_ktab *kt, unsigned slot);

struct rs_krel_stats {
	uint64_t unknown_index; /* module words whose index no module of the table has */
	uint64_t beyond_text;   /* words whose offset lies beyond their object's text */
	uint64_t no_text;       /* NO_TEXT markers and unknown marker words */
};

/*
 * Turn the words of a kernel_stack_rel event (innermost first) into
 * entry words of @kt, with a verdict from the event's @reliable field
 * (0 not checked, 1 reliable, 2 refused by the kernel; the caller checks
 * it is one of those).  A word is translated only from @l: a core word
 * becomes slot 0 at its offset, a module word the module's slot; a
 * marker, an index no module has, an offset beyond its text become
 * UNKNOWN (counted in @st).  The trace is reliable only when the kernel
 * said so, its END came, nothing after it, no word is UNKNOWN and
 * nothing was cut (@truncated, or @cap); it then ends with END.
 * Otherwise the reasons: RELSTACK_UNRELIABLE_UNCHECKED, _KERNEL_REFUSED,
 * _UNKNOWN_TEXT, _TRUNCATED, _END_UNPROVEN.  @cap must be at least 2.
 * Returns the number of words.
 */
size_t rs_kstack_rel_encode(const struct rs_ktab *kt, const struct rs_krel_layout *l, const uint64_t *kw, size_t n,
			    unsigned reliable, bool truncated, uint64_t *words, size_t cap, struct relstack_verdict *v,
			    struct rs_krel_stats *st);

/* ---- the tracefs recorder ---- */

#define RS_KINSTANCE_PREFIX "relstack-"

struct rs_kevent_spec {
	char system[64];
	char event[64];
	const char *filter; /* NULL: every event */
};

struct rs_krecord_opts {
	const char *output;            /* the relstack buffer file */
	const struct rs_kevent_spec *events;
	unsigned nevents;
	unsigned stack_depth;          /* 0: what ftrace gives */
	double duration;               /* seconds; 0: until @child ends or a signal */
	char *const *argv;             /* a command to run and record around (its end stops recording), or NULL */
	uint64_t ring_size;            /* relstack ring bytes; 0: 16 MiB */
	volatile int *stop;            /* set by the caller's SIGINT/SIGTERM handler */
	/*
	 * Check mode: the kernel's own formatted text of the same events
	 * (the instance's "trace", symbols with offsets) is written here
	 * before the pages are read, which then happens only at the end:
	 * the instance's buffer must hold the whole recording.
	 */
	const char *check_text;
	/*
	 * Called once, when the instance exists with its events on and
	 * tracing is on: every event from then on is recorded.  @argv
	 * starts after it returns.  NULL: not called.
	 */
	void (*on_recording)(const char *instance, void *ctx);
	void *ctx;                     /* for on_recording */
	char *errbuf;                  /* one line on failure */
	size_t errbuf_sz;
};

struct rs_krecord_stats {
	uint64_t events;      /* records written */
	uint64_t stacks;      /* of them with a kernel stack */
	uint64_t reliable;
	uint64_t lost;        /* events the kernel's ring lost, plus records the file refused */
	uint64_t pages;
	char instance[64];    /* the tracefs instance used */
};

/*
 * Record with an instance of our own (RS_KINSTANCE_PREFIX + pid), removed
 * before returning, whatever happens.  Returns 0 or -errno with a message
 * in opts->errbuf.
 */
int rs_krecord(const struct rs_krecord_opts *o, struct rs_krecord_stats *st);

/*
 * Instances left by relstack runs whose process is gone: their names into
 * @names (at most @max, each at most 64 bytes).  With @remove, removed
 * too.  Returns how many there were, or -errno.
 */
int rs_kinstances_stale(char (*names)[64], unsigned max, bool remove);

/* ---- converting raw tracefs pages (the recorder's hot path; also the fuzz target's and bench's) ---- */

struct rs_kconv;
struct tep_handle;
struct relstack_recorder;

/*
 * A converter from raw ring-buffer pages of @tep's events to records of
 * @rec (NULL: converted and counted, not written).  Events of @ids get
 * their fields and the kernel stack that follows them, others are
 * skipped; with @ids NULL, every event type met does.
 */
struct rs_kconv *rs_kconv_new(struct tep_handle *tep, const struct rs_ktab *kt, struct relstack_recorder *rec,
			      const int *ids, unsigned nids, unsigned stack_depth);
void rs_kconv_free(struct rs_kconv *c);
/* One page of CPU @cpu: parse, pair stacks with their events, relativise.  Returns stacks, or -errno. */
int rs_kconv_page(struct rs_kconv *c, const void *page, size_t size, unsigned cpu);
/* One event already taken from its page (trace-cmd's reader gives those).  Returns stacks, or -errno. */
int rs_kconv_event(struct rs_kconv *c, const void *data, size_t size, unsigned cpu, uint64_t ts);
/* Write what the pages so far gave, in time order.  Returns records written, or -errno. */
int rs_kconv_flush(struct rs_kconv *c);
/* The end of the pages: events still waiting for their stack are written without one, then flushed. */
int rs_kconv_finish(struct rs_kconv *c);
void rs_kconv_stats(const struct rs_kconv *c, struct rs_krecord_stats *st);
/* What stopped the conversion (a format or an event no kernel writes), or NULL. */
const char *rs_kconv_error(const struct rs_kconv *c);
/* Every stack event becomes a record of its own instead of joining the event before it. */
void rs_kconv_standalone(struct rs_kconv *c);
/* Module-load events of the relative-stacktrace patches add their modules to @kt, used for relative stacks. */
void rs_kconv_module_table(struct rs_kconv *c, struct rs_ktab *kt);
/*
 * One RS_KMODULE_EVENT record (decode/symbolize.h) per module slot of
 * @kt, at time 0, for the decoder: the module's sections, with its
 * index, name and text size.  0 or -errno.
 */
int rs_kconv_write_modules(struct rs_kconv *c, const struct rs_ktab *kt);
void rs_kconv_rel_stats(const struct rs_kconv *c, struct rs_krel_stats *st);

/* The module events' ids, so that a module load or free re-scans the table. */
void rs_kconv_module_events(struct rs_kconv *c, int load_id, int free_id, struct rs_ktab *kt);

/* ---- trace-cmd files ---- */

/*
 * Convert a trace-cmd data file (recorded with stack traces, -T) into
 * the relstack buffer file @output, relative, using the kallsyms the
 * file carries.  Returns records written, or -errno with a message.
 */
int rs_kimport(const char *tracedat, const char *output, char *errbuf, size_t errbuf_sz);

/* ---- raw tracefs output (a directory of pages, formats and the module table) ---- */

#define KRAW_CPUS_MAX 1024u

struct rs_kraw_opts {
	const char *dir;       /* header_page, events/SYSTEM/EVENT/format, per_cpu/cpuN/trace_pipe_raw, ... */
	const char *output;    /* the relstack buffer file */
	const char *kallsyms;  /* for absolute stacks; NULL: DIR/kallsyms when there is one */
	const char *module_table; /* NULL: DIR/module_table when there is one */
	char *errbuf;          /* one line on failure */
	size_t errbuf_sz;
};

struct rs_kraw_stats {
	uint64_t events;        /* records written (stacks are records of their own) */
	uint64_t stacks, reliable, lost, pages;
	unsigned cpus;
	uint64_t modules;       /* module slots: the module table's and the load events' */
	uint64_t modules_full;  /* modules that found no slot */
	uint64_t unknown_index, beyond_text, no_text; /* words written as UNKNOWN, by cause */
};

/*
 * Convert the raw tracefs output under o->dir (raw-import.c says what
 * it holds) into the buffer file o->output.  Returns 0, or -errno with
 * a line naming the file and what is wrong in o->errbuf.
 */
int rs_kimport_raw(const struct rs_kraw_opts *o, struct rs_kraw_stats *st);

#endif
