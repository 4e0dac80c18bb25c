// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel recorder's speed (root and tracefs; says so and exits 0
 * without them).
 *
 *   bench_kernel RELSTACK
 *
 * 1. Stacks converted per second of CPU: raw pages of sched_switch and
 *    sys_enter events with their stacks are captured once (an instance of
 *    our own, a workload of system calls), then parsed, paired, made
 *    relative and written into a buffer file, over and over.
 * 2. CPU time of `relstack kernel record` against a page copier, on the
 *    same events and workload at the same time: each in its own instance,
 *    the copier splicing every per-CPU page to a file as `trace-cmd record`
 *    does (it only copies pages).  trace-cmd record itself is not run: it
 *    writes the top-level instance's settings.  Events each lost are
 *    printed too (relstack's lost counter; the copier instance's overruns).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tracefs/tracefs.h>
#include <traceevent/event-parse.h>

#include "kernel/kernel.h"
#include "relstack/recorder.h"
#include "ring/recorder-local.h"

#define MAX_PAGES 4096
#define SECONDS 3

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* System calls as fast as they go, sleeps now and then: many stacks, some scheduling. */
static pid_t start_workload(double seconds)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (unsigned long i = 0;; i++) {
			syscall(SYS_getppid);
			if (i % 4096 == 0) {
				usleep(100);
				clock_gettime(CLOCK_MONOTONIC, &t);
				if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > seconds)
					_exit(0);
			}
		}
	}
	return pid;
}

static struct tracefs_instance *make_instance(const char *name, int stacks)
{
	struct tracefs_instance *inst = tracefs_instance_create(name);

	if (!inst)
		return NULL;
	tracefs_trace_off(inst);
	if (stacks) {
		tracefs_event_file_write(inst, "sched", "sched_switch", "trigger", "stacktrace if common_pid >= 0");
		tracefs_event_file_write(inst, "raw_syscalls", "sys_enter", "filter", "id == 110");
		tracefs_event_file_write(inst, "raw_syscalls", "sys_enter", "trigger", "stacktrace if id == 110");
	}
	tracefs_event_enable(inst, "sched", "sched_switch");
	tracefs_event_enable(inst, "raw_syscalls", "sys_enter");
	return inst;
}

static void *pages[MAX_PAGES];
static size_t page_size[MAX_PAGES];
static unsigned page_cpu[MAX_PAGES];
static unsigned npages;

static int capture(void)
{
	char name[64];
	struct tracefs_instance *inst;
	int ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	pid_t w;

	snprintf(name, sizeof(name), RS_KINSTANCE_PREFIX "%d", (int)getpid());
	inst = make_instance(name, 1);
	if (!inst)
		return -1;
	tracefs_instance_set_buffer_size(inst, 8192, -1);
	tracefs_trace_on(inst);
	w = start_workload(0.3);
	waitpid(w, NULL, 0);
	tracefs_trace_off(inst);
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct tracefs_cpu *t = tracefs_cpu_open(inst, cpu, true);
		int sz = t ? tracefs_cpu_read_size(t) : 0, n;

		while (t && npages < MAX_PAGES) {
			void *buf = malloc((size_t)sz);

			n = tracefs_cpu_read(t, buf, true);
			if (n <= 0) {
				free(buf);
				break;
			}
			pages[npages] = buf;
			page_size[npages] = (size_t)n;
			page_cpu[npages++] = (unsigned)cpu;
		}
		if (t)
			tracefs_cpu_close(t);
	}
	tracefs_instance_destroy(inst);
	tracefs_instance_free(inst);
	return 0;
}

static void convert_bench(void)
{
	const char *systems[] = { "ftrace", "sched", "raw_syscalls", NULL };
	struct tep_handle *tep = tracefs_local_events_system(NULL, systems);
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	struct rs_ksyms syms;
	struct rs_ktab *kt;
	struct relstack_recorder *rec;
	struct rs_kconv *c;
	struct rs_krecord_stats st;
	char path[] = "/tmp/relstack-bench-kernel-XXXXXX";
	int ids[2], fd = mkstemp(path);
	unsigned passes = 0;
	double t0, t;
	size_t isz;
	unsigned cap;

	close(fd);
	unlink(path);
	if (!tep || rs_ksyms_read("/proc/kallsyms", &syms) < 0) {
		printf("kernel_convert: skipped: no event formats or no kallsyms\n");
		return;
	}
	kt = rs_ktab_new(&syms, NULL, 0, "");
	ids[0] = tep_find_event_by_name(tep, "sched", "sched_switch")->id;
	ids[1] = tep_find_event_by_name(tep, "raw_syscalls", "sys_enter")->id;
	ro.size = 64u << 20;
	rec = rs_recorder_open_foreign(path, &ro);
	if (!kt || !rec) {
		printf("kernel_convert: skipped: %s\n", strerror(errno));
		return;
	}
	rs_ktab_publish(kt, rs_recorder_objtab_image(rec, &isz, &cap), 256);
	c = rs_kconv_new(tep, kt, rec, ids, 2, 0);
	t0 = cpu_now();
	do {
		for (unsigned i = 0; i < npages; i++)
			rs_kconv_page(c, pages[i], page_size[i], page_cpu[i]);
		rs_kconv_flush(c);
		passes++;
		t = cpu_now();
	} while (t - t0 < 2.0);
	rs_kconv_finish(c);
	rs_kconv_stats(c, &st);
	printf("kernel_convert: %.0f stacks/s per core (parse + relativise + write; %u pages, %llu stacks, %u passes)\n",
	       (double)st.stacks / (t - t0), npages, (unsigned long long)st.stacks, passes);
	printf("kernel_convert: %.1f%% of stacks reliable\n", st.stacks ? 100.0 * (double)st.reliable / (double)st.stacks : 0);
	rs_kconv_free(c);
	relstack_recorder__close(rec);
	unlink(path);
	rs_ktab_free(kt);
	rs_ksyms_free(&syms);
	tep_free(tep);
}

