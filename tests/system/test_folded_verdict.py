#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The formats that add up stacks keep the verdict: folded, perf-script
and `report --top` keep the unreliable stacks apart.

A C program built here with the build's compiler is sampled while it
spends its time in a reliable stack (work) and at the bottom of a
recursion deeper than a stack record holds (deep: truncated, unreliable).
Against `relstack report --format json` of the same file:

- folded gives every unreliable stack as EVENT;[unreliable];outer;...,
  so the [unreliable] tower holds exactly the unreliable records;
- perf-script, collapsed by the rules of FlameGraph's
  stackcollapse-perf.pl, gives COMM;[unreliable];outer;... for exactly
  those records;
- --top ranks an unreliable stack apart, its last line "=> [unreliable]";
- --no-verdict gives what tools that know nothing of verdicts count (no
  [unreliable] frame, a stack's records added up whatever their
  verdicts), and the formats that always give the verdict refuse it.

Usage: test_folded_verdict.py RELSTACK SANITIZE
Exit status 77 (skipped), saying why, without the C compiler or in a
sanitizer build (relstack record cannot preload its agent there).
"""
import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

from call_tree import exit_unless_recordable, frame_names

RELSTACK, SANITIZE = sys.argv[1:3]
del sys.argv[1:3]
RELSTACK = os.path.abspath(RELSTACK)
# The build's C compiler (tests/system/meson.build sets CC: gcc -m32 for an i386 build).
CC = shlex.split(os.environ.get("CC", "gcc"))
MARK = "[unreliable]"

# About a third of the time at the bottom of deep(), whose stacks no record holds whole.
PROGRAM = r"""
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) unsigned spin(unsigned x)
{
	for (int i = 0; i < 30000; i++)
		x = x * 2654435761u ^ (x >> 13);
	return x;
}

__attribute__((noinline)) unsigned work(unsigned x)
{
	return spin(spin(x) + 1);
}

