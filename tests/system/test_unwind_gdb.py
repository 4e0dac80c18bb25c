#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The unwinder's traces against gdb's backtraces of the same process.

Runs unwind_gdb_target under gdb, stopping at each call of
relstack_capture and printing there, through gdb's Python API, the
frames gdb unwinds (inlined frames left out: a trace has one word per
frame on the stack), each as its function's name and its pc.  gdb also
shows frames for functions that tail-called the next one, which it
rebuilds from the call sites in the C library's debug information: they
are not on the stack and will not be returned to, so a trace has no word
for them, and they are left out of the comparison (and counted).  Frame #0 is
relstack_capture itself; the trace's first word is the return address
into its caller, frame #1.

Every capture of the corpus (unwind_gdb_target.c) must be either reliable
and equal to gdb's frames #1, #2, ... word for word, to the outermost frame
gdb finds (_start on the main thread, clone3 on another), or unreliable
with the reason its stack calls for.  A handler's capture crosses the
signal frame, and the interrupted instruction's CFI row proves the
interrupted function's frame: reliable too, with the SIGNAL marker where
gdb has the trampoline's frame.  Never reliable with a frame missing,
extra or misnamed.

Usage: test_unwind_gdb.py GDB TARGET
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

GDB, TARGET = sys.argv[1:3]
del sys.argv[1:3]

REASON_SIGNAL_FRAME = 0x10
with open(TARGET, "rb") as _f:
    WORD_BITS = 64 if _f.read(5)[4] == 2 else 32  # the target's ELF class: its entry words' width
SIGNAL_WORD = (1 << WORD_BITS) - 3  # the SIGNAL marker of absolute words

# Captures that must be reliable, on both threads unless said otherwise.
RELIABLE = ["chain", "pthread_once", "qsort", "bsearch", "twalk", "dl_iterate_phdr", "tail_call"]
RELIABLE_MAIN_ONLY = ["atexit", "on_exit", "destructor"]
# Captures in a handler that interrupted the C library: a signal frame crossed
# (relstack_capture), or the interrupted stack itself (relstack_capture_context).
SIGNAL = ["signal", "signal_context"]
# The same on threads blocked in a system call: tags blocked.KIND, blocked_context.KIND.
BLOCKED = ["read", "nanosleep", "cond_wait"]

PRINT_FRAMES = r'''
import gdb
class PrintFrames(gdb.Command):
    def __init__(self):
        super().__init__("relstack-frames", gdb.COMMAND_USER)
    def invoke(self, arg, from_tty):
        f = gdb.newest_frame()
        out = []
        while f is not None:
            if f.type() != gdb.INLINE_FRAME:
                kind = {gdb.SIGTRAMP_FRAME: "sig", gdb.TAILCALL_FRAME: "tail"}.get(f.type(), "fn")
                out.append("%s:%s:%#x" % (kind, f.name() or "?", f.pc()))
            f = f.older()
        print("==frames== " + " ".join(out))
PrintFrames()
'''


def run_under_gdb():
    tmp = tempfile.mkdtemp(prefix="relstack-gdb-")
    traces_path = os.path.join(tmp, "traces")
    script = os.path.join(tmp, "frames.py")
    cmds = os.path.join(tmp, "cmds")
    with open(script, "w") as f:
        f.write(PRINT_FRAMES)
    with open(cmds, "w") as f:
        f.write("set pagination off\nset confirm off\nset print thread-events off\n"
                "set backtrace past-main on\nhandle SIGUSR1 nostop noprint pass\n"
                "handle SIGUSR2 nostop noprint pass\n"
                f"source {script}\n"
                "break relstack_capture\ncommands\nsilent\nrelstack-frames\ncontinue\nend\n"
                "break relstack_capture_context\ncommands\nsilent\nrelstack-frames\ncontinue\nend\n"
                f"run {traces_path}\n")
    try:
        p = subprocess.run([GDB, "-batch", "-nx", "-x", cmds, TARGET], capture_output=True, text=True,
                           timeout=300)
        traces = []
        if os.path.exists(traces_path):
            with open(traces_path) as f:
                traces = [line.split() for line in f if line.strip()]
    finally:
        shutil.rmtree(tmp)
    if "ptrace: Operation not permitted" in p.stdout + p.stderr:
        print("skipped: gdb may not trace processes here (ptrace not permitted)")
        sys.exit(77)
    frames = []
    for line in p.stdout.splitlines():
        if line.startswith("==frames== "):
            frames.append([tuple(x.split(":")) for x in line.split()[1:]])
    return p, frames, traces


