#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""CFI tables compile for every ELF object on this machine, without a crash.

Runs cfi_tables (a compiler of relstack's CFI tables over files mapped
read-only) on every regular file under the system's library and program
directories: each table must be sorted and find each of its rows again
(cfi_tables exits 1 otherwise), no file may crash it, and the C library's
table must hold rows for most of its FDEs.  The directories hold other
architectures' libraries too (multiarch): the C library checked is the one
CFI_TABLES itself runs with.

Usage: test_cfi_tables.py CFI_TABLES
"""
import os
import subprocess
import sys
import unittest

TOOL = sys.argv[1]
del sys.argv[1:2]
DIRS = ["/usr/lib", "/usr/lib32", "/usr/bin", "/usr/sbin", "/usr/libexec"]


def own_libc():
    out = subprocess.run(["ldd", TOOL], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "libc.so.6 =>" in line:
            return os.path.realpath(line.split("=>")[1].split()[0])
    raise AssertionError("ldd names no C library for " + TOOL)


def elf_files():
    out = []
    for d in DIRS:
        for root, _, names in os.walk(d):
            for n in names:
                p = os.path.join(root, n)
                try:
                    if os.path.isfile(p) and not os.path.islink(p):
                        with open(p, "rb") as f:
                            if f.read(4) == b"\x7fELF":
                                out.append(p)
                except OSError:
                    pass
    return sorted(set(out))


class EveryObject(unittest.TestCase):
    def test_tables_compile_for_every_elf_object_sorted_and_found_again(self):
        files = elf_files()
        self.assertGreater(len(files), 100)
        lines = []
        for i in range(0, len(files), 500):
            p = subprocess.run([TOOL] + files[i:i + 500], capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            lines += p.stdout.splitlines()
        totals = [l.split() for l in lines if l.startswith("total ")]
        compiled = sum(int(t[2]) for t in totals)
        rows = sum(int(t[8]) for t in totals)
        print(f"{len(files)} ELF files, {compiled} with .eh_frame_hdr compiled, {rows} rows")
        self.assertGreater(compiled, 100)
        libc_path = own_libc()
        libc = [f for f in (l.split() for l in lines if "/libc.so.6 " in l) if os.path.realpath(f[0]) == libc_path]
        self.assertTrue(libc, "the C library was not compiled")
        fdes, table_rows, unsupported = int(libc[0][2]), int(libc[0][4]), int(libc[0][6])
        self.assertGreater(table_rows, fdes)  # several rows per function
        self.assertLess(unsupported * 20, table_rows)  # expressions are the exception (PLT, trampolines)


if __name__ == "__main__":
    unittest.main(verbosity=2)
