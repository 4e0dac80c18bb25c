#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Stacks that got a false `reliable` verdict, as named regression tests.

A reliable trace is a promise: every frame the thread will return
through, each once, to the outermost.  Each test builds a small program
(verdict-defects/) with the build's C compiler (CC) at test time, for the
build's machine (x86-64 or i386; assembly in verdict-defects/arch/), linked
with the build's librelstack, captures where the stack has a known shape, and holds every
trace to the promise: reliable only if its frames are exactly the known
functions, innermost first, to _start (or clone3), and END; otherwise
unreliable.  Frames are named by gdb from the files (`info symbol` of
the return address minus one), never by relstack.

The shapes:

- a file built without frame pointers (nofp.c, plain -O2) called from a
  frame-pointer program, calling back: its frame keeps no record, so the
  record above the callback's is its caller's caller's;
- a comparator that realigns its stack through a DRAP (aligned storage
  and a variable-length array), called back by lfind, tfind and qsort at
  several depths, on a thread whose walk cache was just used through the
  same call site of the C library;
- hand-written assembly without CFI that calls back without a frame
  record: nothing can prove its frame, so the trace must be unreliable
  (with and without the stack checker).

And controls, so that nothing passes by calling everything unreliable:
the same shapes with frame pointers (nofp.c built with them), a
comparator that does not realign, and assembly that keeps a frame record
and says so in its CFI, are reliable and exact.

relstack ps on a process spinning in the first shape: its check for the
function whose frame the record skips is "inside" or "cannot tell",
never "safe" (needs ptrace: skipped, saying so, where it is refused).
relstack record --sample on the second shape: a reliable sample holds
each frame once (names by relstack report: the sampler's stacks are
relative).

Usage: test_verdict_defects.py RELSTACK GDB INCLUDE_DIR LIB_DIR SOURCE_DIR
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from elf_program import EM_386, EM_X86_64, elf_machine

RELSTACK, GDB, INCLUDE, LIBDIR, SOURCES = sys.argv[1:6]
del sys.argv[1:6]
# The build's C compiler (tests/system/meson.build sets CC: gcc -m32 for an i386 build).
CC = shlex.split(os.environ.get("CC", "gcc"))
# The build's machine, and how its code shows the shapes (objdump's AT&T syntax): a function
# that keeps no frame pointer never names the frame-pointer register, one that keeps it pushes
# it, and the comparator realigns the stack pointer to 64 bytes.
MACHINE = elf_machine(os.path.join(LIBDIR, "librelstack.so"))
# And what the C library puts between qsort's caller and the comparator: x86-64's qsort
# jumps to __qsort_r, i386's calls it (a frame of its own).
SHAPES = {
    EM_X86_64: {"arch": "x86_64", "fp": "%rbp", "realign": "and    $0xffffffffffffffc0,%rsp",
                "qsort": ["msort_with_tmp", "qsort_r"]},
    EM_386: {"arch": "i386", "fp": "%ebp", "realign": "and    $0xffffffc0,%esp",
             "qsort": ["msort_with_tmp", "qsort_r", "qsort"]},
}
SHAPE = SHAPES.get(MACHINE)

FP = ["-fno-omit-frame-pointer"]
# Normalized names (see normal()): the main thread's outermost frames and a thread's.
MAIN_TAIL = ["main", "libc_start_call_main", "libc_start_main", "start"]
THREAD_TAIL = ["thread_main", "start_thread", "clone3"]
# What each C library routine puts between its caller and the callback.
LIBRARY_FRAMES = {"lfind": ["lfind"], "tfind": ["tfind"], "qsort": SHAPE["qsort"] if SHAPE else []}
REALIGN_DEPTHS = 6


def normal(name):
    """One name per function: no internal alias prefix, no leading underscores, no clone or @plt suffix."""
    if name is None:
        return "?"
    return re.sub(r"^__GI_", "", name).lstrip("_").split(".")[0].split("@")[0]


TMP = None


def build(name, *units, extra=(), relstack=True):
    """Link program @name from @units, each (source, flags); returns its path."""
    out = os.path.join(TMP, name)
    objs = []
    for i, (src, flags) in enumerate(units):
        obj = os.path.join(TMP, "%s.%d.o" % (name, i))
        subprocess.run(CC + ["-O2", "-D_GNU_SOURCE", "-Wall", "-I", INCLUDE, "-I", SOURCES, *flags, *extra, "-c",
                             os.path.join(SOURCES, src), "-o", obj], check=True)
        objs.append(obj)
    link = ["-L", LIBDIR, "-lrelstack", "-Wl,-rpath," + LIBDIR] if relstack else []
    subprocess.run(CC + ["-pie", *objs, "-o", out, *link, "-ldl", "-lpthread"], check=True)
    return out


