// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * librelstack-agent.so: a flight recorder for a program that was not
 * built for one, loaded with LD_PRELOAD.  Settings come from environment
 * variables (options.h), which a forked or exec'd child inherits.
 *
 * What it owns:
 *   - one recorder per process, DIR/PROGRAM.PID.relstack (a .N before the
 *     suffix when that name is taken: a file is never another process's),
 *     opened by the constructor, closed by the destructor at exit;
 *   - the crash handler (crash.c) on every thread, with a record of death
 *     by the termination signals left at their default action;
 *   - per-thread set-up by wrapping pthread_create(): the unwinder learns
 *     the stack, the thread id is read, the alternate signal stack and the
 *     sampler's timer are made before the thread's own code runs;
 *   - the sampler: an event per thread on the thread's CPU clock, so an
 *     idle thread gets no signal; SIGPROF records the interrupted context;
 *   - --on-signal: the thread the signal reaches records its stack and
 *     sends the signal to every other thread (tgkill), which records its;
 *   - fork: the child forgets the parent's recorder (its mapping is the
 *     parent's run) and opens its own file; exec: the new image loads the
 *     agent again from the inherited environment.
 *
 * Closing while another thread is inside a record would unmap under it:
 * every record holds a writer count (rs_agent_rec_get/put, seq_cst), and
 * the closer clears the recorder pointer (A) before it waits for the
 * count to fall to zero (B); a writer increments (C) before it loads the
 * pointer (D), so either D sees NULL or B sees the writer.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "relstack/relstack.h"
#include "ring/recorder-local.h"
#include "ring/ring.h"
#include "agent/agent-local.h"
#include "agent/options.h"

#define EXPORT __attribute__((visibility("default")))

static struct relstack_recorder *_Atomic agent_rec;
static _Atomic int agent_writers;
static int ev_sample = -1, ev_dump = -1;
static long sample_ns;
static int dump_signo;
static const char *call_specs;
static pthread_key_t thread_key;
static __thread timer_t thread_timer __attribute__((tls_model("initial-exec")));
static __thread int thread_has_timer __attribute__((tls_model("initial-exec")));
static __thread int thread_perf_fd __attribute__((tls_model("initial-exec"))) = -1;
static uintptr_t agent_lo, agent_hi;

#define RS_PERF_FD_MIN 512

/* Signals whose default action ends the process without a core: their death is recorded too. */
static const int term_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE };

static void warn(const char *what, int err)
{
	/* one line, the program goes on unrecorded */
	fprintf(stderr, "relstack-agent: %s: %s; not recording\n", what, relstack_strerror(err));
}

struct relstack_recorder *rs_agent_rec_get(void)
{
	struct relstack_recorder *rec;

	atomic_fetch_add(&agent_writers, 1);   /* C */
	rec = atomic_load(&agent_rec);          /* D */
	if (!rec)
		atomic_fetch_sub(&agent_writers, 1);
	return rec;
}

void rs_agent_rec_put(void)
{
	atomic_fetch_sub(&agent_writers, 1);
}

static void record_context(void *uc, int event, const void *fields, size_t size)
{
	struct relstack_recorder *rec = rs_agent_rec_get();

	if (rec) {
		relstack_recorder__record_context(rec, uc, (unsigned)event, fields, size, 0);
		rs_agent_rec_put();
	}
}

/*
 * The sampler's and --on-signal's signals stay the agent's: a program that
 * sets an action for one (coreutils sort catches SIGPROF among the signals
 * that would end it, to remove its temporary files) sets the action the
 * agent hands on the signals that are not its own.
 */
static bool owned[NSIG];
static struct sigaction owned_prev[NSIG];

static int real_sigaction(int signo, const struct sigaction *act, struct sigaction *old);

/* A signal that was not the agent's, to the program's action; @dfl_acts: SIG_DFL acts too. */
static void pass_on(int signo, siginfo_t *info, void *uc, bool dfl_acts)
{
	const struct sigaction *prev = &owned_prev[signo];

	if (prev->sa_flags & SA_SIGINFO) {
		if (prev->sa_sigaction)
			prev->sa_sigaction(signo, info, uc);
	} else if (prev->sa_handler == SIG_DFL) {
		struct sigaction dfl;

		if (!dfl_acts)
			return;
		/* pending until this handler returns, then the default action */
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		real_sigaction(signo, &dfl, NULL);
		raise(signo);
	} else if (prev->sa_handler != SIG_IGN) {
		prev->sa_handler(signo);
	}
}

static void own_signal(int signo, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (real_sigaction(signo, &sa, &owned_prev[signo]) == 0)
		owned[signo] = true;
}

