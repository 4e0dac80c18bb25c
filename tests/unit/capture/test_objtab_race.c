// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Lookups from signal handlers firing at a high rate, on the thread that
 * dlopens and dlcloses in a loop as well as on another one.  Every word a
 * handler made must be UNKNOWN or name the right object at the right
 * offset for the epoch it reports; none may name a wrong slot.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"

/* Each load takes a new slot (no holder: no reuse), so loads stay below the capacity. */
#define MAX_LOADS 900
#define WANT_SAMPLES 60000
#define LOG_MAX 200000

struct sample {
	uintptr_t plugin;
	uint64_t word[3];
	uint64_t epoch;
};

static struct sample samples[LOG_MAX];
static _Atomic size_t nsamples;
static _Atomic uintptr_t cur_plugin;
static _Atomic int done;
static uintptr_t main_fn_addr, libc_fn_addr;

__attribute__((noinline)) static int main_fn(void)
{
	__asm__ volatile("" ::: "memory");
	return 0;
}

static void on_signal(int sig)
{
	size_t i = atomic_fetch_add_explicit(&nsamples, 1, memory_order_relaxed);
	uintptr_t a[3];
	uint64_t w[3], epoch;

	if (i >= LOG_MAX)
		return;
	a[0] = main_fn_addr;
	a[1] = libc_fn_addr;
	a[2] = atomic_load_explicit(&cur_plugin, memory_order_relaxed);
	relstack_encode(a, w, 3, 0, &epoch);
	samples[i].plugin = a[2];
	memcpy(samples[i].word, w, sizeof(w));
	samples[i].epoch = epoch;
}

static void *loader(void *arg)
{
	static const char *const names[] = { "a", "b", "c", "d" };

	for (int i = 0; i < MAX_LOADS && (i < 64 || atomic_load(&nsamples) < WANT_SAMPLES); i++) {
		char path[4096];
		void *h, *sym;
		uintptr_t (*addr)(void);

		snprintf(path, sizeof(path), "%s/librs_plugin_%s.so", PLUGIN_DIR, names[i % 4]);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return (void *)1;
		}
		relstack_objtab_refresh();
		sym = dlsym(h, "plugin_address");
		memcpy(&addr, &sym, sizeof(addr));
		atomic_store_explicit(&cur_plugin, addr(), memory_order_relaxed);
		for (volatile int spin = 0; spin < 2000000; spin++)
			;
		/* The handlers keep encoding this address after the unload. */
		dlclose(h);
		relstack_objtab_refresh();
	}
	atomic_store(&done, 1);
	return NULL;
}

static void *sender(void *arg)
{
	pthread_t *targets = arg;

	for (unsigned n = 0; !atomic_load(&done); n++) {
		pthread_kill(targets[n & 1], SIGUSR1);
		if ((n & 63) == 0)
			sched_yield();
	}
	return NULL;
}

static void lookups_in_signal_handlers_race_dlopen_and_dlclose_safely(void **state)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	pthread_t lt, st, targets[2];
	struct relstack_format f;
	uint64_t main_word, libc_word, plugin_off = 0;
	size_t n, plugin_hits = 0, plugin_unknown = 0;
	void *ret;

	relstack_format_native(&f);
	main_fn_addr = (uintptr_t)&main_fn;
	libc_fn_addr = (uintptr_t)&write;
	relstack_encode(&main_fn_addr, &main_word, 1, RELSTACK_ENCODE_RESCAN, NULL);
	relstack_encode(&libc_fn_addr, &libc_word, 1, RELSTACK_ENCODE_RESCAN, NULL);
	assert_true(main_word != f.marker_unknown && libc_word != f.marker_unknown);

	{
		/* The plugin's function, as a link-time offset. */
		char path[4096];
		void *h, *sym;
		uintptr_t (*addr)(void);
		struct link_map *lm;
		Dl_info di;

		snprintf(path, sizeof(path), "%s/librs_plugin_a.so", PLUGIN_DIR);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		assert_non_null(h);
		sym = dlsym(h, "plugin_address");
		memcpy(&addr, &sym, sizeof(addr));
		assert_true(dladdr1((void *)addr(), &di, (void **)&lm, RTLD_DL_LINKMAP));
		plugin_off = addr() - lm->l_addr;
		dlclose(h);
		relstack_objtab_refresh();
	}

	sigaction(SIGUSR1, &sa, NULL);
	targets[0] = pthread_self();
	assert_int_equal(pthread_create(&lt, NULL, loader, NULL), 0);
	targets[1] = lt;
	assert_int_equal(pthread_create(&st, NULL, sender, targets), 0);
	while (!atomic_load(&done))
		main_fn();
	pthread_join(lt, &ret);
	assert_null(ret);
	pthread_join(st, NULL);
	signal(SIGUSR1, SIG_IGN);

	n = atomic_load(&nsamples);
	if (n > LOG_MAX)
		n = LOG_MAX;
	assert_true(n > 100);
	for (size_t i = 0; i < n; i++) {
		const struct sample *s = &samples[i];
		struct relstack_entry e;
		struct relstack_object o;

		/* Objects that never change encode identically, whatever happens meanwhile. */
		assert_true(s->word[0] == main_word || s->word[0] == f.marker_unknown);
		assert_true(s->word[1] == libc_word || s->word[1] == f.marker_unknown);
		if (s->word[0] == f.marker_unknown) {
			/* only a lookup that gave up (busy) may lose these, and then all three */
			assert_true(s->word[1] == f.marker_unknown && s->word[2] == f.marker_unknown);
			continue;
		}
		if (s->word[2] == f.marker_unknown) {
			plugin_unknown++;
			continue;
		}
		relstack_word_decode(&f, s->word[2], &e);
		assert_int_equal(e.kind, RELSTACK_ENTRY_OBJECT);
		assert_true(e.offset == plugin_off);
		assert_int_equal(relstack_objtab_get(e.slot, &o), 0);
		assert_non_null(strstr(o.path, "librs_plugin_"));
		/* the slot held that plugin in the epoch the handler saw */
		assert_true(o.load_epoch <= s->epoch);
		assert_true(o.unload_epoch == 0 || s->epoch < o.unload_epoch);
		plugin_hits++;
	}
	print_message("samples %zu, plugin named %zu, plugin unknown %zu\n", n, plugin_hits, plugin_unknown);
	assert_true(plugin_hits > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookups_in_signal_handlers_race_dlopen_and_dlclose_safely),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
