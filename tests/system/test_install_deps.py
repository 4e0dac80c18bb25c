#!/usr/bin/env python3
"""scripts/install-deps.sh decides what to install from what dpkg reports.

The script runs with fake dpkg, dpkg-query, apt-get, id and pkg-config
first on PATH, each answering as a machine in a given state would:

* a machine that has only the foreign (i386, arm64) copies of the
  libraries, as the cross builds leave them, is asked for every native
  one as PKG:ARCH (the defect of a dpkg-query that matched any copy);
* the demo profile asks for the demo's packages only;
* an install that would remove a package is not done, and the message
  names both packages;
* a package dpkg calls installed whose library does not link fails the
  post-condition, naming the package.

Usage: test_install_deps.py SCRIPT
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPT = None

FAKE_DPKG = """#!/bin/sh
[ "$1" = --print-architecture ] && { echo "$FAKE_NATIVE"; exit 0; }
[ "$1" = --print-foreign-architectures ] && { printf '%s\\n' $FAKE_FOREIGN; exit 0; }
exit 1
"""

# Answers dpkg-query -W -f='${Architecture} ${Status}\\n' PKG from
# FAKE_STATE: "foreign" (copies of FAKE_FOREIGN's architectures only), "native" (the
# native copy; Architecture: all for the packages in FAKE_ALL), "none".
FAKE_DPKG_QUERY = """#!/bin/sh
for last; do :; done
echo "$last" >>"$FAKE_LOG.dpkg-query"
case $FAKE_STATE in
foreign) for a in $FAKE_FOREIGN; do echo "$a install ok installed"; done ;;
native)
	case " $FAKE_ALL " in
	*" $last "*) echo "all install ok installed" ;;
	*) printf 'i386 install ok installed\\n%s install ok installed\\n' "$FAKE_NATIVE" ;;
	esac ;;
none) exit 1 ;;
esac
"""

# Simulations print an Inst line per package, and a Remv line when
# FAKE_REMOVES ("PKG:VICTIM") names one of them; every call is logged.
FAKE_APT_GET = """#!/bin/sh
echo "$*" >>"$FAKE_LOG.apt-get"
case " $* " in
*" -s "*)
	for a; do
		case $a in -*) continue ;; esac
		echo "Inst $a (1.0 Debian [x])"
		[ "${a%%:*}" = "${FAKE_REMOVES%%:*}" ] && echo "Remv ${FAKE_REMOVES#*:} [1.0]"
	done
	exit 0 ;;
esac
exit 0
"""

FAKE_ID = """#!/bin/sh
echo 0
"""

# pkg-config that knows every module but FAKE_NO_PC.
FAKE_PKG_CONFIG = """#!/bin/sh
for last; do :; done
if [ "$last" = "$FAKE_NO_PC" ]; then
	echo "Package $last was not found in the pkg-config search path." >&2
	exit 1
