// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bodies of `relstack info`, `dump` and `report`.  info prints the
 * file's tables; dump and report hand the options to the library's
 * decoder and one of its presenters (include/relstack/decode.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <relstack/reader.h>
#include <relstack/recorder.h>
#include <relstack/relstack.h>

#include <relstack/decode.h>

#include "decode/present.h"
#include "relstack-local.h"
#include "tools/output.h"

static const char *run_name(enum relstack_run_which w)
{
	return rs_run_name(w);
}

static void print_hex(FILE *f, const uint8_t *p, size_t n)
{
	rs_print_hex(f, p, n);
}

static void json_string(FILE *f, const char *s, size_t max)
{
	rs_print_string(f, s, max, true);
}

static void text_string(FILE *f, const char *s, size_t max)
{
	rs_print_string(f, s, max, false);
}

/* ---- fields ---- */

static const char *type_name(unsigned type)
{
	switch (type) {
	case RELSTACK_FIELD_UNSIGNED: return "unsigned";
	case RELSTACK_FIELD_SIGNED: return "signed";
	case RELSTACK_FIELD_HEX: return "hex";
	case RELSTACK_FIELD_STRING: return "string";
	case RELSTACK_FIELD_BYTES: return "bytes";
	}
	return "unknown";
}

/* The run @o asks for, or exit 2 naming it. */
static void run_info(struct relstack_reader *r, const struct rs_tool_opts *o, struct relstack_run_info *ri)
{
	int ret = relstack_reader__run_info(r, o->run, ri);
	char err[1024];

	if (ret < 0) {
		rs_no_run_message(r, o->run, o->file, ret, err, sizeof(err));
		rs_tool_input_error("%s", err);
	}
}

/* ---- info ---- */

static void info_format(const struct relstack_format *fm)
{
	printf("format: %u-byte words, %s-endian\n", fm->word_size,
	       fm->byte_order == RELSTACK_LITTLE_ENDIAN ? "little" : "big");
	printf("  object flag bit %u; slot index bits %u..%u (%u bits); offset bits 0..%u; "
	       "main-object offset bits 0..%u\n",
	       fm->flag_bit, fm->index_shift, fm->index_shift + fm->index_bits - 1, fm->index_bits,
	       fm->offset_bits - 1, fm->main_offset_bits - 1);
	printf("  object slots 0..%u; marker slot %u: END 0x%" PRIx64 ", UNKNOWN 0x%" PRIx64
	       ", SIGNAL 0x%" PRIx64 "\n",
	       fm->max_slot, fm->marker_slot, fm->marker_end, fm->marker_unknown, fm->marker_signal);
}


/* The text row of one object table slot. */
static void text_object(uint32_t s, const struct relstack_object *o)
{
	printf("  %-5u %-9s %-8s ", s, o->state == RELSTACK_OBJECT_LOADED ? "loaded" : "unloaded",
	       o->base == RELSTACK_BASE_STEXT ? "_stext" : "bias");
	if (o->build_id_len) {
		print_hex(stdout, o->build_id, o->build_id_len);
		printf("%*s", 2 * o->build_id_len < 40 ? (int)(40 - 2 * o->build_id_len) : 0, "");
	} else {
		printf("%-40s", "-");
	}
	printf(" ");
	text_string(stdout, o->path, sizeof(o->path));
	printf("  text 0x%" PRIx64 "+0x%" PRIx64 ", epochs %" PRIu64 "..", o->text_vaddr, o->text_size, o->load_epoch);
	if (o->unload_epoch)
		printf("%" PRIu64, o->unload_epoch);
	printf("%s%s%s\n", o->flags & RELSTACK_OBJECT_MAIN ? ", main" : "",
	       o->flags & RELSTACK_OBJECT_VDSO ? ", vdso" : "",
	       o->flags & RELSTACK_OBJECT_NO_FP ? ", no frame records" : "");
}

/* The JSON object of one object table slot (relstack(1), JSON OUTPUT). */
static void json_object(const struct relstack_object *o)
{
	printf("\"%s\",\"base\":\"%s\",\"build_id\":\"", o->state == RELSTACK_OBJECT_LOADED ? "loaded" : "unloaded",
	       o->base == RELSTACK_BASE_STEXT ? "_stext" : "bias");
	print_hex(stdout, o->build_id, o->build_id_len);
	printf("\",\"path\":");
	json_string(stdout, o->path, sizeof(o->path));
	printf(",\"text_vaddr\":\"0x%" PRIx64 "\",\"text_size\":\"0x%" PRIx64 "\",\"load_epoch\":%" PRIu64
	       ",\"unload_epoch\":", o->text_vaddr, o->text_size, o->load_epoch);
	if (o->unload_epoch)
		printf("%" PRIu64, o->unload_epoch);
	else
		printf("null");
	printf(",\"main\":%s,\"vdso\":%s,\"no_frame_pointers\":%s}", o->flags & RELSTACK_OBJECT_MAIN ? "true" : "false",
	       o->flags & RELSTACK_OBJECT_VDSO ? "true" : "false", o->flags & RELSTACK_OBJECT_NO_FP ? "true" : "false");
}

static void info_objects(struct relstack_reader *r, enum relstack_run_which w, uint64_t full, bool json)
{
	unsigned n = relstack_reader__object_count(r, w);
	bool first = true;

	if (json) {
		printf(",\"objects\":[");
	} else {
		printf("objects: %u slots; %" PRIu64 " objects found no free slot (their frames are UNKNOWN)\n", n, full);
		printf("  %-5s %-9s %-8s %-40s %s\n", "slot", "state", "base", "build-id", "path");
	}
	for (uint32_t s = 0; s < n; s++) {
		struct relstack_object o;
		const char *why = NULL;
		int ret = relstack_reader__object(r, w, s, &o, NULL, &why);

		if (ret == -ENOENT)
			continue;
		if (!json) {
			if (ret < 0)
				printf("  %-5u %-9s %s\n", s, "damaged", why ? why : relstack_strerror(ret));
			else
				text_object(s, &o);
			continue;
		}
		printf("%s{\"slot\":%u,\"state\":", first ? "" : ",", s);
		first = false;
		if (ret < 0) {
			printf("\"damaged\",\"reason\":");
			json_string(stdout, why ? why : relstack_strerror(ret), 256);
			printf("}");
		} else {
			json_object(&o);
		}
	}
	if (json)
		printf("]");
}

static void info_schemas(struct relstack_reader *r, enum relstack_run_which w, bool json)
{
	unsigned n = relstack_reader__schema_count(r, w);
	bool first = true;

	if (json)
		printf(",\"events\":[");
	else
		printf("events: %u schemas\n", n);
	for (unsigned i = 0; i < n; i++) {
		const struct relstack_schema *sc = relstack_reader__schema(r, w, i);

		if (!sc)
			continue;
		if (json) {
			printf("%s{\"id\":%u,\"name\":", first ? "" : ",", sc->id);
			json_string(stdout, sc->name, sizeof(sc->name));
			printf(",\"size\":%u,\"fields\":[", sc->size);
		} else {
			printf("  id %-3u %.*s (%u bytes of fields)\n", sc->id, (int)sizeof(sc->name), sc->name, sc->size);
		}
		first = false;
		for (unsigned k = 0; k < sc->nfields && k < RS_ARRAY_SIZE(sc->field); k++) {
			const struct relstack_schema_field *fd = &sc->field[k];

			if (!json) {
				printf("         field %-23.*s offset %-4u size %-4u %s\n", (int)sizeof(fd->name), fd->name,
				       fd->offset, fd->size, type_name(fd->type));
				continue;
			}
			printf("%s{\"name\":", k ? "," : "");
			json_string(stdout, fd->name, sizeof(fd->name));
			printf(",\"offset\":%u,\"size\":%u,\"type\":\"%s\"}", fd->offset, fd->size, type_name(fd->type));
		}
		if (json)
			printf("]}");
	}
	if (json)
		printf("]");
}

/*
 * `info --format json`: one JSON object with what the text shows.  Numbers
 * follow the rule of relstack(1): addresses, offsets and sizes of code and
 * marker words are "0x" strings; counts, times, ids are numbers.
 */
/* The run's stack table: its size, entries, hit rate (records naming an entry among stack records), fallbacks. */
static void info_stack_table(struct relstack_reader *r, enum relstack_run_which which, bool json)
{
	struct relstack_stack_table_info st;
	uint64_t stacks;

	if (relstack_reader__stack_table(r, which, &st) < 0)
		return;
	stacks = st.ref_records + st.inline_records;
	if (json) {
		printf(",\"stack_table\":{\"size\":%" PRIu64 ",\"entry_bytes\":%" PRIu64 ",\"entry_bytes_used\":%" PRIu64
		       ",\"index_slots\":%" PRIu64 ",\"entries\":%" PRIu64 ",\"damaged_entries\":%" PRIu64
		       ",\"records_naming_an_entry\":%" PRIu64 ",\"records_inline\":%" PRIu64 ",\"full_fallbacks\":%" PRIu64 "}",
		       st.size, st.arena_size, st.used, st.buckets, st.entries, st.damaged, st.ref_records,
		       st.inline_records, st.full);
		return;
	}
	if (!st.size) {
		printf("  stack table: none (a file of version 3): every record carries its stack\n");
		return;
	}
	printf("  stack table: %" PRIu64 " bytes, %" PRIu64 " entries in %" PRIu64 " of %" PRIu64 " entry bytes%s; "
	       "hit rate %.1f %% (%" PRIu64 " of %" PRIu64 " stack records name an entry); %" PRIu64
	       " stacks written inline because it was full\n",
	       st.size, st.entries, st.used, st.arena_size, st.damaged ? " (some damaged)" : "",
	       stacks ? 100.0 * (double)st.ref_records / (double)stacks : 0.0, st.ref_records, stacks, st.full);
}

static void info_json(struct relstack_reader *r, const struct rs_tool_opts *o, const struct relstack_run_info *ri)
{
	const struct relstack_format *fm = relstack_reader__format(r);

	printf("{\"file\":");
	json_string(stdout, o->file, SIZE_MAX);
	printf(",\"format\":{\"word_size\":%u,\"byte_order\":\"%s\",\"flag_bit\":%u,\"index_shift\":%u,"
	       "\"index_bits\":%u,\"offset_bits\":%u,\"main_offset_bits\":%u,\"marker_slot\":%u,\"max_slot\":%u,"
	       "\"marker_end\":\"0x%" PRIx64 "\",\"marker_unknown\":\"0x%" PRIx64 "\",\"marker_signal\":\"0x%" PRIx64
	       "\"}", fm->word_size, fm->byte_order == RELSTACK_LITTLE_ENDIAN ? "little" : "big", fm->flag_bit,
	       fm->index_shift, fm->index_bits, fm->offset_bits, fm->main_offset_bits, fm->marker_slot, fm->max_slot,
	       fm->marker_end, fm->marker_unknown, fm->marker_signal);
	printf(",\"addresses\":%s,\"runs\":%u,\"damaged_run_areas\":[",
	       relstack_reader__has_addresses(r) ? "true" : "false", relstack_reader__run_count(r));
	for (unsigned a = 0, first = 1; a < 2; a++) {
		const char *err = relstack_reader__run_error(r, a);

		if (!err)
			continue;
		printf("%s{\"area\":%u,\"reason\":", first ? "" : ",", a);
		json_string(stdout, err, 512);
		printf("}");
		first = 0;
	}
	printf("],\"run\":{\"run\":\"%s\",\"generation\":%" PRIu64 ",\"id\":\"", run_name(o->run), ri->generation);
	print_hex(stdout, ri->run_id, sizeof(ri->run_id));
	printf("\",\"pid\":%u,\"comm\":", ri->pid);
	json_string(stdout, ri->comm, sizeof(ri->comm));
	printf(",\"state\":\"%s\",\"realtime_ns\":%" PRIu64 ",\"monotonic_ns\":%" PRIu64 ",\"boot_id\":\"",
	       ri->state == RELSTACK_RUN_CLOSED ? "closed" : "active", ri->realtime_ns, ri->monotonic_ns);
	print_hex(stdout, ri->boot_id, sizeof(ri->boot_id));
	printf("\",\"close_monotonic_ns\":");
	if (ri->close_monotonic_ns)
		printf("%" PRIu64, ri->close_monotonic_ns);
	else
		printf("null");
	printf(",\"ring_size\":%" PRIu64 ",\"chunk_size\":%u,\"write_areas\":%u,\"objtab_capacity\":%u,\"schema_capacity\":%u,"
	       "\"mode\":\"%s\",\"absolute_allowed\":%s,\"records\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"overwritten\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"written\":%" PRIu64 ",\"objtab_full\":%" PRIu64 "}",
	       ri->ring_size, ri->chunk_size, ri->areas, ri->objtab_capacity, ri->schema_capacity,
	       ri->mode == RELSTACK_MODE_STOP ? "stop-when-full" : "overwrite-oldest", ri->addresses ? "true" : "false",
	       ri->records, ri->lost, ri->overwritten, ri->skipped, ri->written, ri->objtab_full);
	info_stack_table(r, o->run, true);
	info_objects(r, o->run, ri->objtab_full, true);
	info_schemas(r, o->run, true);
	printf("}\n");
}

int rs_tool_info(struct relstack_reader *r, const struct rs_tool_opts *o)
{
	struct relstack_run_info ri;

	run_info(r, o, &ri);
	if (o->format == RELSTACK_PRESENT_JSON) {
		info_json(r, o, &ri);
		return 0;
	}
	printf("file: %s\n", o->file);
	info_format(relstack_reader__format(r));
	printf("addresses: %s\n", relstack_reader__has_addresses(r) ?
	       "yes: a run allowed absolute stacks, its object table keeps load addresses" :
	       "none: every stack is relative");
	printf("runs: %u valid\n", relstack_reader__run_count(r));
	for (unsigned a = 0; a < 2; a++) {
		const char *err = relstack_reader__run_error(r, a);

		if (err)
			printf("  run area %u damaged: %s\n", a, err);
	}
	printf("run: %s, generation %" PRIu64 ", id ", run_name(o->run), ri.generation);
	print_hex(stdout, ri.run_id, sizeof(ri.run_id));
	printf("\n  process: pid %u, ", ri.pid);
	text_string(stdout, ri.comm, sizeof(ri.comm));
	printf("\n  state: %s\n", ri.state == RELSTACK_RUN_CLOSED ? "closed" :
	       "active (still being written, or its writer died without closing it)");
	printf("  started: ");
	rs_print_walltime(stdout, ri.realtime_ns);
	printf(" (CLOCK_MONOTONIC %" PRIu64 ".%09" PRIu64 " s), boot ", (uint64_t)(ri.monotonic_ns / 1000000000u),
	       (uint64_t)(ri.monotonic_ns % 1000000000u));
	print_hex(stdout, ri.boot_id, sizeof(ri.boot_id));
	printf("\n");
	if (ri.close_monotonic_ns)
		printf("  closed: after %.6f s\n", (double)(ri.close_monotonic_ns - ri.monotonic_ns) / 1e9);
	printf("  geometry: ring %" PRIu64 " bytes in chunks of %u, %u write areas, %u object slots, %u schemas, "
	       "mode %s%s\n",
	       ri.ring_size, ri.chunk_size, ri.areas, ri.objtab_capacity, ri.schema_capacity,
	       ri.mode == RELSTACK_MODE_STOP ? "stop-when-full" : "overwrite-oldest",
	       ri.addresses ? ", absolute stacks allowed" : "");
	printf("  counters: %" PRIu64 " records, %" PRIu64 " lost, %" PRIu64 " overwritten, %" PRIu64
	       " skipped (partial or damaged), %" PRIu64 " bytes written\n",
	       ri.records, ri.lost, ri.overwritten, ri.skipped, ri.written);
	info_stack_table(r, o->run, false);
	info_objects(r, o->run, ri.objtab_full, false);
	info_schemas(r, o->run, false);
	return 0;
}

/* ---- records ---- */

/*
 * The progress line: on a terminal, once decoding takes more than a
 * second, "relstack: N of M records" rewritten in place.  It is erased
 * before anything else is said on standard error, and at the end.  It is
 * not shown where standard output is the same terminal and the format
 * writes as it goes: the records would land on the line.
 */
static struct {
	bool on, shown;
	struct timespec t0;
} progress;

static void progress_erase(void)
{
	if (progress.shown)
		fprintf(stderr, "\r\033[K");
	progress.shown = false;
}

static void progress_update(size_t done, size_t total)
{
	struct timespec t;

	if (!progress.on || done % 1024 != 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (t.tv_sec - progress.t0.tv_sec > 1 || (t.tv_sec - progress.t0.tv_sec == 1 && t.tv_nsec >= progress.t0.tv_nsec)) {
		fprintf(stderr, "\rrelstack: %zu of %zu records", done, total);
		progress.shown = true;
	}
}

/* Whether file descriptors @a and @b are the one terminal. */
static bool same_terminal(int a, int b)
{
	struct stat sa, sb;

	return isatty(a) && isatty(b) && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_rdev == sb.st_rdev;
}

/* Formats that write each record as it comes; the others write once all are in. */
static bool streams(enum relstack_present_format f)
{
	return f == RELSTACK_PRESENT_TEXT || f == RELSTACK_PRESENT_JSON || f == RELSTACK_PRESENT_PERF_SCRIPT;
}

/* The object errors of every file, each line once (the same library in several files says the same). */
struct said {
	char **line;
	size_t n;
};

static void object_error(const char *line, void *arg)
{
	struct said *said = arg;
	char **more;

	for (size_t i = 0; i < said->n; i++)
		if (strcmp(said->line[i], line) == 0)
			return;
	progress_erase();
	fprintf(stderr, "relstack: %s\n", line);
	/* short of memory, a line may be said again: no worse */
	more = realloc(said->line, (said->n + 1) * sizeof(*more));
	if (!more)
		return;
	said->line = more;
	if ((more[said->n] = strdup(line)))
		said->n++;
}

/*
 * What debuginfod fetches, one line each (as gdb says "Downloading
 * separate debug info"), and why it stopped: then no other file asks it
 * either.
 */
static void fetch_line(const char *line, bool gave_up, void *arg)
{
	(void)arg;
	progress_erase();
	fprintf(stderr, "relstack: %s\n", line);
	if (gave_up)
		unsetenv("DEBUGINFOD_URLS");
}

/* All fetching from debuginfod in one command ends this long after it starts (relstack(1)). */
#define FETCH_SECONDS 300

int rs_tool_records(const struct rs_tool_opts *o, bool symbolize)
{
	struct relstack_decode_opts dopts = {
		.sz = sizeof(dopts),
		.run = o->run,
		.symbolize = symbolize,
		.lines = o->lines,
		.inlines = o->inlines,
		.demangle = !o->no_demangle,
		.system_map = true,
		.debug_dirs = o->debug_dirs,
		.n_debug_dirs = o->ndebug_dirs,
		.symbols = o->symbols,
		.n_symbols = o->nsymbols,
		.tids = o->tids,
		.n_tids = o->ntids,
		.events = o->events,
		.n_events = o->nevents,
		.since = { o->since.set, o->since.relative, o->since.ns },
		.until = { o->until.set, o->until.relative, o->until.ns },
		.fetch_fn = fetch_line,
	};
	struct relstack_present_opts popts = {
		.sz = sizeof(popts),
		.format = o->top ? RELSTACK_PRESENT_TOP : o->format,
		.which = o->run,
		.top = o->top,
		.no_verdict = o->no_verdict,
	};
	const char *no_color = getenv("NO_COLOR");
	struct relstack_decoder **d = calloc(o->nfiles, sizeof(*d));
	size_t done = 0, total = 0;
	const struct relstack_decoded_record *dr;
	struct relstack_presenter *p;
	struct said said = { 0 };
	struct timespec now;
	FILE *out = stdout;
	char err[1024];
	int ret = 0;

	if (!d)
		rs_tool_input_error("out of memory");
	clock_gettime(CLOCK_MONOTONIC, &now);
	dopts.fetch_deadline_ns = ((uint64_t)now.tv_sec + FETCH_SECONDS) * 1000000000u + (uint64_t)now.tv_nsec;
	for (size_t i = 0; i < o->nfiles; i++) {
		dopts.name = o->files[i].name;
		ret = relstack_decoder__new(o->files[i].r, &dopts, &d[i], err, sizeof(err));
		if (ret < 0)
			rs_tool_input_error("%s", err);
		total += relstack_decoder__count(d[i]);
	}
	popts.run = relstack_decoder__run_info(d[0]);
	if (o->output) {
		out = fopen(o->output, "w");
		if (!out)
			rs_tool_input_error("%s: %s", o->output, strerror(errno));
	}
	/* colour only where a person reads it (`report | less` gets plain text), and not against NO_COLOR */
	popts.color = o->color == RS_COLOR_ALWAYS ||
		      (o->color == RS_COLOR_AUTO && isatty(fileno(out)) && !(no_color && no_color[0]));
	progress.on = isatty(STDERR_FILENO) && !(out == stdout && streams(popts.format) &&
						 same_terminal(STDOUT_FILENO, STDERR_FILENO));
	clock_gettime(CLOCK_MONOTONIC, &progress.t0);
	ret = relstack_presenter__new(&popts, out, &p);
	if (ret < 0)
		rs_tool_input_error("cannot present the records: %s", relstack_strerror(ret));
	for (size_t i = 0; i < o->nfiles && ret >= 0; i++) {
		if (o->nfiles > 1)
			ret = relstack_presenter__begin_file(p, o->files[i].name, relstack_decoder__run_info(d[i]));
		while (ret >= 0 && relstack_decoder__next(d[i], &dr) > 0) {
			ret = relstack_presenter__record(p, dr);
			progress_update(++done, total);
		}
	}
	progress_erase();
	if (ret >= 0)
		ret = relstack_presenter__finish(p);
	if (ret < 0)
		rs_tool_input_error("%s: %s", o->output ? o->output : "standard output", relstack_strerror(ret));
	if (out != stdout && fclose(out) != 0)
		rs_tool_input_error("%s: %s", o->output, strerror(errno));
	ret = 0;
	for (size_t i = 0; i < o->nfiles; i++) {
		if (relstack_decoder__object_errors(d[i], object_error, &said))
			ret = 2;
		relstack_decoder__free(d[i]);
	}
	/* a filter that keeps nothing prints nothing: say so, lest it look like a file without records */
	if (!total && o->filter[0]) {
		if (o->nfiles == 1)
			fprintf(stderr, "relstack: no record of the %s run of %s matches %s\n", rs_run_name(o->run),
				o->files[0].name, o->filter);
		else
			fprintf(stderr, "relstack: no record of the %s runs of the %zu files matches %s\n",
				rs_run_name(o->run), o->nfiles, o->filter);
	}
	for (size_t i = 0; i < said.n; i++)
		free(said.line[i]);
	free(said.line);
	relstack_presenter__free(p);
	free(d);
	return ret;
}
