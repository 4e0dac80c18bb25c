// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * --call 'FUNCTION [if EXPR]': a stack each time a dynamically bound
 * function is called.
 *
 * Every loaded object's PLT binding (its CPU's JUMP_SLOT relocation, REL
 * or RELA as DT_PLTREL says: arch/<cpu>/call-arch.h) of FUNCTION is
 * pointed at an interposer stub (arch/<cpu>/call-stub.S), which calls
 * rs_call_hit() with the argument registers and then jumps to FUNCTION
 * with all of them as they were.  Objects are patched at start-up and
 * after each dlopen(); a slot that already holds a stub is left alone, so
 * the hot path never rescans.  A slot inside the object's RELRO segment
 * is made writable for the store only.  The agent and ld.so are not
 * patched: their calls are not the program's.
 *
 * rs_call_filter() (call-filter.c) counts a call that does not match;
 * rs_call_hit() counts a matching one and records it as a "call" event
 * whose stack starts at FUNCTION's caller (the agent's two frames are
 * skipped, still checked by the unwinder's verdict).  The counts are
 * recorded as "call_counts" events when the run ends.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "relstack/relstack.h"
#include "agent/agent-local.h"
#include "call-arch.h"
#include "agent/callexpr.h"
#include "agent/options.h"

#define RS_STUB_SIZE 16

struct count_fields {
	char function[RS_CALL_NAME_MAX + 1];
	uint64_t matched;
	uint64_t unmatched;
};

extern char rs_call_stubs[];
void *rs_call_hit(unsigned k, const uint64_t *regs);

struct rs_call_hook rs_call_hooks[RS_CALLS_MAX];
static unsigned nhooks;
static int ev_counts = -1;
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rs_call_counts *counts_list;

void rs_call_thread_start(void)
{
	if (!nhooks || rs_call_tls.listed)
		return;
	pthread_mutex_lock(&counts_lock);
	rs_call_tls.next = counts_list;
	counts_list = &rs_call_tls;
	rs_call_tls.listed = 1;
	pthread_mutex_unlock(&counts_lock);
}

void rs_call_thread_end(void)
{
	if (!rs_call_tls.listed)
		return;
	pthread_mutex_lock(&counts_lock);
	for (struct rs_call_counts **p = &counts_list; *p; p = &(*p)->next) {
		if (*p == &rs_call_tls) {
			*p = rs_call_tls.next;
			break;
		}
	}
	rs_call_tls.listed = 0;
	for (unsigned k = 0; k < nhooks; k++)
		atomic_fetch_add(&rs_call_hooks[k].unmatched, rs_call_tls.unmatched[k]);
	memset(rs_call_tls.unmatched, 0, sizeof(rs_call_tls.unmatched));
	pthread_mutex_unlock(&counts_lock);
}

void rs_call_fork_child(void)
{
	pthread_mutex_init(&counts_lock, NULL);
	counts_list = NULL;
	rs_call_tls.listed = 0;
	memset(rs_call_tls.unmatched, 0, sizeof(rs_call_tls.unmatched));
	rs_call_thread_start();
}

/* The matched call: counted and recorded (rs_call_filter() has sent the others on). */
void *rs_call_hit(unsigned k, const uint64_t *regs)
{
	struct rs_call_hook *h = &rs_call_hooks[k];
	struct relstack_recorder *rec;

	atomic_fetch_add_explicit(&h->matched, 1, memory_order_relaxed);
	rs_call_busy = 1;
	rec = rs_agent_rec_get();
	if (rec) {
		uint64_t words[RELSTACK_WORDS_MAX];
		struct relstack_verdict v;
		int n = relstack_capture(words, RELSTACK_WORDS_MAX, 2, 0, &v);

		if (n >= 0)
			relstack_recorder__write(rec, (unsigned)h->event, words, (size_t)n, &v, &h->fields,
						 sizeof(h->fields), 0);
		rs_agent_rec_put();
	}
	rs_call_busy = 0;
	return h->real;
}

int rs_call_define(struct relstack_recorder *rec)
{
	static const struct relstack_event_field call_f[] = {
		{ "function", 0, RS_CALL_NAME_MAX + 1, RELSTACK_FIELD_STRING },
	};
	static const struct relstack_event_field count_f[] = {
		{ "function", 0, RS_CALL_NAME_MAX + 1, RELSTACK_FIELD_STRING },
		{ "matched", offsetof(struct count_fields, matched), 8, RELSTACK_FIELD_UNSIGNED },
		{ "unmatched", offsetof(struct count_fields, unmatched), 8, RELSTACK_FIELD_UNSIGNED },
	};
	int ev = relstack_recorder__define_event(rec, "call", call_f, 1, sizeof(struct rs_call_fields));

	if (ev < 0)
		return ev;
	for (unsigned i = 0; i < nhooks; i++)
		rs_call_hooks[i].event = ev;
	ev_counts = relstack_recorder__define_event(rec, "call_counts", count_f, 3, sizeof(struct count_fields));
	for (unsigned i = 0; i < nhooks; i++) {
		atomic_store(&rs_call_hooks[i].matched, 0);
		atomic_store(&rs_call_hooks[i].unmatched, 0);
	}
	return ev_counts < 0 ? ev_counts : 0;
}

