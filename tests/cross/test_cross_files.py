#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files cross machines: a buffer file written by one architecture's build
decodes with another's, names taken from the writer's binaries and checked
by build-id.

Run by scripts/cross-check.sh after both builds exist, one class of tests
per architecture (the ARCH build against the native one):

Usage: test_cross_files.py ARCH NATIVE_BUILD ARCH_BUILD
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARCH, NATIVE, CROSS = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
del sys.argv[1:4]

# ARCH -> the TestCase class of its files
CASES = {}


def cross_arch(name):
    def register(cls):
        CASES[name] = cls
        return cls
    return register


# ---- helpers every architecture's tests use ----

def relstack(*args, check=True):
    """The native build's relstack command."""
    p = subprocess.run([os.path.join(NATIVE, "tools", "relstack")] + list(args), capture_output=True, text=True,
                       timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"relstack {' '.join(args)}: exit {p.returncode}: {p.stderr[-2000:]}")
    return p


def report(path):
    """The records of @path, as the native relstack's JSON report has them."""
    return [json.loads(line) for line in relstack("report", "--format", "json", path).stdout.splitlines() if line]


def build_id(path):
    """The GNU build-id of the ELF file at @path, read with readelf (no relstack code)."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


def plain_name(name):
    """@name without GCC's clone suffixes, which gdb shortens (handle_request.isra.0: handle_request.isra)."""
    return re.sub(r"(\.(isra|constprop|part|cold|lto_priv)(\.\d+)?)+$", "", name) if name else name


def gdb_names(path, offsets):
    """{offset: (function, its start)} as gdb names each offset (a link-time address) of the object at @path."""
    args = ["gdb", "-nx", "-batch"]
    for off in offsets:
        args += ["-ex", f"info symbol {off:#x}"]
    out = subprocess.run(args + [path], capture_output=True, text=True, timeout=300).stdout.splitlines()
    names = {}
    lines = [l for l in out if " in section " in l or l.startswith("No symbol matches")]
    for off, line in zip(offsets, lines):
        m = re.match(r"(\S+)(?: \+ (\d+))? in section ", line)
        names[off] = (m.group(1), off - int(m.group(2) or 0)) if m else (None, None)
    return names


def gdb_address(path, symbol):
    """The link-time address gdb gives @symbol of the object at @path, or None."""
    out = subprocess.run(["gdb", "-nx", "-batch", "-ex", f"info address {symbol}", path], capture_output=True,
                         text=True, timeout=300).stdout
    m = re.search(r" at (?:address )?(0x[0-9a-f]+)", out)
    return int(m.group(1), 16) if m else None


def run_demo(build, workdir, wrapper=()):
    """The demo program of @build, copied with its plugin into @workdir, run (it crashes on purpose): the file it wrote."""
    exe = shutil.copy(os.path.join(build, "demo", "relstack-demo"), workdir)
    plugin = shutil.copy(os.path.join(build, "demo", "librelstack-demo-plugin.so"), workdir)
    path = os.path.join(workdir, "demo.rsb")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "src"))  # its rpath is the build's
    p = subprocess.run(list(wrapper) + [exe, path, plugin], capture_output=True, text=True, timeout=300, env=env)
    if p.returncode == 0 or not os.path.exists(path):
        raise AssertionError(f"the demo program did not crash as it should (status {p.returncode}): {p.stderr}")
    return path, exe, plugin


class ForeignFile:
    """Checks of a file written by another architecture's build, decoded by the native relstack."""

    def check_names_equal_gdb(self, records, objects):
        """Every frame in one of @objects (paths) is named as gdb names the address; returns the frames checked."""
        want = {}
        for r in records:
            for f in r["frames"]:
                if f.get("object") in objects and f.get("offset"):
                    self.assertIsNotNone(f.get("symbol"), f"{f['object']}+{f['offset']}: relstack gave no name")
                    # a return address is named by its call, the byte before
                    off = int(f["offset"], 16) - (1 if f.get("return_address") else 0)
                    want.setdefault(f["object"], {})[off] = (f["symbol"], int(f["offset"], 16) - int(f["symoff"], 16))
        checked = 0
        for obj, frames in want.items():
            names = gdb_names(obj, sorted(frames))
            for off, (sym, start) in frames.items():
                name, gstart = names[off]
                # the same function; its name, or an alias of it (__clone3 and clone3 start alike)
                self.assertEqual(start, gstart, f"{obj}+{off:#x}: relstack says {sym}, gdb {name}")
                if plain_name(sym) != plain_name(name):
                    self.assertEqual(gdb_address(obj, sym), start, f"{obj}: {sym} is no alias of {name}")
                checked += 1
        return checked


# ---- i386: the build with gcc -m32, run here natively ----

@cross_arch("i386")
class I386Files(ForeignFile, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="relstack-cross-")
        cls.path, cls.exe, cls.plugin = run_demo(CROSS, cls.dir)
        cls.records = report(cls.path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_the_i386_file_says_it_holds_4_byte_words(self):
        info = relstack("info", self.path).stdout
        self.assertIn("format: 4-byte words, little-endian", info)
        self.assertIn("slot index bits 24..30 (7 bits); offset bits 0..23", info)

    def test_an_i386_file_decodes_on_x86_64_with_the_names_gdb_gives(self):
        self.assertGreaterEqual(len(self.records), 5)
        libc = {f["object"] for r in self.records for f in r["frames"] if "libc.so" in (f.get("object") or "")}
        self.assertEqual(len(libc), 1, "the i386 C library is in the frames")
        checked = self.check_names_equal_gdb(self.records, {self.exe, self.plugin} | libc)
        self.assertGreaterEqual(checked, 10)
        # the crash, recorded from the signal handler, names the faulting function first, reliably
        crash = [r for r in self.records if r["event"] == "crash"]
        self.assertEqual(len(crash), 1)
        self.assertTrue(crash[0]["reliable"], crash[0]["reasons"])
        self.assertEqual(crash[0]["frames"][0]["symbol"], "cache_flush")
        self.assertEqual([f["symbol"] for f in crash[0]["frames"][-3:]],
                         ["__libc_start_call_main", "__libc_start_main", "_start"])

    def test_names_come_from_the_i386_binaries_checked_by_build_id(self):
        frames = [f for r in self.records for f in r["frames"] if f.get("object") in (self.exe, self.plugin)]
        self.assertTrue(frames)
        for f in frames:
            self.assertEqual(f["build_id"], build_id(f["object"]), f["object"])

    def test_an_object_of_another_build_at_the_recorded_path_is_refused_not_misnamed(self):
        # the plugin replaced by the native build's: same path and symbols, another build-id
        d = tempfile.mkdtemp(prefix="relstack-cross-", dir=self.dir)
        path, _, plugin = run_demo(CROSS, d)
        shutil.copy(os.path.join(NATIVE, "demo", "librelstack-demo-plugin.so"), plugin)
        self.assertNotEqual(build_id(plugin), build_id(self.plugin))
        p = relstack("report", "--format", "json", path, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"build-id {build_id(self.plugin)} does not match {plugin}", p.stderr)
        self.assertNotIn("plugin_check_quota", p.stdout)


# aarch64: its programs under qemu-aarch64-static (cross_aarch64.py)
from cross_aarch64 import Aarch64Files  # noqa: E402

Aarch64Files.native, Aarch64Files.cross = NATIVE, CROSS
cross_arch("aarch64")(Aarch64Files)

if __name__ == "__main__":
    if ARCH not in CASES:
        print(f"test_cross_files: no cross-file tests for {ARCH}", file=sys.stderr)
        sys.exit(1)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(CASES[ARCH])
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
