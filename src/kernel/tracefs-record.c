// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The tracefs recorder: an instance of our own, events with a stacktrace
 * trigger, per-CPU raw pages into a relstack buffer file.
 *
 * Only our instance (RS_KINSTANCE_PREFIX + pid) is ever written: the
 * top-level instance, and every other, stay as they were.  The instance
 * is removed on every way out of rs_krecord(); a run killed outright
 * leaves it behind, named by its pid, and rs_kinstances_stale() finds
 * the instances whose process is gone.
 *
 * Each event gets a filter (the user's, or none) and the trigger
 * "stacktrace if <filter>": a trigger with a condition runs after the
 * event is written, so its stack follows the event in the ring (see
 * kconv.c), and the event filter keeps only the events the trigger
 * fires for, so that every event recorded has its stack.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracefs/tracefs.h>
#include <traceevent/event-parse.h>

#include "kernel/kernel.h"
#include "relstack-local.h"
#include "relstack/recorder.h"
#include "relstack/relstack.h"
#include "ring/recorder-local.h"

#define KRING_DEFAULT (16ull << 20)
/* Per CPU, for --check-text: the whole recording stays in the kernel's buffer. */
#define CHECK_BUFFER_KB (32u << 10)

#define fail(o, err, ...) rs_kfail((o)->errbuf, (o)->errbuf_sz, (err), __VA_ARGS__)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct krun {
	struct tracefs_instance *inst;
	struct tep_handle *tep;
	struct tracefs_cpu **cpus;
	int ncpus;
	void *buf;
	int subbuf;
	struct rs_ksyms syms;
	struct rs_ktab *kt;
	struct relstack_recorder *rec;
	struct rs_kconv *conv;
	pid_t child;
};

static void krun_end(struct krun *s)
{
	for (int i = 0; s->cpus && i < s->ncpus; i++)
		if (s->cpus[i])
			tracefs_cpu_close(s->cpus[i]);
	free(s->cpus);
	free(s->buf);
	if (s->inst) {
		tracefs_trace_off(s->inst);
		tracefs_event_disable(s->inst, NULL, NULL);
		tracefs_instance_destroy(s->inst);
		tracefs_instance_free(s->inst);
	}
	rs_kconv_free(s->conv);
	if (s->rec)
		relstack_recorder__close(s->rec);
	rs_ktab_free(s->kt);
	rs_ksyms_free(&s->syms);
	if (s->tep)
		tep_free(s->tep);
	if (s->child > 0) {
		kill(s->child, SIGTERM);
		waitpid(s->child, NULL, 0);
	}
}

/* A system's or an event's name that stays inside events/ when it joins a path. */
static bool plain_name(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* An event's format into @tep, unless it is there already or the kernel has no such event. */
static void load_event(struct tep_handle *tep, const char *system, const char *event)
{
	char *fmt;
	int len = 0;

	if (!plain_name(system) || !plain_name(event) || tep_find_event_by_name(tep, system, event))
		return;
	fmt = tracefs_event_file_read(NULL, system, event, "format", &len);
	if (fmt && len > 0)
		tep_parse_event(tep, fmt, (unsigned long)len, system);
	free(fmt);
}

static void load_system(struct tep_handle *tep, const char *dir, const char *system)
{
	char **events = tracefs_system_events(dir, system);

	for (size_t i = 0; events && events[i]; i++)
		load_event(tep, system, events[i]);
	tracefs_list_free(events);
}

/*
 * The event formats the pages are read with, and only those: the header
 * page, the systems the converter searches (ftrace for kernel_stack and
 * kernel_stack_rel, module for the module events) and each recorded
 * event's own format.  Not tracefs_local_events_system(): it also reads
 * /proc/kallsyms, saved_cmdlines and printk_formats into the handle,
 * which only printing an event uses, and kallsyms is the bulk of its
 * work.  An event the kernel lacks is simply not in the handle.
 */
static struct tep_handle *load_formats(const struct rs_krecord_opts *o, const char *dir)
{
	struct tep_handle *tep;
	int len = 0;
	char *hp = tracefs_instance_file_read(NULL, "events/header_page", &len);

	tep = hp && len > 0 ? tep_alloc() : NULL;
	if (tep)
		tep_parse_header_page(tep, hp, (unsigned long)len, (int)sizeof(long));
	free(hp);
	if (!tep)
		return NULL;
	load_system(tep, dir, "ftrace");
	load_system(tep, dir, "module");
	for (unsigned i = 0; i < o->nevents; i++)
		load_event(tep, o->events[i].system, o->events[i].event);
	/* the word size of the kernel's pages, as tracefs_local_events() sets it */
	tep_set_long_size(tep, tep_get_header_page_size(tep));
	return tep;
}

static int read_pages(struct krun *s, bool flush)
{
	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		int n;

		if (!s->cpus[cpu])
			continue;
		while ((n = flush ? tracefs_cpu_flush(s->cpus[cpu], s->buf) : tracefs_cpu_read(s->cpus[cpu], s->buf, true)) > 0)
			rs_kconv_page(s->conv, s->buf, (size_t)n, (unsigned)cpu);
	}
	return rs_kconv_flush(s->conv);
}

