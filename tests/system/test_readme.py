#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The README's sample output is what `make demo` prints.

Runs scripts/demo.sh on this build and checks every line of the README's
abridged sample against its output: record headers, frames (function,
offset, object, file:line), the object table and the event schemas.  What
differs from run to run (times, thread and process ids, run and build ids)
and the path of the tree ("...") are masked on both sides.

It also checks that the flags the README gives for reliable traces are
the ones the pkg-config file hands out, and that a program built with
them gets a reliable trace where one built without gets an unreliable one
with its reasons.

Usage: test_readme.py README DEMO_SH BUILDDIR BUILDTYPE
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

from elf_program import EM_X86_64, elf_machine

README, DEMO_SH, BUILD, BUILDTYPE = sys.argv[1:5]
del sys.argv[1:5]

# The README shows the build `make demo` makes.
README_BUILDTYPE = "debugoptimized"
# The machine whose build the README shows (x86-64: 8-byte words, x86-64's C library), as ELF names it.
README_MACHINE = EM_X86_64
# The build's C compiler (tests/system/meson.build sets CC; a cross build's may be gcc -m32).
CC = shlex.split(os.environ.get("CC", "cc"))


def sample(text):
    """The lines of the fenced block under "What `make demo` shows"."""
    part = text[text.index("## What `make demo` shows"):]
    block = part[part.index("```\n") + 4:]
    return block[:block.index("```\n")].splitlines()


def mask(line, root):
    line = line.replace(root, "...")
    line = re.sub(r"^\d{4}-\d\d-\d\dT[0-9:.]+Z tid \d+ ", "TIME tid TID ", line)
    line = re.sub(r"\b[0-9a-f]{32,40}\b", "ID", line)
    line = re.sub(r"pid \d+", "pid PID", line)
    return line