/* For the interposed sigaction(): the program reads and sets the action passed on. */
static int owned_chain(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (signo <= 0 || signo >= NSIG || !owned[signo])
		return 0;
	if (old)
		*old = owned_prev[signo];
	if (act)
		owned_prev[signo] = *act;
	return 1;
}

/*
 * The sampler.  Each thread gets a software perf event on its own task
 * clock (CPU time, counted at nanosecond precision by hrtimers) that
 * signals the thread with SIGPROF at every period; where perf events are
 * not allowed (perf_event_paranoid), a POSIX timer on the thread's CPU
 * clock, which the kernel only checks at its tick (CONFIG_HZ caps its
 * rate).  Either way an idle thread's clock stands still: no signal.
 */
static void sample_handler(int signo, siginfo_t *info, void *uc)
{
	int saved = errno;

	if (info && (info->si_code == SI_TIMER || (info->si_code == POLL_IN && info->si_fd == thread_perf_fd)))
		record_context(uc, ev_sample, NULL, 0);
	else
		pass_on(signo, info, uc, true);
	errno = saved;
}

static int perf_start(void)
{
	struct perf_event_attr attr;
	struct f_owner_ex owner = { F_OWNER_TID, gettid() };
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.sample_period = (uint64_t)sample_ns;
	attr.wakeup_events = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	/* out of the way of the program's own descriptors, which it may number itself */
	if (fd < RS_PERF_FD_MIN) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, RS_PERF_FD_MIN);

		close(fd);
		if (high < 0)
			return -1;
		fd = high;
	}
	if (fcntl(fd, F_SETOWN_EX, &owner) < 0 || fcntl(fd, F_SETSIG, SIGPROF) < 0 ||
	    fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0) {
		close(fd);
		return -1;
	}
	thread_perf_fd = fd;
	return 0;
}

static void timer_start(void)
{
	struct sigevent sev;
	struct itimerspec its;

	if (!sample_ns || thread_has_timer || thread_perf_fd >= 0)
		return;
	if (perf_start() == 0)
		return;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev._sigev_un._tid = gettid(); /* sigev_notify_thread_id: not in this C library's header */
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &thread_timer) < 0)
		return;
	thread_has_timer = 1;
	its.it_interval.tv_sec = its.it_value.tv_sec = sample_ns / 1000000000;
	its.it_interval.tv_nsec = its.it_value.tv_nsec = sample_ns % 1000000000;
	timer_settime(thread_timer, 0, &its, NULL);
}

/* Whether @fd is still the perf event this thread opened, not one the program reused after closing it. */
static bool perf_fd_ours(int fd)
{
	struct f_owner_ex owner;
	char link[64], path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return false;
	link[n] = 0;
	return !strcmp(link, "anon_inode:[perf_event]") && fcntl(fd, F_GETOWN_EX, &owner) == 0 &&
	       owner.type == F_OWNER_TID && owner.pid == gettid();
}

static void timer_stop(void)
{
	if (thread_perf_fd >= 0) {
		if (perf_fd_ours(thread_perf_fd))
			close(thread_perf_fd);
		thread_perf_fd = -1;
	}
	if (thread_has_timer) {
		timer_delete(thread_timer);
		thread_has_timer = 0;
	}
}

/* --on-signal: this thread's stack, then every other thread's. */
static void dump_handler(int signo, siginfo_t *info, void *uc)
{
	int saved = errno;
	uint32_t f = (uint32_t)signo;
	pid_t pid = getpid(), self = gettid();
	char buf[4096];
	int fd;

	record_context(uc, ev_dump, &f, sizeof(f));
	/* a signal this process sent to one of its threads is a forwarded one */
	if (info && info->si_code == SI_TKILL && info->si_pid == pid) {
		errno = saved;
		return;
	}
	/* the program's own handler too; its default action is what --on-signal replaces */
	pass_on(signo, info, uc, false);
	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		long n;

		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
			for (long off = 0; off < n;) {
				struct dirent64 *d = (struct dirent64 *)(buf + off);
				long tid = strtol(d->d_name, NULL, 10);

				if (tid > 0 && tid != self)
					syscall(SYS_tgkill, pid, tid, signo);
				off += d->d_reclen;
			}
		}
		close(fd);
	}
	errno = saved;
}

/* A termination signal at its default action: record the death, then die of it. */
static void term_handler(int signo, siginfo_t *info, void *uc)
{
	struct relstack_crash_fields f;
	struct sigaction dfl;

	memset(&f, 0, sizeof(f));
	f.signo = signo;
	if (info) {
		f.code = info->si_code;
		if (info->si_code <= 0)
			f.pid = (uint32_t)info->si_pid;
	}
	record_context(uc, RELSTACK_EVENT_CRASH, &f, sizeof(f));
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(signo, &dfl, NULL);
	raise(signo);
}

