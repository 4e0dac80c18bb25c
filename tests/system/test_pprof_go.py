#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`relstack report --format pprof` read by the program its users open it
with: `go tool pprof` (Debian golang-go).

Three sampled runs: a C program built here with -O2, whose static inline
functions are inlined into several callers (so a location lists several
functions, some of them met for the first time as inlined ones) and whose
deep recursion gives truncated, unreliable stacks; a C++ program built
here with -O2 and frame pointers, whose lambda is inlined into
std::for_each and a template taking the callable; and Debian's python3
computing pow() and sin(), whose frames in libm have inlined functions
where the C library's debug files are installed.  For each, pprof must
accept the file, and its stacks (functions with their inlined callers),
totals, reliability labels and mappings must be what `relstack report
--format json` says of the same file; -tagfocus/-tagignore select the
unreliable samples; -disasm and -list show the C program's code with the
samples on it.  A profile that `go tool pprof -proto` writes back has the
same samples, locations (with their functions and lines) and mappings.

Usage: test_pprof_go.py RELSTACK SANITIZE
Exit status 77 (skipped), saying why, without go or gcc, or in a
sanitizer build (relstack record cannot preload its agent there); the
C++ program's tests are skipped, saying why, without a C++ compiler.
"""
import collections
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

from call_tree import exit_unless_recordable, frame_names
from elf_program import elf_machine

RELSTACK, SANITIZE = sys.argv[1:3]
del sys.argv[1:3]
RELSTACK = os.path.abspath(RELSTACK)
PYTHON = "/usr/bin/python3"
# The build's C compiler (tests/system/meson.build sets CC: gcc -m32 for an i386 build).
CC = shlex.split(os.environ.get("CC", "gcc"))
# The C++ compiler: CXX, or c++ with the C compiler's flags (-m32 for an i386 build).
CXX = shlex.split(os.environ.get("CXX", "")) or ["c++"] + CC[1:]

# mix() is inlined into twice(), both into alpha(), beta() and deep();
# deep() recurses deeper than a stack record holds (truncated: unreliable).
PROGRAM = r"""
#include <stdlib.h>

static volatile unsigned sink;

static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
	for (int i = 0; i < 64; i++)
		x = x * 2654435761u ^ (x >> 13);
	return x;
}

static inline __attribute__((always_inline)) unsigned twice(unsigned x)
{
	return mix(x) + mix(x ^ 0x5bd1e995u);
}

__attribute__((noinline)) unsigned alpha(unsigned x)
{
	return twice(x) ^ 1;
}

__attribute__((noinline)) unsigned beta(unsigned x)
{
	return mix(x + 7) ^ twice(x + 3);
}

