// SPDX-License-Identifier: LGPL-2.1-or-later
/* The object table: statedump, dlopen/dlclose, slot reuse, a full table, the image. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/objtab.h"
#include "relstack/relstack.h"

#ifndef PLUGIN_DIR
#error PLUGIN_DIR must name the directory of the test plugins
#endif

__attribute__((noinline)) static int in_main_object(void)
{
	__asm__ volatile("" ::: "memory");
	return 1;
}

static void *open_plugin(const char *name)
{
	char path[4096];
	void *h;

	snprintf(path, sizeof(path), "%s/librs_plugin_%s.so", PLUGIN_DIR, name);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	return h;
}

static uintptr_t plugin_fn(void *h)
{
	void *sym = dlsym(h, "plugin_address");
	uintptr_t (*addr)(void);

	assert_non_null(sym);
	memcpy(&addr, &sym, sizeof(addr)); /* POSIX: a data pointer from dlsym names a function */
	return addr();
}

static int find_slot_by_suffix(const char *suffix, struct relstack_object *out)
{
	struct relstack_objtab_stats st;

	relstack_objtab_stats(&st);
	for (uint32_t s = 0; s < st.capacity; s++) {
		size_t n, m = strlen(suffix);

		if (relstack_objtab_get(s, out) != 0)
			continue;
		n = strlen(out->path);
		if (n >= m && strcmp(out->path + n - m, suffix) == 0)
			return (int)s;
	}
	return -1;
}

/* The build-id as the file on disk has it, read independently of relstack. */
static size_t file_build_id(const char *path, uint8_t *id, size_t max)
{
	FILE *f = fopen(path, "rb");
	ElfW(Ehdr) eh;
	size_t len = 0;

	assert_non_null(f);
	assert_int_equal(fread(&eh, sizeof(eh), 1, f), 1);
	for (unsigned i = 0; i < eh.e_phnum && !len; i++) {
		ElfW(Phdr) ph;
		unsigned char buf[4096];
		size_t off = 0;

		fseek(f, (long)(eh.e_phoff + i * sizeof(ph)), SEEK_SET);
		assert_int_equal(fread(&ph, sizeof(ph), 1, f), 1);
		if (ph.p_type != PT_NOTE || ph.p_filesz > sizeof(buf))
			continue;
		fseek(f, (long)ph.p_offset, SEEK_SET);
		assert_int_equal(fread(buf, ph.p_filesz, 1, f), 1);
		while (off + sizeof(ElfW(Nhdr)) <= ph.p_filesz) {
			ElfW(Nhdr) *n = (ElfW(Nhdr) *)(buf + off);
			size_t name = (n->n_namesz + 3) & ~3u, desc = (n->n_descsz + 3) & ~3u;

			if (n->n_type == NT_GNU_BUILD_ID && n->n_descsz <= max) {
				memcpy(id, buf + off + sizeof(*n) + name, n->n_descsz);
				len = n->n_descsz;
				break;
			}
			off += sizeof(*n) + name + desc;
		}
	}
	fclose(f);
	return len;
}

static void statedump_lists_main_executable_libc_and_vdso(void **state)
{
	struct relstack_object o;
	uint8_t id[64];
	size_t len;
	char exe[4096];
	ssize_t n;
	int libc, vdso = -1;
	struct relstack_objtab_stats st;

	assert_int_equal(relstack_objtab_get(0, &o), 0);
	assert_int_equal(o.state, RELSTACK_OBJECT_LOADED);
	assert_true(o.flags & RELSTACK_OBJECT_MAIN);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	assert_string_equal(o.path, exe);
	len = file_build_id(exe, id, sizeof(id));
	assert_int_equal(len, 20);
	assert_int_equal(o.build_id_len, len);
	assert_memory_equal(o.build_id, id, len);
	assert_true(o.text_size > 0);

	libc = find_slot_by_suffix("libc.so.6", &o);
	assert_true(libc > 0);
	len = file_build_id(o.path, id, sizeof(id));
	assert_int_equal(o.build_id_len, len);
	assert_memory_equal(o.build_id, id, len);

	relstack_objtab_stats(&st);
	for (uint32_t s = 0; s < st.capacity; s++)
		if (relstack_objtab_get(s, &o) == 0 && (o.flags & RELSTACK_OBJECT_VDSO))
			vdso = (int)s;
	if (getauxval(AT_SYSINFO_EHDR)) {
		assert_true(vdso > 0);
		relstack_objtab_get((uint32_t)vdso, &o);
		assert_string_equal(o.path, "[vdso]");
		assert_true(o.build_id_len > 0);
	}
}