def disassembly(prog, function):
    """The instructions of @function in @prog, as objdump prints them."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", prog], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^[0-9a-f]+ <%s>:\n(.*?)(?:\n\n|\Z)" % re.escape(function), out, re.S | re.M)
    assert m, "%s not found in %s" % (function, prog)
    return m.group(1)


NAME_ADDRESSES = r'''
import gdb
for a in [%s]:
    s = gdb.execute("info symbol %%#x" %% a, to_string=True).strip()
    print("==sym== %%#x %%s" %% (a, s))
'''


def gdb_names(path, offsets):
    """{offset: function name} for @offsets in the file @path, by gdb (with the debug file it finds)."""
    script = os.path.join(TMP, "names.py")
    with open(script, "w") as f:
        f.write(NAME_ADDRESSES % ", ".join("%#x" % o for o in sorted(offsets)))
    p = subprocess.run([GDB, "-nx", "-batch", "-ex", "source " + script, path], capture_output=True, text=True,
                       timeout=300)
    names = {}
    for line in p.stdout.splitlines():
        if line.startswith("==sym== "):
            _, addr, text = line.split(" ", 2)
            # "lfind + 69 in section .text of FILE", or "No symbol matches 0x..."
            name = text.split(" in section ")[0].split(" + ")[0]
            names[int(addr, 16)] = None if text.startswith("No symbol") else name
    missing = set(offsets) - set(names)
    assert not missing, "gdb named nothing for %s: %s" % (path, p.stderr[-2000:])
    return names


class Trace:
    def __init__(self, tag, reasons, names, end, words):
        self.tag, self.reasons, self.names, self.end, self.words = tag, reasons, names, end, words

    def __repr__(self):
        return "%s: %s %s%s" % (self.tag, "reliable" if self.reasons == 0 else "unreliable (%#x)" % self.reasons,
                                " <- ".join(self.names), " END" if self.end else "")


def run_traces(prog, *args):
    """Run @prog; its traces, each frame named by gdb from its file."""
    p = subprocess.run([prog, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (prog, p.returncode, p.stderr)
    raw = []
    wanted = {}
    for line in p.stdout.splitlines():
        tag, reasons, *words = line.split()
        raw.append((tag, int(reasons, 16), words))
        for w in words:
            if "@" in w:
                path, off = w.rsplit("@", 1)
                # a return address: the call is the instruction before it
                wanted.setdefault(path, set()).add(int(off, 16) - 1)
    names = {path: gdb_names(path, offs) for path, offs in wanted.items() if path != "?"}
    traces = []
    for tag, reasons, words in raw:
        frames, end = [], False
        for w in words:
            if w == "END":
                end = True
                break
            if "@" in w:
                path, off = w.rsplit("@", 1)
                frames.append(normal(names.get(path, {}).get(int(off, 16) - 1)))
            else:
                frames.append(w)
        traces.append(Trace(tag, reasons, frames, end, words))
    return traces


def ptrace_allowed():
    child = subprocess.Popen(["sleep", "30"])
    try:
        p = subprocess.run([RELSTACK, "ps", str(child.pid)], capture_output=True, text=True, timeout=120)
        return p.returncode == 0, p.stderr.strip()
    finally:
        child.kill()
        child.wait()


class VerdictTestCase(unittest.TestCase):
    def assert_reliable_only_if_exact(self, traces, expected):
        """Every trace reliable only with END and exactly expected(trace)'s frames."""
        bad = []
        for t in traces:
            if t.reasons == 0 and (not t.end or t.names != expected(t)):
                bad.append("%r\n    the stack:  %s" % (t, " <- ".join(expected(t))))
        if bad:
            self.fail("reliable traces that are not the stack (%d of %d):\n  %s"
                      % (len(bad), len(traces), "\n  ".join(bad)))

    def assert_reliable_and_exact(self, traces, expected):
        bad = ["%r\n    the stack:  %s" % (t, " <- ".join(expected(t))) for t in traces
               if t.reasons != 0 or not t.end or t.names != expected(t)]
        if bad:
            self.fail("traces not reliable and exact (%d of %d):\n  %s" % (len(bad), len(traces), "\n  ".join(bad)))

    def assert_tags(self, traces, tags):
        self.assertEqual(sorted(t.tag for t in traces), sorted(tags), traces)


def chain_expected(t):
    tail = MAIN_TAIL if t.tag == "cb.main" else THREAD_TAIL
    return ["cb", "nofp_apply", "outer_fp"] + tail


CHAIN_TAGS = ["cb.main"] * 2 + ["cb.thread"] * 2