class Readme(unittest.TestCase):
    def test_every_line_of_the_readme_sample_is_printed_by_make_demo(self):
        if BUILDTYPE != README_BUILDTYPE:
            self.skipTest(f"the README shows a {README_BUILDTYPE} build, this one is {BUILDTYPE}")
        machine = elf_machine(os.path.join(BUILD, "demo", "relstack-demo"))
        if machine != README_MACHINE:
            self.skipTest(f"the README shows an x86-64 build's output, this build's programs are for ELF machine "
                          f"{machine} (another word size, another C library)")
        root = os.path.dirname(os.path.realpath(BUILD))
        with tempfile.TemporaryDirectory(prefix="relstack-readme-") as tmp:
            p = subprocess.run(["sh", DEMO_SH, BUILD, os.path.join(tmp, "relstack-demo.rsb")],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        printed = {mask(l, root) for l in p.stdout.splitlines()}
        with open(README) as f:
            lines = sample(f.read())
        checked = 0
        for line in lines:
            if line.strip() == "..." or line.startswith("recorded: ") or line.startswith("file: "):
                continue
            self.assertTrue(mask(line, root) in printed, f"README line not printed by the demo: {line!r}")
            checked += 1
        frames = [l for l in lines if l.startswith(" => ") and "demo" in l]
        self.assertGreater(len(frames), 10)
        self.assertGreater(checked, 30)

    def test_the_frame_pointer_flags_of_the_readme_come_from_pkg_config(self):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(BUILD, "meson-private"))
        p = subprocess.run(["pkg-config", "--variable=frame_pointer_cflags", "relstack"], env=env,
                           capture_output=True, text=True, check=True)
        flags = p.stdout.split()
        self.assertEqual(flags, ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"])
        with open(README) as f:
            text = f.read()
        self.assertIn("\n" + " ".join(flags) + "\n", text)
        self.assertIn("--variable=frame_pointer_cflags", text)
        desc = subprocess.run(["pkg-config", "--print-variables", "relstack"], env=env,
                              capture_output=True, text=True, check=True).stdout
        self.assertIn("frame_pointer_cflags", desc.split())

    def test_a_program_built_with_the_uninstalled_pkg_config_file_builds_and_runs(self):
        """The build's meson-uninstalled/relstack-uninstalled.pc alone: headers, library, frame-pointer flags."""
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(BUILD, "meson-uninstalled"))

        def pc(*args):
            return subprocess.run(["pkg-config", *args, "relstack-uninstalled"], env=env, capture_output=True,
                                  text=True, check=True).stdout.split()
        flags = pc("--variable=frame_pointer_cflags")
        self.assertEqual(flags, ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"])
        cflags, libs = pc("--cflags"), pc("--libs")
        with tempfile.TemporaryDirectory(prefix="relstack-pc-") as tmp:
            app, exe = os.path.join(tmp, "app.c"), os.path.join(tmp, "app")
            with open(app, "w") as f:
                f.write(APP)
            p = subprocess.run(CC + ["-O2"] + flags + cflags + [app, "-o", exe] + libs, capture_output=True,
                               text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            # an uninstalled library is found where -L names it
            run_env = dict(os.environ, LD_LIBRARY_PATH=":".join(l[2:] for l in libs if l.startswith("-L")))
            p = subprocess.run([exe], env=run_env, capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout.split()), (0, ["reliable"]), p.stderr)

    def test_frames_without_frame_pointers_are_reliable_only_where_their_cfi_is_followed(self):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(BUILD, "meson-private"))
        flags = subprocess.run(["pkg-config", "--variable=frame_pointer_cflags", "relstack"], env=env,
                               capture_output=True, text=True, check=True).stdout.split()
        src = os.path.join(os.path.dirname(os.path.realpath(README)), "include")
        lib = os.path.join(BUILD, "src")
        verdicts = {}
        with tempfile.TemporaryDirectory(prefix="relstack-fp-") as tmp:
            app, calls, main = (os.path.join(tmp, n) for n in ("app.c", "calls.c", "main.c"))
            for path, text in ((app, APP), (calls, APP.replace("static int", "int").split("int main(")[0]),
                               (main, MAIN_OF_LIBRARY)):
                with open(path, "w") as f:
                    f.write(text)
            cc = CC + ["-O2", "-I", src]
            link = ["-L", lib, "-lrelstack", f"-Wl,-rpath,{lib}"]
            # the whole program built as the README says, or not at all
            subprocess.run(cc + flags + [app, "-o", os.path.join(tmp, "with")] + link, check=True)
            subprocess.run(cc + [app, "-o", os.path.join(tmp, "without")] + link, check=True)
            # the calls in a shared library built without them, the program with them
            subprocess.run(cc + ["-fPIC", "-shared", calls, "-o", os.path.join(tmp, "libcalls.so")] + link,
                           check=True)
            subprocess.run(cc + flags + [main, "-o", os.path.join(tmp, "library_without"), "-L", tmp,
                                         "-lcalls", f"-Wl,-rpath,{tmp}"] + link, check=True)
            # the same library without call-frame information either
            notables = os.path.join(tmp, "notables")
            os.mkdir(notables)
            subprocess.run(cc + ["-fPIC", "-shared", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
                                 calls, "-o", os.path.join(notables, "libcalls.so")] + link, check=True)
            subprocess.run(cc + flags + [main, "-o", os.path.join(tmp, "library_without_tables"),
                                         "-L", notables, "-lcalls", f"-Wl,-rpath,{notables}"] + link, check=True)
            for name in ("with", "without", "library_without", "library_without_tables"):
                p = subprocess.run([os.path.join(tmp, name)], capture_output=True, text=True, check=True)
                verdicts[name] = p.stdout.split()
        self.assertEqual(verdicts["with"], ["reliable"], verdicts)
        # the program (never unloaded) is walked by its call-frame information
        self.assertEqual(verdicts["without"], ["reliable"], verdicts)
        # a shared library without frame pointers: walked by its call-frame information too
        self.assertEqual(verdicts["library_without"], ["reliable"], verdicts)
        # without frame pointers and without call-frame information: never reliable, and says why
        self.assertEqual(verdicts["library_without_tables"][0], "unreliable", verdicts)
        self.assertIn("no-fp-object", verdicts["library_without_tables"], verdicts)


# Three calls deep, then a capture: its verdict and reasons.
APP = r"""
#include <stdio.h>
#include <relstack/relstack.h>

__attribute__((noinline)) static int c(int x)
{
	uint64_t w[64];
	struct relstack_verdict v;
	int n = relstack_capture(w, 64, 0, 0, &v);

	printf("%s", v.reasons ? "unreliable" : "reliable");
	for (unsigned b = 0; b < 32; b++)
		if (v.reasons & (1u << b))
			printf(" %s", relstack_reason_string(1u << b));
	printf("\n");
	return x + n;
}
__attribute__((noinline)) static int b(int x) { return c(x * 2) + 1; }
__attribute__((noinline)) static int a(int x) { return b(x + 3) * 2; }
int main(int argc, char **argv) { (void)argv; return a(argc) < 0; }
"""

MAIN_OF_LIBRARY = r"""
int a(int x);
int main(int argc, char **argv) { (void)argv; return a(argc) < 0; }
"""


if __name__ == "__main__":
    unittest.main(verbosity=2)