int rs_call_setup(struct relstack_recorder *rec, const char *specs)
{
	const char *p = specs;

	while (*p && nhooks < RS_CALLS_MAX) {
		size_t len = strcspn(p, "\n");
		char spec[512], err[128];
		struct rs_call_hook *h = &rs_call_hooks[nhooks];
		int col;

		if (len && len < sizeof(spec)) {
			memcpy(spec, p, len);
			spec[len] = 0;
			col = rs_call_parse(spec, &h->f, err, sizeof(err));
			if (col < 0)
				fprintf(stderr, "relstack-agent: --call '%s': column %d: %s\n", spec, -col, err);
			else {
				memcpy(h->fields.function, h->f.function, sizeof(h->fields.function));
				nhooks++;
			}
		}
		p += len;
		if (*p)
			p++;
	}
	return nhooks ? rs_call_define(rec) : -EINVAL;
}

void rs_call_counts(struct relstack_recorder *rec)
{
	if (ev_counts < 0)
		return;
	for (unsigned i = 0; i < nhooks; i++) {
		struct count_fields c;

		memset(&c, 0, sizeof(c));
		memcpy(c.function, rs_call_hooks[i].fields.function, sizeof(c.function));
		c.matched = atomic_load(&rs_call_hooks[i].matched);
		c.unmatched = atomic_load(&rs_call_hooks[i].unmatched);
		pthread_mutex_lock(&counts_lock);
		for (struct rs_call_counts *t = counts_list; t; t = t->next)
			c.unmatched += __atomic_load_n(&t->unmatched[i], __ATOMIC_RELAXED);
		pthread_mutex_unlock(&counts_lock);
		relstack_recorder__record(rec, (unsigned)ev_counts, &c, sizeof(c), RELSTACK_RECORD_NO_STACK);
	}
}

static uintptr_t dyn_ptr(uintptr_t base, uintptr_t p)
{
	/* the loader relocates most objects' dynamic sections in place, not all (the vDSO) */
	return p < base ? p + base : p;
}

static void patch_slot(void **slot, void *stub, uintptr_t relro_lo, uintptr_t relro_hi)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)(page - 1);
	int ro = (uintptr_t)slot >= relro_lo && (uintptr_t)slot < relro_hi;

	if (ro && mprotect((void *)pg, (size_t)page, PROT_READ | PROT_WRITE) < 0)
		return;
	__atomic_store_n(slot, stub, __ATOMIC_RELEASE);
	if (ro)
		mprotect((void *)pg, (size_t)page, PROT_READ);
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data)
{
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const unsigned char *jmprel = NULL;
	size_t pltrelsz = 0, relsz = sizeof(ElfW(Rela));
	uintptr_t base = info->dlpi_addr, relro_lo = 0, relro_hi = 0, self = (uintptr_t)data;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int own = 0;

	if (info->dlpi_name && strstr(info->dlpi_name, "/ld-linux"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = base + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		} else if (ph->p_type == PT_LOAD) {
			uintptr_t a = base + ph->p_vaddr;

			own |= self >= a && self < a + ph->p_memsz;
			lo = a < lo ? a : lo;
			hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		}
	}
	if (!dyn || own)
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			strtab = (const char *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_JMPREL:
			jmprel = (const unsigned char *)dyn_ptr(base, dyn->d_un.d_ptr);
			break;
		case DT_PLTREL: /* REL (i386) or RELA: both start with r_offset and r_info */
			relsz = dyn->d_un.d_val == DT_REL ? sizeof(ElfW(Rel)) : sizeof(ElfW(Rela));
			break;
		case DT_PLTRELSZ:
			pltrelsz = dyn->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab || !jmprel)
		return 0;
	for (size_t i = 0; i < pltrelsz / relsz; i++) {
		const ElfW(Rel) *r = (const ElfW(Rel) *)(const void *)(jmprel + i * relsz);
		const char *name;

		if (RS_ARCH_R_TYPE(r->r_info) != RS_ARCH_JUMP_SLOT)
			continue;
		name = strtab + symtab[RS_ARCH_R_SYM(r->r_info)].st_name;
		for (unsigned k = 0; k < nhooks; k++) {
			void **slot = (void **)(base + r->r_offset);
			void *stub = rs_call_stubs + k * RS_STUB_SIZE;

			if (strcmp(name, rs_call_hooks[k].f.function) || *slot == stub)
				continue;
			/*
			 * A slot bound already (BIND_NOW) holds the function itself; one that
			 * points into its own object has not been bound yet (lazy binding).
			 */
			if (!rs_call_hooks[k].real && ((uintptr_t)*slot < lo || (uintptr_t)*slot >= hi))
				rs_call_hooks[k].real = *slot;
			/*
			 * Otherwise the definition after the agent.  Not RTLD_DEFAULT: an
			 * executable that takes a function's address defines it as its own
			 * PLT entry, which jumps through the slot to the stub.
			 */
			if (!rs_call_hooks[k].real)
				rs_call_hooks[k].real = dlsym(RTLD_NEXT, rs_call_hooks[k].f.function);
			if (!rs_call_hooks[k].real)
				continue;
			patch_slot(slot, stub, relro_lo, relro_hi);
		}
	}
	return 0;
}

void rs_call_patch_all(void)
{
	pthread_mutex_lock(&patch_lock);
	dl_iterate_phdr(patch_object, (void *)(uintptr_t)rs_call_patch_all);
	pthread_mutex_unlock(&patch_lock);
}
