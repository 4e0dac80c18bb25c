// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's symbols: kallsyms text in, System.map text out, and the
 * build-id from the kernel's ELF notes.
 *
 * kallsyms is read once, by the recorder (to know the kernel's text and
 * the functions a verdict looks for) and by `relstack kernel symbols`
 * (to write a System.map that decodes traces without kallsyms).  The text
 * is treated as hostile (a trace-cmd file carries a copy): every line is
 * bounded by the buffer, a bad line is counted and skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "kernel/kernel.h"
#include "relstack-local.h"

/* One line [p, e): "ADDR TYPE NAME [MODULE]".  False for anything else. */
static bool parse_line(const char *p, const char *e, uint64_t *addr, char *type, const char **name,
		       size_t *name_len, bool *module)
{
	uint64_t a = 0;
	int digits = 0, d;

	while (p < e && (d = rs_hexval(*p)) >= 0) {
		if (++digits > 16)
			return false;
		a = a << 4 | (uint64_t)d;
		p++;
	}
	if (!digits || p == e || *p != ' ')
		return false;
	p++;
	if (p == e || *p == ' ' || *p == '\t')
		return false;
	*type = *p++;
	if (p == e || *p != ' ')
		return false;
	p++;
	*name = p;
	while (p < e && *p != ' ' && *p != '\t')
		p++;
	*name_len = (size_t)(p - *name);
	if (!*name_len)
		return false;
	*module = p < e; /* "\t[module]" follows */
	*addr = a;
	return true;
}

static void note_bound(struct rs_ksyms *s, const char *name, size_t len, uint64_t addr)
{
	static const struct {
		const char *name;
		size_t off;
	} bounds[] = {
		{ "_text", offsetof(struct rs_ksyms, text) },
		{ "_stext", offsetof(struct rs_ksyms, stext) },
		{ "_etext", offsetof(struct rs_ksyms, etext) },
		{ "_sinittext", offsetof(struct rs_ksyms, sinittext) },
		{ "_einittext", offsetof(struct rs_ksyms, einittext) },
	};

	for (unsigned i = 0; i < RS_ARRAY_SIZE(bounds); i++)
		if (strlen(bounds[i].name) == len && !memcmp(bounds[i].name, name, len))
			*(uint64_t *)((char *)s + bounds[i].off) = addr;
}

int rs_ksyms_parse(const char *buf, size_t len, struct rs_ksyms *out)
{
	const char *p = buf, *end = buf + len;
	size_t cap = 0;
	bool any_address = false;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end, *name;
		size_t name_len;
		uint64_t addr;
		bool module;
		char type;

		if (e == p) {
			p = e + 1;
			continue;
		}
		if (!parse_line(p, e, &addr, &type, &name, &name_len, &module)) {
			out->bad_lines++;
		} else if (!module) {
			if (out->n == cap) {
				struct rs_ksym *nv;

				cap = cap ? 2 * cap : 4096;
				nv = realloc(out->v, cap * sizeof(*nv));
				if (!nv)
					goto enomem;
				out->v = nv;
			}
			out->v[out->n].addr = addr;
			out->v[out->n].type = type;
			out->v[out->n].name = strndup(name, name_len);
			if (!out->v[out->n].name)
				goto enomem;
			out->n++;
			any_address |= addr != 0;
			note_bound(out, name, name_len, addr);
		}
		p = nl ? nl + 1 : end;
	}
	if (!out->stext || !any_address) {
		bool hidden = out->n && !any_address;

		rs_ksyms_free(out);
		out->hidden = hidden;
		return -ENOENT;
	}
	if (!out->etext || out->etext < out->stext)
		out->etext = out->stext;
	if (out->einittext < out->sinittext || out->sinittext < out->stext)
		out->sinittext = out->einittext = 0;
	return (int)(out->n > INT32_MAX ? INT32_MAX : out->n);
enomem:
	rs_ksyms_free(out);
	return -ENOMEM;
}

