#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Files cross machines: a buffer file written by one architecture's build
decodes with another's, names taken from the writer's binaries and checked
by build-id.

Run by scripts/cross-check.sh after both builds exist, one class of tests
per architecture (the ARCH build against the native one):

Usage: test_cross_files.py ARCH NATIVE_BUILD ARCH_BUILD
"""
import os
import sys
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