fi
exit 0
"""

DEMO = ["gcc", "make", "meson", "ninja-build", "pkg-config", "python3", "libelf-dev", "libdw-dev",
        "libdebuginfod-dev", "zlib1g-dev", "libtracefs-dev", "libtraceevent-dev", "libtracecmd-dev"]
CHECK_ONLY = ["libcmocka-dev", "libunwind8", "clang", "libclang-rt-14-dev", "libc6-dbg", "gdb", "valgrind",
              "chromium", "protobuf-compiler", "trace-cmd"]
KERNEL = ["linux-source-6.1", "qemu-system-x86"]


class InstallDeps(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        os.mkdir(self.bin)
        for name, text in [("dpkg", FAKE_DPKG), ("dpkg-query", FAKE_DPKG_QUERY), ("apt-get", FAKE_APT_GET),
                           ("id", FAKE_ID)]:
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.log = os.path.join(self.tmp.name, "log")
        # PATH holds the fakes and the few real tools the script runs, so
        # that what this machine happens to have installed plays no part
        self.sys = os.path.join(self.tmp.name, "sys")
        os.mkdir(self.sys)
        for tool in ("sh", "cat", "grep", "sed", "tr", "wc", "mktemp", "rm", "dirname", "head", "tail", "awk"):
            real = shutil.which(tool)
            self.assertIsNotNone(real, f"{tool} is needed to run the script")
            os.symlink(real, os.path.join(self.sys, tool))

    def fake(self, *names, text="#!/bin/sh\nexit 0\n"):
        """Commands on PATH that succeed and do nothing."""
        for name in names:
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, state="foreign", native="amd64", all_pkgs="", removes="", no_pc=""):
        foreign = " ".join(a for a in ("i386", "arm64", "amd64") if a != native)
        env = dict(os.environ, PATH=self.bin + ":" + self.sys, FAKE_STATE=state, FAKE_NATIVE=native,
                   FAKE_FOREIGN=foreign, FAKE_ALL=all_pkgs, FAKE_REMOVES=removes, FAKE_NO_PC=no_pc,
                   FAKE_LOG=self.log)
        return subprocess.run(["sh", SCRIPT, *args], env=env, capture_output=True, text=True, timeout=120)

    def calls(self, tool):
        try:
            with open(self.log + "." + tool) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def test_foreign_copies_do_not_hide_native_ones(self):
        p = self.run_script("check", "--print-missing")
        self.assertEqual(p.returncode, 0, p.stderr)
        asked = p.stdout.split()
        for pkg in DEMO + CHECK_ONLY + KERNEL:
            self.assertIn(pkg + ":amd64", asked)
        self.assertTrue(all(a.endswith(":amd64") for a in asked), asked)
        # every package was asked about, unqualified, so every copy is seen
        self.assertIn("libelf-dev", self.calls("dpkg-query"))
        print(f"foreign copies only: {len(asked)} native packages asked for")

    def test_another_native_architecture(self):
        p = self.run_script("check", "--print-missing", native="arm64")
        self.assertEqual(p.returncode, 0, p.stderr)
        asked = p.stdout.split()
        self.assertIn("libelf-dev:arm64", asked)
        self.assertIn("libcmocka-dev:arm64", asked)
        # the kernel harness builds and boots an x86-64 kernel: amd64 only
        self.assertNotIn("qemu-system-x86:arm64", asked)
        self.assertTrue(all(a.endswith(":arm64") for a in asked), asked)

    def test_native_and_arch_all_copies_count(self):
        p = self.run_script("check", "--print-missing", state="native", all_pkgs="meson linux-source-6.1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")

    def test_nothing_installed(self):
        p = self.run_script("demo", "--print-missing", state="none")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(p.stdout.split()), sorted(x + ":amd64" for x in DEMO))

    def test_a_tool_on_path_is_not_asked_for(self):
        # a command that runs counts, whoever installed it; a library does not
        for name in ("protoc", "meson"):
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(path, 0o755)
        p = self.run_script("check", "--print-missing")
        self.assertEqual(p.returncode, 0, p.stderr)
        asked = p.stdout.split()
        self.assertNotIn("protobuf-compiler:amd64", asked)
        self.assertNotIn("meson:amd64", asked)
        self.assertIn("libelf-dev:amd64", asked)

    def test_demo_asks_for_the_demo_only(self):
        p = self.run_script("demo", "--print-missing")
        self.assertEqual(p.returncode, 0, p.stderr)
        asked = p.stdout.split()
        self.assertEqual(sorted(asked), sorted(x + ":amd64" for x in DEMO))
        for pkg in CHECK_ONLY + KERNEL:
            self.assertNotIn(pkg + ":amd64", asked)

    def test_no_install_that_removes_a_package(self):
        p = self.run_script("check", removes="libcmocka-dev:libcmocka0-custom")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"installing libcmocka-dev:amd64 would remove the installed packages: libcmocka0-custom")
        self.assertIn("nothing installed", p.stderr)
        installs = [c for c in self.calls("apt-get") if c.startswith("install") and " -s " not in " " + c + " "]
        self.assertEqual(installs, [], "apt-get install ran although a package would have been removed")

    def test_install_then_post_condition_names_the_package(self):
        # dpkg calls everything installed after the install, but libtracecmd does not link
        self.fake("cc", "gcc", "make", "meson", "ninja", "python3")
        self.fake("pkg-config", text=FAKE_PKG_CONFIG)
        p = self.run_script("demo", state="native", no_pc="libtracecmd")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"package libtracecmd-dev is installed but pkg-config: Package libtracecmd was not found")
        bad = [l for l in p.stderr.splitlines() if "is installed but" in l]
        self.assertEqual(len(bad), 1, p.stderr)

    def test_missing_packages_are_installed_native_first(self):
        p = self.run_script("demo", state="none")
        # the fake install leaves dpkg's answers as they were, so the
        # post-condition decides the exit status: only the calls matter here
        installs = [c for c in self.calls("apt-get") if c.startswith("install") and "-s" not in c.split()]
        self.assertEqual(len(installs), 1, self.calls("apt-get"))
        self.assertIn("--no-remove", installs[0].split())
        self.assertIn("libelf-dev:amd64", installs[0].split())
        self.assertNotRegex(installs[0], r":(i386|arm64)\b")

    def test_unknown_argument(self):
        p = self.run_script("everything")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown argument 'everything'", p.stderr)


if __name__ == "__main__":
    SCRIPT = sys.argv.pop(1)
    unittest.main(verbosity=2)