static double child_cpu(pid_t pid, int *status)
{
	struct rusage ru;

	wait4(pid, status, 0, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

/* The peer: every per-CPU page spliced to a file, nothing parsed. */
static void page_copier(int ready_fd, double seconds, unsigned long long *overrun)
{
	char name[64], path[] = "/tmp/relstack-bench-copy-XXXXXX", key[] = "overrun: ";
	int ncpus = (int)sysconf(_SC_NPROCESSORS_CONF), fd = mkstemp(path);
	struct tracefs_cpu *t[256] = { 0 };
	struct tracefs_instance *inst;
	struct timespec t0, now, nap = { 0, 20 * 1000 * 1000 };

	snprintf(name, sizeof(name), RS_KINSTANCE_PREFIX "%d", (int)getpid());
	inst = make_instance(name, 1);
	for (int cpu = 0; inst && cpu < ncpus && cpu < 256; cpu++)
		t[cpu] = tracefs_cpu_open(inst, cpu, true);
	if (inst)
		tracefs_trace_on(inst);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int cpu = 0; cpu < ncpus && cpu < 256; cpu++)
			while (t[cpu] && tracefs_cpu_write(t[cpu], fd, true) > 0)
				;
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	*overrun = 0;
	for (int cpu = 0; inst && cpu < ncpus && cpu < 256; cpu++) {
		char file[64], *stats, *p;

		snprintf(file, sizeof(file), "per_cpu/cpu%d/stats", cpu);
		stats = tracefs_instance_file_read(inst, file, NULL);
		if (stats && (p = strstr(stats, key)))
			*overrun += strtoull(p + sizeof(key) - 1, NULL, 10);
		free(stats);
		if (t[cpu])
			tracefs_cpu_close(t[cpu]);
	}
	if (inst) {
		tracefs_instance_destroy(inst);
		tracefs_instance_free(inst);
	}
	close(fd);
	unlink(path);
}

static void cpu_bench(const char *relstack)
{
	char secs[16], out[] = "/tmp/relstack-bench-rec-XXXXXX", errpath[] = "/tmp/relstack-bench-err-XXXXXX";
	int p[2], q[2], status, ofd = mkstemp(out), efd = mkstemp(errpath);
	unsigned long long overrun = 0, lost = 0;
	pid_t rel, copier, w;
	double rel_cpu, copy_cpu;
	char line[512];
	FILE *f;

	close(ofd);
	if (pipe(p) < 0 || pipe(q) < 0)
		return;
	snprintf(secs, sizeof(secs), "%d", SECONDS);
	copier = fork();
	if (copier == 0) {
		close(q[0]);
		page_copier(p[1], SECONDS, &overrun);
		if (write(q[1], &overrun, sizeof(overrun)) != (ssize_t)sizeof(overrun))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	close(q[1]);
	if (read(p[0], line, 1) != 1)
		return;
	rel = fork();
	if (rel == 0) {
		dup2(efd, 2);
		execl(relstack, relstack, "kernel", "record", "-o", out, "-e", "sched:sched_switch", "-e",
		      "raw_syscalls:sys_enter:id == 110", "-d", secs, (char *)NULL);
		_exit(127);
	}
	usleep(300 * 1000);
	w = start_workload(SECONDS - 0.6);
	waitpid(w, NULL, 0);
	rel_cpu = child_cpu(rel, &status);
	copy_cpu = child_cpu(copier, &status);
	if (read(q[0], &overrun, sizeof(overrun)) != (ssize_t)sizeof(overrun))
		overrun = 0;
	f = fopen(errpath, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *l = strstr(line, " lost");
		char *c = l;

		while (c && c > line && c[-1] >= '0' && c[-1] <= '9')
			c--;
		if (l && c < l)
			lost = strtoull(c, NULL, 10);
		if (strstr(line, "events,"))
			printf("kernel_record: %s", strchr(line, ':') ? strchr(line, ':') + 2 : line);
	}
	if (f)
		fclose(f);
	printf("kernel_record: %.3f s CPU for %d s (relstack kernel record)\n", rel_cpu, SECONDS);
	printf("kernel_record: %.3f s CPU for %d s (page copier, as trace-cmd record)\n", copy_cpu, SECONDS);
	printf("kernel_record: ratio %.2f vs page copier (CPU time, same events and workload)\n",
	       copy_cpu > 0 ? rel_cpu / copy_cpu : 0);
	printf("kernel_record: events lost: relstack %llu, page copier %llu\n", lost, overrun);
	unlink(out);
	unlink(errpath);
	close(efd);
}

int main(int argc, char **argv)
{
	if (geteuid() != 0 || !tracefs_tracing_dir()) {
		printf("kernel: skipped: needs root and tracefs\n");
		return 0;
	}
	if (capture() < 0 || !npages) {
		printf("kernel: skipped: no pages captured (%s)\n", strerror(errno));
		return 0;
	}
	convert_bench();
	if (argc > 1)
		cpu_bench(argv[1]);
	for (unsigned i = 0; i < npages; i++)
		free(pages[i]);
	return 0;
}