class FileWithoutFramePointers(VerdictTestCase):
    """nofp_apply (no frame pointer) between outer_fp and cb (frame pointers)."""

    @classmethod
    def setUpClass(cls):
        cls.nofp = build("chain_nofp", ("nofp.c", []), ("callback_chain.c", FP))
        cls.fp = build("chain_fp", ("nofp.c", FP), ("callback_chain.c", FP))

    def test_the_file_is_built_as_the_shape_needs_without_and_with_a_frame_record(self):
        self.assertNotIn(SHAPE["fp"], disassembly(self.nofp, "nofp_apply"))
        self.assertIn("push   " + SHAPE["fp"], disassembly(self.fp, "nofp_apply"))

    def test_a_callback_through_a_file_without_frame_pointers_is_reliable_only_with_its_callers_caller(self):
        traces = run_traces(self.nofp, "capture")
        self.assert_tags(traces, CHAIN_TAGS)
        self.assert_reliable_only_if_exact(traces, chain_expected)

    def test_the_same_program_all_frame_pointers_is_reliable_and_exact(self):
        traces = run_traces(self.fp, "capture")
        self.assert_tags(traces, CHAIN_TAGS)
        self.assert_reliable_and_exact(traces, chain_expected)

    def ps(self, prog, *args):
        ok, why = ptrace_allowed()
        if not ok:
            self.skipTest("relstack ps cannot ptrace a child process here (%s)" % why)
        target = subprocess.Popen([prog, "spin"], stdout=subprocess.PIPE)
        try:
            self.assertEqual(target.stdout.readline().strip(), b"ready")
            time.sleep(0.2)
            p = subprocess.run([RELSTACK, "ps", *args, str(target.pid)], capture_output=True, text=True,
                               timeout=120)
            return p.returncode, p.stdout, p.stderr
        finally:
            target.kill()
            target.wait()
            target.stdout.close()

    def ps_frames(self, prog):
        rc, out, err = self.ps(prog, "--format", "json", "--check", "outer_fp")
        self.assertIn(rc, (0, 3, 4), err)
        thread, = json.loads(out)["threads"]
        return rc, thread, [normal(f.get("symbol")) for f in thread["frames"]]

    def test_ps_check_of_the_function_above_a_frame_without_frame_pointer_is_never_safe(self):
        rc, out, err = self.ps(self.nofp, "--check", "outer_fp")
        self.assertIn(rc, (3, 4), "relstack ps --check outer_fp exited %d (0 is safe):\n%s%s" % (rc, out, err))
        self.assertNotIn("check: safe", out)
        rc, thread, names = self.ps_frames(self.nofp)
        if thread["reliable"]:
            self.assertEqual(names, ["cb", "nofp_apply", "outer_fp"] + MAIN_TAIL, thread)

    def test_ps_check_on_the_all_frame_pointer_program_finds_the_thread_inside(self):
        rc, out, err = self.ps(self.fp, "--check", "outer_fp")
        self.assertEqual(rc, 3, out + err)
        self.assertIn("check: inside: outer_fp+", out)
        rc, thread, names = self.ps_frames(self.fp)
        self.assertTrue(thread["reliable"], thread)
        self.assertEqual(names, ["cb", "nofp_apply", "outer_fp"] + MAIN_TAIL, thread)


def realign_expected(t):
    routine, comparator, thread, depth = t.tag.split(".")
    tail = MAIN_TAIL if thread == "main" else THREAD_TAIL
    if routine == "warm":
        return ["warm", "run"] + tail
    return [comparator] + LIBRARY_FRAMES[routine] + ["at"] * (int(depth) + 1) + ["run"] + tail


REALIGN_TAGS = (["warm.none.%s.0" % th for th in ("main", "thread")] +
                ["%s.%s.%s.%d" % (r, c, th, d) for r in LIBRARY_FRAMES for c in ("cmp_plain", "cmp")
                 for th in ("main", "thread") for d in range(REALIGN_DEPTHS)])


