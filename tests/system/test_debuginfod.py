#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""relstack report fetches missing debug files from a debuginfod server.

A program linked with relstack records a stack, then loses its debug
information (strip --strip-debug, the same build-id), which goes to a
directory a local debuginfod server (Debian's `debuginfod`, started here
on 127.0.0.1) serves.  With DEBUGINFOD_URLS (or --debuginfod) naming the
server, `report` gives the frames their file:line again, saying what it
fetches; without it (or with --debuginfod ''), it cannot; with a server
that is down, the object's error names debuginfod and the trace is still
decoded, names without lines; a server that accepts and never answers is
asked for one object, once, and given up after DEBUGINFOD_TIMEOUT.

Usage: test_debuginfod.py RELSTACK INCLUDE_DIR LIB_DIR
"""
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

RELSTACK, INC, LIB = sys.argv[1:4]
del sys.argv[1:4]
# The build's C compiler (tests/system/meson.build sets CC; a cross build's may be gcc -m32).
CC = shlex.split(os.environ.get("CC", "cc"))

PROGRAM = r"""
#include <relstack/relstack.h>

__attribute__((noinline)) int debuginfod_leaf(struct relstack_recorder *r)
{
	int ret = relstack_recorder__record(r, RELSTACK_EVENT_STACK, 0, 0, 0);

	__asm__ volatile("" ::: "memory");
	return ret;
}

int main(int argc, char **argv)
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	struct relstack_recorder *r = relstack_recorder__open(argv[1], &o);

	(void)argc;
	return !r || debuginfod_leaf(r) || relstack_recorder__close(r);
}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    return next(l.split()[-1] for l in out.splitlines() if "Build ID" in l)


