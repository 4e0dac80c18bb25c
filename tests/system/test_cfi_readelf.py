#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""relstack's CFI rows against readelf's, for every row of the C library
and of ld.so (the objects whose CFI the unwinder follows).

readelf --debug-dump=frames-interp prints each FDE's table: for every
location, the CFA rule and the rules of the registers the CFI names.
cfi_rows asks src/capture/cfi.c for the row at each location and at a
point inside it, and prints it the same way; the two must agree on the
CFA, the return address and the frame pointer, or relstack must refuse a
row readelf shows as a DWARF expression or a register rule.

Usage: test_cfi_readelf.py CFI_ROWS
"""
import re
import subprocess
import sys
import unittest

CFI_ROWS = sys.argv[1]
del sys.argv[1:2]

FDE = re.compile(r"^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")


def objects():
    """The C library's and ld.so's paths, as cfi_rows loads them."""
    out = subprocess.run(["ldd", CFI_ROWS], capture_output=True, text=True, check=True).stdout
    libc = re.search(r"libc\.so\.6 => (\S+)", out).group(1)
    ldso = re.search(r"^\s*(/\S*ld-linux\S*)", out, re.M).group(1)
    return {"libc": libc, "ldso": ldso}


# readelf's names of the stack and frame pointer registers, by ELF machine
REGISTERS = {"Advanced Micro Devices X86-64": ("rsp", "rbp"), "Intel 80386": ("esp", "ebp")}


def registers(path):
    """(stack pointer, frame pointer) as readelf names them for the machine of @path."""
    out = subprocess.run(["readelf", "-h", path], capture_output=True, text=True, check=True).stdout
    return REGISTERS[re.search(r"Machine:\s+(.*\S)", out).group(1)]


def readelf_rows(path):
    """(location, end of the row, {column: rule}) for every row of every FDE."""
    # readelf exits 1 after warnings about sections it does not need here (its stderr); the tables are on stdout
    text = subprocess.run(["readelf", "--debug-dump=frames-interp", path], capture_output=True, text=True).stdout
    rows, cols, fde_end, pending = [], None, None, None
    for line in text.splitlines():
        m = FDE.match(line)
        if m:
            if pending:
                rows.append(pending + (fde_end,))
            pending, cols, fde_end = None, None, int(m.group(2), 16)
            continue
        if line.strip().startswith("LOC") and fde_end is not None:
            cols = line.split()[1:]
            continue
        if cols and re.match(r"^[0-9a-f]{8,16} ", line):
            # a register rule prints as "r10 (r10)": one value
            f = re.findall(r"r\d+ \([a-z0-9]+\)|\S+", line)
            loc = int(f[0], 16)
            if pending:
                rows.append(pending + (loc,))
            pending = (loc, dict(zip(cols, f[1:])))
            continue
        if not line.strip() and pending:
            rows.append(pending + (fde_end,))
            pending, cols = None, None
    if pending:
        rows.append(pending + (fde_end,))
    # an FDE at address 0 describes no code of the object (a function the linker dropped); a row at its
    # FDE's end (an advance to the end, as i386 glibc's assembly has) covers no code
    return [(loc, rules, end) for loc, rules, end in rows if loc and loc < end]


def expected(rules, regs):
    """What cfi_rows must print for a row readelf shows as @rules, @regs the (sp, fp) register names."""
    sp, fpreg = regs
    cfa, ra, fp = rules.get("CFA", "?"), rules.get("ra", "?"), rules.get(fpreg)
    if ra == "u":
        return "- u -"
    m = re.fullmatch(r"(\w+)([+-]\d+)", cfa)
    if not m or m.group(1) not in regs or not re.fullmatch(r"c[+-]?\d+", ra):
        return "error ENOTSUP"
    if fp is not None and fp != "u" and not re.fullmatch(r"c[+-]?\d+", fp):
        return "error ENOTSUP"
    return f"{'sp' if m.group(1) == sp else 'fp'}{m.group(2)} {ra} {fp if fp and fp != 'u' else 'same'}"


class AgainstReadelf(unittest.TestCase):
    def test_every_row_of_the_c_library_and_ld_so_is_readelfs(self):
        for name, path in objects().items():
            rows, regs = readelf_rows(path), registers(path)
            self.assertGreater(len(rows), 100, path)
            queries, want = [], []
            for loc, rules, end in rows:
                for pc in sorted({loc, (loc + end - 1) // 2 if end > loc else loc}):
                    queries.append(f"{name} {pc:x}")
                    want.append((pc, expected(rules, regs), rules))
            out = subprocess.run([CFI_ROWS], input="\n".join(queries) + "\n", capture_output=True, text=True,
                                 check=True).stdout.splitlines()
            self.assertEqual(len(out), len(want))
            bad = []
            for line, (pc, exp, rules) in zip(out, want):
                got = line.split(None, 1)[1]
                # readelf shows "u" both for a register never saved and one marked undefined
                if got != exp and not (exp.endswith(" same") and got == exp[:-4] + "u"):
                    bad.append(f"{name} {pc:#x}: relstack {got!r}, readelf {rules}")
            print(f"{name}: {len(want)} rows compared with readelf, {len(bad)} differ")
            self.assertEqual(bad, [], "\n".join(bad[:20]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