static int setup_event(const struct rs_krecord_opts *o, struct krun *s, const struct rs_kevent_spec *e)
{
	char trig[4200];
	char *err;

	if (e->filter && tracefs_event_file_write(s->inst, e->system, e->event, "filter", e->filter) < 0) {
		err = tracefs_error_last(s->inst);
		fail(o, -EINVAL, "%s:%s: filter '%s' refused by the kernel%s%s", e->system, e->event, e->filter,
		     err ? ": " : "", err ? err : "");
		free(err);
		return -EINVAL;
	}
	/* a condition always: it makes the stack follow its event (see the top) */
	snprintf(trig, sizeof(trig), "stacktrace if %s", e->filter ? e->filter : "common_pid >= 0");
	if (tracefs_event_file_write(s->inst, e->system, e->event, "trigger", trig) < 0) {
		err = tracefs_error_last(s->inst);
		fail(o, -EINVAL, "%s:%s: trigger '%s' refused by the kernel%s%s", e->system, e->event, trig,
		     err ? ": " : "", err ? err : "");
		free(err);
		return -EINVAL;
	}
	return 0;
}

/* The instance's "trace" text (read without consuming), into o->check_text. */
static int write_check_text(const struct rs_krecord_opts *o, struct krun *s)
{
	int size = 0;
	char *text = tracefs_instance_file_read(s->inst, "trace", &size);
	FILE *f;

	if (!text)
		return fail(o, -EIO, "%s: cannot read the instance's trace text", tracefs_instance_get_name(s->inst));
	f = fopen(o->check_text, "we");
	if (!f || fwrite(text, 1, (size_t)size, f) != (size_t)size || fclose(f) != 0) {
		free(text);
		return fail(o, -EIO, "%s: cannot write: %s", o->check_text, strerror(errno));
	}
	free(text);
	return 0;
}

static pid_t start_child(char *const *argv, int *go_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		close(p[1]);
		/* run only once the events are on */
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[0]);
	*go_fd = p[1];
	return pid;
}