/* The offset is the link-time address: what nm prints for the symbol. */
static void address_in_main_object_encodes_as_link_time_offset(void **state)
{
	uintptr_t a = (uintptr_t)&in_main_object;
	uint64_t w;
	Dl_info di;
	struct link_map *lm;
	struct relstack_format f;
	struct relstack_entry e;

	assert_int_equal(relstack_encode(&a, &w, 1, 0, NULL), 1);
	assert_true(dladdr1((void *)a, &di, (void **)&lm, RTLD_DL_LINKMAP));
	assert_true((w >> 63) == 0);
	assert_true(w == a - lm->l_addr);

	relstack_format_native(&f);
	relstack_word_decode(&f, w, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_int_equal(e.slot, RELSTACK_MAIN_SLOT);
	assert_true(relstack_word_address(w) == a);
}

static void address_in_no_object_encodes_as_unknown_and_is_counted(void **state)
{
	int on_stack;
	uintptr_t a[2] = { (uintptr_t)&on_stack, 16 };
	uint64_t w[2];
	struct relstack_objtab_stats before, after;
	struct relstack_format f;

	relstack_format_native(&f);
	relstack_objtab_stats(&before);
	assert_int_equal(relstack_encode(a, w, 2, 0, NULL), 0);
	assert_true(w[0] == f.marker_unknown);
	assert_true(w[1] == f.marker_unknown);
	relstack_objtab_stats(&after);
	assert_true(after.unknown >= before.unknown + 2);
}

static void dlopen_then_dlclose_is_tracked_by_a_rescan_on_miss(void **state)
{
	void *h;
	uintptr_t a;
	uint64_t w, epoch_loaded, epoch_after;
	struct relstack_entry e;
	struct relstack_format f;
	struct relstack_object o;
	Dl_info di;
	struct link_map *lm;
	int slot;

	relstack_format_native(&f);
	/* Without a re-scan a new object is unknown; with one it has a slot. */
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	h = open_plugin("a");
	a = plugin_fn(h);
	relstack_encode(&a, &w, 1, 0, NULL);
	assert_true(w == f.marker_unknown);
	assert_int_equal(relstack_encode(&a, &w, 1, RELSTACK_ENCODE_RESCAN, &epoch_loaded), 1);
	relstack_word_decode(&f, w, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
	assert_true(e.slot > 0);
	assert_true(dladdr1((void *)a, &di, (void **)&lm, RTLD_DL_LINKMAP));
	assert_true(e.offset == a - lm->l_addr);

	slot = find_slot_by_suffix("librs_plugin_a.so", &o);
	assert_int_equal(slot, (int)e.slot);
	assert_int_equal(o.state, RELSTACK_OBJECT_LOADED);
	assert_true(o.load_epoch == epoch_loaded);
	assert_true(e.offset >= o.text_vaddr && e.offset < o.text_vaddr + o.text_size);

	/* dlclose() itself tells the table: no re-scan is needed, and one finds nothing new */
	dlclose(h);
	assert_int_equal(relstack_objtab_get(e.slot, &o), 0);
	assert_int_equal(o.state, RELSTACK_OBJECT_UNLOADED);
	assert_int_equal(relstack_objtab__refresh(), 0);
	assert_int_equal(relstack_objtab_get(e.slot, &o), 0);
	assert_int_equal(o.state, RELSTACK_OBJECT_UNLOADED);
	assert_true(o.unload_epoch > epoch_loaded);
	/* Its path and build-id stay, so retained traces still decode. */
	assert_non_null(strstr(o.path, "librs_plugin_a.so"));
	assert_int_equal(o.build_id_len, 20);

	relstack_encode(&a, &w, 1, RELSTACK_ENCODE_RESCAN, &epoch_after);
	assert_true(w == f.marker_unknown);
	assert_true(relstack_word_address(relstack_word_encode(&f, e.slot, e.offset)) == 0);
}

static int loaded_count(void)
{
	struct relstack_objtab_stats st;

	relstack_objtab_stats(&st);
	return (int)(st.loaded + st.unloaded);
}

static void unloaded_slot_is_reused_only_past_every_holders_horizon(void **state)
{
	void *ha, *hb, *hc;
	struct relstack_object o;
	int sa, sb, sc, hold, cap;
	uint64_t unload_a;

	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	/* Room for exactly one more object. */
	cap = loaded_count() + 1;
	assert_int_equal(rs_objtab_reset((unsigned)cap), 0);
	hold = rs_objtab_hold(0);
	assert_true(hold >= 0);

	ha = open_plugin("a");
	relstack_objtab__refresh();
	sa = find_slot_by_suffix("librs_plugin_a.so", &o);
	assert_true(sa > 0);
	dlclose(ha);
	relstack_objtab__refresh();
	assert_int_equal(relstack_objtab_get((uint32_t)sa, &o), 0);
	assert_int_equal(o.state, RELSTACK_OBJECT_UNLOADED);

	/* A record made before the unload may still be retained: no reuse. */
	hb = open_plugin("b");
	relstack_objtab__refresh();
	assert_int_equal(find_slot_by_suffix("librs_plugin_b.so", &o), -1);
	assert_int_equal(relstack_objtab_get((uint32_t)sa, &o), 0);
	assert_non_null(strstr(o.path, "librs_plugin_a.so"));
	dlclose(hb);
	relstack_objtab__refresh();

	/* The holder's oldest retained record is now past the unload. */
	unload_a = o.unload_epoch;
	rs_objtab_hold_update(hold, unload_a);
	hc = open_plugin("c");
	relstack_objtab__refresh();
	sc = find_slot_by_suffix("librs_plugin_c.so", &o);
	assert_int_equal(sc, sa);
	/* the new occupant's life starts after the old one's ended */
	assert_true(o.load_epoch > unload_a);
	assert_true(o.unload_epoch == 0);

	/* A second holder that still retains old records blocks reuse again. */
	dlclose(hc);
	relstack_objtab__refresh();
	sb = rs_objtab_hold(0);
	hb = open_plugin("b");
	relstack_objtab__refresh();
	assert_int_equal(find_slot_by_suffix("librs_plugin_b.so", &o), -1);
	dlclose(hb);
	rs_objtab_release(sb);
	rs_objtab_release(hold);
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
}

static void full_table_yields_unknown_and_a_counter_never_a_wrong_index(void **state)
{
	void *h;
	uintptr_t a;
	uint64_t w;
	struct relstack_objtab_stats st;
	struct relstack_format f;

	relstack_format_native(&f);
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	assert_int_equal(rs_objtab_reset((unsigned)loaded_count()), 0);
	h = open_plugin("d");
	a = plugin_fn(h);
	relstack_encode(&a, &w, 1, RELSTACK_ENCODE_RESCAN, NULL);
	assert_true(w == f.marker_unknown);
	relstack_objtab_stats(&st);
	assert_true(st.full >= 1);
	dlclose(h);
	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
}

/* The mappings of this process, from /proc/self/maps. */
struct maps {
	unsigned long lo[4096], hi[4096];
	unsigned n;
};

static void read_maps(struct maps *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	assert_non_null(f);
	m->n = 0;
	/*
	 * Objects, stack, heap and vDSO: what an address could reveal.
	 * Anonymous mappings are left out: a sanitizer's shadow memory maps
	 * most of the address space and would match any large number.
	 */
	while (m->n < 4096 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &m->lo[m->n], &m->hi[m->n]) == 2 &&
		    (strchr(line, '/') || strstr(line, "[stack]") || strstr(line, "[heap]") ||
		     strstr(line, "[vdso]")))
			m->n++;
	fclose(f);
}

static int in_mapped_range(const struct maps *m, uint64_t v)
{
	for (unsigned i = 0; i < m->n; i++)
		if (v >= m->lo[i] && v < m->hi[i])
			return 1;
	return 0;
}

static void persisted_image_holds_no_absolute_address(void **state)
{
	size_t size = rs_objtab_image_size(RS_OBJTAB_SLOTS);
	unsigned char *img = calloc(1, size);
	void *h = open_plugin("b");
	static struct maps m;

	relstack_objtab__refresh();
	read_maps(&m);
	assert_true(m.n > 5);
	assert_int_equal(rs_objtab_image_write(img, size, RS_OBJTAB_SLOTS, false), 0);
	for (size_t off = 0; off + 8 <= size; off += 4) {
		uint64_t v;

		memcpy(&v, img + off, 8);
		if (in_mapped_range(&m, v))
			fail_msg("word at offset %zu of the image is an address of this process", off);
	}
	/* Asked for addresses, the image does carry load addresses. */
	assert_int_equal(rs_objtab_image_write(img, size, RS_OBJTAB_SLOTS, true), 0);
	{
		struct relstack_object o;
		uint64_t la = 0;
		const char *why;
		int s = find_slot_by_suffix("librs_plugin_b.so", &o);

		assert_int_equal(rs_objtab_image_check(img, size, &why), 0);
		assert_int_equal(rs_objtab_image_record(img, size, (uint32_t)s, &o, &la, &why), 0);
		assert_true(la != 0 && in_mapped_range(&m, la + o.text_vaddr));
	}
	dlclose(h);
	free(img);
}

static void image_record_round_trips_and_damage_is_named(void **state)
{
	size_t size = rs_objtab_image_size(64);
	unsigned char *img = calloc(1, size);
	struct relstack_object live, rec;
	struct rs_objtab_record *r;
	const char *why;

	assert_int_equal(rs_objtab_image_write(img, size, 64, false), 0);
	assert_int_equal(rs_objtab_image_check(img, size, &why), 0);
	assert_int_equal(relstack_objtab_get(0, &live), 0);
	assert_int_equal(rs_objtab_image_record(img, size, 0, &rec, NULL, &why), 0);
	assert_string_equal(rec.path, live.path);
	assert_memory_equal(rec.build_id, live.build_id, live.build_id_len);
	assert_true(rec.text_vaddr == live.text_vaddr && rec.text_size == live.text_size);
	assert_int_equal(rs_objtab_image_record(img, size, 63, &rec, NULL, &why), -ENOENT);
	assert_int_equal(rs_objtab_image_record(img, size, 64, &rec, NULL, &why), -ERANGE);

	r = (struct rs_objtab_record *)(img + sizeof(struct rs_objtab_image_head));
	r[0].path[3] ^= 1;
	assert_int_equal(rs_objtab_image_record(img, size, 0, &rec, NULL, &why), -RELSTACK_ECORRUPT);
	assert_string_equal(why, "object record: checksum mismatch");
	r[0].path[3] ^= 1;
	r[0].seq |= 1; /* a writer that died half-way */
	assert_int_equal(rs_objtab_image_record(img, size, 0, &rec, NULL, &why), -RELSTACK_ECORRUPT);
	assert_string_equal(why, "object record: writer stopped while updating it");

	img[0] ^= 0xff;
	assert_int_equal(rs_objtab_image_check(img, size, &why), -RELSTACK_ECORRUPT);
	assert_string_equal(why, "object table: bad magic");
	img[0] ^= 0xff;
	assert_int_equal(rs_objtab_image_check(img, size - 1, &why), -RELSTACK_ECORRUPT);
	assert_string_equal(why, "object table: records extend beyond the area");
	free(img);
}

static void entries_are_checked_against_the_image(void **state)
{
	size_t size = rs_objtab_image_size(64);
	unsigned char *img = calloc(1, size);
	struct relstack_object main_obj;
	struct relstack_entry e;
	const char *why;

	assert_int_equal(rs_objtab_reset(RS_OBJTAB_SLOTS), 0);
	assert_int_equal(rs_objtab_image_write(img, size, 64, false), 0);
	assert_int_equal(rs_objtab_image_record(img, size, 0, &main_obj, NULL, &why), 0);
	assert_true(main_obj.load_epoch > 1);

	e = (struct relstack_entry){ .kind = RELSTACK_ENTRY_OBJECT, .slot = 0,
				     .offset = main_obj.text_vaddr + 1 };
	rs_objtab_image_check_entry(img, size, main_obj.load_epoch, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);

	e = (struct relstack_entry){ .kind = RELSTACK_ENTRY_OBJECT, .slot = 0,
				     .offset = main_obj.text_vaddr + main_obj.text_size };
	rs_objtab_image_check_entry(img, size, main_obj.load_epoch, &e);
	assert_int_equal(e.kind, RELSTACK_ENTRY_INVALID);
	assert_int_equal(e.reason, RELSTACK_REASON_BEYOND_OBJECT);

	e = (struct relstack_entry){ .kind = RELSTACK_ENTRY_OBJECT, .slot = 63, .offset = 0 };
	rs_objtab_image_check_entry(img, size, main_obj.load_epoch, &e);
	assert_int_equal(e.reason, RELSTACK_REASON_EMPTY_SLOT);

	e = (struct relstack_entry){ .kind = RELSTACK_ENTRY_OBJECT, .slot = 900, .offset = 0 };
	rs_objtab_image_check_entry(img, size, main_obj.load_epoch, &e);
	assert_int_equal(e.reason, RELSTACK_REASON_EMPTY_SLOT);

	/* A word made before the slot's object was loaded named an earlier object. */
	e = (struct relstack_entry){ .kind = RELSTACK_ENTRY_OBJECT, .slot = 0,
				     .offset = main_obj.text_vaddr + 1 };
	rs_objtab_image_check_entry(img, size, main_obj.load_epoch - 1, &e);
	assert_int_equal(e.reason, RELSTACK_REASON_SLOT_REUSED);

	((struct rs_objtab_record *)(img + sizeof(struct rs_objtab_image_head)))[0].text_size ^= 4;
	e = (struct relstack_entry){ .kind = RELSTACK_ENTRY_OBJECT, .slot = 0,
				     .offset = main_obj.text_vaddr + 1 };
	rs_objtab_image_check_entry(img, size, main_obj.load_epoch, &e);
	assert_int_equal(e.reason, RELSTACK_REASON_BAD_SLOT_RECORD);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(statedump_lists_main_executable_libc_and_vdso),
		cmocka_unit_test(address_in_main_object_encodes_as_link_time_offset),
		cmocka_unit_test(address_in_no_object_encodes_as_unknown_and_is_counted),
		cmocka_unit_test(dlopen_then_dlclose_is_tracked_by_a_rescan_on_miss),
		cmocka_unit_test(unloaded_slot_is_reused_only_past_every_holders_horizon),
		cmocka_unit_test(full_table_yields_unknown_and_a_counter_never_a_wrong_index),
		cmocka_unit_test(persisted_image_holds_no_absolute_address),
		cmocka_unit_test(image_record_round_trips_and_damage_is_named),
		cmocka_unit_test(entries_are_checked_against_the_image),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