class CallbackThatRealigns(VerdictTestCase):
    """cmp realigns its stack through a DRAP; lfind, tfind and qsort call it."""

    @classmethod
    def setUpClass(cls):
        cls.realign = build("realign", ("realign.c", FP))
        cls.plain = build("realign_plain", ("realign.c", FP + ["-DNO_REALIGN"]))

    def test_the_comparator_realigns_its_stack_and_the_control_does_not(self):
        self.assertIn(SHAPE["realign"], disassembly(self.realign, "cmp"))
        self.assertNotIn(SHAPE["realign"], disassembly(self.plain, "cmp"))

    def test_a_callback_that_realigns_its_stack_is_reliable_only_with_each_frame_once(self):
        traces = run_traces(self.realign)
        self.assert_tags(traces, REALIGN_TAGS)
        self.assert_reliable_only_if_exact(traces, realign_expected)

    def test_samples_through_a_callback_that_realigns_are_reliable_only_with_each_frame_once(self):
        # the sampler walks from the interrupted context (relstack_capture_context); names by relstack report
        prog = build("realign_sampled", ("realign_sampled.c", FP), relstack=False)
        out = os.path.join(TMP, "sampled")
        p = subprocess.run([RELSTACK, "record", "-o", out, "--sample", "999", "--", prog], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        path, = [os.path.join(out, f) for f in os.listdir(out)]
        p = subprocess.run([RELSTACK, "report", "--event", "sample", "--format", "json", "--no-lines", path],
                           capture_output=True, text=True, timeout=300, check=True)
        samples = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        in_shape = bad = 0
        wrong = []
        for r in samples:
            names = [normal(f.get("symbol")) for f in r["frames"] if f.get("marker") is None]
            if "at" not in names:
                continue  # the program's start and end
            in_shape += 1
            if r["reliable"] and not sampled_shape_ok(names):
                bad += 1
                wrong.append(" <- ".join(names))
        self.assertGreater(in_shape, 20, "too few samples in the loop: %d of %d" % (in_shape, len(samples)))
        if bad:
            self.fail("reliable samples that are not the stack (%d of %d):\n  %s"
                      % (bad, in_shape, "\n  ".join(sorted(set(wrong)))))

    def test_a_callback_that_does_not_realign_is_reliable_and_exact_at_every_depth(self):
        traces = run_traces(self.plain)
        self.assert_tags(traces, REALIGN_TAGS)
        self.assert_reliable_and_exact(traces, realign_expected)


def sampled_shape_ok(names):
    """A sample of realign_sampled's loop: some innermost part of busy <- cmp <- lfind, 1 to 6 at, main, ..."""
    outer = ["at"] + MAIN_TAIL  # the last at, then main to _start
    # what the comparators call (busy, and memset for the variable-length array), either comparator, lfind
    inner = [("busy", "memset"), ("cmp", "cmp_plain"), ("lfind",)]
    if len(names) < len(outer) or names[-len(outer):] != outer:
        return False
    rest = names[:-len(outer)]
    ats = 0
    while rest and rest[-1] == "at":
        rest.pop()
        ats += 1
    if ats > 5:
        return False
    want = inner[len(inner) - len(rest):] if len(rest) <= len(inner) else None
    return want is not None and all(n.startswith(w) for w, n in zip(want, rest))


def asm_expected(t):
    fn = t.tag.split(".")[0]
    return ["cb", fn, "caller_fp" if fn == "asm_call_fp" else "caller"] + MAIN_TAIL


class AssemblyWithoutCfi(VerdictTestCase):
    """asm_call (arch/<cpu>/asm_call.S): a call with no frame record and no CFI, between caller and cb."""

    @classmethod
    def setUpClass(cls):
        cls.prog = build("asm_chain", ("asm_chain.c", FP), (os.path.join("arch", SHAPE["arch"], "asm_call.S"), []))
        cls.traces = run_traces(cls.prog)

    def test_every_capture_ran(self):
        self.assert_tags(self.traces, [f + "." + k for f in ("asm_call", "asm_call_fp") for k in ("plain", "check")
                                       for _ in range(2)])

    def test_assembly_without_cfi_in_a_frame_pointer_program_is_unreliable_with_a_reason(self):
        traces = [t for t in self.traces if t.tag.startswith("asm_call.")]
        self.assertTrue(traces)
        reliable = [t for t in traces if t.reasons == 0]
        if reliable:
            self.fail("reliable through a frame nothing proves (%d of %d; the stack: %s):\n  %s"
                      % (len(reliable), len(traces), " <- ".join(asm_expected(traces[0])),
                         "\n  ".join(map(repr, reliable))))

    def test_assembly_that_keeps_a_frame_record_and_says_so_in_its_cfi_is_reliable_and_exact(self):
        self.assert_reliable_and_exact([t for t in self.traces if t.tag.startswith("asm_call_fp.")], asm_expected)


def setUpModule():
    global TMP
    TMP = tempfile.mkdtemp(prefix="relstack-verdict-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    if not shutil.which(CC[0]):
        print("SKIP: %s is not installed (Debian package gcc): these tests build their programs at test time"
              % CC[0], file=sys.stderr)
        sys.exit(77)
    if SHAPE is None:
        print("SKIP: the shapes are x86-64 and i386 code (assembly, GCC's stack realignment); this build's "
              "programs are for ELF machine %d" % MACHINE, file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
