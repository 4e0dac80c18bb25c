#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""relstack ps on live processes, against gdb on the same processes.

ps_target parks threads in known call chains (blocked in read, nanosleep,
pthread_cond_wait, spinning, in a signal handler, 20 frames deep, in code
of no object).  Every thread relstack calls reliable must equal gdb's
frames (thread apply all, inlined frames left out) frame by frame; for a
thread that runs, its frames below the first.  The same for Debian
programs: sleep, cat blocked on a pipe, python3 with threads.  --check
answers 0, 3 and 4 as documented, and a target that names nothing in
the process (a typo) is bad input; --wait retries until the thread left;
bad input is one line and exit 2; killing the target mid-snapshot ends
the command cleanly and killing the command leaves no thread stopped.
The target's own checks (no EINTR, no unexpected signal, spinners still
counting) pass at the end.

Needs ptrace of child processes: skipped, saying so, where it is refused.

Usage: test_ps.py RELSTACK PS_TARGET GDB
"""
import json
import os
import random
import signal
import subprocess
import sys
import time
import unittest

RELSTACK, TARGET, GDB = sys.argv[1:4]
del sys.argv[1:4]

SIGNAL = "SIG"
# Debian's python3, not whichever runs this test
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# Every thread's frames, as one JSON object {lwp: [[kind, pc], ...]}.
ALL_FRAMES = r'''
import gdb, json
kinds = {gdb.SIGTRAMP_FRAME: "sig", gdb.TAILCALL_FRAME: "tail", gdb.INLINE_FRAME: "inline"}
threads = {}
for th in gdb.selected_inferior().threads():
    th.switch()
    frames, f = [], gdb.newest_frame()
    while f is not None:
        frames.append([kinds.get(f.type(), "fn"), f.pc()])
        f = f.older()
    threads[th.ptid[1]] = frames
print("==threads== " + json.dumps(threads))
'''


def relstack(*args, timeout=120):
    p = subprocess.run([RELSTACK, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def ps_json(pid, *args):
    rc, out, err = relstack("ps", "--format", "json", *args, pid)
    assert rc in (0, 3, 4), (rc, err)
    return json.loads(out)


def relstack_frames(thread):
    """The thread's frames as gdb prints them: pcs, and SIGNAL for a signal frame."""
    out = []
    for f in thread["frames"]:
        out.append(SIGNAL if f.get("marker") == "signal" else int(f["address"], 16))
    return out


def gdb_frames(pid):
    script = "/tmp/relstack-ps-frames-%d.py" % os.getpid()
    with open(script, "w") as f:
        f.write(ALL_FRAMES)
    p = subprocess.run([GDB, "-nx", "-batch", "-p", str(pid), "-ex", "set pagination off",
                        "-ex", "set backtrace past-main on", "-ex", "source " + script],
                       capture_output=True, text=True, timeout=300)
    os.unlink(script)
    line = next(l for l in p.stdout.splitlines() if l.startswith("==threads== "))
    threads = {}
    for lwp, frames in json.loads(line[len("==threads== "):]).items():
        # inlined frames share their caller's pc; tail-call frames are rebuilt by gdb, not on the stack
        threads[int(lwp)] = [SIGNAL if kind == "sig" else pc for kind, pc in frames if kind in ("fn", "sig")]
    return threads


def ptrace_allowed():
    child = subprocess.Popen(["sleep", "30"])
    try:
        rc, _, err = relstack("ps", child.pid)
        return rc == 0, err.strip()
    finally:
        child.kill()
        child.wait()