__attribute__((noinline)) unsigned deep(unsigned n, unsigned x)
{
	unsigned r;

	if (!n) {
		for (int i = 0; i < 2000; i++)
			x = twice(x);
		return x;
	}
	r = deep(n - 1, x + 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(int argc, char **argv)
{
	unsigned x = 1;

	for (int round = atoi(argv[1]); round > 0; round--) {
		for (int i = 0; i < 1000; i++) {
			x = alpha(x);
			x = beta(x);
		}
		x = deep(1000, x);
	}
	sink = x;
	return 0;
}
"""
ROUNDS = "900"

# A lambda inlined into std::for_each, itself inlined into a template that
# takes the callable (over_all, kept out of line): a location of three
# functions, whose names GCC spells three ways (the lambda's operator() has
# no linkage name; for_each's DWARF name and over_all's demangled symbol
# name the closure type).  Built with frame pointers, as a program that
# wants reliable stacks is.
CXX_PROGRAM = r"""
#include <algorithm>
#include <cstdlib>
#include <vector>

static volatile unsigned sink;

template <typename F>
__attribute__((noinline)) unsigned over_all(std::vector<unsigned> &v, F f)
{
	std::for_each(v.begin(), v.end(), f);
	return v[0];
}

int main(int argc, char **argv)
{
	std::vector<unsigned> v(4096, 1);
	unsigned total = 0;

	for (int round = std::atoi(argv[1]); round > 0; round--) {
		total += over_all(v, [](unsigned &x) {
			for (int i = 0; i < 16; i++)                 // LAMBDA
				x = x * 2654435761u ^ (x >> 13);     // LAMBDA
		});
		total += over_all(v, [round](unsigned &x) { x += (x >> 7) ^ (unsigned)round; });
	}
	sink = total;
	return 0;
}
"""
CXX_ROUNDS = "6000"
# The lines of the first lambda's body.
LAMBDA_LINES = {n for n, text in enumerate(CXX_PROGRAM.splitlines(), 1) if text.endswith("// LAMBDA")}
PYTHON_WORK = "import math\nfor i in range(2000000):\n    math.pow(1.5 + i, 0.37); math.sin(1e6 + i)\n"


def relstack(*args):
    p = subprocess.run([RELSTACK, *args], capture_output=True, timeout=300)
    assert p.returncode == 0, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p.stdout


def exec_segment(path):
    """(p_offset, p_vaddr, p_memsz) of the first executable PT_LOAD of the ELF file @path."""
    with open(path, "rb") as f:
        data = f.read(65536)
    if data[4] == 2:
        (phoff,), (phentsize, phnum) = struct.unpack_from("<Q", data, 32), struct.unpack_from("<HH", data, 54)
    else:
        (phoff,), (phentsize, phnum) = struct.unpack_from("<I", data, 28), struct.unpack_from("<HH", data, 42)
    for i in range(phnum):
        at = phoff + i * phentsize
        if data[4] == 2:
            p_type, p_flags, p_offset, p_vaddr, _, _, p_memsz = struct.unpack_from("<IIQQQQQ", data, at)
        else:
            p_type, p_offset, p_vaddr, _, _, p_memsz, p_flags = struct.unpack_from("<IIIIIII", data, at)
        if p_type == 1 and p_flags & 1:
            return p_offset, p_vaddr, p_memsz
    raise AssertionError(f"{path}: no executable PT_LOAD")


def parse_raw(text):
    """`go tool pprof -raw`: its samples, locations and mappings."""
    samples, locations, mappings = [], {}, {}
    section, loc = None, None
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section, head = line, True
            continue
        if section == "Samples:":
            if head:
                head = False  # the value types
                continue
            m = re.match(r"^((?:\s+-?\d+)+): ((?:\d+ )*)$", line)
            if m:
                samples.append({"values": [int(v) for v in m.group(1).split()],
                                "locations": [int(v) for v in m.group(2).split()], "labels": {}})
            else:
                for key, values in re.findall(r"(\S+):\[([^\]]*)\]", line):
                    samples[-1]["labels"][key] = values.split()
        elif section == "Locations":
            m = re.match(r"^\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(.*)$", line)
            if m:
                loc = locations[int(m.group(1))] = {"address": int(m.group(2), 16),
                                                    "mapping": int(m.group(3) or 0), "lines": []}
                rest = m.group(4)
            else:
                rest = line.strip()
            if rest:
                name, file, number = re.match(r"^(.*) (\S*):(-?\d+) s=\d+$", rest).groups()
                loc["lines"].append((name, file, int(number)))
        elif section == "Mappings" and line.strip():
            m = re.match(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S*) (\S*) ?(.*)$", line)
            assert m, line
            mappings[int(m.group(1))] = {"start": int(m.group(2), 16), "limit": int(m.group(3), 16),
                                         "offset": int(m.group(4), 16), "file": m.group(5),
                                         "build_id": m.group(6), "flags": set(re.findall(r"\[(\w+)\]", m.group(7)))}
    return samples, locations, mappings


class PprofGo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-pprof-go-")
        home = os.path.join(cls.tmp, "home")
        os.mkdir(home)
        # offline, nothing written outside the test's directory
        cls.env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "gocache"), GOPATH=os.path.join(home, "go"),
                       GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="", PPROF_TMPDIR=home,
                       PPROF_BINARY_PATH=cls.tmp)
        cls.env.pop("PPROF_TOOLS", None)
        cls.runs = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def pprof(self, *args):
        """`go tool pprof ARGS`' output; pprof must succeed."""
        p = subprocess.run(["go", "tool", "pprof", *args], capture_output=True, text=True, cwd=self.tmp,
                           env=self.env, timeout=300)
        self.assertEqual(p.returncode, 0, f"go tool pprof {' '.join(args)}: {p.stderr}")
        return p.stdout

    def record(self, name, *command):
        """A --sample run of @command: (buffer file, its pprof file, its records, relstack info)."""
        out = os.path.join(self.tmp, name)
        p = subprocess.run([RELSTACK, "record", "-o", out, "--sample", "999", "--", *command],
                           capture_output=True, text=True, cwd=self.tmp, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        (file,) = [os.path.join(out, f) for f in os.listdir(out)]
        profile = file + ".pb.gz"
        with open(profile, "wb") as f:
            f.write(relstack("report", "--format", "pprof", file))
        records = [json.loads(line) for line in relstack("report", "--format", "json", file).splitlines()]
        info = json.loads(relstack("info", "--format", "json", file))
        return file, profile, records, info

    def program(self):
        """The C program's run, recorded once for the tests that use it."""
        if "program" not in self.runs:
            src, prog = os.path.join(self.tmp, "inlines.c"), os.path.join(self.tmp, "inlines")
            with open(src, "w") as f:
                f.write(PROGRAM)
            subprocess.run(CC + ["-O2", "-g", "-o", prog, src], check=True)
            self.runs["program"] = (prog,) + self.record("program", prog, ROUNDS)
        return self.runs["program"]

    def cxx_program(self):
        """The C++ program's run, recorded once for the tests that use it."""
        if not shutil.which(CXX[0]):
            self.skipTest(f"{CXX[0]} is not installed (Debian package g++): the C++ test program is built at test "
                          "time")
        if "cxx" not in self.runs:
            src, prog = os.path.join(self.tmp, "lambdas.cc"), os.path.join(self.tmp, "lambdas")
            with open(src, "w") as f:
                f.write(CXX_PROGRAM)
            subprocess.run(CXX + ["-O2", "-g", "-fno-omit-frame-pointer", "-o", prog, src], check=True)
            self.runs["cxx"] = (prog,) + self.record("cxx", prog, CXX_ROUNDS)
        return self.runs["cxx"]

    def check_profile(self, profile, records, info):
        """What every profile must show, against relstack's JSON of the same file; its -raw parts."""
        samples, locations, mappings = parse_raw(self.pprof("-raw", "-symbolize=none", profile))
        # one sample per stack and verdict: the counts add up to the records
        stacks = [r for r in records if r["has_stack"]]
        self.assertEqual(sum(s["values"][0] for s in samples), len(stacks))
        self.assertEqual(len(stacks), info["run"]["records"])
        # the stacks, with the inlined functions at their places, and their labels
        want, got = collections.Counter(), collections.Counter()
        for r in stacks:
            names = [r["event"]] + [n for fr in reversed(r["frames"]) for n in frame_names(fr)]
            want[(";".join(names), "true" if r["reliable"] else "false", ",".join(r["reasons"]))] += 1
        for s in samples:
            names = [line[0] for lid in s["locations"] for line in locations[lid]["lines"]]
            labels = s["labels"]
            self.assertEqual(len(labels["reliable"]), 1, labels)
            got[(";".join(reversed(names)), labels["reliable"][0], "".join(labels.get("unreliable", [])))] += \
                s["values"][0]
        self.assertEqual(got, want)
        # each object's mapping is its executable segment as linked, at a
        # base of its own (the main executable's is 0: its link-time addresses)
        objects = {o["path"]: o for o in info["objects"] if "path" in o}
        vaddr = {path: int(o["text_vaddr"], 16) for path, o in objects.items()}
        frames = [fr for r in stacks for fr in r["frames"] if "slot" in fr]
        by_file = {m["file"]: m for m in mappings.values()}
        self.assertEqual(set(by_file), {fr["object"] for fr in frames})
        spans = sorted((m["start"], m["limit"]) for m in mappings.values())
        self.assertTrue(all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "mappings overlap: %s" % spans)
        for path, m in by_file.items():
            o = objects[path]
            self.assertEqual(m["build_id"], o["build_id"])
            self.assertEqual(m["limit"] - m["start"], int(o["text_size"], 16))
            if o["main"]:
                self.assertEqual(m["start"], vaddr[path])
                self.assertEqual(next(iter(mappings.values())), m, "the main executable's mapping is not the first")
            if os.path.exists(path):
                self.assertEqual(exec_segment(path), (m["offset"], vaddr[path], m["limit"] - m["start"]))
            mine = [fr for fr in frames if fr["object"] == path]
            self.assertEqual("FN" in m["flags"], all(fr.get("symbol") for fr in mine), (path, m["flags"]))
        # a location's address is the frame's offset from the mapping's start (a
        # return address less one: inside the call)
        want_at = {(fr["object"], int(fr["offset"], 16) - fr["return_address"] - vaddr[fr["object"]],
                    tuple(reversed(frame_names(fr)))) for fr in frames}
        got_at = set()
        for loc in locations.values():
            if loc["mapping"]:
                m = mappings[loc["mapping"]]
                self.assertTrue(m["start"] <= loc["address"] < m["limit"], (loc, m))
                got_at.add((m["file"], loc["address"] - m["start"], tuple(line[0] for line in loc["lines"])))
        self.assertEqual(got_at, want_at)
        return samples, locations, mappings

    def samples_of(self, profile, *filters):
        return sum(s["values"][0] for s in parse_raw(self.pprof("-raw", "-symbolize=none", *filters, profile))[0])

    def test_the_inlined_functions_of_a_c_program_are_listed_innermost_first_under_their_callers(self):
        _, _, profile, records, info = self.program()
        _, locations, mappings = self.check_profile(profile, records, info)
        lines = {tuple(line[0] for line in loc["lines"]) for loc in locations.values()}
        for chain in [("mix", "twice", "alpha"), ("mix", "twice", "beta"), ("mix", "beta"), ("mix", "twice", "deep")]:
            self.assertIn(chain, lines)
        # the program's own frames are all named: pprof is told so and keeps them
        (main,) = [m for m in mappings.values() if m["file"].endswith("/inlines")]
        self.assertIn("FN", main["flags"])
        top = self.pprof("-top", "-sample_index=samples", "-nodecount=100", profile)
        self.assertRegex(top, r"(?m)^\s*\d+ .* mix \(inline\)$")
        self.assertRegex(top, r"(?m)^\s*\d+ .* twice \(inline\)$")
        self.assertEqual(int(re.search(r"of (\d+) total", top).group(1)),
                         sum(1 for r in records if r["has_stack"]))

    def test_unreliable_samples_carry_labels_that_tagfocus_and_tagignore_select(self):
        _, _, profile, records, _ = self.program()
        unreliable = [r for r in records if r["has_stack"] and not r["reliable"]]
        truncated = [r for r in unreliable if "truncated" in r["reasons"]]
        self.assertTrue(truncated, "the deep recursion gave no truncated stack")
        self.assertEqual(self.samples_of(profile, "-tagfocus=reliable=false"), len(unreliable))
        self.assertEqual(self.samples_of(profile, "-tagignore=reliable=false"), len(records) - len(unreliable))
        self.assertEqual(self.samples_of(profile, "-tagfocus=reliable=true"), len(records) - len(unreliable))
        self.assertEqual(self.samples_of(profile, "-tagfocus=unreliable=truncated"), len(truncated))
        tags = self.pprof("-tags", "-sample_index=samples", profile)
        self.assertRegex(tags, r"(?m)^\s*reliable: Total %d(\.0)?$" % len(records))
        self.assertRegex(tags, r"(?m)^\s*%d(\.0)? \(.*\): false$" % len(unreliable))
        traces = self.pprof("-traces", "-sample_index=samples", "-tagfocus=reliable=false", profile)
        self.assertEqual(sum(int(n) for n in re.findall(r"(?m)^\s+(\d+)\s+\S", traces)), len(unreliable))
        self.assertEqual(len(re.findall(r"(?m)^\s*unreliable:\s+\S+$", traces)),
                         len(re.findall(r"(?m)^\s*reliable:\s+false$", traces)))

    def test_disasm_shows_the_instructions_of_the_function_with_its_samples_on_them(self):
        prog, _, profile, records, _ = self.program()
        alpha = [fr for r in records for fr in r["frames"] if fr.get("symbol") == "alpha"]
        start = int(alpha[0]["offset"], 16) - int(alpha[0]["symoff"], 16)
        end = start + int(alpha[0]["symsize"], 16)
        flat = sum(1 for r in records if r["frames"] and r["frames"][0].get("symbol") == "alpha")
        cum = sum(1 for r in records if any(fr.get("symbol") == "alpha" for fr in r["frames"]))
        out = self.pprof("-disasm", "alpha", "-sample_index=samples", prog, profile)
        head = re.search(r"(?m)^ROUTINE =+ alpha\n\s*(\d+)\s+(\d+) \(flat, cum\)", out)
        self.assertIsNotNone(head, out)
        self.assertEqual((int(head.group(1)), int(head.group(2))), (flat, cum))
        insts = re.findall(r"(?m)^\s+(\S+)\s+(\S+)\s+([0-9a-f]+): (\S.*)$", out)
        self.assertTrue(insts, out)
        self.assertTrue(all(start <= int(a, 16) < end for _, _, a, _ in insts), (hex(start), hex(end), out))
        self.assertEqual(sum(int(f) for f, _, _, _ in insts if f != "."), flat)

    def test_list_shows_the_source_line_of_an_inlined_function_with_its_samples(self):
        _, _, profile, records, _ = self.program()
        twice = sum(1 for r in records if any("twice" in frame_names(fr) for fr in r["frames"]))
        out = self.pprof("-list", "^twice$", "-sample_index=samples", profile)
        self.assertEqual(len(re.findall(r"(?m)^ROUTINE =+ twice in .*/inlines\.c$", out)), 1, out)
        # each sample is on one line of twice(): the lines' counts add up to them
        lines = re.findall(r"(?m)^\s+(\S+)\s+(\S+)\s+(\d+):(.*)$", out)
        self.assertEqual(sum(int(cum) for _, cum, _, _ in lines if cum != "."), twice)
        calls = [cum for _, cum, _, text in lines if text.strip() == "return mix(x) + mix(x ^ 0x5bd1e995u);"]
        self.assertEqual(len(calls), 1, out)
        self.assertNotEqual(calls[0], ".")

    def test_a_cxx_lambda_inlined_into_templates_is_listed_under_the_templates_that_take_it(self):
        _, _, profile, records, info = self.cxx_program()
        _, locations, _ = self.check_profile(profile, records, info)
        # the locations in the first lambda's body: the lambda innermost, then
        # the templates it was inlined into, each named after the closure type
        chains = [loc["lines"] for loc in locations.values()
                  if loc["lines"] and loc["lines"][0][1].endswith("/lambdas.cc") and loc["lines"][0][2] in LAMBDA_LINES]
        self.assertTrue(chains, "no sample in the lambda's body")
        for lines in chains:
            names = [line[0] for line in lines]
            self.assertGreaterEqual(len(lines), 2, lines)
            self.assertIn("operator()", names[0], lines)
            self.assertRegex(names[-1], r"^unsigned int over_all<main::\{lambda\(unsigned int&\)#1\}>\(", lines)
            self.assertTrue(all("lambda" in n for n in names[1:]), lines)
            if len(lines) > 2:
                self.assertTrue(names[1].startswith("for_each<"), lines)
        top = self.pprof("-top", "-sample_index=samples", "-nodecount=100", profile)
        self.assertRegex(top, r"(?m)^\s*\d+ .* operator\(\) \(inline\)$")
        self.assertRegex(top, r"(?m)^\s*\d+ .* unsigned int over_all( \[clone [^]]*\])?$")
        self.assertEqual(int(re.search(r"of (\d+) total", top).group(1)),
                         sum(1 for r in records if r["has_stack"]))

    def test_a_profile_written_back_by_pprof_proto_has_the_same_samples_locations_and_functions(self):
        for name, run in [("C", self.program), ("C++", self.cxx_program)]:
            with self.subTest(program=name):
                profile = run()[2]
                p = subprocess.run(["go", "tool", "pprof", "-proto", "-symbolize=none", profile], capture_output=True,
                                   cwd=self.tmp, env=self.env, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                again = profile + ".proto.pb.gz"
                with open(again, "wb") as f:
                    f.write(p.stdout)
                before = parse_raw(self.pprof("-raw", "-symbolize=none", profile))
                after = parse_raw(self.pprof("-raw", "-symbolize=none", again))
                self.assertTrue(before[0] and before[1], before)
                self.assertEqual(after[0], before[0])  # samples: values, location ids, labels
                self.assertEqual(after[1], before[1])  # locations: addresses, mappings, functions with file:line
                self.assertEqual(after[2], before[2])  # mappings

    def test_python3_sampled_through_libm_is_read_with_its_functions_and_totals(self):
        if elf_machine(PYTHON) != elf_machine(RELSTACK):
            self.skipTest(f"{PYTHON} is a program for another machine than this build's: "
                          "the build's agent cannot be preloaded into it")
        _, profile, records, info = self.record("python3", PYTHON, "-c", PYTHON_WORK)
        _, locations, mappings = self.check_profile(profile, records, info)
        names = {line[0] for loc in locations.values() for line in loc["lines"]}
        self.assertIn("_PyEval_EvalFrameDefault", names)
        # with the C library's debug files (Debian libc6-dbg), pow() and sin() show their inlined functions
        for mid, m in mappings.items():
            debug = "/usr/lib/debug/.build-id/%s/%s.debug" % (m["build_id"][:2], m["build_id"][2:])
            if os.path.basename(m["file"]).startswith("libm.so") and os.path.exists(debug):
                self.assertTrue(any(len(loc["lines"]) > 1 for loc in locations.values() if loc["mapping"] == mid))
        top = self.pprof("-top", "-sample_index=samples", profile)
        self.assertEqual(int(re.search(r"of (\d+) total", top).group(1)), len(records))


if __name__ == "__main__":
    if not shutil.which("go"):
        print("SKIP: go (the Debian package golang-go) is not installed: go tool pprof reads the pprof output")
        sys.exit(77)
    exit_unless_recordable(CC, SANITIZE)
    unittest.main(verbosity=2)
