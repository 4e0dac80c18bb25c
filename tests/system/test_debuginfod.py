#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""relstack report fetches missing debug files from a debuginfod server.

A program linked with relstack records a stack, then loses its debug
information (strip --strip-debug, the same build-id), which goes to a
directory a local debuginfod server (Debian's `debuginfod`, started here
on 127.0.0.1) serves.  With DEBUGINFOD_URLS (or --debuginfod) naming the
server, `report` gives the frames their file:line again; without it, it
cannot; with a server that is down, the object's error names debuginfod
and the trace is still decoded, names without lines.

Usage: test_debuginfod.py RELSTACK INCLUDE_DIR LIB_DIR
"""
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
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

    def report(self, *args, urls=None):
        env = dict(os.environ, DEBUGINFOD_CACHE_PATH=tempfile.mkdtemp(dir=self.tmp))
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

    def test_a_server_that_is_down_is_named_and_the_trace_still_decodes(self):
        p = self.report(urls="http://127.0.0.1:%d" % free_port())
        self.assertIn("debuginfod_leaf+", p.stdout)
        self.assertNotIn("prog.c:", self.leaf_line(p.stdout))
        self.assertIn("debuginfod", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
