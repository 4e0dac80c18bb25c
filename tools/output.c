// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bodies of `relstack info`, `dump` and `report`, and their output
 * formats: ftrace-style text, JSON Lines, folded stacks.
 *
 * Records are read through the reader's cursor, filtered, copied and
 * sorted by time (the ring orders them per thread only).  Each frame is
 * decoded by the file's format descriptor and checked against the run's
 * object table; one bad frame never costs the rest of its trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <relstack/reader.h>
#include <relstack/recorder.h>
#include <relstack/relstack.h>

#include "decode/symbolize.h"
#include "relstack-local.h"
#include "tools/output.h"

/* ---- small printing helpers ---- */

static const char *run_name(enum relstack_run_which w)
{
	return w == RELSTACK_RUN_PREVIOUS ? "previous" : "current";
}

static void print_hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

static void print_walltime(FILE *f, uint64_t ns)
{
	time_t secs = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char buf[64];

	gmtime_r(&secs, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "%s.%09" PRIu64 "Z", buf, (uint64_t)(ns % 1000000000u));
}

/*
 * Length of the valid UTF-8 sequence at @s (at most @max bytes, NUL ends
 * the string), or 0 if the byte at @s starts none.  Overlong forms,
 * surrogates and code points beyond U+10FFFF are not valid (RFC 3629).
 */
static size_t utf8_len(const unsigned char *s, size_t max)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n > max)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			return 0;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

/*
 * A string from the file, quoted (JSON rules; also for text: never raw).
 * Valid UTF-8 passes through; '"', '\\', control characters and DEL are
 * escaped.  A byte that is not part of valid UTF-8 keeps its value: \udcXX
 * in JSON (the lone surrogate U+DC80..U+DCFF, as Python's surrogateescape
 * reads it back), \xXX in text.  relstack(1) documents the rule.
 */
static void print_string(FILE *f, const char *str, size_t max, bool json)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < max && s[i];) {
		unsigned char c = s[i];
		size_t n = utf8_len(s + i, max - i);

		if (n == 0)
			fprintf(f, json ? "\\udc%02x" : "\\x%02x", c);
		else if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fwrite(s + i, 1, n, f);
		i += n ? n : 1;
	}
	fputc('"', f);
}

static void json_string(FILE *f, const char *s, size_t max)
{
	print_string(f, s, max, true);
}

static void text_string(FILE *f, const char *s, size_t max)
{
	print_string(f, s, max, false);
}