__attribute__((noinline)) unsigned deep(unsigned n, unsigned x)
{
	unsigned r;

	if (!n)
		return spin(x);
	r = deep(n - 1, x + 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(int argc, char **argv)
{
	unsigned x = 1;

	for (int round = atoi(argv[1]); round > 0; round--)
		x = deep(1000, work(x));
	sink = x;
	return 0;
}
"""
ROUNDS = "6000"


def relstack(*args, status=0):
    p = subprocess.run([RELSTACK, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == status, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p.stdout if status == 0 else p.stderr


def frames_of(record):
    """The record's frames, outermost first."""
    return [n for fr in reversed(record["frames"]) for n in frame_names(fr)]


def folded(text):
    counts = collections.Counter()
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        counts[stack] += int(count)
    return counts


def stackcollapse_perf(text):
    """perf script text collapsed by the rules of FlameGraph's stackcollapse-perf.pl: a header line
    starts with the comm and pid[/tid], and is the stack's root; a frame line is "pc func+off (module)",
    frames innermost first, each func less its offset; a blank line ends the stack."""
    counts = collections.Counter()
    stack, comm = [], None
    for line in text.splitlines():
        if not line.strip():
            if comm is not None:
                counts[";".join([comm] + stack)] += 1
            stack, comm = [], None
            continue
        head = re.match(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+", line)
        if head and comm is None:
            comm = head.group(1)
            continue
        frame = re.match(r"^\s*(\w+)\s*(.+) \((\S*)\)", line)
        assert frame, line
        stack.insert(0, re.sub(r"\+0x[\da-f]+$", "", frame.group(2)))
    assert comm is None, "the last stack has no blank line after it"
    return counts


def top(text):
    """`report --top` as [(event, count, total, frames innermost first)]."""
    ranked = []
    for line in text.splitlines():
        head = re.match(r"^#\d+ (\S+) (\d+) of (\d+) \([\d.]+%\)$", line)
        if head:
            ranked.append((head.group(1), int(head.group(2)), int(head.group(3)), []))
        else:
            frame = re.match(r"^ => (.*)$", line)
            assert frame and ranked, line
            ranked[-1][3].append(frame.group(1))
    return ranked


class FoldedVerdict(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-folded-verdict-")
        src, prog = os.path.join(cls.tmp, "towers.c"), os.path.join(cls.tmp, "towers")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(CC + ["-O1", "-g", "-o", prog, src], check=True)
        out = os.path.join(cls.tmp, "out")
        p = subprocess.run([RELSTACK, "record", "-o", out, "--sample", "999", "--", prog, ROUNDS],
                           capture_output=True, text=True, cwd=cls.tmp, timeout=300)
        assert p.returncode == 0, p.stderr
        (cls.file,) = [os.path.join(out, f) for f in os.listdir(out)]
        cls.comm = json.loads(relstack("info", "--format", "json", cls.file))["run"]["comm"]
        records = [json.loads(line) for line in relstack("report", "--format", "json", cls.file).splitlines()]
        cls.stacks = [r for r in records if r["has_stack"]]
        cls.unreliable = sum(1 for r in cls.stacks if not r["reliable"])
        assert 0 < cls.unreliable < len(cls.stacks), \
            f"{cls.unreliable} of {len(cls.stacks)} records unreliable: the program did not give both kinds"

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def want(self, root, verdict=True):
        """The stacks of the JSON records, rooted at @root(record), with the unreliable frame if @verdict."""
        return collections.Counter(";".join([root(r)] + ([MARK] if verdict and not r["reliable"] else []) +
                                            frames_of(r)) for r in self.stacks)

    def test_folded_keeps_the_unreliable_records_in_a_tower_of_their_own_under_the_event(self):
        got = folded(relstack("report", "--format", "folded", self.file))
        self.assertEqual(got, self.want(lambda r: r["event"]))
        tower = sum(n for stack, n in got.items() if stack.split(";")[1] == MARK)
        self.assertEqual(tower, self.unreliable)
        self.assertTrue(all(MARK not in stack.split(";")[2:] and stack.split(";")[0] != MARK for stack in got))
        # dump's folded stacks (not symbolised) keep it too
        got = folded(relstack("dump", "--format", "folded", self.file))
        self.assertEqual(sum(n for stack, n in got.items() if stack.split(";")[1] == MARK), self.unreliable)

    def test_perf_script_collapsed_as_stackcollapse_perf_does_keeps_the_unreliable_tower(self):
        got = stackcollapse_perf(relstack("report", "--format", "perf-script", self.file))
        self.assertEqual(got, self.want(lambda r: self.comm))
        self.assertEqual(sum(n for stack, n in got.items() if stack.split(";")[1] == MARK), self.unreliable)

    def test_top_ranks_unreliable_stacks_apart_and_ends_them_with_the_mark(self):
        ranked = top(relstack("report", "--top", "1000000", self.file))
        self.assertEqual(sum(n for _, n, _, _ in ranked), len(self.stacks))
        self.assertTrue(all(total == len(self.stacks) for _, _, total, _ in ranked))
        self.assertEqual(sum(n for _, n, _, frames in ranked if frames[-1] == MARK), self.unreliable)
        self.assertTrue(all(MARK not in frames[:-1] for _, _, _, frames in ranked))
        got = collections.Counter(";".join([event] + frames[::-1]) for event, n, _, frames in ranked
                                  for _ in range(n))
        self.assertEqual(got, self.want(lambda r: r["event"]))

    def test_no_verdict_adds_up_the_stacks_whatever_their_verdict(self):
        want = self.want(lambda r: r["event"], verdict=False)
        self.assertEqual(folded(relstack("report", "--format", "folded", "--no-verdict", self.file)), want)
        self.assertEqual(stackcollapse_perf(relstack("report", "--format", "perf-script", "--no-verdict", self.file)),
                         self.want(lambda r: self.comm, verdict=False))
        ranked = top(relstack("report", "--top", "1000000", "--no-verdict", self.file))
        self.assertEqual(collections.Counter(";".join([event] + frames[::-1]) for event, n, _, frames in ranked
                                             for _ in range(n)), want)

    def test_formats_that_always_give_the_verdict_refuse_no_verdict(self):
        for fmt in ("text", "json", "pprof", "html"):
            err = relstack("report", "--format", fmt, "--no-verdict", self.file, status=1)
            self.assertIn(f"--no-verdict applies to folded, perf-script, speedscope and --top, not --format {fmt}",
                          err)
        self.assertIn("'--no-verdict' does not apply", relstack("info", "--no-verdict", self.file, status=1))


if __name__ == "__main__":
    exit_unless_recordable(CC, SANITIZE)
    unittest.main(verbosity=2)
