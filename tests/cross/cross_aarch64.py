# SPDX-License-Identifier: LGPL-2.1-or-later
"""aarch64 files and the x86-64 decoder, both ways (test_cross_files.py).

The aarch64 build's programs run under qemu-aarch64-static (user-mode
emulation, the arm64 C library found under /): the demo program records
stacks through a plugin it loads twice, then crashes.  The native relstack
names its frames from the aarch64 binaries, checked by build-id, as
aarch64-linux-gnu-addr2line names the same addresses; the aarch64
relstack, emulated, decodes the native demo's file.  Each decoder gives
the same report of each file, byte for byte.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

QEMU = ["qemu-aarch64-static", "-L", "/"]
FRAME = re.compile(r"^ => (\S+)\+0x([0-9a-f]+)/0x[0-9a-f]+ \[([^\]]+)\]", re.M)


def run(cmd, env=None, ok=(0,)):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode not in ok:
        raise AssertionError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def build_id(path):
    out = run(["aarch64-linux-gnu-readelf", "-n", path])
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def demo(prefix, build, directory, out):
    """Run the demo program of @build (its copy in @directory), under @prefix; it crashes on purpose."""
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "src") + ":" + os.environ.get("LD_LIBRARY_PATH", ""))
    p = subprocess.run(prefix + [os.path.join(directory, "relstack-demo"), out,
                                 os.path.join(directory, "librelstack-demo-plugin.so")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    # the crash: SIGSEGV itself, or qemu's exit status for it
    assert p.returncode in (-11, 139), f"demo exited {p.returncode}: {p.stderr.decode()}"
    assert os.path.getsize(out) > 0


def setup_demo(build, tmp, name):
    """A copy of @build's demo and plugin in @tmp/@name: a test may replace them after the run."""
    d = os.path.join(tmp, name)
    os.makedirs(d)
    for f in ("relstack-demo", "librelstack-demo-plugin.so"):
        shutil.copy(os.path.join(build, "demo", f), d)
    return d


class Aarch64Files(unittest.TestCase):
    native = cross = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-cross-aarch64-")
        cls.a64dir = setup_demo(cls.cross, cls.tmp, "a64")
        cls.a64file = os.path.join(cls.tmp, "a64.rsb")
        demo(QEMU, cls.cross, cls.a64dir, cls.a64file)
        cls.x64dir = setup_demo(cls.native, cls.tmp, "x64")
        cls.x64file = os.path.join(cls.tmp, "x64.rsb")
        demo([], cls.native, cls.x64dir, cls.x64file)
        cls.native_tool = [os.path.join(cls.native, "tools", "relstack")]
        cls.cross_tool = QEMU + [os.path.join(cls.cross, "tools", "relstack")]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def report(self, tool, path, *opts):
        return run(tool + ["report", "--color", "never", *opts, path])

    def test_an_aarch64_file_is_decoded_by_the_x86_64_relstack_with_the_aarch64_names(self):
        info = run(self.native_tool + ["info", self.a64file])
        exe = os.path.join(self.a64dir, "relstack-demo")
        # the object table holds the aarch64 binaries' build-ids
        self.assertIn(build_id(exe), info)
        self.assertIn(build_id(os.path.join(self.a64dir, "librelstack-demo-plugin.so")), info)
        text = self.report(self.native_tool, self.a64file)
        for name in ("plugin_check_quota", "demo_plugin_filter", "worker_main", "cache_flush", "main"):
            self.assertIn(f" => {name}+", text)
        self.assertIn("crash reliable", text)
        self.assertNotIn("build-id mismatch", text)

    def test_frames_of_the_aarch64_file_name_what_aarch64_addr2line_names(self):
        text = self.report(self.native_tool, self.a64file)
        exe = os.path.join(self.a64dir, "relstack-demo")
        syms = {}
        for line in run(["aarch64-linux-gnu-nm", exe]).splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "tT":
                syms[f[2]] = int(f[0], 16)
        checked = 0
        for name, off, obj in FRAME.findall(text):
            if obj != "relstack-demo" or name not in syms:
                continue
            addr = syms[name] + int(off, 16)
            # addr2line of the return address minus one (the call): with -i the
            # inlined functions first, the symbol's own last
            got = run(["aarch64-linux-gnu-addr2line", "-f", "-i", "-e", exe, hex(addr - 1)]).splitlines()[-2]
            # (the DWARF name of a clone such as handle_request.isra.0 has no suffix)
            self.assertEqual(got.split(".")[0], name.split(".")[0], f"{name}+0x{off}")
            checked += 1
        self.assertGreater(checked, 10)

    def test_an_aarch64_binary_replaced_by_another_build_is_refused_by_build_id(self):
        d = setup_demo(self.cross, self.tmp, "a64-replaced")
        f = os.path.join(self.tmp, "a64-replaced.rsb")
        demo(QEMU, self.cross, d, f)
        # the x86-64 plugin, at the aarch64 plugin's recorded path
        plugin = os.path.join(d, "librelstack-demo-plugin.so")
        shutil.copy(os.path.join(self.native, "demo", "librelstack-demo-plugin.so"), plugin)
        p = subprocess.run(self.native_tool + ["report", "--color", "never", f], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("plugin_check_quota", p.stdout)
        self.assertIn(f"does not match {plugin}", p.stderr)
        self.assertIn(build_id(os.path.join(self.cross, "demo", "librelstack-demo-plugin.so")), p.stderr)

    def test_an_x86_64_file_is_decoded_by_the_aarch64_relstack_under_emulation(self):
        text = self.report(self.cross_tool, self.x64file)
        for name in ("plugin_check_quota", "worker_main", "cache_flush"):
            self.assertIn(f" => {name}+", text)
        self.assertEqual(text, self.report(self.native_tool, self.x64file))

    def test_both_decoders_give_the_same_report_of_the_aarch64_file(self):
        for fmt in ("text", "json", "folded"):
            self.assertEqual(self.report(self.cross_tool, self.a64file, "--format", fmt),
                             self.report(self.native_tool, self.a64file, "--format", fmt), fmt)
