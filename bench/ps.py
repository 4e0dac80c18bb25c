#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""relstack ps against eu-stack -p and gdb's thread apply all bt, in the
same run, on bench_ps_target: N threads of 20 frames each (N = 8, then
64, plus the main thread).  Prints, per N, each command's whole time
(the mean of RUNS runs; gdb's of fewer), relstack's ratio to each, and
how long relstack kept each thread stopped (mean and max over all
threads of all runs, from its json output).  First, the time the command
takes to start and exit doing nothing (relstack --version), part of every
figure.  Figures only: nothing is
asserted.

Usage: bench/ps.py BUILDDIR
"""
import json
import shutil
import statistics
import subprocess
import sys
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
relstack = build + "/tools/relstack"
target = build + "/bench/bench_ps_target"
RUNS = 20
GDB_RUNS = 3


def timed(argv, runs):
    times = []
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            return None, None
        out = p.stdout
    return statistics.mean(times) * 1000, out


startup_ms, _ = timed([relstack, "--version"], RUNS)
print("ps_startup: relstack --version %.2f ms (the command's start, its own object table included)" % startup_ms)
for nthreads in (8, 64):
    p = subprocess.Popen([target, str(nthreads), "20"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdout.readline()
    try:
        pid = str(p.pid)
        rel_ms, _ = timed([relstack, "ps", "--no-lines", pid], RUNS)
        stopped = []
        reliable = 0
        for _ in range(RUNS):
            snap = json.loads(subprocess.run([relstack, "ps", "--format", "json", "--no-lines", pid],
                                             capture_output=True, text=True).stdout)
            stopped += [t["stopped_ns"] / 1000 for t in snap["threads"] if "error" not in t]
            reliable = sum(1 for t in snap["threads"] if t.get("reliable"))
        print("ps_%d_threads: relstack ps %.2f ms (%d of %d threads reliable)" %
              (nthreads, rel_ms, reliable, nthreads + 1))
        print("ps_%d_threads_stopped: mean %.1f us, max %.1f us per thread" %
              (nthreads, statistics.mean(stopped), max(stopped)))
        if shutil.which("eu-stack"):
            eu_ms, _ = timed(["eu-stack", "-p", pid], RUNS)
            if eu_ms:
                print("ps_%d_threads: eu-stack -p %.2f ms: ratio %.3f vs eu-stack" % (nthreads, eu_ms, rel_ms / eu_ms))
        if shutil.which("gdb"):
            gdb_ms, _ = timed(["gdb", "-nx", "-batch", "-p", pid, "-ex", "thread apply all bt"], GDB_RUNS)
            if gdb_ms:
                print("ps_%d_threads: gdb thread apply all bt %.2f ms: ratio %.3f vs gdb" % (nthreads, gdb_ms, rel_ms / gdb_ms))
    finally:
        p.stdin.close()
        p.kill()
        p.wait()
