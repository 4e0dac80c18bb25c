#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`relstack report --format speedscope` as speedscope reads it.

A C program built here with the build's compiler calls leaf() from three
lines of work() and, at the bottom of a recursion deeper than a stack
record holds (truncated: unreliable), from deep(); it is sampled, and its
calls of puts are recorded too.  The records name work() and leaf() at
several lines, yet the file must have one frame per function, so that
speedscope's Sandwich view lists each once.  A thread's sample records
are a profile in nanoseconds, each weighing the period (the median
interval between two samples of a thread, as the pprof output counts
it), its other records a profile counted in records; the stacks are
those of `relstack report --format json`, an unreliable one's root
saying so.  The file is held to speedscope's own file-format schema, and
speedscope's web app, driven in Debian's chromium by playwright-core,
imports it without an error and lists in its Sandwich view each function
once with its time.  The schema and the app come from the npm registry:
without scripts/install-test-tools.sh those tests are skipped, saying so.

Usage: test_speedscope.py RELSTACK SANITIZE INSTALL_TEST_TOOLS
Exit status 77 (skipped), saying why, without the C compiler or in a
sanitizer build (relstack record cannot preload its agent there).
"""
import base64
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

RELSTACK, SANITIZE, INSTALL_TEST_TOOLS = sys.argv[1:4]
del sys.argv[1:4]
RELSTACK = os.path.abspath(RELSTACK)
# The build's C compiler (tests/system/meson.build sets CC: gcc -m32 for an i386 build).
CC = shlex.split(os.environ.get("CC", "gcc"))

# leaf() is called from three lines of work(), and from deep() at the
# bottom of a recursion that no stack record holds whole.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) unsigned leaf(unsigned x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 2654435761u ^ (x >> 13);
	return x;
}

__attribute__((noinline)) unsigned work(unsigned x)
{
	x = leaf(x);
	x ^= 1;
	x = leaf(x + 3);
	x ^= 2;
	x = leaf(x + 5);
	return x;
}

__attribute__((noinline)) unsigned deep(unsigned n, unsigned x)
{
	unsigned r;

	if (!n)
		return leaf(x);
	r = deep(n - 1, x + 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(int argc, char **argv)
{
	unsigned x = 1;

	for (int round = atoi(argv[1]); round > 0; round--) {
		x = work(x);
		x = deep(1000, x);
		if (round % 500 == 0)
			puts("round");
	}
	sink = x;
	return 0;
}
"""
ROUNDS = "6000"

# playwright-core drives chromium through speedscope's own page: the
# profile comes in as speedscope's command line hands it over (a script
# calling speedscope.loadFileFromBase64, named in #localProfilePath=),
# then a click on "Sandwich"; it prints the table's rows and every error
# the page reported.
DRIVER = r"""
const [tools, chromiumPath, loader] = process.argv.slice(2);
const { chromium } = require(tools + '/node_modules/playwright-core');
(async () => {
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 3000 } });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('dialog', d => { errors.push('dialog: ' + d.message()); d.dismiss(); });
  await page.goto('file://' + tools + '/node_modules/speedscope/dist/release/index.html#localProfilePath=' +
                  loader);
  await page.getByText('Sandwich', { exact: false }).first().click();
  await page.waitForSelector('tr td');
  const rows = await page.evaluate(() => [...document.querySelectorAll('tr')].map(
    tr => [...tr.cells].map(c => c.innerText)));
  console.log(JSON.stringify({ title: await page.title(), rows: rows, errors: errors }));
  await browser.close();
})().catch(e => { console.log(JSON.stringify({ errors: [String(e)] })); process.exit(1); });
"""


def relstack(*args):
    p = subprocess.run([RELSTACK, *args], capture_output=True, timeout=300)
    assert p.returncode == 0, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p.stdout


def stack_of(record):
    """The record's stack as speedscope's frame names, outermost first: the event, its verdict, the frames."""
    root = record["event"] + ("" if record["reliable"] else " [unreliable]")
    return (root,) + tuple(n for fr in reversed(record["frames"]) for n in frame_names(fr))