int rs_krecord(const struct rs_krecord_opts *o, struct rs_krecord_stats *st)
{
	struct krun s;
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	uint8_t bid[RELSTACK_BUILD_ID_MAX];
	int bid_len = 0, ret, go_fd = -1;
	int *ids = NULL;
	const char *dir;
	char name[64];
	double t0;

	memset(&s, 0, sizeof(s));
	memset(st, 0, sizeof(*st));
	if (!o->nevents)
		return fail(o, -EINVAL, "no event to record (-e SYSTEM:EVENT)");
	/* mounts tracefs when it is not (tracefs_tracing_dir_is_mounted() would leak its path) */
	if (!(dir = tracefs_tracing_dir()))
		return fail(o, -ENODEV, "tracefs: not mounted, and mounting it failed: %s", strerror(errno));
	ret = rs_ksyms_read("/proc/kallsyms", &s.syms);
	if (ret < 0)
		return fail(o, ret, "/proc/kallsyms: %s", ret == -ENOENT ? "no kernel addresses (run as root)" :
			    strerror(-ret));
	bid_len = rs_kernel_build_id(bid, sizeof(bid));
	if (bid_len < 0)
		bid_len = 0;
	s.kt = rs_ktab_new(&s.syms, bid, (size_t)bid_len, "");
	if (!s.kt) {
		ret = fail(o, -errno, "kernel object table: %s", strerror(errno));
		goto out;
	}
	s.tep = load_formats(o, dir);
	if (!s.tep) {
		ret = fail(o, -ENOENT, "%s/events: cannot read the event formats", dir);
		goto out;
	}
	ids = calloc(o->nevents, sizeof(*ids));
	if (!ids) {
		ret = fail(o, -ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < o->nevents; i++) {
		struct tep_event *ev = tep_find_event_by_name(s.tep, o->events[i].system, o->events[i].event);

		if (!ev) {
			ret = fail(o, -ENOENT, "%s:%s: no such event in %s/events", o->events[i].system,
				   o->events[i].event, dir);
			goto out;
		}
		ids[i] = ev->id;
	}
	ro.size = o->ring_size ? o->ring_size : KRING_DEFAULT;
	s.rec = rs_recorder_open_foreign(o->output, &ro);
	if (!s.rec) {
		ret = fail(o, -errno, "%s: %s", o->output, relstack_strerror(errno));
		goto out;
	}
	{
		size_t isz;
		unsigned cap;
		void *img = rs_recorder_objtab_image(s.rec, &isz, &cap);

		rs_ktab_publish(s.kt, img, cap);
	}
	s.conv = rs_kconv_new(s.tep, s.kt, s.rec, ids, o->nevents, o->stack_depth);
	if (!s.conv) {
		ret = fail(o, -errno, "%s: cannot define the events: %s", o->output, relstack_strerror(errno));
		goto out;
	}
	snprintf(name, sizeof(name), RS_KINSTANCE_PREFIX "%d", (int)getpid());
	snprintf(st->instance, sizeof(st->instance), "%s", name);
	if (tracefs_instance_exists(name)) {
		ret = fail(o, -EEXIST, "tracefs instance %s exists already", name);
		goto out;
	}
	s.inst = tracefs_instance_create(name);
	if (!s.inst) {
		ret = fail(o, -errno, "tracefs instance %s: %s", name, strerror(errno));
		goto out;
	}
	tracefs_trace_off(s.inst);
	if (o->check_text && (tracefs_option_enable(s.inst, TRACEFS_OPTION_SYM_OFFSET) < 0 ||
			      tracefs_instance_set_buffer_size(s.inst, CHECK_BUFFER_KB, -1) < 0)) {
		ret = fail(o, -EIO, "%s: cannot set sym-offset and the buffer size for --check-text", name);
		goto out;
	}
	for (unsigned i = 0; i < o->nevents; i++) {
		ret = setup_event(o, &s, &o->events[i]);
		if (ret < 0)
			goto out;
	}
	{
		struct tep_event *ml = tep_find_event_by_name(s.tep, "module", "module_load");
		struct tep_event *mf = tep_find_event_by_name(s.tep, "module", "module_free");

		if (ml && mf && tracefs_event_enable(s.inst, "module", "module_load") == 0 &&
		    tracefs_event_enable(s.inst, "module", "module_free") == 0)
			rs_kconv_module_events(s.conv, ml->id, mf->id, s.kt);
	}
	for (unsigned i = 0; i < o->nevents; i++) {
		if (tracefs_event_enable(s.inst, o->events[i].system, o->events[i].event) < 0) {
			ret = fail(o, -errno, "%s:%s: cannot enable it", o->events[i].system, o->events[i].event);
			goto out;
		}
	}
	s.ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	s.cpus = calloc((size_t)s.ncpus, sizeof(*s.cpus));
	if (!s.cpus) {
		ret = fail(o, -ENOMEM, "out of memory");
		goto out;
	}
	for (int cpu = 0; cpu < s.ncpus; cpu++) {
		s.cpus[cpu] = tracefs_cpu_open(s.inst, cpu, true);
		if (s.cpus[cpu] && tracefs_cpu_read_size(s.cpus[cpu]) > s.subbuf)
			s.subbuf = tracefs_cpu_read_size(s.cpus[cpu]);
	}
	if (s.subbuf <= 0) {
		ret = fail(o, -EIO, "%s: no per-CPU buffer could be opened", name);
		goto out;
	}
	s.buf = malloc((size_t)s.subbuf);
	if (!s.buf) {
		ret = fail(o, -ENOMEM, "out of memory");
		goto out;
	}
	if (o->argv) {
		s.child = start_child(o->argv, &go_fd);
		if (s.child < 0) {
			ret = fail(o, s.child, "%s: cannot start: %s", o->argv[0], strerror(-s.child));
			s.child = 0;
			goto out;
		}
	}
	if (tracefs_trace_on(s.inst) < 0) {
		ret = fail(o, -EIO, "%s: cannot turn tracing on", name);
		goto out;
	}
	if (o->on_recording)
		o->on_recording(name, o->ctx);
	if (go_fd >= 0) {
		if (write(go_fd, "g", 1) != 1) {
			ret = fail(o, -EPIPE, "%s: cannot start it", o->argv[0]);
			goto out;
		}
		close(go_fd);
		go_fd = -1;
	}
	t0 = now_s();
	for (;;) {
		struct timespec nap = { 0, 20 * 1000 * 1000 };

		if (o->stop && *o->stop)
			break;
		if (o->duration > 0 && now_s() - t0 >= o->duration)
			break;
		if (s.child > 0) {
			int status;

			if (waitpid(s.child, &status, WNOHANG) == s.child) {
				s.child = 0;
				break;
			}
		}
		if (!o->check_text)
			read_pages(&s, false);
		nanosleep(&nap, NULL);
	}
	tracefs_trace_off(s.inst);
	if (o->check_text) {
		ret = write_check_text(o, &s);
		if (ret < 0)
			goto out;
	}
	read_pages(&s, false);
	read_pages(&s, true);
	rs_kconv_finish(s.conv);
	rs_kconv_stats(s.conv, st);
	snprintf(st->instance, sizeof(st->instance), "%s", name);
	if (st->lost)
		rs_recorder_count_lost(s.rec, st->lost);
	ret = 0;
out:
	if (go_fd >= 0)
		close(go_fd);
	krun_end(&s);
	free(ids);
	return ret;
}

struct stale_ctx {
	char (*names)[64];
	unsigned max, n;
	bool remove;
	int err;
};

static int stale_one(const char *name, void *arg)
{
	struct stale_ctx *c = arg;
	size_t plen = strlen(RS_KINSTANCE_PREFIX);
	char *end;
	long pid;

	if (strncmp(name, RS_KINSTANCE_PREFIX, plen))
		return 0;
	pid = strtol(name + plen, &end, 10);
	if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
		return 0;
	if (c->n < c->max)
		snprintf(c->names[c->n], 64, "%s", name);
	c->n++;
	if (c->remove) {
		struct tracefs_instance *inst = tracefs_instance_alloc(NULL, name);

		if (!inst || tracefs_instance_destroy(inst) < 0)
			c->err = -errno;
		tracefs_instance_free(inst);
	}
	return 0;
}

int rs_kinstances_stale(char (*names)[64], unsigned max, bool remove)
{
	struct stale_ctx c = { names, max, 0, remove, 0 };

	if (!tracefs_tracing_dir())
		return -ENODEV;
	if (tracefs_instances_walk(stale_one, &c) < 0 && !c.n)
		return c.err ? c.err : 0;
	return c.err ? c.err : (int)c.n;
}