class AgainstGdb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gdb, cls.frames, raw = run_under_gdb()
        cls.traces = []
        for t in raw:
            tag, reasons, words = t[0], int(t[1], 16), t[2:]
            end = bool(words) and words[-1] == "END"
            cls.traces.append((tag, reasons, [int(w, 16) for w in words if w != "END"], end))
        cls.by_tag = {t[0]: (i, t) for i, t in enumerate(cls.traces)}

    def test_gdb_stopped_at_every_capture(self):
        expected = {f"{t}.{w}" for t in RELIABLE + SIGNAL for w in ("main", "thread")}
        expected |= {f"{t}.main" for t in RELIABLE_MAIN_ONLY}
        expected |= {f"{t}.{k}" for t in ("blocked", "blocked_context") for k in BLOCKED}
        self.assertEqual(set(self.by_tag), expected, self.gdb.stdout[-3000:] + self.gdb.stderr[-3000:])
        self.assertEqual(len(self.frames), len(self.traces))
        for fr in self.frames:
            self.assertIn(fr[0][1], ("relstack_capture", "relstack_capture_context"))

    def gdb_frames(self, tag):
        i, _ = self.by_tag[tag]
        return [f for f in self.frames[i][1:] if f[0] != "tail"]

    def test_tail_callers_gdb_rebuilt_are_not_on_the_stack(self):
        # twalk jumps to its recursive helper: gdb rebuilds twalk's frame from the call sites
        rebuilt = [name for fr in self.frames for kind, name, _ in fr if kind == "tail"]
        print(f"gdb rebuilt {len(rebuilt)} tail-caller frames: {sorted(set(rebuilt))}")
        for where in ("main", "thread"):
            names = [name for _, name, _ in self.check_reliable(f"twalk.{where}")]
            self.assertEqual(names[:2], ["corpus_capture", "twalk_action"])
            self.assertEqual(names[-5 if where == "main" else -4], "run_corpus")

    def check_reliable(self, tag):
        _, (_, reasons, words, end) = self.by_tag[tag]
        frames = self.gdb_frames(tag)
        detail = f"{tag}: reasons {reasons:#x}\n trace {[hex(w) for w in words]}\n gdb   {frames}"
        self.assertEqual(reasons, 0, "not reliable: " + detail)
        self.assertTrue(end, "no END: " + detail)
        # every frame gdb finds, in order, and nothing else
        self.assertEqual(words, [int(pc, 16) for _, _, pc in frames], "differs from gdb: " + detail)
        self.assertEqual(frames[0][1], "corpus_capture", detail)
        return frames

    def test_reliable_traces_equal_gdb_frame_by_frame(self):
        for tag in RELIABLE:
            for where in ("main", "thread"):
                with self.subTest(tag=tag, where=where):
                    frames = self.check_reliable(f"{tag}.{where}")
                    # the outermost frame: where every thread of this kind starts
                    self.assertEqual(frames[-1][1], "_start" if where == "main" else "clone3")

    def test_traces_of_handlers_run_by_exit_equal_gdb(self):
        for tag in RELIABLE_MAIN_ONLY:
            with self.subTest(tag=tag):
                frames = self.check_reliable(f"{tag}.main")
                self.assertEqual(frames[-1][1], "_start")
                self.assertIn("exit", [name.split("_")[-1] for _, name, _ in frames])

    def test_tail_called_function_returns_to_the_caller_of_its_caller(self):
        for where in ("main", "thread"):
            names = [name for _, name, _ in self.check_reliable(f"tail_call.{where}")]
            self.assertNotIn("tail_caller", names)
            self.assertEqual(names[1:3], ["tail_callee", "tail_entry"])

    def check_signal(self, tag, context):
        """A handler's capture (or its context's) against gdb: reliable, equal frame by frame."""
        _, (_, reasons, words, end) = self.by_tag[tag]
        frames = self.gdb_frames(tag)
        sig = [k for k, _, _ in frames].index("sig")
        detail = f"{tag}: reasons {reasons:#x}\n trace {[hex(w) for w in words]}\n gdb   {frames}"
        self.assertEqual(reasons, 0, "not reliable: " + detail)
        self.assertTrue(end, "no END: " + detail)
        if context:
            # from the interrupted pc (its row proves its frame) to the outermost frame
            expect = [int(pc, 16) for _, _, pc in frames[sig + 1:]]
        else:
            # the handler's frames, the SIGNAL marker where gdb has the trampoline's frame, then the same
            expect = [int(pc, 16) for _, _, pc in frames]
            expect[sig] = SIGNAL_WORD
        self.assertEqual(words, expect, "differs from gdb: " + detail)
        return frames

    def test_context_a_signal_interrupted_in_the_c_library_is_reliable_and_equals_gdb(self):
        for where in ("main", "thread"):
            with self.subTest(where=where):
                frames = self.check_signal(f"signal_context.{where}", True)
                self.assertEqual(frames[-1][1], "_start" if where == "main" else "clone3")

    def test_handler_that_interrupted_the_c_library_is_reliable_and_equals_gdb(self):
        for where in ("main", "thread"):
            with self.subTest(where=where):
                self.check_signal(f"signal.{where}", False)

    def test_threads_blocked_in_system_calls_captured_from_a_handler_are_reliable_and_equal_gdb(self):
        for kind in BLOCKED:
            for tag in ("blocked", "blocked_context"):
                with self.subTest(kind=kind, tag=tag):
                    frames = self.check_signal(f"{tag}.{kind}", tag == "blocked_context")
                    names = [name for _, name, _ in frames]
                    self.assertIn("blocked_thread", names)
                    self.assertEqual(names[-1], "clone3")


if __name__ == "__main__":
    unittest.main(verbosity=2)