def median_interval(records):
    """The median interval between two samples of a thread (the upper one of an even count), as relstack counts."""
    last, intervals = {}, []
    for r in records:
        if r["tid"] in last and r["ts_ns"] > last[r["tid"]]:
            intervals.append(r["ts_ns"] - last[r["tid"]])
        last[r["tid"]] = r["ts_ns"]
    intervals.sort()
    return intervals[len(intervals) // 2]


def schema_errors(value, schema, root, where="$"):
    """Where @value breaks the JSON Schema (draft-07) @schema: the keywords speedscope's schema uses."""
    if "$ref" in schema:
        node = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        return schema_errors(value, node, root, where)
    unknown = set(schema) - {"$schema", "definitions", "title", "anyOf", "type", "const", "enum", "properties",
                             "required", "items"}
    assert not unknown, f"speedscope's schema uses {unknown}, which this check does not read"
    kinds = {"object": dict, "array": list, "string": str, "number": (int, float), "boolean": bool}
    if "type" in schema and (not isinstance(value, kinds[schema["type"]]) or
                             (schema["type"] == "number" and isinstance(value, bool))):
        return [f"{where}: not a {schema['type']}"]
    errors = []
    if "anyOf" in schema and all(schema_errors(value, s, root, where) for s in schema["anyOf"]):
        errors.append(f"{where}: none of {[s.get('$ref', s) for s in schema['anyOf']]}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{where}: no {key}")
    for key, sub in schema.get("properties", {}).items():
        if isinstance(value, dict) and key in value:
            errors += schema_errors(value[key], sub, root, f"{where}.{key}")
    if "items" in schema and isinstance(value, list):
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], root, f"{where}[{i}]")
    return errors


def speedscope_time_ns(text):
    """A time as speedscope prints it ("584.78ms (98%)"), in ns, and the unit's size (its rounding step / 0.01)."""
    value, unit = re.match(r"^([\d.]+)(ns|µs|ms|s)\b", text).groups()
    scale = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]
    return float(value) * scale, scale


