#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shared library exports exactly the functions the public headers
declare with RELSTACK_API: nothing internal leaks (the library is loaded
into other programs, where a leaked name can collide with theirs), and
nothing declared is missing.

Usage: check_exports.py LIBRARY HEADER...
"""
import re
import subprocess
import sys

lib, headers = sys.argv[1], sys.argv[2:]
declared = set()
for h in headers:
    with open(h) as f:
        text = f.read()
    declared |= set(re.findall(r"RELSTACK_API\b[^;{]*?\b(relstack_\w+)\s*\(", text, re.S))

out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
exported = set()
for line in out.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "TtWwDdBbRrVvi" and not parts[2].startswith("RELSTACK_"):
        exported.add(parts[2].split("@")[0])

# Loader entry points the library interposes (src/capture/loader.c): not
# relstack's API, but exported on purpose, under the C library's version.
interposed = {"dlclose"}
leaked = sorted(exported - declared - interposed)
missing = sorted(declared - exported)
if leaked:
    print("exported but not declared in a public header:", " ".join(leaked))
if missing:
    print("declared in a public header but not exported:", " ".join(missing))
if not declared:
    print("no RELSTACK_API declaration found")
sys.exit(1 if leaked or missing or not declared else 0)