static void set_handler(int signo, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(signo, &sa, NULL);
}

/*
 * Everything a new thread needs before its first record; the thread that
 * opens the recorder has its stacks and thread id from the crash handler's
 * installation.
 */
static void thread_timer_setup(void)
{
	timer_start();
	rs_call_thread_start();
	pthread_setspecific(thread_key, (void *)1);
}

static void thread_setup(void)
{
	relstack_crash_handler__thread_init();
	rs_ring_tid();
	thread_timer_setup();
}

static void thread_end(void *unused)
{
	timer_stop();
	rs_call_thread_end();
}

/* Claim DIR/NAME.PID[.N].relstack with O_EXCL: the recorder replaces the empty file. */
static int claim_path(const char *dir, char *path, size_t size)
{
	const char *name = program_invocation_short_name;
	pid_t pid = getpid();

	if (!name || !*name || strchr(name, '/'))
		name = "program";
	for (unsigned n = 0; n < 1000; n++) {
		int fd, len;

		if (n)
			len = snprintf(path, size, "%s/%s.%d.%u.relstack", dir, name, (int)pid, n);
		else
			len = snprintf(path, size, "%s/%s.%d.relstack", dir, name, (int)pid);
		if (len < 0 || (size_t)len >= size)
			return -ENAMETOOLONG;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

static int start_recording(void)
{
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	const char *dir = getenv(RS_ENV_OUTPUT), *size = getenv(RS_ENV_SIZE);
	struct relstack_event_field dump_field = { "signo", 0, 4, RELSTACK_FIELD_UNSIGNED };
	struct relstack_recorder *rec;
	char path[PATH_MAX];
	int ret;

	if (!dir || !*dir)
		dir = RS_DEFAULT_OUTPUT;
	if (size)
		ro.size = strtoull(size, NULL, 0);
	mkdir(dir, 0700);
	ret = claim_path(dir, path, sizeof(path));
	if (ret < 0) {
		warn(dir, -ret);
		return ret;
	}
	rec = relstack_recorder__open(path, &ro);
	if (!rec) {
		ret = -errno;
		unlink(path);
		warn(path, -ret);
		return ret;
	}
	ev_sample = relstack_recorder__define_event(rec, "sample", NULL, 0, 0);
	ev_dump = relstack_recorder__define_event(rec, "dump", &dump_field, 1, sizeof(uint32_t));
	if (call_specs)
		rs_call_define(rec);
	relstack_recorder__install_crash_handler(rec);
	atomic_store(&agent_rec, rec);
	thread_timer_setup();
	return 0;
}

static void stop_recording(void)
{
	struct relstack_recorder *rec = atomic_load(&agent_rec);

	if (!rec)
		return;
	timer_stop();
	rs_call_counts(rec);
	atomic_store(&agent_rec, NULL);                    /* A */
	for (int i = 0; atomic_load(&agent_writers) && i < 100000; i++) /* B */
		sched_yield();
	relstack_recorder__close(rec);
}

static void atfork_child(void)
{
	struct relstack_recorder *old = atomic_load(&agent_rec);

	/* the parent's run: neither closed nor written by the child */
	atomic_store(&agent_rec, NULL);
	atomic_store(&agent_writers, 0);
	thread_has_timer = 0;
	/* the parent thread's event: the child's thread gets its own */
	if (thread_perf_fd >= 0)
		close(thread_perf_fd);
	thread_perf_fd = -1;
	if (old)
		rs_crash_handler_forget(old);
	rs_call_fork_child();
	start_recording();
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t self = (uintptr_t)data;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && self >= lo && self < lo + ph->p_memsz) {
			agent_lo = lo;
			agent_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

__attribute__((constructor)) static void agent_init(void)
{
	const char *s;

	dl_iterate_phdr(find_self, (void *)(uintptr_t)agent_init);
	/*
	 * Records carry CLOCK_MONOTONIC, not the time stamp counter: measuring
	 * its rate spins at the first open of every process, and a preloaded
	 * agent opens in every process a shell pipeline starts (bench/record.py
	 * prints the start-up cost).
	 */
	rs_clock_no_tsc = true;
	pthread_key_create(&thread_key, thread_end);
	s = getenv(RS_ENV_SAMPLE);
	if (s && *s) {
		long hz = strtol(s, NULL, 10);

		if (hz > 0 && hz <= RS_SAMPLE_MAX)
			sample_ns = 1000000000L / hz;
	}
	s = getenv(RS_ENV_ON_SIGNAL);
	if (s && *s)
		dump_signo = rs_agent_signal_parse(s);
	call_specs = getenv(RS_ENV_CALL);
	if (call_specs && !*call_specs)
		call_specs = NULL;
	/* before the first thread's event exists: SIGPROF's default action ends the process */
	if (sample_ns)
		own_signal(SIGPROF, sample_handler);
	if (start_recording() < 0)
		return;
	if (call_specs && rs_call_setup(atomic_load(&agent_rec), call_specs) == 0) {
		rs_call_thread_start();
		rs_call_patch_all();
	}
	if (dump_signo)
		own_signal(dump_signo, dump_handler);
	for (unsigned i = 0; i < sizeof(term_signals) / sizeof(term_signals[0]); i++) {
		struct sigaction cur;
		int t = term_signals[i];

		if (t != dump_signo && sigaction(t, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == SIG_DFL)
			set_handler(t, term_handler);
	}
	/* after the recorder's own: the ring forgets the parent's thread id first */
	pthread_atfork(NULL, NULL, atfork_child);
}

__attribute__((destructor)) static void agent_fini(void)
{
	stop_recording();
}

/* Thread creation, wrapped: the new thread is set up before its start routine runs. */
struct thread_start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_trampoline(void *p)
{
	struct thread_start ts = *(struct thread_start *)p;

	free(p);
	if (atomic_load(&agent_rec))
		thread_setup();
	return ts.fn(ts.arg);
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct thread_start *ts;
	int ret;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	if (!real)
		return EAGAIN;
	ts = malloc(sizeof(*ts));
	if (!ts)
		return real(t, attr, fn, arg);
	ts->fn = fn;
	ts->arg = arg;
	ret = real(t, attr, thread_trampoline, ts);
	if (ret)
		free(ts);
	return ret;
}

/* Whether a wrapped function was called by the agent itself. */
static int from_agent(const void *ret)
{
	return (uintptr_t)ret >= agent_lo && (uintptr_t)ret < agent_hi;
}

/*
 * Objects loaded later: into the object table, and their bindings of
 * --call functions.  dlopen() is entered by arch/<cpu>/dlopen-entry.S,
 * which asks rs_dlopen_route() where to jump with the caller's stack
 * untouched.  The C library takes the caller from the return address: it
 * searches the caller's DT_RPATH/DT_RUNPATH for a name without a slash and
 * expands $ORIGIN from it.  Where that matters, the call goes straight to
 * the C library, and the object enters the table at the next load that
 * does not (or at a record's rescan); everywhere else, through
 * rs_dlopen_wrapped().
 */
typedef void *dlopen_fn(const char *file, int mode);

static dlopen_fn *real_dlopen;
static _Atomic bool dlopen_missed;

dlopen_fn *rs_dlopen_route(const char *file, const void *caller);
dlopen_fn rs_dlopen_wrapped;

static void dl_refresh(void)
{
	atomic_store(&dlopen_missed, false);
	relstack_objtab__refresh();
	if (call_specs)
		rs_call_patch_all();
}

/* Whether the object holding @caller has its own library search path. */
static bool caller_has_search_path(const void *caller)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return true;
	for (const ElfW(Dyn) *d = lm->l_ld; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_RPATH || d->d_tag == DT_RUNPATH)
			return true;
	return false;
}

dlopen_fn *rs_dlopen_route(const char *file, const void *caller)
{
	if (!real_dlopen)
		*(void **)&real_dlopen = dlsym(RTLD_NEXT, "dlopen");
	/* the object table's own calls (pinning objects) come from inside the agent */
	if (from_agent(caller))
		return real_dlopen;
	if (file && (strstr(file, "$ORIGIN") || strstr(file, "${ORIGIN}") ||
		     (!strchr(file, '/') && caller_has_search_path(caller)))) {
		atomic_store(&dlopen_missed, true);
		return real_dlopen;
	}
	return rs_dlopen_wrapped;
}

void *rs_dlopen_wrapped(const char *file, int mode)
{
	void *h = real_dlopen ? real_dlopen(file, mode) : NULL;

	if (h || atomic_load(&dlopen_missed))
		dl_refresh();
	return h;
}

/*
 * The program's own handlers for the crash signals are chained to, never
 * replaced: while the crash handler holds a signal, the program's action
 * becomes the one it hands the signal to.  The agent's own calls (and
 * crash.c's) go straight to the C library.
 */

static int real_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	static int (*real)(int, const struct sigaction *, struct sigaction *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "sigaction");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(signo, act, old);
}

EXPORT int sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (!from_agent(__builtin_return_address(0)) &&
	    (rs_crash_handler_chain(signo, act, old) || owned_chain(signo, act, old)))
		return 0;
	return real_sigaction(signo, act, old);
}

EXPORT sighandler_t signal(int signo, sighandler_t handler)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (rs_crash_handler_chain(signo, &sa, &old) || owned_chain(signo, &sa, &old))
		return old.sa_handler;
	if (real_sigaction(signo, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}
