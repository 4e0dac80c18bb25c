#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""CFI tables compiled from .sframe equal those compiled from .eh_frame.

GNU as writes both from the same CFI directives: the capture library's own
sources, assembled with --gsframe into one shared object, and the same
object with its .eh_frame taken out.  cfi_tables --rows compiles the
first from .eh_frame and the second from .sframe; every row the .sframe
table describes (its gaps aside: the linker writes no SFrame for some of
its stubs) must start where a row of the .eh_frame table starts, with the
same rule.

Usage: test_cfi_sframe.py CFI_TABLES WITH_EH_FRAME SFRAME_ONLY
"""
import subprocess
import sys
import unittest

TOOL, FULL, SFRAME = sys.argv[1:4]
del sys.argv[1:4]


def rows(path):
    p = subprocess.run([TOOL, "--rows", path], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("ROW "):
            _, start, rule = line.split(" ", 2)
            out[int(start, 16)] = rule
    return out


class SFrame(unittest.TestCase):
    def test_sframe_rows_equal_eh_frame_rows_of_the_same_build(self):
        eh, sf = rows(FULL), rows(SFRAME)
        compared = 0
        for start, rule in sorted(sf.items()):
            if rule == "gap":
                continue
            self.assertIn(start, eh, f"{start:#x}: .sframe row {rule!r} where .eh_frame has none")
            self.assertEqual(rule, eh[start], f"{start:#x}")
            compared += 1
        print(f"{compared} .sframe rows equal their .eh_frame rows ({len(eh)} rows from .eh_frame)")
        self.assertGreater(compared, 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
