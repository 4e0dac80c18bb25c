// SPDX-License-Identifier: GPL-2.0
/*
 * Init program of the relstack kernel test (the whole user space of the
 * guest).  It sets up a tracing instance with relative and reliable stack
 * events, loads the test module, runs its known call chains from task and
 * timer context, unloads and reloads it and runs them again, measures the
 * cost of the stack options, and sends everything the host decodes out of
 * the guest through the debug console port as a framed archive:
 *
 *   frame  := "RSTF" u32 name_len, name, u32 data_len, data   (little endian)
 *   end    := "RSTE"
 *
 * Every step also prints "relstack-init: STEP ok|FAILED ..." on the console
 * and into the "status" file; the host decides pass or fail from those.
 * Then it reboots: QEMU runs with -no-reboot and exits.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>
#include <sys/io.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define OUT_PORT 0xe9
#define TRACEFS "/sys/kernel/tracing"
#define INST TRACEFS "/instances/relstack"
#define BENCH TRACEFS "/instances/bench"
#define FUNC TRACEFS "/instances/func"
#define MODULE_KO "/relstack_test.ko"
#define MODULE_NAME "relstack_test"
#define HIT "events/relstack_test/relstack_test_hit"

static char status[16384];
static size_t status_len;
static int failures;

static void step(int ok, const char *name, const char *fmt, ...)
{
	char detail[512] = "";
	char line[700];
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
	}
	snprintf(line, sizeof(line), "relstack-init: %s %s%s%s\n", name,
		 ok ? "ok" : "FAILED", detail[0] ? " " : "", detail);
	if (!ok)
		failures++;
	fputs(line, stdout);
	fflush(stdout);
	if (status_len + strlen(line) < sizeof(status)) {
		memcpy(status + status_len, line, strlen(line));
		status_len += strlen(line);
	}
}

/* glibc's outsb() does not tell the compiler that it reads the memory. */
static void out_bytes(const void *p, size_t n)
{
	__asm__ __volatile__("cld; rep outsb"
			     : "+S"(p), "+c"(n)
			     : "d"((unsigned short)OUT_PORT)
			     : "memory");
}

static void out_u32(uint32_t v)
{
	unsigned char b[4] = { v, v >> 8, v >> 16, v >> 24 };

	out_bytes(b, 4);
}

static void send(const char *name, const void *data, size_t len)
{
	out_bytes("RSTF", 4);
	out_u32(strlen(name));
	out_bytes(name, strlen(name));
	out_u32(len);
	out_bytes(data, len);
}

