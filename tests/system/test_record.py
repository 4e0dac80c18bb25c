#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`relstack record` on programs the project did not write and does not rebuild.

Debian's own binaries (python3, sh, sleep, env) and a C program built
without relstack (record_target.c) run under the preloaded agent, each
result checked against an independent reference: gdb's backtrace on the
core of the same crash, gdb's hit count of a conditional breakpoint for
--call, perf's hottest function for the sampler.

Usage: test_record.py RELSTACK TARGET GDB [PERF]
"""
import json
import os
import pty
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from elf_program import EM_386, EM_X86_64, elf_machine, elf_word_size

RELSTACK, TARGET, GDB = sys.argv[1:4]
PERF = sys.argv[4] if len(sys.argv) > 4 else ""
del sys.argv[1:5 if PERF else 4]
# the tests run programs in directories of their own
RELSTACK, TARGET = os.path.abspath(RELSTACK), os.path.abspath(TARGET)

PYTHON = "/usr/bin/python3"
# The machine of the build's programs, and of its agent: Debian's programs
# are recorded where they are the same machine's (an i386 build's agent
# cannot be preloaded into the x86-64 programs of the machine it runs on).
BUILD_MACHINE = elf_machine(TARGET)
# The build's C compiler (tests/system/meson.build sets CC: gcc -m32 for an i386 build).
CC = shlex.split(os.environ.get("CC", "gcc"))
# How the command's messages name a program's class and machine.
KIND = {(4, EM_386): "32-bit i386", (8, EM_X86_64): "64-bit x86-64"}

# A few allocations above the filter's size among python's many small ones.
BIG_MALLOCS = "x = [bytearray(2000000 + i) for i in range(7)]"
CPU_LOOP = "sum(i * i for i in range(%d))"


def records(path, event=None):
    """The records of a buffer file, decoded by `relstack report --format json`."""
    args = [RELSTACK, "report", "--format", "json", "--no-lines", path]
    if event:
        args[2:2] = ["--event", event]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def names(rec):
    return [f.get("symbol") for f in rec["frames"]]


class RecordTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="relstack-record-")
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def record(self, *args, options=(), **kw):
        return subprocess.run([RELSTACK, "record", "-o", self.out, *options, "--", *args],
                              capture_output=True, text=True, cwd=self.tmp, timeout=120, **kw)

    def need_same_machine(self, program):
        """Skip, saying why, unless the agent of this build can be preloaded into Debian's @program."""
        machine = elf_machine(program)
        if machine != BUILD_MACHINE:
            self.skipTest(f"{program} is a program for ELF machine {machine}, this build's agent is for "
                          f"{BUILD_MACHINE}: it cannot be preloaded there")

    def files(self, prefix):
        return sorted(os.path.join(self.out, f) for f in os.listdir(self.out) if f.startswith(prefix + "."))

    def only_file(self, prefix):
        files = self.files(prefix)
        self.assertEqual(len(files), 1, files)
        return files[0]

    def test_a_crash_of_a_program_built_without_relstack_names_the_frames_gdb_finds_on_its_core(self):
        def core_limit():
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

        r = self.record(TARGET, "crash", preexec_fn=core_limit)
        self.assertEqual(r.returncode, -signal.SIGSEGV, r.stderr)
        path = self.only_file("record_target")
        self.assertIn("relstack report " + path, r.stderr)
        crashes = records(path, "crash")
        self.assertEqual(len(crashes), 1)
        self.assertEqual(crashes[0]["fields"]["signo"], signal.SIGSEGV)
        cores = [f for f in os.listdir(self.tmp) if f.startswith("core")]
        if not cores:
            self.skipTest("no core file written (kernel.core_pattern is %r)" %
                          open("/proc/sys/kernel/core_pattern").read().strip())
        bt = subprocess.run([GDB, "-batch", "-nx", "-ex", "bt", TARGET, os.path.join(self.tmp, cores[0])],
                            capture_output=True, text=True, timeout=120).stdout
        # gdb prints frame #0 when it loads the core, then the whole backtrace
        frames = dict(re.findall(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+) \(", bt, re.M))
        gdb_names = [frames[str(i)] for i in range(len(frames))]
        ours = [n for n in names(crashes[0]) if n]
        self.assertGreaterEqual(len(gdb_names), 4, bt)
        self.assertEqual(ours[:len(gdb_names)], gdb_names, bt)
        self.assertEqual(ours[:3], ["store_null", "store_null", "parse_config"])

    def test_a_crash_on_a_second_thread_is_recorded_from_the_thread(self):
        r = self.record(TARGET, "thread-crash")
        self.assertEqual(r.returncode, -signal.SIGSEGV, r.stderr)
        crash, = records(self.only_file("record_target"), "crash")
        self.assertIn("parse_config", names(crash))
        self.assertIn("thread_main", names(crash))
        self.assertNotIn("main", names(crash))

    def test_a_program_that_installs_its_own_sigsegv_handler_keeps_it_and_the_crash_is_recorded(self):
        r = self.record(TARGET, "own-handler")
        self.assertEqual(r.returncode, 42, r.stderr)
        self.assertIn("own handler ran", r.stderr)
        crash, = records(self.only_file("record_target"), "crash")
        self.assertIn("parse_config", names(crash))

    def test_python_faulthandler_still_prints_its_traceback_under_the_agent(self):
        self.need_same_machine(PYTHON)
        r = self.record(PYTHON, "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)")
        self.assertEqual(r.returncode, -signal.SIGSEGV, r.stderr)
        self.assertIn("Fatal Python error: Segmentation fault", r.stderr)
        crash, = records(self.only_file("python3"), "crash")
        self.assertEqual(crash["fields"]["signo"], signal.SIGSEGV)
        # _ctypes was dlopen'd after start-up: the object table knows it all the same
        objects = [os.path.basename(f.get("object") or "") for f in crash["frames"]]
        self.assertTrue(any(o.startswith("_ctypes.") for o in objects), objects)

    def test_a_forked_child_gets_its_own_file_with_its_own_crash(self):
        r = self.record(TARGET, "fork-crash")
        self.assertEqual(r.returncode, 0, r.stderr)
        files = self.files("record_target")
        self.assertEqual(len(files), 2, files)
        crashed = [f for f in files if records(f, "crash")]
        self.assertEqual(len(crashed), 1)
        self.assertIn("parse_config", names(records(crashed[0], "crash")[0]))
        parent = "%s/record_target.%s.relstack" % (self.out, re.search(r"record_target\.(\d+)\.relstack", r.stderr)[1])
        self.assertNotIn(parent, crashed)

    def test_exec_chains_are_followed_and_the_exit_status_passes_through(self):
        self.need_same_machine("/bin/sh")
        r = self.record("/bin/sh", "-c", "/bin/true; /usr/bin/env /bin/ls / >/dev/null; exit 3")
        self.assertEqual(r.returncode, 3, r.stderr)
        for prog in ("sh", "true", "env", "ls"):
            self.assertTrue(self.files(prog), "no file of %s in %s" % (prog, os.listdir(self.out)))
        env_pid = self.files("env")[0].split(".")[-2]
        self.assertTrue(os.path.exists("%s/ls.%s.relstack" % (self.out, env_pid)), "exec keeps the pid")

    def test_the_command_names_the_program_the_process_ended_as_and_counts_only_this_runs_files(self):
        self.need_same_machine("/bin/sh")
        os.makedirs(self.out)
        open(os.path.join(self.out, "old.1.relstack"), "w").close()
        r = self.record("/bin/sh", "-c", "exec /usr/bin/env /bin/true")
        self.assertEqual(r.returncode, 0, r.stderr)
        pid = re.search(r"recorded in .*/true\.(\d+)\.relstack\n", r.stderr)
        self.assertTrue(pid, r.stderr)
        self.assertIn("read it with: relstack report %s/true.%s.relstack" % (self.out, pid[1]), r.stderr)
        self.assertIn("and 2 more files", r.stderr)  # sh's and env's, not old.1

    def test_death_by_sigterm_is_recorded_and_passed_through(self):
        self.need_same_machine("/bin/sleep")
        p = subprocess.Popen([RELSTACK, "record", "-o", self.out, "--", "/bin/sleep", "30"],
                             stderr=subprocess.PIPE, text=True)
        for _ in range(300):
            if os.path.isdir(self.out) and self.files("sleep"):
                break
            subprocess.run(["sleep", "0.05"])
        subprocess.run(["sleep", "0.2"])
        p.send_signal(signal.SIGTERM)  # passed on to the program
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGTERM)
        crash, = records(self.only_file("sleep"), "crash")
        self.assertEqual(crash["fields"]["signo"], signal.SIGTERM)
        self.assertEqual(crash["frames"][0]["object"].split("/")[-1], "libc.so.6")

    def gdb_hits(self, condition, args):
        """How many calls gdb's conditional breakpoint stops at, in a run of its own.

        The C library's own name of a function: `break malloc` would also stop
        where ld.so's start-up allocator is inlined, with other registers.
        """
        script = os.path.join(self.tmp, "count.gdb")
        with open(script, "w") as f:
            f.write("set breakpoint pending on\nbreak %s\ncommands 1\nsilent\ncontinue\nend\n"
                    "run\ninfo breakpoints\n" % condition)
        out = subprocess.run([GDB, "-batch", "-nx", "-x", script, "--args", *args],
                             capture_output=True, text=True, timeout=300).stdout
        m = re.search(r"breakpoint already hit (\d+) time", out)
        return int(m[1]) if m else 0

    def call_counts(self, path, function):
        counts = [r for r in records(path, "call_counts") if r["fields"]["function"] == function]
        self.assertEqual(len(counts), 1)
        return counts[0]["fields"]

    def test_malloc_calls_matching_a_filter_equal_gdbs_count_and_each_has_its_stack(self):
        self.need_same_machine(PYTHON)
        args = [PYTHON, "-c", BIG_MALLOCS]
        r = self.record(*args, options=["--call", "malloc if arg0 > 100000"])
        self.assertEqual(r.returncode, 0, r.stderr)
        path = self.only_file("python3")
        counts = self.call_counts(path, "malloc")
        calls = records(path, "call")
        self.assertGreaterEqual(counts["matched"], 7)
        self.assertEqual(len(calls), counts["matched"])
        self.assertGreater(counts["unmatched"], 100)
        self.assertEqual(counts["matched"], self.gdb_hits("__libc_malloc if $rdi > 100000", args))
        self.assertTrue(any("PyByteArray_Resize" in names(c) or "PyByteArray_FromStringAndSize" in names(c)
                            for c in calls), [names(c) for c in calls])

    def test_write_calls_to_stderr_equal_gdbs_count_and_the_output_is_intact(self):
        self.need_same_machine(PYTHON)
        args = [PYTHON, "-c", "import os\nfor i in range(5): os.write(2, b'line %d\\n' % i)\nprint('out')"]
        r = self.record(*args, options=["--call", "write if arg0 == 2 && arg2 > 0"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "out\n")
        self.assertTrue(r.stderr.startswith("".join("line %d\n" % i for i in range(5))), r.stderr)
        counts = self.call_counts(self.only_file("python3"), "write")
        self.assertEqual(counts["matched"], 5)
        self.assertEqual(counts["matched"], self.gdb_hits("write if $rdi == 2 && $rdx > 0", args))

    def test_the_interposer_keeps_every_argument_register_and_the_return_value(self):
        plain = subprocess.run([TARGET, "varargs"], capture_output=True, text=True, check=True).stdout
        self.assertIn("-1 1099511627776 3 0.5 1.5", plain)
        r = self.record(TARGET, "varargs", options=["--call", "snprintf if arg1 == 256", "--call", "strtod"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain)
        path = self.only_file("record_target")
        self.assertEqual(self.call_counts(path, "snprintf")["matched"], 1)
        self.assertEqual(self.call_counts(path, "strtod")["matched"], 1)
        self.assertEqual(names(records(path, "call")[0])[0], "main")

    def test_unmatched_calls_of_every_thread_are_counted_and_equal_gdbs_count(self):
        self.need_same_machine(PYTHON)
        script = ("import os, threading\n"
                  "fd = os.open('/dev/null', os.O_WRONLY)\n"
                  "def w():\n"
                  "    for i in range(300): os.write(fd, b'x')\n"
                  "ts = [threading.Thread(target=w) for _ in range(4)]\n"
                  "[t.start() for t in ts]\n"
                  "[t.join() for t in ts]\n"
                  "w()\n")
        args = [PYTHON, "-c", script]
        r = self.record(*args, options=["--call", "write if arg0 == 2"])
        self.assertEqual(r.returncode, 0, r.stderr)
        counts = self.call_counts(self.only_file("python3"), "write")
        self.assertEqual(counts["matched"], 0)
        self.assertGreaterEqual(counts["unmatched"], 1500)
        self.assertEqual(counts["unmatched"], self.gdb_hits("__libc_write if $rdi != 2", args))

    def test_on_one_terminal_for_the_report_and_its_messages_no_progress_line_lands_in_the_report(self):
        self.need_same_machine(PYTHON)
        # some 200000 stacks: their report takes seconds, past the second after which a progress line shows
        r = self.record(PYTHON, "-c", "x = [str(i) * 100 for i in range(200000)]",
                        options=["--size", str(256 << 20), "--call", "malloc"])
        self.assertEqual(r.returncode, 0, r.stderr)
        path = self.only_file("python3")
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen([RELSTACK, "report", "--no-lines", path], stdin=subprocess.DEVNULL, stdout=slave,
                                 stderr=slave, close_fds=True)
            os.close(slave)
            chunks = []
            while True:
                try:
                    chunk = os.read(master, 1 << 20)
                except OSError:  # EIO: every writer of the terminal is gone
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            self.assertEqual(p.wait(timeout=600), 0)
        finally:
            os.close(master)
        text = b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
        m = re.search(r"relstack: \d+ of \d+ records", text)
        self.assertIsNone(m, m and repr(text[max(0, m.start() - 200):m.end() + 200]))
        lines = text.split("\n")
        head = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+Z tid \d+ \w")
        heads = [l for l in lines if l and not l.startswith(" => ") and not l.startswith("relstack: ")]
        self.assertGreater(len(heads), 100000)
        self.assertEqual([l for l in heads if not head.match(l)][:3], [])

    def test_a_plugin_found_by_the_callers_runpath_is_found_under_the_agent(self):
        # the C library searches the dlopen caller's DT_RUNPATH: the caller must stay the program
        r = self.record(TARGET, "dlopen-runpath", options=["--call", "puts"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "plugin loaded\n")

    def test_calls_with_no_filter_are_all_recorded(self):
        self.need_same_machine("/bin/sleep")
        r = self.record("/bin/sleep", "0.01", options=["--call", "clock_nanosleep"])
        self.assertEqual(r.returncode, 0, r.stderr)
        counts = self.call_counts(self.only_file("sleep"), "clock_nanosleep")
        self.assertEqual(counts["unmatched"], 0)
        self.assertEqual(counts["matched"], len(records(self.only_file("sleep"), "call")))

    def test_the_samplers_hottest_function_is_perfs_and_report_top_ranks_its_stacks(self):
        self.need_same_machine(PYTHON)
        if not PERF:
            self.skipTest("perf not found (Debian package linux-perf)")
        args = [PYTHON, "-c", CPU_LOOP % 20000000]
        r = self.record(*args, options=["--sample", "999"])
        self.assertEqual(r.returncode, 0, r.stderr)
        samples = records(self.only_file("python3"), "sample")
        self.assertGreater(len(samples), 20)
        leaf = {}
        for s in samples:
            n = s["frames"][0].get("symbol") if s["frames"] else None
            if n:
                leaf[n] = leaf.get(n, 0) + 1
        ours = max(leaf, key=leaf.get)
        # --top: every stack once, most frequent first, counts adding up to the samples
        top = subprocess.run([RELSTACK, "report", "--top", "100000", "--event", "sample", "--no-lines",
                              self.only_file("python3")], capture_output=True, text=True, check=True).stdout
        heads = re.findall(r"^#(\d+) sample (\d+) of (\d+) \(([\d.]+)%\)$", top, re.M)
        counts = [int(h[1]) for h in heads]
        self.assertEqual(sum(counts), len(samples))
        self.assertEqual(counts, sorted(counts, reverse=True))
        self.assertTrue(all(int(h[2]) == len(samples) for h in heads))
        self.assertAlmostEqual(float(heads[0][3]), 100 * counts[0] / len(samples), delta=0.05)
        folded = subprocess.run([RELSTACK, "report", "--format", "folded", "--event", "sample", "--no-lines",
                                 self.only_file("python3")], capture_output=True, text=True, check=True).stdout
        self.assertEqual(sorted(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines()), sorted(counts))
        data = os.path.join(self.tmp, "perf.data")
        p = subprocess.run([PERF, "record", "-q", "-F", "999", "-g", "-o", data, *args],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            self.skipTest("perf record cannot run here: " + p.stderr.strip().splitlines()[-1])
        rep = subprocess.run([PERF, "report", "-i", data, "--stdio", "--no-children", "--sort", "symbol",
                              "-q", "-g", "none"], capture_output=True, text=True, timeout=300).stdout
        theirs = re.findall(r"%\s+\[\.\]\s+(\S+)", rep)
        self.assertTrue(theirs, rep)
        self.assertEqual(ours, theirs[0], (leaf, rep[:500]))

    def test_every_thread_records_its_stack_on_the_signal_and_samples_its_cpu_time(self):
        self.need_same_machine(PYTHON)
        script = ("import threading, time, os, signal\n"
                  "go = threading.Event()\n"
                  "def spin():\n"
                  "    while not go.is_set(): sum(range(1000))\n"
                  "ts = [threading.Thread(target=spin) for _ in range(3)]\n"
                  "[t.start() for t in ts]\n"
                  "time.sleep(0.5)\n"
                  "os.kill(os.getpid(), signal.SIGUSR2)\n"
                  "time.sleep(0.2)\n"
                  "go.set()\n"
                  "[t.join() for t in ts]\n")
        r = self.record(PYTHON, "-c", script, options=["--on-signal", "USR2", "--sample", "100"])
        self.assertEqual(r.returncode, 0, r.stderr)
        path = self.only_file("python3")
        dumps = records(path, "dump")
        self.assertEqual(len({d["tid"] for d in dumps}), 4, [d["tid"] for d in dumps])
        sampled = {s["tid"] for s in records(path, "sample")}
        self.assertGreaterEqual(len(sampled - {dumps[0]["tid"]}), 3)

    def test_sort_which_catches_sigprof_itself_sorts_the_same_under_the_sampler(self):
        self.need_same_machine("/usr/bin/sort")
        data = os.path.join(self.tmp, "lines")
        with open(data, "w") as f:
            f.writelines("%d\n" % ((i * 7919) % 100003) for i in range(400000))
        plain = subprocess.run(["/usr/bin/sort", data], capture_output=True, check=True).stdout
        r = subprocess.run([RELSTACK, "record", "-o", self.out, "--sample", "999", "--", "/usr/bin/sort", data],
                           capture_output=True, cwd=self.tmp, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, plain)
        self.assertTrue(records(self.only_file("sort"), "sample"))

    def test_a_programs_own_handler_of_the_dump_signal_still_runs(self):
        self.need_same_machine(PYTHON)
        script = ("import os, signal, time\n"
                  "got = []\n"
                  "signal.signal(signal.SIGUSR1, lambda s, f: got.append(s))\n"
                  "os.kill(os.getpid(), signal.SIGUSR1)\n"
                  "time.sleep(0.1)\n"
                  "print('handled' if got else 'lost')\n")
        r = self.record(PYTHON, "-c", script, options=["--on-signal", "USR1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "handled\n")
        self.assertEqual(len(records(self.only_file("python3"), "dump")), 1)

    def test_the_agent_records_without_the_command_from_its_environment(self):
        self.need_same_machine("/usr/bin/env")
        agent = os.path.join(os.path.dirname(RELSTACK), "..", "src", "librelstack-agent.so")
        env = dict(os.environ, LD_PRELOAD=agent, RELSTACK_OUTPUT=self.out, RELSTACK_CALL="getenv")
        r = subprocess.run(["/usr/bin/env", "-u", "X"], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertTrue(self.files("env"))
        self.call_counts(self.files("env")[0], "getenv")

    def other_class_program(self):
        """A dynamically linked program of the other class than the build's: built with CC -m32
        for an x86-64 build, Debian's own for an i386 build."""
        if elf_word_size(TARGET) == 4:
            program = "/usr/bin/touch"
            if elf_word_size(program) != 8:
                self.skipTest(f"{program} is not a 64-bit program: no program of the other class here")
            return program
        program, source = os.path.join(self.tmp, "prog32"), os.path.join(self.tmp, "prog32.c")
        with open(source, "w") as f:
            f.write("#include <stdio.h>\n"
                    "int main(int argc, char **argv) { return argc > 1 && fopen(argv[1], \"w\") ? 0 : 1; }\n")
        r = subprocess.run(CC + ["-m32", "-o", program, source], capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest(f"no 32-bit program: `{shlex.join(CC + ['-m32'])}` failed (Debian packages "
                          f"libc6-dev-i386 and lib32gcc-12-dev): {(r.stderr.strip().splitlines() or ['?'])[0]}")
        return program

    def refusal(self, program):
        """The command's message refusing @program, of another class or machine than the agent's."""
        kind = KIND.get((elf_word_size(program), elf_machine(program)))
        agent_kind = KIND.get((elf_word_size(TARGET), BUILD_MACHINE))
        if kind is None or agent_kind is None:
            self.skipTest(f"no names here for the machines of {program} ({elf_machine(program)}) "
                          f"and of this build ({BUILD_MACHINE})")
        return f"{program}: a {kind} program, the agent needs a {agent_kind} one: it cannot be preloaded"

    def test_a_program_of_the_other_class_is_refused_naming_its_class_and_the_agents(self):
        program = self.other_class_program()
        self.assertNotEqual(elf_word_size(program), elf_word_size(TARGET))
        marker = os.path.join(self.tmp, "ran")
        r = self.record(program, marker)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.splitlines(), ["relstack: " + self.refusal(program)])
        self.assertFalse(os.path.exists(marker), "the refused program ran")

    def test_bad_input_is_one_line_and_a_nonzero_exit(self):
        # a static program: refused as such where it is the build's machine's, else as another machine's
        ldconfig = "/sbin/ldconfig"
        static = (f"{ldconfig}: statically linked: the agent cannot be preloaded"
                  if elf_machine(ldconfig) == BUILD_MACHINE else self.refusal(ldconfig))
        cases = [
            (["--", "no-such-program-here"], 127, "no-such-program-here: no such program in PATH"),
            (["--", ldconfig], 2, static),
            (["-o", "/dev/null/out", "--", TARGET], 2, "/dev/null/out: cannot make the output directory"),
            (["-o", "/proc/self", "--", TARGET], 2, "/proc/self: output directory not writable"),
            (["--call", "malloc if arg0 >", "--", "/bin/true"], 1, "--call 'malloc if arg0 >': column 17:"),
            (["--call", "write if arg9 == 1", "--", "/bin/true"], 1, "column 13: arguments are arg0 to arg5"),
            (["--call", "malloc when arg0", "--", "/bin/true"], 1, "column 8: expected 'if EXPR'"),
            (["--sample", "0", "--", "/bin/true"], 1, "--sample: '0' is not a frequency"),
            (["--on-signal", "KILL", "--", "/bin/true"], 1, "--on-signal: 'KILL' is not a signal"),
            ([], 1, "record: missing PROGRAM"),
        ]
        for args, status, message in cases:
            with self.subTest(args=args):
                r = subprocess.run([RELSTACK, "record", *args], capture_output=True, text=True, cwd=self.tmp)
                self.assertEqual(r.returncode, status, r.stderr)
                first = r.stderr.splitlines()[0]
                self.assertIn(message, first)
                self.assertTrue(first.startswith("relstack: "), first)


if __name__ == "__main__":
    unittest.main(verbosity=2)
