#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The agent's costs, printed, never asserted (issue targets in README):

  record_startup_*      a program's start-up, to main's first instruction, with
                        the agent preloaded vs without (median of many runs);
                        record_run_true_extra: the whole of /bin/true, exit included
  record_sample_*       the sampler at 1 kHz of CPU time on a CPU-bound python3
                        workload vs `perf record -F 1000 -g` on the same one:
                        overhead in % of the bare run's CPU time (user + system
                        of the program, and of perf itself; the least of runs)
  record_call_*         --call: ns per call of labs(3) through the PLT, bare,
                        under a filter that never matches, and recorded

Usage: bench/record.py BUILDDIR
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
relstack = os.path.join(build, "tools", "relstack")
agent = os.path.abspath(os.path.join(build, "src", "librelstack-agent.so"))
bench = os.path.join(build, "bench", "bench_record")
tmp = tempfile.mkdtemp(prefix="relstack-bench-")
out = os.path.join(tmp, "out")


def agent_env(**kw):
    env = dict(os.environ, LD_PRELOAD=agent, RELSTACK_OUTPUT=out)
    env.update(kw)
    return env


def cpu(args, env=None, runs=3):
    """The least CPU time (user + system, the program's and its children's) of @runs runs:
    unlike wall time, the other load of a shared machine does not count in it."""
    times = []
    for _ in range(runs):
        p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = status
        times.append(ru.ru_utime + ru.ru_stime)
        shutil.rmtree(out, ignore_errors=True)
    return min(times)


def wall(args, env=None, runs=5, best=False):
    """Median wall time of @runs runs, or the fastest (the load of a shared machine only ever adds)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
        shutil.rmtree(out, ignore_errors=True)
    return min(times) if best else statistics.median(times)


try:
    # start-up: from before the fork to main's first instruction, and the whole run of /bin/true
    def to_main(env=None):
        t = time.monotonic_ns()
        printed = subprocess.run([bench, "now"], env=env, capture_output=True, text=True, check=True).stdout
        shutil.rmtree(out, ignore_errors=True)
        return (int(printed) - t) / 1e6

    # runs interleaved, so that a change in the machine's load meets both sides
    bare_m, under_m, bare_t, under_t = [], [], [], []
    for _ in range(40):
        bare_m.append(to_main())
        under_m.append(to_main(agent_env()))
        bare_t.append(wall(["/bin/true"], runs=1))
        under_t.append(wall(["/bin/true"], env=agent_env(), runs=1))
    med = statistics.median
    print("record_startup_bare: %.3f ms to main" % med(bare_m))
    print("record_startup_agent: %.3f ms to main" % med(under_m))
    print("record_startup_extra: %.3f ms (target <= 2 ms)" % (med(under_m) - med(bare_m)))
    cpu_bare = statistics.median(cpu([bench, "now"]) for _ in range(15))
    cpu_agent = statistics.median(cpu([bench, "now"], env=agent_env()) for _ in range(15))
    print("record_run_cpu_extra: %.3f ms CPU for a whole run of a program that exits at once"
          % ((cpu_agent - cpu_bare) * 1e3))
    print("record_run_true_extra: %.3f ms for all of /bin/true: start-up, and the close at exit "
          "(msync of the run)" % ((med(under_t) - med(bare_t)) * 1e3))

    # the same start-up counted in instructions (time is noisy here): /bin/true, bare and under the agent
    if shutil.which("valgrind"):
        def instructions(env=None):
            log = os.path.join(tmp, "cg.log")
            subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                            "--log-file=" + log, "/bin/true"], env=env, check=True)
            shutil.rmtree(out, ignore_errors=True)
            with open(log) as f:
                return int(next(l for l in f if "Collected" in l).split()[-1])
        ir_bare, ir_agent = instructions(), instructions(agent_env())
        print("record_startup_true_ir: %d instructions bare, %d under the agent: +%d (ratio %.1f)"
              % (ir_bare, ir_agent, ir_agent - ir_bare, ir_agent / ir_bare))

    # sampler vs perf
    work = ["/usr/bin/python3", "-c", "sum(i * i for i in range(30000000))"]
    bare = cpu(work)
    sampled = cpu(work, env=agent_env(RELSTACK_SAMPLE="1000"))
    subprocess.run(work, env=agent_env(RELSTACK_SAMPLE="1000"), check=True)
    files = os.listdir(out)
    rep = subprocess.run([relstack, "info", os.path.join(out, files[0])], capture_output=True, text=True).stdout
    records = next((l.split()[1] for l in rep.splitlines() if "counters:" in l), "?")
    # CPU-clock timers fire at the kernel's tick: the rate a process gets is at most CONFIG_HZ
    shutil.rmtree(out, ignore_errors=True)
    print("record_sample_bare: %.3f s CPU" % bare)
    print("record_sample_1khz_overhead: %.1f %% (%s samples in one run of %.1f s)"
          % (100 * (sampled - bare) / bare, records, bare))
    perf = shutil.which("perf")
    if perf and subprocess.run([perf, "record", "-q", "-o", os.path.join(tmp, "p"), "true"],
                               capture_output=True).returncode == 0:
        data = os.path.join(tmp, "perf.data")
        perfed = cpu([perf, "record", "-q", "-F", "1000", "-g", "-o", data] + work)
        print("record_sample_perf_overhead: %.1f %% (perf record -F 1000 -g)" % (100 * (perfed - bare) / bare))
        print("record_sample_overhead: ratio %.2f vs perf" % ((sampled - bare) / max(perfed - bare, 1e-9)))
    else:
        print("record_sample_perf_overhead: skipped (perf not usable here)")

    # --call
    calls = "20000000"

    def per_call(env=None):
        # the fastest of five runs: the machine's other load only ever adds
        return min(float(subprocess.run([bench, calls], env=env, capture_output=True, text=True,
                                        check=True).stdout.split()[0]) for _ in range(5))

    bare = per_call()
    miss = per_call(agent_env(RELSTACK_CALL="labs if arg0 == -1"))
    calls = "200000"  # each one recorded: a ring's worth of stacks
    hit = per_call(agent_env(RELSTACK_CALL="labs"))
    print("record_call_bare: %.2f ns/call" % bare)
    print("record_call_nomatch: %.2f ns/call, %.2f ns extra (target <= 10 ns)" % (miss, miss - bare))
    print("record_call_hit: %.0f ns/call, %.0f ns extra (stack captured and written)" % (hit, hit - bare))
    print("record_load: %.1f (1-minute load average while measured; the figures are noisy above the core count %d)"
          % (os.getloadavg()[0], os.cpu_count()))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