/* Reads a whole file; raw trace files are read non-blocking until empty. */
static char *slurp(const char *path, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	ssize_t r;
	int fd = open(path, O_RDONLY | O_NONBLOCK);

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		if (cap - n < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				break;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += r;
	}
	close(fd);
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

static int send_file(const char *name, const char *path)
{
	size_t len;
	char *data = slurp(path, &len);

	if (!data)
		return -1;
	send(name, data, len);
	free(data);
	return 0;
}

static int put(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = write(fd, value, strlen(value));
	close(fd);
	return r == (ssize_t)strlen(value) ? 0 : -errno;
}

static int iput(const char *inst, const char *file, const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", inst, file);
	return put(path, value);
}

static int load_module(void)
{
	int fd = open(MODULE_KO, O_RDONLY);
	int r;

	if (fd < 0)
		return -errno;
	r = syscall(SYS_finit_module, fd, "", 0);
	close(fd);
	return r ? -errno : 0;
}

static unsigned long runs(int context)
{
	size_t len;
	char *s = slurp("/proc/relstack_test", &len);
	unsigned long v[3] = { 0, 0, 0 };

	if (s)
		sscanf(s, "task %lu timer %lu bench %lu", &v[0], &v[1], &v[2]);
	free(s);
	return v[context];
}

/* The known call chains, from task and from timer context. */
static void exercise(const char *phase)
{
	char name[64];
	unsigned long before = runs(1);
	int i, ok = 1;

	for (i = 0; i < 2; i++)
		ok &= put("/proc/relstack_test", "task") == 0;
	snprintf(name, sizeof(name), "%s-task", phase);
	step(ok && runs(0) >= 2, name, "runs=%lu", runs(0));

	ok = put("/proc/relstack_test", "timer") == 0;
	for (i = 0; i < 500 && runs(1) == before; i++)
		usleep(10000);
	snprintf(name, sizeof(name), "%s-timer", phase);
	step(ok && runs(1) > before, name, "runs=%lu", runs(1));
}

static int arm(const char *inst)
{
	int r = iput(inst, HIT "/trigger", "stacktrace");

	return r ? r : iput(inst, HIT "/enable", "1");
}

/*
 * The time stamp counter, not a clock: the guest may fail to calibrate
 * the TSC under emulation and fall back to jiffies, too coarse here.
 */
static double now(void)
{
	return (double)__rdtsc();
}

/* TSC ticks per chain for one run of the chain @n times. */
static double bench_run(unsigned long n)
{
	char cmd[32];
	double t;

	snprintf(cmd, sizeof(cmd), "bench %lu", n);
	t = now();
	if (put("/proc/relstack_test", cmd))
		return -1;
	return (now() - t) / n;
}

enum { NONE, ABSOLUTE, RELATIVE, RELIABLE, CONFIGS };

/* Sets the bench instance up for one configuration of the stack event. */
static int bench_config(int config)
{
	int ok;

	/* Rounds go NONE, ABSOLUTE, ...: the trigger is added and removed once each. */
	ok = 1;
	if (config == NONE)
		iput(BENCH, HIT "/trigger", "!stacktrace");
	else if (config == ABSOLUTE)
		ok = iput(BENCH, HIT "/trigger", "stacktrace") == 0;
	ok &= iput(BENCH, "options/relative-stacktrace", config >= RELATIVE ? "1" : "0") == 0;
	ok &= iput(BENCH, "options/stacktrace-reliable", config == RELIABLE ? "1" : "0") == 0;
	return ok;
}

/*
 * The cost of a stack event: the same chain with no stack, with a
 * stacktrace trigger writing absolute stacks, relative stacks, and
 * relative stacks with the reliable check; the stack's cost is the time
 * over the chain with the event alone.  The configurations take turns in
 * rounds and each keeps its best round, so a slow stretch of the emulator
 * weighs on none of them alone.  Emulated time: only the ratios mean
 * anything.
 */
static void figures(void)
{
	static const char *const names[CONFIGS] = {
		"event_only", "stack_absolute", "stack_relative",
		"stack_relative_reliable",
	};
	const unsigned long n = 3000;
	const int rounds = 15;
	double best[CONFIGS], t, abs_cost, rel_cost, reliable_cost;
	char text[2048];
	size_t at = 0;
	int ok, r, c;

	ok = mkdir(BENCH, 0755) == 0 || errno == EEXIST;
	ok &= iput(BENCH, "buffer_size_kb", "64") == 0;
	ok &= iput(BENCH, HIT "/enable", "1") == 0;
	for (c = 0; c < CONFIGS; c++)
		best[c] = 1e30;
	for (r = 0; r < rounds; r++) {
		for (c = 0; c < CONFIGS; c++) {
			ok &= bench_config(c);
			t = bench_run(n);
			ok &= t > 0;
			if (t < best[c])
				best[c] = t;
		}
	}
	ok &= bench_config(NONE);
	ok &= iput(BENCH, HIT "/enable", "0") == 0;
	abs_cost = best[ABSOLUTE] - best[NONE];
	rel_cost = best[RELATIVE] - best[NONE];
	reliable_cost = best[RELIABLE] - best[NONE];
	ok &= abs_cost > 0 && rel_cost > 0 && reliable_cost > 0;

	at += snprintf(text + at, sizeof(text) - at,
		       "chains_per_run %lu\nrounds %d\n", n, rounds);
	for (c = 0; c < CONFIGS; c++)
		at += snprintf(text + at, sizeof(text) - at, "%s_tsc_ticks %.0f\n",
			       names[c], best[c]);
	at += snprintf(text + at, sizeof(text) - at,
		       "ratio_relative_vs_absolute_stack_cost %.3f\n"
		       "ratio_reliable_vs_relative_stack_cost %.3f\n"
		       "ratio_relative_vs_absolute_event_total %.3f\n"
		       "ratio_reliable_vs_relative_event_total %.3f\n",
		       rel_cost / abs_cost, reliable_cost / rel_cost,
		       best[RELATIVE] / best[ABSOLUTE],
		       best[RELIABLE] / best[RELATIVE]);
	send("figures", text, at);
	step(ok, "figures", "relative/absolute=%.3f reliable/relative=%.3f",
	     rel_cost / abs_cost, reliable_cost / rel_cost);
}

static void send_stext(void)
{
	size_t len;
	char *s = slurp("/proc/kallsyms", &len);
	char *line;
	char out[64] = "";

	for (line = s ? strtok(s, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		unsigned long long a;
		char t, name[128];

		if (sscanf(line, "%llx %c %127s", &a, &t, name) == 3 &&
		    !strcmp(name, "_stext")) {
			snprintf(out, sizeof(out), "%016llx\n", a);
			break;
		}
	}
	free(s);
	send("stext", out, strlen(out));
	step(out[0] && strcmp(out, "0000000000000000\n"), "kallsyms-stext",
	     "%s", out[0] ? strtok(out, "\n") : "missing");
}

static const char *const formats[] = {
	"ftrace/kernel_stack", "ftrace/kernel_stack_rel",
	"module/module_text_rel", "module/module_load", "module/module_free",
	"relstack_test/relstack_test_hit", NULL,
};

/*
 * The instance's text and raw buffers, under @prefix.  The text is read
 * first: it does not consume, so both hold the same events.
 */
static int send_buffers(const char *inst, const char *prefix, size_t *total)
{
	char path[256], name[256];
	int ok = 1, cpu;
	size_t len;
	char *data;

	snprintf(name, sizeof(name), "%strace", prefix);
	snprintf(path, sizeof(path), "%s/trace", inst);
	ok &= send_file(name, path) == 0;
	*total = 0;
	for (cpu = 0;; cpu++) {
		snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", inst, cpu);
		if (access(path, R_OK))
			break;
		data = slurp(path, &len);
		if (!data) {
			ok = 0;
			break;
		}
		snprintf(name, sizeof(name), "%sper_cpu/cpu%d/trace_pipe_raw", prefix, cpu);
		send(name, data, len);
		*total += len;
		free(data);
	}
	snprintf(name, sizeof(name), "%smodule_table", prefix);
	snprintf(path, sizeof(path), "%s/module_table", inst);
	ok &= send_file(name, path) == 0;
	return ok && cpu > 0 && *total > 0;
}

static void send_output(void)
{
	char path[256], name[256];
	size_t total;
	int i, ok;

	ok = send_buffers(INST, "", &total);
	ok &= send_buffers(FUNC, "func/", &total);
	ok &= send_file("header_page", INST "/events/header_page") == 0;
	ok &= send_file("header_event", INST "/events/header_event") == 0;
	for (i = 0; formats[i]; i++) {
		snprintf(path, sizeof(path), INST "/events/%s/format", formats[i]);
		snprintf(name, sizeof(name), "events/%s/format", formats[i]);
		if (send_file(name, path)) {
			snprintf(path, sizeof(path), TRACEFS "/events/%s/format", formats[i]);
			ok &= send_file(name, path) == 0;
		}
	}
	step(ok, "send", "raw_bytes=%zu", total);
}

/*
 * The two other paths that write kernel stacks: the stacktrace option, and
 * the function tracer's func_stack_trace, in an instance of its own because
 * setting a tracer resets the buffer.
 */
static void other_paths(void)
{
	int ok;

	ok = iput(INST, HIT "/trigger", "!stacktrace") == 0;
	ok &= iput(INST, "options/stacktrace", "1") == 0;
	ok &= put("/proc/relstack_test", "task") == 0;
	ok &= iput(INST, "options/stacktrace", "0") == 0;
	step(ok, "load-2-stacktrace-option", NULL);

	ok = iput(INST, HIT "/enable", "0") == 0;
	ok &= mkdir(FUNC, 0755) == 0;
	ok &= iput(FUNC, "options/sym-offset", "1") == 0;
	ok &= iput(FUNC, "options/relative-stacktrace", "1") == 0;
	ok &= iput(FUNC, "options/stacktrace-reliable", "1") == 0;
	ok &= iput(FUNC, "set_ftrace_filter", "relstack_test_leaf") == 0;
	ok &= iput(FUNC, "current_tracer", "function") == 0;
	ok &= iput(FUNC, "options/func_stack_trace", "1") == 0;
	ok &= put("/proc/relstack_test", "task") == 0;
	ok &= iput(FUNC, "tracing_on", "0") == 0;
	step(ok, "load-2-func-stack-trace", NULL);
}

int main(void)
{
	size_t len;
	int ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ioperm(OUT_PORT, 1, 1)) {
		printf("relstack-init: ioperm FAILED %s\n", strerror(errno));
		reboot(RB_AUTOBOOT);
	}
	ok = mount("proc", "/proc", "proc", 0, NULL) == 0;
	ok &= mount("sysfs", "/sys", "sysfs", 0, NULL) == 0;
	ok &= mount("tracefs", TRACEFS, "tracefs", 0, NULL) == 0;
	step(ok, "mount", NULL);
	send_stext();

	ok = mkdir(INST, 0755) == 0;
	ok &= iput(INST, "buffer_size_kb", "1024") == 0;
	ok &= iput(INST, "options/sym-offset", "1") == 0;
	ok &= iput(INST, "options/relative-stacktrace", "1") == 0;
	ok &= iput(INST, "options/stacktrace-reliable", "1") == 0;
	ok &= iput(INST, "events/module/module_text_rel/enable", "1") == 0;
	step(ok, "instance", NULL);

	step(load_module() == 0, "load-1", NULL);
	step(arm(INST) == 0, "trigger-1", NULL);
	exercise("load-1");
	/* Unloading a module resets every buffer: send this load's first. */
	ok = send_buffers(INST, "load1/", &len);
	step(ok, "send-load1", "raw_bytes=%zu", len);

	ok = syscall(SYS_delete_module, MODULE_NAME, O_NONBLOCK) == 0;
	step(ok, "unload", "%s", ok ? "" : strerror(errno));
	step(load_module() == 0, "load-2", NULL);
	step(arm(INST) == 0, "trigger-2", NULL);
	exercise("load-2");
	other_paths();

	ok = iput(INST, "tracing_on", "0") == 0;
	step(ok, "stop", NULL);
	figures();
	send_output();

	step(failures == 0, "done", "failures=%d", failures);
	send("status", status, status_len);
	out_bytes("RSTE", 4);
	sync();
	reboot(RB_AUTOBOOT);
	return 0;
}