class Target:
    def __init__(self, argv=None, ready=b"ready"):
        self.p = subprocess.Popen(argv or [TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.p.stdout.readline()
        assert line.strip() == ready, line
        time.sleep(0.3)  # every thread parked, not only about to park

    def quit(self):
        out, _ = self.p.communicate(b"q\n", timeout=60)
        return self.p.returncode, out.decode()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        for f in (self.p.stdin, self.p.stdout):
            if f and not f.closed:
                try:
                    f.close()
                except BrokenPipeError:
                    pass


def tids_by_name(snapshot):
    return {t["name"]: t["tid"] for t in snapshot["threads"]}


class PsTestCase(unittest.TestCase):
    def assert_equals_gdb(self, pid, running=(), attempts=3):
        """Each reliable thread equals gdb's frames (a running thread from its second frame on)."""
        for attempt in range(attempts):
            snap = ps_json(pid)
            theirs = gdb_frames(pid)
            bad = []
            reliable = 0
            for t in snap["threads"]:
                if not t.get("reliable"):
                    continue
                reliable += 1
                ours = relstack_frames(t)
                gdb = theirs.get(t["tid"])
                if t["name"] in running:
                    ours, gdb = ours[1:], (gdb or [None])[1:]
                if ours != gdb:
                    bad.append((t["tid"], t["name"], [hex(x) if x != SIGNAL else x for x in ours],
                                [hex(x) if x != SIGNAL else x for x in (gdb or [])]))
            if not bad:
                return snap, reliable
        self.fail("frames differ from gdb's: %r" % bad)


class TargetTests(PsTestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = Target()
        cls.pid = cls.t.p.pid
        cls.snap = ps_json(cls.pid)
        cls.tids = tids_by_name(cls.snap)

    @classmethod
    def tearDownClass(cls):
        cls.t.kill()

    def thread(self, name):
        return next(t for t in self.snap["threads"] if t["name"] == name)

    def names(self, name):
        return [f.get("symbol") for f in self.thread(name)["frames"]]

    def test_every_reliable_thread_equals_gdb_frame_by_frame(self):
        snap, reliable = self.assert_equals_gdb(self.pid, running=("spinner1", "spinner2"))
        # every thread but the one in code of no object
        self.assertEqual(reliable, 9, [(t["name"], t.get("reasons")) for t in snap["threads"]])

    def test_blocked_threads_are_reliable_through_the_c_library_with_their_known_chains(self):
        for name, chain in (("reader", ["reader_inner", "reader_outer", "thread_main"]),
                            ("waiter", ["waiter_inner", "waiter_outer", "thread_main"]),
                            ("sleeper", ["sleeper_inner", "sleeper_outer", "thread_main"]),
                            ("leaver", ["leaving_soon", "leaver_outer", "thread_main"])):
            t = self.thread(name)
            self.assertTrue(t["reliable"], (name, t.get("reasons")))
            names = self.names(name)
            self.assertEqual(t["frames"][0]["object"].split("/")[-1], "libc.so.6", name)
            i = names.index(chain[0])
            self.assertEqual(names[i:i + len(chain)], chain, name)

    def test_spinning_thread_is_reliable_from_its_interrupted_pc(self):
        t = self.thread("spinner1")
        self.assertTrue(t["reliable"], t.get("reasons"))
        self.assertTrue(t["frames"][0]["exact"])
        self.assertEqual(self.names("spinner1")[:3], ["spinner_inner", "spinner_outer", "thread_main"])

    def test_thread_in_a_signal_handler_crosses_the_signal_frame(self):
        t = self.thread("handler")
        self.assertTrue(t["reliable"], t.get("reasons"))
        names = self.names("handler")
        i = [f.get("marker") for f in t["frames"]].index("signal")
        self.assertEqual(names[i - 2:i], ["handler_sleep", "on_usr1"])
        self.assertIn("handler_inner", names[i + 1:])
        self.assertTrue(t["frames"][i + 1]["exact"])

    def test_twenty_frames_deep_are_all_there(self):
        names = self.names("deep")
        self.assertTrue(self.thread("deep")["reliable"])
        self.assertEqual(names.count("deep"), 20)

    def test_thread_in_code_of_no_object_is_unreliable_with_its_reason(self):
        t = self.thread("stranger")
        self.assertFalse(t["reliable"])
        self.assertIn("unknown-text", t["reasons"])
        self.assertNotIn("object", t["frames"][0])

    def test_check_finds_threads_inside_a_function_exit_3(self):
        rc, out, err = relstack("ps", "--check", "spinner_inner", self.pid)
        self.assertEqual(rc, 3, err)
        inside = [l for l in out.splitlines() if "check: inside" in l]
        self.assertEqual(len(inside), 2, out)
        self.assertTrue(all("spinner_inner" in l for l in inside), out)

    def test_check_object_function_and_object(self):
        self.assertEqual(relstack("ps", "--check", "ps_target:deep_bottom", self.pid)[0], 3)
        self.assertEqual(relstack("ps", "--check", "libc.so.6:read", "--tid", self.tids["reader"], self.pid)[0], 3)
        self.assertEqual(relstack("ps", "--check", "libc", "--tid", self.tids["deep"], self.pid)[0], 3)
        # the object is loaded, and holds no frame of this thread's stack
        self.assertEqual(relstack("ps", "--check", "ld-linux-x86-64.so.2" if "x86_64" in os.uname().machine
                                  else "ld-linux", "--tid", self.tids["reader"], self.pid)[0], 0)

    def test_check_is_safe_when_no_reliable_thread_is_inside_exit_0(self):
        rc, out, err = relstack("ps", "--check", "deep_bottom", "--check", "ps_target:spinner_inner",
                                "--tid", self.tids["reader"], "--tid", self.tids["handler"], self.pid)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("check: safe", out)

    def test_check_cannot_tell_for_an_unreliable_stack_exit_4(self):
        rc, out, err = relstack("ps", "--check", "leaver_after", "--format", "json", self.pid)
        self.assertEqual(rc, 4, err)
        snap = json.loads(out)
        self.assertEqual(snap["check"], "cannot tell")
        states = {t["name"]: t["check"] for t in snap["threads"]}
        self.assertEqual(states.pop("stranger"), "cannot tell")
        self.assertEqual(set(states.values()), {"not inside"})

    def test_inside_wins_over_cannot_tell(self):
        self.assertEqual(relstack("ps", "--check", "deep_bottom", self.pid)[0], 3)

    def test_wait_retries_until_a_spinner_is_still_inside_then_says_so(self):
        rc, out, _ = relstack("ps", "--check", "spinner_inner", "--wait", "0.3", "--tid", self.tids["spinner1"],
                              self.pid)
        self.assertEqual(rc, 3)

    def test_folded_output_has_one_line_per_thread_outermost_first(self):
        rc, out, err = relstack("ps", "--format", "folded", "--tid", self.tids["deep"], self.pid)
        self.assertEqual(rc, 0, err)
        line, = out.splitlines()
        self.assertIn(";deep;deep_bottom;", line)
        self.assertTrue(line.startswith("deep;__clone3;start_thread;thread_main;deep;"), line)
        self.assertTrue(line.endswith(" 1"))

    def test_a_recorded_snapshot_decodes_to_the_same_frames_and_holds_no_address(self):
        import tempfile
        with tempfile.TemporaryDirectory(prefix="relstack-ps-") as tmp:
            path = os.path.join(tmp, "snap.rsb")
            rc, out, err = relstack("ps", "--format", "json", "-o", path, self.pid)
            self.assertEqual(rc, 0, err)
            live = {t["tid"]: t for t in json.loads(out)["threads"]}
            rc, rep, err = relstack("report", "--format", "json", "--event", "thread", path)
            self.assertEqual(rc, 0, err)
            recs = [json.loads(l) for l in rep.splitlines() if l.strip()]
            self.assertEqual(len(recs), len([t for t in live.values() if not t.get("error")]))
            for r in recs:
                t = live[r["fields"]["tid"]]
                self.assertEqual(r["reliable"], t["reliable"], r)
                self.assertEqual(r["fields"]["name"], t["name"][:15])
                # the same functions, frame by frame (the file's words are relative: no address)
                ours = [f.get("symbol") for f in t["frames"] if f.get("marker") != "end"]
                theirs = [f.get("symbol") for f in r["frames"]]
                self.assertEqual(theirs[:len(ours)], ours, (t["name"], r))
            # no address of the process's code or stacks anywhere in the file (what a trace could
            # leak; a sanitizer's shadow memory, terabytes of it, would match any large number)
            ranges = []
            with open("/proc/%d/maps" % self.pid) as f:
                for line in f:
                    fields = line.split()
                    lo, hi = (int(x, 16) for x in fields[0].split("-"))
                    name = fields[5] if len(fields) > 5 else ""
                    if ("x" in fields[1] or name in ("[stack]", "[heap]")) and hi - lo < 1 << 32:
                        ranges.append((lo, hi))
            self.assertTrue(ranges)
            with open(path, "rb") as f:
                data = f.read()
            for shift in range(8):
                for i in range(shift, len(data) - 7, 8):
                    w = int.from_bytes(data[i:i + 8], "little")
                    if w > 0xffff:
                        self.assertFalse(any(lo <= w < hi for lo, hi in ranges),
                                         "address %#x at offset %d" % (w, i))

    def test_check_of_a_function_no_object_defines_is_bad_input_exit_2_naming_it(self):
        for target in ("no_such_function", "ps_target:no_such_function", "libc:spinner_inner"):
            rc, out, err = relstack("ps", "--check", target, self.pid)
            self.assertEqual(rc, 2, (target, out, err))
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn("no object of process %d" % self.pid, err)
            self.assertIn("defines '%s'" % target.split(":")[-1], err)
            self.assertEqual(out, "", target)

    def test_check_of_an_object_the_process_has_not_loaded_is_bad_input_exit_2(self):
        # (an object no build of ps_target loads: a sanitizer build brings libstdc++ in)
        for target in ("librelstack-no-such.so.6", "librelstack-no-such.so.6:malloc", "/no/such/object.so"):
            rc, out, err = relstack("ps", "--check", target, self.pid)
            self.assertEqual(rc, 2, (target, out, err))
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn("no object of process %d" % self.pid, err)
            self.assertIn("named", err)

    def test_check_finds_a_function_under_any_of_its_names(self):
        # read and __read are one function of the C library: the frame is named by one of them
        for name in ("read", "__read"):
            rc, out, err = relstack("ps", "--check", name, "--tid", self.tids["reader"], self.pid)
            self.assertEqual(rc, 3, (name, out, err))

    def test_unknown_tid_is_one_line_exit_2(self):
        rc, out, err = relstack("ps", "--tid", "1", self.pid)
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("has no thread 1", err)


class WaitTests(unittest.TestCase):
    def test_wait_returns_safe_once_the_thread_left_the_function(self):
        t = Target()
        try:
            tid = tids_by_name(ps_json(t.p.pid))["leaver"]
            args = ["ps", "--check", "leaving_soon", "--tid", str(tid), str(t.p.pid)]
            self.assertEqual(relstack(*args)[0], 3)
            waiting = subprocess.Popen([RELSTACK, *args[:-1], "--wait", "60", args[-1]],
                                       stdout=subprocess.PIPE, text=True)
            time.sleep(0.5)
            t.p.stdin.write(b"l")
            t.p.stdin.flush()
            out, _ = waiting.communicate(timeout=120)
            self.assertEqual(waiting.returncode, 0, out)
            rc, out = t.quit()
            self.assertEqual((rc, out.strip()), (0, "ok"))
        finally:
            t.kill()


class TargetKeepsRunning(unittest.TestCase):
    def test_target_runs_on_normally_after_many_snapshots(self):
        t = Target()
        try:
            for _ in range(10):
                self.assertIn(relstack("ps", t.p.pid)[0], (0,))
            rc, out = t.quit()
            self.assertEqual((rc, out.strip()), (0, "ok"))
        finally:
            t.kill()

    def test_killing_relstack_mid_snapshot_leaves_no_thread_stopped(self):
        t = Target()
        rnd = random.Random(int(os.environ.get("RELSTACK_SEED", "15")))
        try:
            for _ in range(20):
                p = subprocess.Popen([RELSTACK, "ps", str(t.p.pid)], stdout=subprocess.DEVNULL)
                time.sleep(rnd.uniform(0, 0.02))
                p.kill()
                p.wait()
            for tid in os.listdir("/proc/%d/task" % t.p.pid):
                with open("/proc/%d/task/%s/stat" % (t.p.pid, tid)) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                self.assertNotIn(state, ("t", "T"), tid)
            rc, out = t.quit()
            self.assertEqual((rc, out.strip()), (0, "ok"))
        finally:
            t.kill()


PY_THREADS = ("import threading, time, sys\n"
              "[threading.Thread(target=time.sleep, args=(300,), daemon=True).start() for _ in range(%d)]\n"
              "print('ready', flush=True)\n"
              "sys.stdin.read(1)\n")


class DebianPrograms(PsTestCase):
    def test_sleep_is_reliable_and_equals_gdb(self):
        p = subprocess.Popen(["sleep", "300"])
        try:
            time.sleep(0.3)
            _, reliable = self.assert_equals_gdb(p.pid)
            self.assertEqual(reliable, 1)
        finally:
            p.kill()
            p.wait()

    def test_cat_blocked_on_a_pipe_is_reliable_and_equals_gdb(self):
        p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            time.sleep(0.3)
            snap, reliable = self.assert_equals_gdb(p.pid)
            self.assertEqual(reliable, 1)
            self.assertEqual(snap["threads"][0]["frames"][0]["symbol"], "read")
        finally:
            p.kill()
            p.wait()
            p.stdin.close()

    def test_python_threads_equal_gdb_where_reliable(self):
        t = Target([PYTHON, "-c", PY_THREADS % 4])
        try:
            snap, reliable = self.assert_equals_gdb(t.p.pid)
            self.assertEqual(len(snap["threads"]), 5)
            print("python3: %d of 5 threads reliable" % reliable, file=sys.stderr)
        finally:
            t.kill()

    def test_a_stopped_process_is_read_and_stays_stopped(self):
        p = subprocess.Popen(["sleep", "300"])
        try:
            time.sleep(0.2)
            os.kill(p.pid, signal.SIGSTOP)
            time.sleep(0.2)
            snap = ps_json(p.pid)
            self.assertEqual(snap["threads"][0]["state"], "T")
            self.assertTrue(snap["threads"][0]["reliable"])
            time.sleep(0.2)
            with open("/proc/%d/stat" % p.pid) as f:
                self.assertEqual(f.read().rsplit(")", 1)[1].split()[0], "T")
            os.kill(p.pid, signal.SIGCONT)
        finally:
            p.kill()
            p.wait()


class BadInput(unittest.TestCase):
    def assert_one_line(self, args, rc, words):
        got, out, err = relstack(*args)
        self.assertEqual(got, rc, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn(words, err)
        self.assertEqual(out, "")

    def test_a_pid_that_is_not_there(self):
        p = subprocess.Popen(["true"])
        p.wait()
        self.assert_one_line(["ps", p.pid], 2, "no such process")

    def test_a_zombie(self):
        p = subprocess.Popen(["true"])
        for _ in range(500):
            with open("/proc/%d/stat" % p.pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        try:
            self.assert_one_line(["ps", p.pid], 2, "zombie")
        finally:
            p.wait()

    def test_a_kernel_thread(self):
        with open("/proc/2/comm") as f:
            if f.read().strip() != "kthreadd":
                self.skipTest("pid 2 is not kthreadd here (a PID namespace)")
        self.assert_one_line(["ps", 2], 2, "kernel thread")

    def test_another_users_process(self):
        if os.getuid() == 0:
            p = subprocess.Popen(["sleep", "300"])
            try:
                time.sleep(0.2)
                got = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                      RELSTACK, "ps", str(p.pid)], capture_output=True, text=True, timeout=60)
            finally:
                p.kill()
                p.wait()
            self.assertEqual(got.returncode, 2, got.stderr)
            self.assertEqual(len(got.stderr.splitlines()), 1, got.stderr)
            self.assertIn("permission denied", got.stderr)
        else:
            if os.stat("/proc/1").st_uid == os.getuid():
                self.skipTest("process 1 is this user's")
            self.assert_one_line(["ps", 1], 2, "permission denied")

    def test_a_process_a_debugger_traces(self):
        p = subprocess.Popen(["sleep", "300"])
        g = subprocess.Popen([GDB, "-nx", "-batch", "-p", str(p.pid), "-ex", "shell sleep 30"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(3000):
                with open("/proc/%d/status" % p.pid) as f:
                    if "TracerPid:\t0\n" not in f.read():
                        break
                time.sleep(0.01)
            self.assert_one_line(["ps", p.pid], 2, "is traced by process %d" % g.pid)
        finally:
            g.kill()
            g.wait()
            p.kill()
            p.wait()

    def test_not_a_pid_is_bad_usage(self):
        got, _, err = relstack("ps", "12x")
        self.assertEqual(got, 1)
        self.assertIn("not a process id", err)


class KilledMidSnapshot(unittest.TestCase):
    def test_target_killed_mid_snapshot_ends_the_command_cleanly(self):
        rnd = random.Random(int(os.environ.get("RELSTACK_SEED", "15")))
        outcomes = set()
        for _ in range(15):
            t = Target([PYTHON, "-c", PY_THREADS % 40])
            p = subprocess.Popen([RELSTACK, "ps", "--format", "json", str(t.p.pid)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(rnd.uniform(0, 0.03))
            t.kill()
            out, err = p.communicate(timeout=120)  # a hang fails here
            self.assertIn(p.returncode, (0, 2), err)
            if p.returncode == 2:
                self.assertEqual(len(err.splitlines()), 1, err)
                outcomes.add("error")
            else:
                for th in json.loads(out)["threads"]:
                    self.assertTrue("error" not in th or "ended" in th["error"], th)
                outcomes.add("ended" if any("error" in th for th in json.loads(out)["threads"]) else "whole")
        print("outcomes: %s" % sorted(outcomes), file=sys.stderr)


if __name__ == "__main__":
    ok, why = ptrace_allowed()
    if not ok:
        print("SKIP: relstack ps cannot ptrace a child process here (%s)" % why, file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
