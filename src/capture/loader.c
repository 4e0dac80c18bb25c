// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dlclose(), interposed: the one loader entry point through which an
 * object the table lists can go away.
 *
 * The object table pins every object it lists that could be unloaded (a
 * reference of its own, objtab.c), so the C library's dlclose() only
 * drops the caller's reference and unmaps nothing the table lists.  This
 * dlclose() keeps the public semantics - the object is unloaded, its
 * destructors run, before the call returns - by letting the table drop
 * its pins once the caller's reference is gone:
 *
 *   A  mark the objects the close may let go "changing" (published in the
 *      lookup index before anything is unmapped)
 *   B  the C library's dlclose()
 *   C  drop the pins of the marked objects: this is where they unmap
 *   D  re-scan, pin again what is still loaded, clear the marks
 *
 * A capture that runs between A and D and has a frame in a marked object
 * says "objects-changing" and names no object for it.
 *
 * dlopen() is not interposed: glibc uses its caller's address to choose
 * the RUNPATH and the namespace, and a load cannot make a listed range
 * stale (a new object's addresses are unknown text until a scan).
 *
 * The symbol is exported with the C library's version (relstack.map), so
 * that objects linked against the C library bind to it when librelstack
 * comes first in the global scope: linked into the program, a dependency
 * of it, or preloaded.  When it does not (dlopen'ed, RTLD_LOCAL), the
 * table pins nothing and flags every object that could be unloaded.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>

#include "capture/objtab.h"

typedef int (*dlclose_fn)(void *);

/* Set once, before the first use: a relaxed load of a pointer that only ever takes one value. */
static _Atomic(dlclose_fn) real_dlclose;

int rs_loader_real_dlclose(void *handle)
{
	dlclose_fn fn = atomic_load_explicit(&real_dlclose, memory_order_relaxed);

	if (!fn) {
		void *sym = dlsym(RTLD_NEXT, "dlclose");

		__builtin_memcpy(&fn, &sym, sizeof(fn));
		if (!fn)
			return -1;
		atomic_store_explicit(&real_dlclose, fn, memory_order_relaxed);
	}
	return fn(handle);
}

/* Set by our dlclose() on the thread that probes (rs_loader_interposed()). */
static _Thread_local bool probe_hit;

/*
 * Does a dlclose() called through the global scope reach ours?  Asked by
 * calling it, on the main program's handle (which nothing unloads): the
 * first definition may be another interposer that passes the call on
 * (a sanitizer's runtime does, through RTLD_NEXT), or the C library's,
 * when librelstack was loaded RTLD_LOCAL and comes after it.
 */
bool rs_loader_interposed(void)
{
	void *global = dlsym(RTLD_DEFAULT, "dlclose");
	void *self = dlopen(NULL, RTLD_LAZY);
	dlclose_fn fn;

	if (!global || !self)
		return false;
	__builtin_memcpy(&fn, &global, sizeof(fn));
	probe_hit = false;
	fn(self);
	return probe_hit;
}

__attribute__((visibility("default"))) int dlclose(void *handle);

int dlclose(void *handle)
{
	uint64_t cand[RS_OBJTAB_CAND_WORDS];
	int ret;

	probe_hit = true;
	/* A */
	rs_objtab_close_begin(handle, cand);
	/* B */
	ret = rs_loader_real_dlclose(handle);
	/* C, D */
	rs_objtab_close_end(cand);
	if (ret == 0)
		dlerror(); /* the table's own loader calls leave no message behind a success */
	return ret;
}