/* Read a whole (possibly unseekable, /proc) file into a NUL-terminated buffer. */
static int slurp(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "re");
	size_t cap = 1 << 20, n = 0;
	char *b;

	if (!f)
		return -errno;
	b = malloc(cap + 1);
	while (b) {
		size_t got = fread(b + n, 1, cap - n, f);

		n += got;
		if (n < cap) {
			if (ferror(f)) {
				free(b);
				fclose(f);
				return -EIO;
			}
			break;
		}
		cap *= 2;
		{
			char *nb = realloc(b, cap + 1);

			if (!nb)
				free(b);
			b = nb;
		}
	}
	fclose(f);
	if (!b)
		return -ENOMEM;
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int rs_ksyms_read(const char *path, struct rs_ksyms *out)
{
	char *buf = NULL;
	size_t len = 0;
	int ret = slurp(path, &buf, &len);

	if (ret < 0)
		return ret;
	ret = rs_ksyms_parse(buf, len, out);
	free(buf);
	return ret;
}

void rs_ksyms_free(struct rs_ksyms *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].name);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

int rs_ksyms_write_map(const struct rs_ksyms *s, uint64_t kaslr_offset, const uint8_t *bid, size_t bid_len, FILE *f)
{
	uint64_t last = 0;

	if (bid_len) {
		fputs("# build-id: ", f);
		for (size_t i = 0; i < bid_len; i++)
			fprintf(f, "%02x", bid[i]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < s->n; i++) {
		/*
		 * kallsyms lists aliases in the order the kernel searches them: it
		 * prints the first.  _stext (the base of kernel offsets) and _etext
		 * (the end of the last function) are kept for the decoder.
		 */
		if (i && s->v[i].addr == last && strcmp(s->v[i].name, "_stext") && strcmp(s->v[i].name, "_etext"))
			continue;
		last = s->v[i].addr;
		fprintf(f, "%016" PRIx64 " %c %s\n", s->v[i].addr - kaslr_offset, s->v[i].type, s->v[i].name);
	}
	return ferror(f) ? -EIO : 0;
}

/*
 * x86-64 links the kernel at __START_KERNEL_map + CONFIG_PHYSICAL_START
 * (the default when the configuration is not readable): _text there is
 * the link-time address, and the running _text minus it is the KASLR
 * offset.  Decoding needs only offsets from _stext, which the offset
 * does not change; it makes the System.map's addresses those of the
 * vmlinux file.
 */
uint64_t rs_kaslr_offset(const struct rs_ksyms *s, const char *config_gz)
{
	uint64_t start_map = 0xffffffff80000000ull, phys = 0x1000000ull;
	gzFile z = config_gz ? gzopen(config_gz, "rb") : NULL;
	char line[256];

	while (z && gzgets(z, line, sizeof(line))) {
		if (!strncmp(line, "CONFIG_PHYSICAL_START=", 22)) {
			phys = strtoull(line + 22, NULL, 0);
			break;
		}
	}
	if (z)
		gzclose(z);
	if (!s->text || s->text < start_map + phys)
		return 0;
	return s->text - (start_map + phys);
}

int rs_knotes_build_id(const void *buf, size_t len, uint8_t *out, size_t max)
{
	const unsigned char *p = buf;
	size_t off = 0;

	while (len - off >= 12 && off <= len) {
		uint32_t namesz, descsz, type;
		size_t name_pad, desc_pad;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		off += 12;
		name_pad = ((size_t)namesz + 3) & ~(size_t)3;
		desc_pad = ((size_t)descsz + 3) & ~(size_t)3;
		if (name_pad > len - off || desc_pad > len - off - name_pad)
			return -ENOENT;
		if (type == 3 && namesz == 4 && !memcmp(p + off, "GNU", 4) && descsz > 0) {
			size_t n = descsz < max ? descsz : max;

			memcpy(out, p + off + name_pad, n);
			return (int)n;
		}
		off += name_pad + desc_pad;
	}
	return -ENOENT;
}

int rs_kernel_build_id(uint8_t *out, size_t max)
{
	char notes[512];
	FILE *f = fopen("/sys/kernel/notes", "re");
	size_t len;

	if (!f)
		return -errno;
	len = fread(notes, 1, sizeof(notes), f);
	fclose(f);
	return rs_knotes_build_id(notes, len, out, max);
}