class Silent:
    """A server on 127.0.0.1 that accepts, reads each request and never answers: the paths asked for."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.asked, self.conns, self.done = [], [], False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.done:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            c.settimeout(5)
            try:
                request = c.recv(4096).decode(errors="replace")
            except OSError:
                request = ""
            self.asked.append(request.split(" ")[1] if request.startswith("GET ") else "?")

    def stop(self):
        self.done = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept under way
        except OSError:
            pass
        self.sock.close()
        for c in self.conns:
            c.close()
        self.thread.join(timeout=10)
        return self.asked


class Debuginfod(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("debuginfod"):
            print("SKIP: debuginfod (the Debian package debuginfod) is not installed")
            sys.exit(77)
        cls.tmp = tempfile.mkdtemp(prefix="relstack-dbgi-")
        src, prog = os.path.join(cls.tmp, "prog.c"), os.path.join(cls.tmp, "prog")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(CC + ["-g", "-O1", "-fno-omit-frame-pointer", "-I", INC, src, "-o", prog,
                        "-L", LIB, "-lrelstack", "-Wl,-rpath," + LIB], check=True)
        cls.file = os.path.join(cls.tmp, "trace.rsb")
        subprocess.run([prog, cls.file], check=True)
        # the debug information goes to the server's directory; the program keeps its build-id
        served = os.path.join(cls.tmp, "served")
        os.mkdir(served)
        subprocess.run(["objcopy", "--only-keep-debug", prog, os.path.join(served, "prog.debug")], check=True)
        subprocess.run(["strip", "--strip-debug", prog], check=True)
        cls.port = free_port()
        cls.server = subprocess.Popen(["debuginfod", "-F", "-p", str(cls.port), "-d",
                                       os.path.join(cls.tmp, "db.sqlite"), served],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d/buildid/%s/debuginfo" % (cls.port, build_id(prog))
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if time.monotonic() > deadline:
                cls.server.kill()
                raise AssertionError("the debuginfod server did not serve the debug file")
            time.sleep(0.3)

    @classmethod
    def tearDownClass(cls):
        cls.server.kill()
        cls.server.wait()
        shutil.rmtree(cls.tmp)

    def report(self, *args, urls=None, cache=None, **more_env):
        env = dict(os.environ, DEBUGINFOD_CACHE_PATH=cache or tempfile.mkdtemp(dir=self.tmp), **more_env)
        env.pop("DEBUGINFOD_URLS", None)
        if urls is not None:
            env["DEBUGINFOD_URLS"] = urls
        return subprocess.run([RELSTACK, "report", *args, self.file], capture_output=True, text=True, env=env,
                              timeout=120)

    def leaf_line(self, out):
        return next((l for l in out.splitlines() if "debuginfod_leaf+" in l), "")

    def test_without_a_server_the_stripped_program_has_no_lines(self):
        p = self.report()
        self.assertIn("debuginfod_leaf+", p.stdout)  # the symbol table is still there
        self.assertNotIn("prog.c:", self.leaf_line(p.stdout))

    def test_with_the_server_in_the_environment_the_lines_come_back(self):
        p = self.report(urls="http://127.0.0.1:%d" % self.port)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("prog.c:", self.leaf_line(p.stdout))

    def test_the_option_names_the_server_too(self):
        p = self.report("--debuginfod", "http://127.0.0.1:%d" % self.port)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("prog.c:", self.leaf_line(p.stdout))

    def test_an_empty_option_switches_off_the_servers_of_the_environment(self):
        p = self.report("--debuginfod", "", urls="http://127.0.0.1:%d" % self.port)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("debuginfod_leaf+", p.stdout)
        self.assertNotIn("prog.c:", self.leaf_line(p.stdout))
        self.assertNotIn("fetching", p.stderr)

    def test_what_is_fetched_is_said_in_one_line(self):
        p = self.report(urls="http://127.0.0.1:%d" % self.port)
        self.assertEqual(p.returncode, 0, p.stderr)
        said = [l for l in p.stderr.splitlines() if "fetching" in l]
        self.assertIn("relstack: prog: fetching its debuginfo from debuginfod (build-id %s)" %
                      build_id(os.path.join(self.tmp, "prog")), said)

    def test_a_server_that_accepts_and_never_answers_is_asked_once_and_given_up(self):
        silent = Silent()
        cache = tempfile.mkdtemp(dir=self.tmp)
        try:
            p = self.report(urls="http://127.0.0.1:%d" % silent.port, cache=cache, DEBUGINFOD_TIMEOUT="1")
        finally:
            asked = silent.stop()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("debuginfod_leaf+", p.stdout)  # the trace decodes without it
        # one object asked, once (a second try only where libdebuginfod's own timeout came first)
        # ("?": a connection cancelled before its request was sent)
        ids = {path.split("/")[2] for path in asked if path.startswith("/buildid/")}
        self.assertEqual(len(ids), 1, asked)
        self.assertLessEqual(len(asked), 2, asked)
        lines = p.stderr.splitlines()
        fetching = [l for l in lines if "fetching its" in l]
        self.assertEqual(len(fetching), 1, p.stderr)
        self.assertIn("(build-id %s)" % ids.pop(), fetching[0])
        gave_up = [l for l in lines if "not asked again" in l]
        self.assertEqual(gave_up, ["relstack: debuginfod: http://127.0.0.1:%d sent nothing in 1 s for %s: "
                                   "not asked again" % (silent.port, fetching[0].split(": ")[1] + "'s debuginfo")],
                         p.stderr)
        # what was not found out is not kept as "not found" in the cache: the next run asks again
        marks = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs if f in ("debuginfo", "executable")]
        self.assertEqual([m for m in marks if os.path.getsize(m) == 0], [])

    def test_a_server_that_is_down_is_named_and_the_trace_still_decodes(self):
        p = self.report(urls="http://127.0.0.1:%d" % free_port())
        self.assertIn("debuginfod_leaf+", p.stdout)
        self.assertNotIn("prog.c:", self.leaf_line(p.stdout))
        self.assertIn("debuginfod", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
