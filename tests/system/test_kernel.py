#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`relstack kernel` against the running kernel (needs root and tracefs).

Records scheduler and system call events with their kernel stacks while a
workload runs, and checks that relstack's decoded frames equal the
kernel's own symbolisation of the same events (the instance's `trace`
text, name+offset/size), frame by frame; that filters are honoured; that
no word of the file is a kernel address; that the tracefs instance is
gone after exit and SIGINT, and removable by `clean` after SIGKILL; that
the top-level instance is left as found; that a file decodes where
/proc/kallsyms cannot be read; and that trace-cmd files import with the
names `trace-cmd report` gives.

Usage: test_kernel.py RELSTACK
Exit status 77 (skipped) when the machine cannot run it, saying why.
"""
import array
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

RELSTACK = sys.argv[1]
del sys.argv[1:2]
TRACEFS = "/sys/kernel/tracing"
GETPPID = 110  # x86-64 system call number


def skip_reason():
    if os.geteuid() != 0:
        return "not root: the kernel suite records through tracefs and reads /proc/kallsyms"
    if not os.path.isdir(TRACEFS + "/events") and subprocess.run(
            ["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True).returncode != 0:
        return "tracefs is not mounted and cannot be mounted"
    if not os.path.isdir(TRACEFS + "/instances"):
        return "tracefs has no instances directory"
    with open("/proc/kallsyms") as f:
        if f.readline().startswith("0000000000000000"):
            return "/proc/kallsyms hides addresses"
    return None


def run(*args, check=0, **kw):
    p = subprocess.run([RELSTACK, *args], capture_output=True, text=True, timeout=120, **kw)
    assert p.returncode >= 0, f"relstack {args} died of signal {-p.returncode}"
    if check is not None:
        assert p.returncode == check, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p


# What `kernel record` says once its instance exists and tracing is on (relstack(1)).
RECORDING = "relstack kernel record: recording in tracefs instance "
# How long a record may take to say so: an overall limit for slow (sanitizer) builds, not a speed asked for.
RECORDING_LIMIT = 300


class Background:
    """`relstack kernel record ARGS` started in the background, its standard error read as it comes."""

    def __init__(self, *args):
        self.p = subprocess.Popen([RELSTACK, "kernel", "record", *args], stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.err = []
        self.eof = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stderr:
            self.lines.put(line)
        self.lines.put(None)

    def _next_line(self, timeout):
        try:
            line = self.lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return False
        if line is None:
            self.eof = True
        else:
            self.err.append(line)
        return line

    def wait_recording(self):
        """Its RECORDING line, once it says it; fails at once, with its stderr, when it ends first."""
        end = time.monotonic() + RECORDING_LIMIT
        while True:
            line = self._next_line(end - time.monotonic())
            if line is False:
                self.p.kill()
                self.p.wait()
                raise AssertionError(f"relstack kernel record: not recording after {RECORDING_LIMIT} s, "
                                     f"stderr {''.join(self.err)!r}")
            if line is None:
                self.p.wait()
                raise AssertionError(f"relstack kernel record: ended (status {self.p.returncode}) before "
                                     f"recording, stderr {''.join(self.err)!r}")
            if line.startswith(RECORDING):
                return line

    def stop(self):
        """SIGINT if it still runs (a test that failed half way), and its end waited for."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        self.finish()

    def finish(self, timeout=120):
        """Its exit status and whole standard error, once it has ended."""
        self.p.wait(timeout=timeout)
        while not self.eof and self._next_line(timeout) is not False:
            pass
        if self.eof:
            self.reader.join()
            self.p.stderr.close()
        return self.p.returncode, "".join(self.err)


WORKLOAD = "rs-workload"


def workload_cmd(seconds):
    """Sleeps, pipes and getppid calls, by a task named WORKLOAD: stacks through several system calls."""
    code = (f"open('/proc/self/comm', 'w').write('{WORKLOAD}')\n"
            "import os,time\n"
            f"end=time.time()+{seconds}\n"
            "while time.time()<end:\n"
            "    os.getppid(); r,w=os.pipe(); os.write(w,b'x'); os.read(r,1); os.close(r); os.close(w)\n"
            "    time.sleep(0.002)\n")
    return ["--", sys.executable, "-c", code]