class Speedscope(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-speedscope-")
        src, prog = os.path.join(cls.tmp, "lines.c"), os.path.join(cls.tmp, "lines")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(CC + ["-O1", "-g", "-o", prog, src], check=True)
        out = os.path.join(cls.tmp, "out")
        p = subprocess.run([RELSTACK, "record", "-o", out, "--sample", "999", "--call", "puts", "--", prog, ROUNDS],
                           capture_output=True, text=True, cwd=cls.tmp, timeout=300)
        assert p.returncode == 0, p.stderr
        (cls.file,) = [os.path.join(out, f) for f in os.listdir(out)]
        cls.records = [json.loads(line) for line in relstack("report", "--format", "json", cls.file).splitlines()]
        cls.doc = json.loads(relstack("report", "--format", "speedscope", cls.file))
        cls.tools = subprocess.run([INSTALL_TEST_TOOLS, "--print-dir"], capture_output=True, text=True,
                                   check=True).stdout.strip()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def stacks(self):
        return [r for r in self.records if r["has_stack"]]

    def test_each_function_is_one_frame_though_its_records_name_it_at_several_lines(self):
        lines = collections.defaultdict(set)
        for r in self.stacks():
            for fr in r["frames"]:
                if fr.get("symbol"):
                    lines[fr["symbol"]].add(fr["line"])
        # work() calls leaf() from three lines (where leaf() itself is
        # interrupted depends on the compiler's line table: not asserted)
        self.assertGreater(len(lines["work"]), 1, lines["work"])
        frames = self.doc["shared"]["frames"]
        keys = [(f["name"], f.get("file")) for f in frames]
        self.assertEqual(len(keys), len(set(keys)), "a function is several frames")
        names = [f["name"] for f in frames]
        for fn in ("leaf", "work", "deep", "main"):
            self.assertEqual(names.count(fn), 1, (fn, [f for f in frames if f["name"] == fn]))
        self.assertTrue(all("line" not in f for f in frames), "a frame names one line of its function")
        self.assertEqual(next(f for f in frames if f["name"] == "work")["file"],
                         next(fr["file"] for r in self.stacks() for fr in r["frames"] if fr.get("symbol") == "work"))

    def test_sample_records_weigh_the_period_in_nanoseconds_and_other_records_one_each(self):
        frames = self.doc["shared"]["frames"]
        samples = [r for r in self.stacks() if r["event"] == "sample"]
        calls = [r for r in self.stacks() if r["event"] != "sample"]
        self.assertGreater(len(samples), 100)
        self.assertTrue(calls)
        period = median_interval(samples)
        want = collections.Counter((r["tid"], r["event"] == "sample", stack_of(r)) for r in self.stacks())
        got = collections.Counter()
        profiles = self.doc["profiles"]
        self.assertEqual(len(profiles), len({(r["tid"], r["event"] == "sample") for r in self.stacks()}))
        for p in profiles:
            tid, kind = re.match(r"^tid (\d+)( \(CPU time\))?$", p["name"]).groups()
            sampled = kind is not None
            self.assertEqual(p["unit"], "nanoseconds" if sampled else "none", p["name"])
            self.assertEqual(set(p["weights"]), {period if sampled else 1}, p["name"])
            self.assertEqual((p["startValue"], p["endValue"]), (0, sum(p["weights"])))
            self.assertEqual(len(p["samples"]), len(p["weights"]))
            for s in p["samples"]:
                got[(int(tid), sampled, tuple(frames[i]["name"] for i in s))] += 1
        self.assertEqual(got, want)
        # the unreliable stacks are there, under a root of their own
        self.assertTrue(any(not r["reliable"] for r in samples))
        self.assertIn("sample [unreliable]", [f["name"] for f in frames])

    def test_no_verdict_gives_the_event_as_the_root_of_every_stack(self):
        doc = json.loads(relstack("report", "--format", "speedscope", "--no-verdict", self.file))
        self.assertEqual(sorted(f["name"] for f in doc["shared"]["frames"] if "[unreliable]" in f["name"]), [])
        roots = collections.Counter(doc["shared"]["frames"][s[0]]["name"] for p in doc["profiles"]
                                    for s in p["samples"])
        self.assertEqual(roots, collections.Counter(r["event"] for r in self.stacks()))

    def schema(self):
        path = os.path.join(self.tools, "node_modules", "speedscope", "dist", "release", "file-format-schema.json")
        if not os.path.exists(path):
            self.skipTest(f"speedscope (npm) is not installed in {self.tools}: scripts/install-test-tools.sh "
                          "installs it")
        with open(path) as f:
            return json.load(f)

    def test_the_file_is_valid_by_speedscopes_own_file_format_schema(self):
        schema = self.schema()
        self.assertEqual(schema_errors(self.doc, schema, schema), [])
        # the check reads the schema: a unit speedscope does not know, or a weight that is no number, fails it
        for key, value in (("unit", "records"), ("weights", ["1"])):
            bad = json.loads(json.dumps(self.doc))
            bad["profiles"][0][key] = value
            self.assertTrue(schema_errors(bad, schema, schema), key)

    def test_speedscopes_app_imports_the_samples_and_its_sandwich_lists_each_function_once_with_its_time(self):
        self.schema()
        if not os.path.exists(os.path.join(self.tools, "node_modules", "playwright-core")):
            self.skipTest(f"playwright-core (npm) is not installed in {self.tools}: scripts/install-test-tools.sh "
                          "installs it")
        chromium = shutil.which("chromium")
        if not chromium:
            self.skipTest("chromium (Debian chromium) is not installed")
        if not shutil.which("node"):
            self.skipTest("node (Debian nodejs) is not installed")
        text = relstack("report", "--format", "speedscope", "--event", "sample", self.file)
        loader = os.path.join(self.tmp, "profile.js")
        with open(loader, "w") as f:
            f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps("lines.speedscope.json"),
                                                                 json.dumps(base64.b64encode(text).decode())))
        driver = os.path.join(self.tmp, "driver.cjs")
        with open(driver, "w") as f:
            f.write(DRIVER)
        p = subprocess.run(["node", driver, self.tools, chromium, loader], capture_output=True, text=True,
                           cwd=self.tmp, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        seen = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual(seen["errors"], [])
        self.assertEqual(seen["rows"][0], ["Total", "Self", "Symbol Name"])
        rows = seen["rows"][1:]
        names = [row[2] for row in rows]
        self.assertEqual(len(names), len(set(names)), "a function is listed twice: %s" % names)
        samples = [r for r in self.stacks() if r["event"] == "sample"]
        period = median_interval(samples)
        total = collections.Counter()
        for r in samples:
            for name in set(stack_of(r)):
                total[name] += period
        self.assertEqual(set(names), set(total))
        for shown, _, name in rows:
            ns, scale = speedscope_time_ns(shown)
            self.assertLessEqual(abs(ns - total[name]), 0.006 * scale, (name, shown, total[name]))


if __name__ == "__main__":
    exit_unless_recordable(CC, SANITIZE)
    unittest.main(verbosity=2)
