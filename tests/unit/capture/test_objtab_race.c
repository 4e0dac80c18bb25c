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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"

/* Each load takes a new slot (no holder: no reuse), so loads stay below the capacity. */
#define MAX_LOADS 500
#define WANT_SAMPLES 20000
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

/* Spin until @n more handlers ran, or 20 ms passed. */
static void wait_for_samples(size_t n)
{
	size_t n0 = atomic_load(&nsamples);
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (atomic_load(&nsamples) - n0 < n &&
	       (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000000L);
}

static timer_t signal_me_often(void);

static void *loader(void *arg)
{
	static const char *const names[] = { "a", "b", "c", "d" };
	timer_t t = signal_me_often();

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
		relstack_objtab__refresh();
		sym = dlsym(h, "plugin_address");
		memcpy(&addr, &sym, sizeof(addr));
		atomic_store_explicit(&cur_plugin, addr(), memory_order_relaxed);
		wait_for_samples(40); /* let the handlers see the plugin loaded */
		/* The handlers keep encoding this address after the unload. */
		dlclose(h);
		relstack_objtab__refresh();
	}
	timer_delete(t);
	atomic_store(&done, 1);
	return NULL;
}

/*
 * A timer that signals the calling thread every 50 microseconds: handlers
 * fire at a high rate on the thread that dlopens as well as on the other.
 */
static timer_t signal_me_often(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1 };
	struct itimerspec its = { .it_interval = { 0, 50000 }, .it_value = { 0, 50000 } };
	timer_t t;

	ev._sigev_un._tid = gettid();
	assert_int_equal(timer_create(CLOCK_MONOTONIC, &ev, &t), 0);
	assert_int_equal(timer_settime(t, 0, &its, NULL), 0);
	return t;
}

static void lookups_in_signal_handlers_race_dlopen_and_dlclose_safely(void **state)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	pthread_t lt;
	timer_t t;
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
		relstack_objtab__refresh();
	}

	sigaction(SIGUSR1, &sa, NULL);
	t = signal_me_often();
	assert_int_equal(pthread_create(&lt, NULL, loader, NULL), 0);
	while (!atomic_load(&done))
		main_fn();
	pthread_join(lt, &ret);
	assert_null(ret);
	timer_delete(t);
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
