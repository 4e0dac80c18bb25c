#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The unwinder's traces against gdb's backtraces of the same process.

Runs unwind_gdb_target under gdb, stopping at each call of
relstack_capture and printing gdb's backtrace there.  For each capture
(main thread, then a second thread) the trace must be reliable and end
with END, and its frames must be the functions of gdb's frames #1, #2,
... (frame #0 is relstack_capture itself): the program, the linked
library, the dlopen'd library, and last the C runtime's entry frame
(__libc_start_call_main on the main thread, start_thread on the other),
where the frame-pointer walk ends.

Usage: test_unwind_gdb.py GDB TARGET
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

GDB, TARGET = sys.argv[1:3]
del sys.argv[1:3]

FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][\w.]*) ")

# The chain both captures walk, innermost first, as the target names it.
CHAIN = [
    ("gdb_capture_here", "unwind_gdb_target"),
    ("rs_unwind_dl_inner", "librs_unwind_dl.so"),
    ("rs_unwind_dl_call", "librs_unwind_dl.so"),
    ("gdb_from_dl", "unwind_gdb_target"),
    ("rs_unwind_fp_inner", "librs_unwind_fp.so"),
    ("rs_unwind_fp_call", "librs_unwind_fp.so"),
    ("gdb_chain_start", "unwind_gdb_target"),
]


def run_under_gdb():
    tmp = tempfile.mkdtemp(prefix="relstack-gdb-")
    names = os.path.join(tmp, "traces")
    cmds = os.path.join(tmp, "cmds")
    with open(cmds, "w") as f:
        f.write("set pagination off\nset confirm off\nset print thread-events off\nset backtrace past-main on\n"
                "break relstack_capture\ncommands\nsilent\necho ==bt==\\n\nbt\ncontinue\nend\n"
                f"run {names}\n")
    try:
        p = subprocess.run([GDB, "-batch", "-nx", "-x", cmds, TARGET], capture_output=True, text=True,
                           timeout=300)
        traces = []
        if os.path.exists(names):
            with open(names) as f:
                traces = [line.split() for line in f if line.strip()]
    finally:
        shutil.rmtree(tmp)
    if "ptrace: Operation not permitted" in p.stdout + p.stderr:
        print("skipped: gdb may not trace processes here (ptrace not permitted)")
        sys.exit(77)
    backtraces = []
    for block in p.stdout.split("==bt==")[1:]:
        frames = []
        for line in block.splitlines():
            m = FRAME.match(line)
            if m:
                frames.append(m.group(2))
        backtraces.append(frames)
    return p, backtraces, traces


class AgainstGdb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gdb, cls.bts, cls.traces = run_under_gdb()

    def test_gdb_stopped_at_both_captures(self):
        self.assertEqual(len(self.bts), 2, self.gdb.stdout + self.gdb.stderr)
        self.assertEqual(len(self.traces), 2)
        for bt in self.bts:
            self.assertEqual(bt[0], "relstack_capture")

    def check(self, i, caller, entry):
        reasons, nwords, end, *frames = self.traces[i]
        bt = self.bts[i][1:]
        self.assertEqual(reasons, "0", f"capture {i} not reliable: {self.traces[i]}")
        self.assertEqual(end, "1")
        self.assertEqual(int(nwords), len(frames) + 1)  # the frames, then END
        expect = CHAIN + [caller]
        self.assertEqual(len(frames), len(expect) + 1)  # then the C runtime's entry frame
        for (fn, obj), got in zip(expect, frames):
            self.assertEqual(got, f"{fn}@{obj}")
        # the same functions, in the same order, as gdb's frames above relstack_capture
        self.assertEqual([f.split("@")[0] for f in frames[:-1]], bt[:len(expect)])
        # the walk ends where gdb sees the C runtime's thread entry
        self.assertEqual(bt[len(expect)], entry)
        self.assertTrue(frames[-1].endswith("@libc.so.6"), frames[-1])

    def test_main_thread_trace_equals_gdb_backtrace(self):
        self.check(0, ("main", "unwind_gdb_target"), "__libc_start_call_main")

    def test_second_thread_trace_equals_gdb_backtrace(self):
        self.check(1, ("gdb_thread", "unwind_gdb_target"), "start_thread")


if __name__ == "__main__":
    unittest.main(verbosity=2)