static const char *basename_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/* The verdict's reasons by name: "a,b" in text, ["a","b"] in JSON. */
static void print_reasons(FILE *f, uint32_t reasons, bool json)
{
	bool first = true;

	if (json)
		fputc('[', f);
	for (unsigned b = 0; b < 32; b++) {
		if (!(reasons & (1u << b)))
			continue;
		fprintf(f, json ? "%s\"%s\"" : "%s%s", first ? "" : ",", relstack_reason_string(1u << b));
		first = false;
	}
	if (json)
		fputc(']', f);
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

static bool field_int(const struct relstack_schema_field *fd, const uint8_t *p, uint64_t *u, int64_t *s)
{
	uint64_t v = 0;

	if (fd->size != 1 && fd->size != 2 && fd->size != 4 && fd->size != 8)
		return false;
	for (unsigned i = 0; i < fd->size; i++)
		v |= (uint64_t)p[i] << (8 * i);
	*u = v;
	if (fd->size < 8 && (v >> (fd->size * 8 - 1)) & 1)
		*s = (int64_t)(v | ~0ull << (fd->size * 8));
	else
		*s = (int64_t)v;
	return true;
}

static void print_fields(FILE *f, const struct relstack_record *rec, bool json)
{
	const struct relstack_schema *sc = rec->schema;
	const uint8_t *base = rec->fields;
	bool first = true;

	if (json)
		fputc('{', f);
	if (!sc) {
		if (json)
			fputc('}', f);
		return;
	}
	for (unsigned i = 0; i < sc->nfields && i < RS_ARRAY_SIZE(sc->field); i++) {
		const struct relstack_schema_field *fd = &sc->field[i];
		const uint8_t *p = base + fd->offset;
		uint64_t u;
		int64_t s;

		if (json)
			fprintf(f, "%s", first ? "" : ",");
		else
			fputc(' ', f);
		first = false;
		if (json)
			json_string(f, fd->name, sizeof(fd->name));
		else
			fprintf(f, "%.*s", (int)sizeof(fd->name), fd->name);
		fputc(json ? ':' : '=', f);
		if ((size_t)fd->offset + fd->size > rec->fields_size) {
			fputs(json ? "null" : "<missing>", f);
			continue;
		}
		switch (fd->type) {
		case RELSTACK_FIELD_UNSIGNED:
		case RELSTACK_FIELD_SIGNED:
		case RELSTACK_FIELD_HEX:
			if (!field_int(fd, p, &u, &s)) {
				fputs(json ? "null" : "<bad size>", f);
				break;
			}
			if (fd->type == RELSTACK_FIELD_SIGNED)
				fprintf(f, "%" PRId64, s);
			else if (fd->type == RELSTACK_FIELD_HEX)
				fprintf(f, json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, u);
			else
				fprintf(f, "%" PRIu64, u);
			if (!json && strcmp(fd->name, "signo") == 0 && s > 0 && s < 65 && sigabbrev_np((int)s))
				fprintf(f, "(SIG%s)", sigabbrev_np((int)s));
			break;
		case RELSTACK_FIELD_STRING:
			print_string(f, (const char *)p, fd->size, json);
			break;
		default:
			fputc('"', f);
			print_hex(f, p, fd->size);
			fputc('"', f);
		}
	}
	if (json)
		fputc('}', f);
}

/*
 * The asked-for run is not in the file: one line that says why.  A run
 * area the reader refused may have held that run: what the reader says of
 * each area is given, so "does not hold one" is said only when no area
 * holds anything wrong.
 */
__attribute__((noreturn)) static void no_run(struct relstack_reader *r, const struct rs_tool_opts *o, int ret)
{
	char why[600] = "";
	size_t n = 0;

	for (unsigned a = 0; a < 2 && ret == -ENOENT; a++) {
		const char *err = relstack_reader__run_error(r, a);

		if (err && n < sizeof(why))
			n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%s", n ? "; " : "", err);
	}
	if (n)
		rs_tool_input_error("%s: no %s run, damaged: %s", o->file, run_name(o->run), why);
	rs_tool_input_error("%s: no %s run (%s)", o->file, run_name(o->run),
			    ret == -ENOENT ? "the file does not hold one" : relstack_strerror(ret));
}

/* The run @o asks for, or exit 2 naming it. */
static void run_info(struct relstack_reader *r, const struct rs_tool_opts *o, struct relstack_run_info *ri)
{
	int ret = relstack_reader__run_info(r, o->run, ri);

	if (ret < 0)
		no_run(r, o, ret);
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
	       o->flags & RELSTACK_OBJECT_NO_FP ? ", no frame pointers" : "");
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

static void info_objects(struct relstack_reader *r, enum relstack_run_which w, bool json)
{
	unsigned n = relstack_reader__object_count(r, w);
	bool first = true;

	if (json) {
		printf(",\"objects\":[");
	} else {
		printf("objects: %u slots\n", n);
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
	printf(",\"ring_size\":%" PRIu64 ",\"chunk_size\":%u,\"objtab_capacity\":%u,\"schema_capacity\":%u,"
	       "\"mode\":\"%s\",\"absolute_allowed\":%s,\"records\":%" PRIu64 ",\"lost\":%" PRIu64
	       ",\"overwritten\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"written\":%" PRIu64 "}",
	       ri->ring_size, ri->chunk_size, ri->objtab_capacity, ri->schema_capacity,
	       ri->mode == RELSTACK_MODE_STOP ? "stop-when-full" : "overwrite-oldest", ri->addresses ? "true" : "false",
	       ri->records, ri->lost, ri->overwritten, ri->skipped, ri->written);
	info_stack_table(r, o->run, true);
	info_objects(r, o->run, true);
	info_schemas(r, o->run, true);
	printf("}\n");
}

int rs_tool_info(struct relstack_reader *r, const struct rs_tool_opts *o)
{
	struct relstack_run_info ri;

	run_info(r, o, &ri);
	if (o->format == RS_FORMAT_JSON) {
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
	print_walltime(stdout, ri.realtime_ns);
	printf(" (CLOCK_MONOTONIC %" PRIu64 ".%09" PRIu64 " s), boot ", (uint64_t)(ri.monotonic_ns / 1000000000u),
	       (uint64_t)(ri.monotonic_ns % 1000000000u));
	print_hex(stdout, ri.boot_id, sizeof(ri.boot_id));
	printf("\n");
	if (ri.close_monotonic_ns)
		printf("  closed: after %.6f s\n", (double)(ri.close_monotonic_ns - ri.monotonic_ns) / 1e9);
	printf("  geometry: ring %" PRIu64 " bytes in chunks of %u, %u object slots, %u schemas, mode %s%s\n",
	       ri.ring_size, ri.chunk_size, ri.objtab_capacity, ri.schema_capacity,
	       ri.mode == RELSTACK_MODE_STOP ? "stop-when-full" : "overwrite-oldest",
	       ri.addresses ? ", absolute stacks allowed" : "");
	printf("  counters: %" PRIu64 " records, %" PRIu64 " lost, %" PRIu64 " overwritten, %" PRIu64
	       " skipped (partial or damaged), %" PRIu64 " bytes written\n",
	       ri.records, ri.lost, ri.overwritten, ri.skipped, ri.written);
	info_stack_table(r, o->run, false);
	info_objects(r, o->run, false);
	info_schemas(r, o->run, false);
	return 0;
}

/* ---- records ---- */

struct rec_copy {
	struct relstack_record rec;
	uint64_t *words;
	void *fields;
};

static bool wanted(const struct relstack_record *rec, const struct rs_tool_opts *o,
		   const struct relstack_run_info *ri)
{
	if (o->ntids) {
		bool hit = false;

		for (unsigned i = 0; i < o->ntids && !hit; i++)
			hit = rec->tid == o->tids[i];
		if (!hit)
			return false;
	}
	if (o->nevents) {
		bool hit = false;

		for (unsigned i = 0; i < o->nevents && !hit; i++)
			hit = rec->event_name && strcmp(rec->event_name, o->events[i]) == 0;
		if (!hit)
			return false;
	}
	if (o->since.set) {
		uint64_t t = o->since.relative ? rec->time_ns - ri->monotonic_ns : rec->realtime_ns;

		if (rec->time_ns < ri->monotonic_ns && o->since.relative)
			return false;
		if (t < o->since.ns)
			return false;
	}
	if (o->until.set) {
		uint64_t t = o->until.relative ? rec->time_ns - ri->monotonic_ns : rec->realtime_ns;

		if (!(rec->time_ns < ri->monotonic_ns && o->until.relative) && t > o->until.ns)
			return false;
	}
	return true;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct relstack_record *x = &((const struct rec_copy *)a)->rec;
	const struct relstack_record *y = &((const struct rec_copy *)b)->rec;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->position < y->position ? -1 : x->position > y->position;
}

/* The run's objects, read once. */
struct slot {
	struct relstack_object obj;
	uint64_t load;  /* load address, if the run keeps them */
	int state;      /* 0 ok, else the error of relstack_reader__object() */
	int handle;     /* symbolizer handle, -1 none yet */
};

struct objects {
	unsigned n;
	struct slot *slot;
};

static void objects_load(struct relstack_reader *r, enum relstack_run_which w, struct objects *os)
{
	os->n = relstack_reader__object_count(r, w);
	os->slot = calloc(os->n ? os->n : 1, sizeof(*os->slot));
	if (!os->slot)
		rs_tool_input_error("out of memory");
	for (unsigned s = 0; s < os->n; s++) {
		os->slot[s].state = relstack_reader__object(r, w, s, &os->slot[s].obj, &os->slot[s].load, NULL);
		os->slot[s].handle = -1;
	}
}

static void objects_free(struct objects *os)
{
	free(os->slot);
}

/* A frame, decoded. */
struct frame {
	struct relstack_entry e;
	const struct relstack_object *obj; /* for RELSTACK_ENTRY_OBJECT */
	const char *why;                   /* unresolved absolute address */
	bool return_address;               /* symbolise the call before it, as debuggers do */
};

static void decode_frame(struct relstack_reader *r, enum relstack_run_which w, const struct objects *os,
			 const struct relstack_record *rec, uint64_t word, struct frame *fr)
{
	memset(fr, 0, sizeof(*fr));
	if (rec->absolute) {
		/* An absolute address: find the object that held it, by load address. */
		for (unsigned s = 0; s < os->n; s++) {
			const struct relstack_object *o = &os->slot[s].obj;
			uint64_t load = os->slot[s].load;
			uint64_t off;

			if (os->slot[s].state || !load || word < load)
				continue;
			off = word - load;
			if (off < o->text_vaddr || off - o->text_vaddr >= o->text_size)
				continue;
			if (rec->epoch < o->load_epoch || (o->unload_epoch && rec->epoch >= o->unload_epoch))
				continue;
			fr->e.kind = RELSTACK_ENTRY_OBJECT;
			fr->e.slot = s;
			fr->e.offset = off;
			fr->obj = o;
			return;
		}
		fr->e.kind = RELSTACK_ENTRY_INVALID;
		fr->why = "address in no recorded object";
		return;
	}
	relstack_word_decode(relstack_reader__format(r), word, &fr->e);
	relstack_reader__check_entry(r, w, rec->epoch, &fr->e);
	if (fr->e.kind == RELSTACK_ENTRY_OBJECT && fr->e.slot < os->n && os->slot[fr->e.slot].state == 0)
		fr->obj = &os->slot[fr->e.slot].obj;
	else if (fr->e.kind == RELSTACK_ENTRY_OBJECT) {
		fr->e.kind = RELSTACK_ENTRY_INVALID;
		fr->e.reason = RELSTACK_REASON_BAD_SLOT_RECORD;
	}
}

/*
 * Decode every word of @rec into @out.  Every frame is a return address
 * except the first of a record that says it is an interrupted pc (or,
 * in files without that flag, whose verdict has async-start) and the
 * one after a SIGNAL marker (the pc the signal interrupted).  A kernel
 * object's frames are named at the address itself, as the kernel's own
 * stack traces name them (a call that does not return names the next
 * function there too).
 */
static void decode_frames(struct relstack_reader *r, enum relstack_run_which w, const struct objects *os,
			  const struct relstack_record *rec, struct frame *out)
{
	bool exact = rec->interrupted || (rec->reasons & RELSTACK_UNRELIABLE_ASYNC_START);

	for (size_t i = 0; i < rec->nwords; i++) {
		decode_frame(r, w, os, rec, rec->words[i], &out[i]);
		out[i].return_address = !exact && out[i].e.kind == RELSTACK_ENTRY_OBJECT && out[i].e.offset > 0 &&
					!(out[i].obj->flags & RELSTACK_OBJECT_KERNEL);
		exact = out[i].e.kind == RELSTACK_ENTRY_MARKER && out[i].e.marker == RELSTACK_MARKER_SIGNAL;
	}
}

/*
 * DWARF joins the compilation directory and the file name as the compiler
 * saw them ("/src/build/../lib/x.c"): show the path with "." and "dir/.."
 * folded away, without touching the file system (it is another machine's).
 */
static const char *clean_path(const char *path, char *buf, size_t size)
{
	const char *seg[256];
	size_t len[256], n = 0, out = 0;
	bool abs = path[0] == '/';
	const char *p = path;

	while (*p) {
		const char *e = strchr(p, '/');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l == 0 || (l == 1 && p[0] == '.')) {
			/* nothing */
		} else if (l == 2 && p[0] == '.' && p[1] == '.' && n && !(len[n - 1] == 2 && seg[n - 1][0] == '.')) {
			n--;
		} else if (n < 256) {
			seg[n] = p;
			len[n++] = l;
		} else {
			return path;
		}
		p += l + (e ? 1 : 0);
	}
	if (abs)
		buf[out++] = '/';
	for (size_t i = 0; i < n; i++) {
		if (out + len[i] + 2 > size)
			return path;
		memcpy(buf + out, seg[i], len[i]);
		out += len[i];
		if (i + 1 < n)
			buf[out++] = '/';
	}
	buf[out] = '\0';
	return buf;
}

static const char *frame_problem(const struct frame *fr)
{
	return fr->why ? fr->why : relstack_reason_name(fr->e.reason);
}

struct ctx {
	struct relstack_reader *r;
	const struct rs_tool_opts *o;
	struct objects os;
	struct rs_symbolizer *sym;
	bool symbolize;
	bool any_mismatch;
	/* folded output */
	char **folded;
	size_t nfolded, capfolded;
};

static bool resolve(struct ctx *c, const struct frame *fr, struct rs_sym *out)
{
	int *h = &c->os.slot[fr->e.slot].handle;

	out->reason = RS_SYM_NO_SOURCE;
	if (!c->sym)
		return false;
	if (*h < 0) {
		*h = rs_symbolizer_object(c->sym, fr->obj);
		if (*h < 0)
			return false;
	}
	/*
	 * A return address is the instruction after the call: its line and
	 * inlined frames are those of the call, one byte before.
	 */
	if (rs_symbolize(c->sym, *h, fr->e.offset - fr->return_address, out) != 0)
		return false;
	out->symoff += fr->return_address;
	return true;
}

static void text_frame(struct ctx *c, const struct frame *fr)
{
	struct rs_sym sym;
	char path[4096];

	if (fr->e.kind == RELSTACK_ENTRY_MARKER) {
		if (fr->e.marker == RELSTACK_MARKER_END)
			return;
		printf(" => <%s>\n", fr->e.marker == RELSTACK_MARKER_SIGNAL ? "signal frame" : "unknown object");
		return;
	}
	if (fr->e.kind != RELSTACK_ENTRY_OBJECT) {
		printf(" => <invalid entry: %s>\n", frame_problem(fr));
		return;
	}
	if (c->symbolize && resolve(c, fr, &sym)) {
		const char *obj = basename_of(fr->obj->path);

		for (unsigned i = 0; i < sym.n_inlined; i++) {
			printf(" => %s [%s]", sym.inlined[i].name, obj);
			if (sym.inlined[i].file)
				printf(" %s:%u", clean_path(sym.inlined[i].file, path, sizeof(path)), sym.inlined[i].line);
			printf(" (inlined)\n");
		}
		printf(" => %s+0x%" PRIx64 "/0x%" PRIx64 " [%s]", sym.name, sym.symoff, sym.symsize, obj);
		if (sym.file)
			printf(" %s:%u", clean_path(sym.file, path, sizeof(path)), sym.line);
		if (sym.line_note)
			printf(" (%s)", sym.line_note);
		printf("\n");
		return;
	}
	printf(" => %s+0x%" PRIx64, basename_of(fr->obj->path), fr->e.offset);
	if (c->symbolize)
		printf(" (%s)", rs_sym_reason_str(sym.reason));
	printf("\n");
}

static void json_frame(struct ctx *c, const struct frame *fr, bool first)
{
	struct rs_sym sym;
	char path[4096];

	if (fr->e.kind == RELSTACK_ENTRY_MARKER && fr->e.marker == RELSTACK_MARKER_END)
		return;
	printf("%s{", first ? "" : ",");
	if (fr->e.kind == RELSTACK_ENTRY_MARKER) {
		printf("\"marker\":\"%s\"}", relstack_marker_name(fr->e.marker));
		return;
	}
	if (fr->e.kind != RELSTACK_ENTRY_OBJECT) {
		printf("\"reason\":");
		json_string(stdout, frame_problem(fr), 256);
		printf("}");
		return;
	}
	printf("\"slot\":%u,\"object\":", fr->e.slot);
	json_string(stdout, fr->obj->path, sizeof(fr->obj->path));
	printf(",\"build_id\":\"");
	print_hex(stdout, fr->obj->build_id, fr->obj->build_id_len);
	printf("\",\"offset\":\"0x%" PRIx64 "\",\"return_address\":%s", fr->e.offset,
	       fr->return_address ? "true" : "false");
	if (!c->symbolize) {
		printf("}");
		return;
	}
	if (!resolve(c, fr, &sym)) {
		printf(",\"reason\":");
		json_string(stdout, rs_sym_reason_str(sym.reason), 256);
		printf("}");
		return;
	}
	printf(",\"symbol\":");
	json_string(stdout, sym.name, 4096);
	printf(",\"symoff\":\"0x%" PRIx64 "\",\"symsize\":\"0x%" PRIx64 "\",\"file\":", sym.symoff, sym.symsize);
	if (sym.file)
		json_string(stdout, clean_path(sym.file, path, sizeof(path)), sizeof(path));
	else
		printf("null");
	printf(",\"line\":");
	if (sym.line)
		printf("%u", sym.line);
	else
		printf("null");
	printf(",\"line_note\":");
	if (sym.line_note)
		json_string(stdout, sym.line_note, 512);
	else
		printf("null");
	printf(",\"inlined\":[");
	for (unsigned i = 0; i < sym.n_inlined; i++) {
		printf("%s{\"symbol\":", i ? "," : "");
		json_string(stdout, sym.inlined[i].name, 4096);
		printf(",\"file\":");
		if (sym.inlined[i].file)
			json_string(stdout, clean_path(sym.inlined[i].file, path, sizeof(path)), sizeof(path));
		else
			printf("null");
		printf(",\"line\":%u}", sym.inlined[i].line);
	}
	printf("]}");
}

/* Append one folded component for @fr to @buf (outermost-first order is the caller's). */
static void folded_frame(struct ctx *c, const struct frame *fr, char *buf, size_t size)
{
	struct rs_sym sym;
	size_t len = strlen(buf);

	if (fr->e.kind == RELSTACK_ENTRY_MARKER) {
		if (fr->e.marker != RELSTACK_MARKER_END)
			snprintf(buf + len, size - len, ";[%s]", fr->e.marker == RELSTACK_MARKER_SIGNAL ? "signal" : "unknown");
		return;
	}
	if (fr->e.kind != RELSTACK_ENTRY_OBJECT) {
		snprintf(buf + len, size - len, ";[invalid]");
		return;
	}
	if (c->symbolize && resolve(c, fr, &sym)) {
		len += (size_t)snprintf(buf + len, size - len, ";%s", sym.name);
		/* inlined frames are called by the function: outer ones first */
		for (unsigned i = sym.n_inlined; i-- > 0 && len < size;)
			len += (size_t)snprintf(buf + len, size - len, ";%s", sym.inlined[i].name);
		return;
	}
	snprintf(buf + len, size - len, ";%s+0x%" PRIx64, basename_of(fr->obj->path), fr->e.offset);
}

static void print_record(struct ctx *c, const struct relstack_record *rec, const struct relstack_run_info *ri)
{
	enum relstack_run_which w = c->o->run;
	char evname[64];

	struct frame *frames = calloc(rec->nwords ? rec->nwords : 1, sizeof(*frames));

	if (!frames)
		rs_tool_input_error("out of memory");
	decode_frames(c->r, w, &c->os, rec, frames);
	if (rec->event_name)
		snprintf(evname, sizeof(evname), "%s", rec->event_name);
	else
		snprintf(evname, sizeof(evname), "event#%u", rec->event_id);

	if (c->o->format == RS_FORMAT_TEXT) {
		print_walltime(stdout, rec->realtime_ns);
		printf(" tid %u %s", rec->tid, evname);
		if (rec->has_stack) {
			if (rec->reasons) {
				printf(" unreliable(");
				print_reasons(stdout, rec->reasons, false);
				printf(")");
			} else {
				printf(" reliable");
			}
		}
		print_fields(stdout, rec, false);
		printf("\n");
		for (size_t i = 0; i < rec->nwords; i++)
			text_frame(c, &frames[i]);
	} else if (c->o->format == RS_FORMAT_JSON) {
		bool first = true;

		printf("{\"run\":\"%s\",\"generation\":%" PRIu64 ",\"ts_ns\":%" PRIu64 ",\"realtime_ns\":%" PRIu64
		       ",\"tid\":%u,\"event\":",
		       run_name(w), ri->generation, rec->time_ns, rec->realtime_ns, rec->tid);
		json_string(stdout, evname, sizeof(evname));
		printf(",\"has_stack\":%s,\"absolute\":%s,\"reliable\":%s,\"reasons\":", rec->has_stack ? "true" : "false",
		       rec->absolute ? "true" : "false", rec->has_stack && !rec->reasons ? "true" : "false");
		print_reasons(stdout, rec->reasons, true);
		printf(",\"fields\":");
		print_fields(stdout, rec, true);
		printf(",\"frames\":[");
		for (size_t i = 0; i < rec->nwords; i++) {
			if (frames[i].e.kind == RELSTACK_ENTRY_MARKER && frames[i].e.marker == RELSTACK_MARKER_END)
				continue;
			json_frame(c, &frames[i], first);
			first = false;
		}
		printf("]}\n");
	} else {
		char line[16384];

		if (!rec->has_stack) {
			free(frames);
			return;
		}
		snprintf(line, sizeof(line), "%s", evname);
		for (size_t i = rec->nwords; i-- > 0;)
			folded_frame(c, &frames[i], line, sizeof(line));
		if (c->nfolded == c->capfolded) {
			c->capfolded = c->capfolded ? 2 * c->capfolded : 256;
			c->folded = realloc(c->folded, c->capfolded * sizeof(*c->folded));
			if (!c->folded)
				rs_tool_input_error("out of memory");
		}
		c->folded[c->nfolded] = strdup(line);
		if (!c->folded[c->nfolded])
			rs_tool_input_error("out of memory");
		c->nfolded++;
	}
	free(frames);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct stack_count {
	const char *folded;
	size_t count;
};

static int cmp_count(const void *a, const void *b)
{
	const struct stack_count *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->folded, y->folded);
}

/* --top N: the N most frequent stacks, innermost frame first, with counts and shares. */
static void print_top(const struct stack_count *sc, size_t n, size_t total, unsigned top)
{
	for (size_t i = 0; i < n && i < top; i++) {
		const char *p = strchr(sc[i].folded, ';'), *end;
		int evlen = (int)(p ? (size_t)(p - sc[i].folded) : strlen(sc[i].folded));

		printf("#%zu %.*s %zu of %zu (%.1f%%)\n", i + 1, evlen, sc[i].folded, sc[i].count, total,
		       100.0 * (double)sc[i].count / (double)total);
		for (end = sc[i].folded + strlen(sc[i].folded); p && end > p;) {
			const char *start = end;

			while (start > p && start[-1] != ';')
				start--;
			printf(" => %.*s\n", (int)(end - start), start);
			end = start - 1;
		}
	}
}

static void print_folded(struct ctx *c)
{
	struct stack_count *sc = calloc(c->nfolded ? c->nfolded : 1, sizeof(*sc));
	size_t n = 0;

	if (!sc)
		rs_tool_input_error("out of memory");
	if (c->nfolded)
		qsort(c->folded, c->nfolded, sizeof(*c->folded), cmp_str);
	for (size_t i = 0; i < c->nfolded;) {
		size_t k = i;

		while (k < c->nfolded && strcmp(c->folded[k], c->folded[i]) == 0)
			k++;
		sc[n].folded = c->folded[i];
		sc[n++].count = k - i;
		i = k;
	}
	if (c->o->top) {
		qsort(sc, n, sizeof(*sc), cmp_count);
		print_top(sc, n, c->nfolded, c->o->top);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%s %zu\n", sc[i].folded, sc[i].count);
	}
	for (size_t i = 0; i < c->nfolded; i++)
		free(c->folded[i]);
	free(c->folded);
	free(sc);
}

/*
 * --symbols OBJECT=FILE: a typo must not pass silently.  OBJECT must name
 * an object of the run (its recorded path or base name, as the symbolizer
 * matches it) and FILE must be readable.
 */
static void check_symbols_arg(const struct rs_tool_opts *o, const struct objects *os, const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t len = (size_t)(eq - arg);
	char names[512] = "";
	size_t used = 0;

	if (access(eq + 1, R_OK) != 0)
		rs_tool_input_error("--symbols %s: cannot read %s: %s", arg, eq + 1, strerror(errno));
	for (unsigned s = 0; s < os->n; s++) {
		const char *path = os->slot[s].obj.path, *base = basename_of(path);

		if (os->slot[s].state)
			continue;
		if ((strlen(path) == len && !memcmp(path, arg, len)) || (strlen(base) == len && !memcmp(base, arg, len)))
			return;
		if (!strstr(names, base) && used + strlen(base) + 3 < sizeof(names))
			used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", base);
	}
	rs_tool_input_error("--symbols %s: the %s run of %s has no object '%.*s' (its objects: %s)", arg,
			    run_name(o->run), o->file, (int)len, arg, used ? names : "none");
}

/*
 * A recorded kernel with no --symbols for it: this machine's
 * /boot/System.map-RELEASE, if there is one (its build-id line must match
 * the recorded one, or the frames say build-id mismatch).
 */
static void add_boot_system_map(struct rs_symbolizer *s, const struct rs_tool_opts *o, const struct objects *os)
{
	struct utsname u;
	char path[128 + sizeof(u.release)];

	for (unsigned i = 0; i < o->nsymbols; i++)
		if (!strncmp(o->symbols[i], "vmlinux=", 8))
			return;
	for (unsigned k = 0; k < os->n; k++) {
		const struct relstack_object *obj = &os->slot[k].obj;

		if (os->slot[k].state || !(obj->flags & RELSTACK_OBJECT_KERNEL) || obj->base != RELSTACK_BASE_STEXT)
			continue;
		if (uname(&u) == 0 && snprintf(path, sizeof(path), "/boot/System.map-%s", u.release) > 0 &&
		    access(path, R_OK) == 0)
			rs_symbolizer_add_map(s, obj->path, path);
		return;
	}
}

static struct rs_symbolizer *make_symbolizer(const struct rs_tool_opts *o, const struct objects *os)
{
	struct rs_symbolizer_opts so = {
		.sz = sizeof(so),
		.debug_dirs = o->debug_dirs,
		.n_debug_dirs = o->ndebug_dirs,
		.lines = o->lines,
		.inlines = o->inlines,
	};
	struct rs_symbolizer *s = rs_symbolizer_new(&so);

	if (!s)
		rs_tool_input_error("cannot create the symbolizer: %s", strerror(errno));
	for (unsigned i = 0; i < o->nsymbols; i++) {
		int ret;

		check_symbols_arg(o, os, o->symbols[i]);
		ret = rs_symbolizer_add_map_arg(s, o->symbols[i]);

		if (ret < 0)
			rs_tool_input_error("--symbols %s: %s", o->symbols[i], relstack_strerror(ret));
	}
	add_boot_system_map(s, o, os);
	return s;
}

/*
 * One line per object whose symbols could not be used (once, though an
 * object unloaded and loaded again has two slots); status 2 if a symbol
 * source was of another build or damaged: bad input.
 */
static int report_object_errors(struct ctx *c)
{
	int status = 0;

	for (unsigned s = 0; s < c->os.n; s++) {
		int h = c->os.slot[s].handle, ret;
		const char *err;

		if (h < 0 || !(err = rs_symbolizer_object_error(c->sym, h)))
			continue;
		for (unsigned k = 0; k < s && err; k++) {
			int hk = c->os.slot[k].handle;
			const char *seen = hk >= 0 ? rs_symbolizer_object_error(c->sym, hk) : NULL;

			if (seen && strcmp(seen, err) == 0)
				err = NULL;
		}
		if (!err)
			continue;
		fprintf(stderr, "relstack: %s\n", err);
		ret = rs_symbolizer_load(c->sym, h);
		if (ret == -RELSTACK_EBUILDID || ret == -RELSTACK_ECORRUPT)
			status = 2;
	}
	return status;
}

int rs_tool_records(struct relstack_reader *r, const struct rs_tool_opts *o, bool symbolize)
{
	struct relstack_run_info ri;
	struct relstack_cursor *cur;
	struct relstack_record rec;
	struct rec_copy *all = NULL;
	size_t n = 0, cap = 0;
	struct ctx c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.r = r;
	c.o = o;
	c.symbolize = symbolize;
	run_info(r, o, &ri);
	for (unsigned i = 0; i < o->nevents; i++) {
		bool known = false;

		for (unsigned k = 0; k < relstack_reader__schema_count(r, o->run) && !known; k++) {
			const struct relstack_schema *sc = relstack_reader__schema(r, o->run, k);

			known = sc && strncmp(sc->name, o->events[i], sizeof(sc->name)) == 0;
		}
		if (!known)
			rs_tool_input_error("%s: the %s run defines no event '%s'", o->file, run_name(o->run),
					    o->events[i]);
	}
	cur = relstack_reader__records(r, o->run);
	if (!cur)
		rs_tool_input_error("%s: cannot read the %s run: %s", o->file, run_name(o->run), strerror(errno));
	while (relstack_cursor__next(cur, &rec) > 0) {
		if (!wanted(&rec, o, &ri))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			all = realloc(all, cap * sizeof(*all));
			if (!all)
				rs_tool_input_error("out of memory");
		}
		all[n].rec = rec;
		all[n].words = malloc((rec.nwords ? rec.nwords : 1) * sizeof(uint64_t));
		all[n].fields = malloc(rec.fields_size ? rec.fields_size : 1);
		if (!all[n].words || !all[n].fields)
			rs_tool_input_error("out of memory");
		memcpy(all[n].words, rec.words, rec.nwords * sizeof(uint64_t));
		memcpy(all[n].fields, rec.fields, rec.fields_size);
		all[n].rec.words = all[n].words;
		all[n].rec.fields = all[n].fields;
		n++;
	}
	relstack_cursor__free(cur);
	if (n)
		qsort(all, n, sizeof(*all), cmp_rec);

	objects_load(r, o->run, &c.os);
	if (symbolize)
		c.sym = make_symbolizer(o, &c.os);
	for (size_t i = 0; i < n; i++)
		print_record(&c, &all[i].rec, &ri);
	if (o->format == RS_FORMAT_FOLDED)
		print_folded(&c);
	ret = 0;
	if (c.sym) {
		fflush(stdout);
		ret = report_object_errors(&c);
		rs_symbolizer_free(c.sym);
	}
	for (size_t i = 0; i < n; i++) {
		free(all[i].words);
		free(all[i].fields);
	}
	free(all);
	objects_free(&c.os);
	return ret;
}