def workload(seconds):
    return subprocess.Popen(workload_cmd(seconds)[1:])


# the workload's events only: a busy machine switches tasks far more than a test needs
OURS = f'comm == "{WORKLOAD}"'



def kernel_image():
    """The running kernel's image, from _text to its highest symbol (modules left out), from kallsyms."""
    lo, hi = None, 0
    with open("/proc/kallsyms") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 3:
                continue
            a = int(parts[0], 16)
            if parts[2] == "_text":
                lo = a
            hi = max(hi, a + 1)
    return lo, hi


def kernel_addresses(data):
    """Every 8-byte window of @data, at every byte offset, that holds an address of the kernel's image."""
    lo, hi = kernel_image()
    hits = []
    for shift in range(8):
        chunk = data[shift:]
        words = array.array("Q")
        words.frombytes(chunk[:len(chunk) // 8 * 8])
        hits += [shift + 8 * i for i, w in enumerate(words) if lo <= w < hi]
    return hits


def left_over():
    """relstack instances whose process is gone (a relstack run in parallel keeps its own)."""
    out = []
    for i in instances():
        pid = i[len("relstack-"):] if i.startswith("relstack-") else ""
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            out.append(i)
    return out


def instances():
    return sorted(os.listdir(TRACEFS + "/instances"))


TOP_FILES = ["tracing_on", "current_tracer", "trace_clock", "set_event", "trace_options",
             "buffer_size_kb", "events/sched/sched_switch/enable", "events/sched/sched_switch/filter",
             "events/sched/sched_switch/trigger", "events/raw_syscalls/sys_enter/trigger"]


def top_level():
    out = {}
    for name in TOP_FILES:
        try:
            with open(os.path.join(TRACEFS, name)) as f:
                out[name] = f.read()
        except OSError as e:
            out[name] = str(e)
    return out


def kernel_text_stacks(path):
    """Per CPU, the stacks of the kernel's `trace` text, in order: [[name+off/size, ...], ...]."""
    per_cpu = {}
    cur = None
    head = re.compile(r"^\s*.+-\d+\s+\[(\d+)\]\s.*<stack trace>")
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = head.match(line)
            if m:
                cur = per_cpu.setdefault(int(m.group(1)), [])
                cur.append([])
            elif line.startswith(" => ") and cur is not None:
                cur[-1].append(line[4:].strip())
            else:
                cur = None
    return per_cpu


def report_json(path, *extra):
    p = run("report", "--format", "json", "--no-lines", *extra, path)
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def frame_text(fr):
    if "symbol" in fr and fr["symbol"]:
        return f"{fr['symbol']}+{fr['symoff']}/{fr['symsize']}"
    return fr.get("marker") or fr.get("reason") or fr.get("offset")


class Kernel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-kernel-")
        cls.map = os.path.join(cls.tmp, "System.map")
        run("kernel", "symbols", "-o", cls.map)
        cls.top_before = top_level()
        cls.file = os.path.join(cls.tmp, "k.rsb")
        cls.text = os.path.join(cls.tmp, "k.txt")
        cls.rec = run("kernel", "record", "-o", cls.file, "-e", f"sched:sched_switch:{OURS}",
                      "-e", f"raw_syscalls:sys_enter:id == {GETPPID} && {OURS}",
                      "--check-text", cls.text, "--size", "64", *workload_cmd(1))
        cls.records = report_json(cls.file, "--symbols", "vmlinux=" + cls.map)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_decoded_frames_equal_the_kernels_own_text_on_every_event(self):
        kernel = kernel_text_stacks(self.text)
        ours = {}
        for r in sorted(self.records, key=lambda r: r["fields"]["ts_ns"]):
            if r["has_stack"]:
                ours.setdefault(r["fields"]["cpu"], []).append([frame_text(f) for f in r["frames"]])
        self.assertTrue(sum(len(v) for v in ours.values()) > 10, "too few stacks recorded")
        self.assertEqual(sorted(ours), sorted(kernel))
        for cpu in kernel:
            self.assertEqual(len(ours[cpu]), len(kernel[cpu]), f"cpu {cpu}: stack counts differ")
            for i, (a, b) in enumerate(zip(ours[cpu], kernel[cpu])):
                self.assertEqual(a, b, f"cpu {cpu}, stack {i}")
        # the file kept every event the kernel kept
        self.assertRegex(run("info", self.file).stdout, r"counters: \d+ records, \d+ lost, 0 overwritten")

    def test_both_events_were_recorded_with_stacks_and_verdicts(self):
        events = {r["event"] for r in self.records if r["has_stack"]}
        self.assertEqual(events, {"sched_switch", "sys_enter"})
        self.assertTrue(any(r["reliable"] for r in self.records))
        for r in self.records:
            # reliable: ends at a task's base with the END marker, every frame named
            if r["reliable"]:
                self.assertTrue(all(f.get("symbol") for f in r["frames"]), r)

    def test_the_filter_keeps_only_matching_system_calls(self):
        ids = [r["fields"]["id"] for r in self.records if r["event"] == "sys_enter"]
        self.assertTrue(ids, "no getppid call recorded")
        self.assertEqual(set(ids), {GETPPID})

    def test_a_filtered_sched_switch_keeps_only_sleeping_tasks(self):
        f = os.path.join(self.tmp, "filtered.rsb")
        run("kernel", "record", "-o", f, "-e", f"sched:sched_switch:prev_state == 1 && {OURS}", *workload_cmd(0.5))
        states = [r["fields"]["prev_state"] for r in report_json(f)]
        self.assertTrue(states)
        self.assertEqual(set(states), {1})

    def test_each_record_is_of_its_events_task_and_tid_selects_a_task(self):
        f = os.path.join(self.tmp, "tid.rsb")
        rec = Background("-o", f, "-e", f"sched:sched_switch:{OURS}", "-d", "600")
        self.addCleanup(rec.stop)
        rec.wait_recording()
        child = workload(0.3)
        child.wait()
        rec.p.send_signal(signal.SIGINT)
        status, err = rec.finish()
        self.assertEqual(status, 0, err)
        every = report_json(f)
        self.assertTrue(every, "no switch of the workload recorded")
        # the record's thread is the event's task (its pid field), not the recorder's
        self.assertEqual({(r["tid"], r["fields"]["pid"]) for r in every}, {(child.pid, child.pid)})
        self.assertEqual(len(report_json(f, "--tid", str(child.pid))), len(every))
        self.assertEqual(report_json(f, "--tid", str(rec.p.pid)), [])

    def test_no_word_of_the_file_is_a_kernel_address(self):
        with open(self.file, "rb") as f:
            data = f.read()
        self.assertEqual(kernel_addresses(data)[:5], [])
        # the scan finds what it looks for: an address planted at an odd offset
        planted = bytes(3) + (kernel_image()[0] + 0x1234).to_bytes(8, "little") + bytes(5)
        self.assertEqual(kernel_addresses(planted), [3])

    def test_the_instance_is_gone_after_the_run_and_the_top_level_is_as_found(self):
        self.assertFalse(left_over())
        self.assertEqual(top_level(), self.top_before)

    def test_stack_depth_cuts_stacks_and_says_truncated(self):
        f = os.path.join(self.tmp, "depth.rsb")
        run("kernel", "record", "-o", f, "-e", f"sched:sched_switch:{OURS}", "--stack-depth", "3", *workload_cmd(0.3))
        recs = [r for r in report_json(f) if r["has_stack"]]
        self.assertTrue(recs)
        for r in recs:
            self.assertEqual(len(r["frames"]), 3)
            self.assertFalse(r["reliable"])
            self.assertIn("truncated", r["reasons"])

    def test_a_command_is_recorded_until_it_ends(self):
        f = os.path.join(self.tmp, "cmd.rsb")
        # no -d: only the command's end (or a signal, not sent) ends the run
        r = run("kernel", "record", "-o", f, "-e", 'sched:sched_switch:prev_comm == "sleep"', "--", "sleep", "0.3")
        # it said it was recording once, before the summary it ends with
        lines = r.stderr.splitlines()
        said = [i for i, line in enumerate(lines) if line.startswith(RECORDING)]
        self.assertEqual(len(said), 1, r.stderr)
        self.assertLess(said[0], len(lines) - 1, r.stderr)
        self.assertRegex(lines[-1], rf"^relstack kernel record: {re.escape(f)}: \d+ events, ")
        self.assertEqual({r["fields"]["prev_comm"] for r in report_json(f)}, {"sleep"})

    def test_bad_events_and_arguments_are_one_line_errors(self):
        p = run("kernel", "record", "-o", os.path.join(self.tmp, "x.rsb"), "-e", "sched:no_such_event", "-d", "1",
                check=2)
        self.assertEqual(p.stderr.count("\n"), 1)
        self.assertIn("sched:no_such_event: no such event", p.stderr)
        p = run("kernel", "record", "-e", "sched:sched_switch:prev_state ==== 1", "-o",
                os.path.join(self.tmp, "x.rsb"), "-d", "1", check=2)
        self.assertIn("filter", p.stderr)
        self.assertFalse(left_over())
        p = run("kernel", "record", "-e", "nocolon", "-d", "1", check=1)
        self.assertIn("SYSTEM:EVENT", p.stderr)
        p = run("kernel", "import", os.path.join(self.tmp, "missing.dat"), check=2)
        self.assertIn("missing.dat", p.stderr)
        p = run("kernel", "frobnicate", check=1)
        self.assertIn("unknown subcommand", p.stderr)

    def test_sigint_ends_the_run_and_removes_the_instance(self):
        f = os.path.join(self.tmp, "int.rsb")
        rec = Background("-o", f, "-e", f"sched:sched_switch:{OURS}", "-d", "600")
        self.addCleanup(rec.stop)
        name = f"relstack-{rec.p.pid}"
        self.assertEqual(rec.wait_recording(), f"{RECORDING}{name} into {f}\n")
        self.assertIn(name, instances())
        workload(0.3).wait()
        rec.p.send_signal(signal.SIGINT)
        status, err = rec.finish()
        self.assertEqual(status, 0, err)
        self.assertNotIn(name, instances())
        # the workload's task switches, recorded between the line and the signal
        self.assertTrue(report_json(f))

    def test_after_sigkill_the_left_instance_is_reported_and_clean_removes_it(self):
        f = os.path.join(self.tmp, "kill.rsb")
        rec = Background("-o", f, "-e", "sched:sched_switch", "-d", "600")
        self.addCleanup(rec.stop)
        name = f"relstack-{rec.p.pid}"
        self.assertIn(name, rec.wait_recording())
        rec.p.kill()
        rec.finish()
        self.assertIn(name, instances())
        r = run("kernel", "record", "-o", os.path.join(self.tmp, "next.rsb"), "-e", "sched:sched_switch", "-d",
                "0.1")
        self.assertIn(f"tracefs instance {name} was left by a run that is gone", r.stderr)
        c = run("kernel", "clean")
        self.assertIn(f"removed tracefs instance {name}", c.stdout)
        self.assertNotIn(name, instances())

    def test_a_recorded_file_decodes_where_kallsyms_cannot_be_read(self):
        here = run("report", "--no-lines", "--symbols", "vmlinux=" + self.map, self.file).stdout
        script = (f"mount --bind /dev/null /proc/kallsyms && ! grep -q . /proc/kallsyms && "
                  f"exec {RELSTACK} report --no-lines --symbols vmlinux={self.map} {self.file}")
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, here)
        self.assertIn("__schedule+0x", p.stdout)

    def test_without_symbols_the_boot_system_map_of_this_release_is_used(self):
        here = run("report", "--no-lines", "--symbols", "vmlinux=" + self.map, self.file).stdout
        release = os.uname().release
        script = (f"mount -t tmpfs none /boot && cp {self.map} /boot/System.map-{release} && "
                  f"exec {RELSTACK} report --no-lines {self.file}")
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, here)

    def test_a_system_map_of_another_build_is_refused(self):
        other = os.path.join(self.tmp, "other.map")
        with open(self.map) as src, open(other, "w") as dst:
            first = src.readline()
            self.assertTrue(first.startswith("# build-id: "))
            dst.write("# build-id: " + "00" * 20 + "\n")
            shutil.copyfileobj(src, dst)
        p = run("report", "--no-lines", "--symbols", "vmlinux=" + other, self.file, check=2)
        self.assertIn("build-id", p.stderr)
        self.assertNotIn("__schedule+", p.stdout)

    def test_a_trace_cmd_file_imports_with_the_names_trace_cmd_reports(self):
        if not shutil.which("trace-cmd"):
            self.skipTest("trace-cmd is not installed")
        # an instance of ours with ftrace's stacktrace option (what record -T sets), extracted
        name = f"relstack-{os.getpid()}"
        inst = os.path.join(TRACEFS, "instances", name)
        os.mkdir(inst)
        try:
            for path, value in (("options/stacktrace", "1"), ("events/sched/sched_switch/filter", OURS),
                                ("events/sched/sched_switch/enable", "1")):
                with open(os.path.join(inst, path), "w") as f:
                    f.write(value)
            workload(0.5).wait()
            with open(os.path.join(inst, "tracing_on"), "w") as f:
                f.write("0")
            dat = os.path.join(self.tmp, "t.dat")
            # trace-cmd sets ftrace_enabled, read-only here: a private writable copy that says 1
            fe = os.path.join(self.tmp, "ftrace_enabled")
            with open(fe, "w") as f:
                f.write("1\n")
            # trace-cmd resets the top level when it is done (events, filters, tracer, its buffer),
            # even with -B: there, our instance is mounted over it
            p = subprocess.run(["unshare", "-m", "sh", "-c",
                                f"mount --bind {fe} /proc/sys/kernel/ftrace_enabled; "
                                f"mount --bind {inst} {TRACEFS} && ! test -e {TRACEFS}/instances && "
                                f"exec trace-cmd extract -o {dat}"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
        finally:
            if os.path.isdir(inst):
                os.rmdir(inst)
        rep = subprocess.run(["trace-cmd", "report", "-i", dat], capture_output=True, text=True, timeout=120)
        # per CPU, in order: trace-cmd merges the CPUs by time, relstack's records carry cpu and ts_ns
        theirs, cur = {}, None
        for line in rep.stdout.splitlines():
            m = re.search(r"\[(\d+)\].*<stack trace", line)
            if m:
                cur = theirs.setdefault(int(m.group(1)), [])
                cur.append([])
            elif line.startswith("=> ") and cur is not None:
                cur[-1].append(line[3:].split(" (")[0])
        out = os.path.join(self.tmp, "imported.rsb")
        run("kernel", "import", dat, "-o", out)
        ours = {}
        for r in sorted(report_json(out, "--symbols", "vmlinux=" + self.map), key=lambda r: r["fields"]["ts_ns"]):
            if r["has_stack"]:
                ours.setdefault(r["fields"]["cpu"], []).append([f.get("symbol") for f in r["frames"]])
        self.assertTrue(sum(len(v) for v in theirs.values()) > 5)
        self.assertEqual(ours, theirs)
        with open(out, "rb") as f:
            self.assertEqual(kernel_addresses(f.read())[:5], [])


if __name__ == "__main__":
    why = skip_reason()
    if why:
        print(f"SKIP: kernel suite: {why}")
        sys.exit(77)
    unittest.main(verbosity=2)
