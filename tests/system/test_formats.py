#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`relstack report --format pprof|perf-script|speedscope|html` read back
by consumers that are not relstack: protoc decodes the pprof file with the
published profile.proto field numbers, the perf script text is collapsed
by the rules of FlameGraph's stackcollapse-perf.pl, the speedscope file is
held to its schema's required fields, and the HTML page is loaded in
headless Chromium, which must draw the frames and zoom on a click.  Each
format must hold exactly the stacks the folded format counts.

Usage: test_formats.py RELSTACK DEMO PLUGIN PROFILE_PROTO ARTIFACT_DIR SANITIZE
"""
import collections
import gzip
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from elf_program import elf_machine

RELSTACK, DEMO, PLUGIN, PROTO, ARTIFACTS, SANITIZE = sys.argv[1:7]
del sys.argv[1:7]


def run(*args):
    p = subprocess.run([RELSTACK, *args], capture_output=True, timeout=120, text=True)
    assert p.returncode == 0, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p.stdout


def parse_text_format(text):
    """protoc's text format as nested dicts of lists."""
    root = collections.defaultdict(list)
    stack = [root]
    for line in text.splitlines():
        line = line.strip()
        if line.endswith("{"):
            node = collections.defaultdict(list)
            stack[-1][line[:-1].strip()].append(node)
            stack.append(node)
        elif line == "}":
            stack.pop()
        elif line:
            key, value = line.split(":", 1)
            value = value.strip()
            if value.startswith('"'):
                value = value[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1").decode()
            elif value in ("true", "false"):
                value = value == "true"
            else:
                value = int(value)
            stack[-1][key].append(value)
    return root


def one(node, key, default=0):
    return node[key][0] if node.get(key) else default


def pprof(path):
    """`report --format pprof` of @path, as protoc decodes it."""
    data = gzip.decompress(subprocess.run([RELSTACK, "report", "--format", "pprof", path],
                                          capture_output=True, check=True, timeout=120).stdout)
    p = subprocess.run(["protoc", "--proto_path=" + os.path.dirname(PROTO), "--decode=perftools.profiles.Profile",
                        os.path.basename(PROTO)], input=data, capture_output=True, check=True)
    return parse_text_format(p.stdout.decode())


class Formats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-formats-")
        cls.file = os.path.join(cls.tmp, "demo.rsb")
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":handle_segv=0:handle_abort=0"
        p = subprocess.run([DEMO, cls.file, PLUGIN], capture_output=True, timeout=60, env=env)
        assert p.returncode == -signal.SIGSEGV, f"demo exited {p.returncode}: {p.stderr!r}"
        cls.folded = collections.Counter()
        for line in run("report", "--format", "folded", cls.file).splitlines():
            stack, count = line.rsplit(" ", 1)
            cls.folded[stack] = int(count)
        cls.info = json.loads(run("info", "--format", "json", cls.file))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_pprof_decoded_by_protoc_holds_the_folded_stacks_with_build_ids_and_lines(self):
        if not shutil.which("protoc"):
            self.skipTest("protoc (Debian protobuf-compiler) is not installed")
        prof = pprof(self.file)
        strings = prof["string_table"]
        self.assertEqual(strings[0], "")
        types = [(strings[one(t, "type")], strings[one(t, "unit")]) for t in prof["sample_type"]]
        self.assertEqual(types[0], ("samples", "count"))
        functions = {one(f, "id"): f for f in prof["function"]}
        mappings = {one(m, "id"): m for m in prof["mapping"]}
        locations = {one(loc, "id"): loc for loc in prof["location"]}
        # every mapping is a recorded object, with its build-id
        objects = {o["path"]: o["build_id"] for o in self.info["objects"] if "path" in o}
        self.assertTrue(mappings)
        for m in mappings.values():
            path = strings[one(m, "filename")]
            self.assertIn(path, objects)
            self.assertEqual(strings[one(m, "build_id")], objects[path])
            self.assertLess(one(m, "memory_start"), one(m, "memory_limit"))
        lines_seen = 0
        got = collections.Counter()
        for s in prof["sample"]:
            names = []
            for lid in s["location_id"]:
                loc = locations[lid]
                if one(loc, "mapping_id"):
                    m = mappings[one(loc, "mapping_id")]
                    self.assertTrue(one(m, "memory_start") <= one(loc, "address") < one(m, "memory_limit"))
                # innermost first; the stack is written outermost first
                for line in loc["line"]:
                    f = functions[one(line, "function_id")]
                    names.append(strings[one(f, "name")])
                    lines_seen += one(line, "line") > 0 and bool(strings[one(f, "filename")])
            got[";".join(reversed(names))] += s["value"][0]
        self.assertEqual(got, self.folded)
        self.assertGreater(lines_seen, 0, "no function with file:line")

    def test_pprof_of_a_sampler_run_values_each_sample_by_count_and_by_cpu_time(self):
        if not shutil.which("protoc"):
            self.skipTest("protoc (Debian protobuf-compiler) is not installed")
        if SANITIZE != "none":
            self.skipTest("relstack record preloads the agent, which a sanitizer build's runtime refuses")
        if elf_machine("/bin/sh") != elf_machine(DEMO):
            self.skipTest("/bin/sh is a program for another machine than this build's (an i386 build on x86-64): "
                          "the build's agent cannot be preloaded into it")
        out = os.path.join(self.tmp, "sampled")
        p = subprocess.run([RELSTACK, "record", "-o", out, "--sample", "999", "--", "/bin/sh", "-c",
                            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        (name,) = os.listdir(out)
        prof = pprof(os.path.join(out, name))
        strings = prof["string_table"]
        types = [(strings[one(t, "type")], strings[one(t, "unit")]) for t in prof["sample_type"]]
        self.assertEqual(types, [("samples", "count"), ("cpu", "nanoseconds")])
        period_type = prof["period_type"][0]
        self.assertEqual((strings[one(period_type, "type")], strings[one(period_type, "unit")]),
                         ("cpu", "nanoseconds"))
        period = one(prof, "period")
        self.assertGreater(period, 0)
        self.assertTrue(prof["sample"])
        for s in prof["sample"]:
            self.assertEqual(s["value"][1], s["value"][0] * period)

    def test_perf_script_collapsed_as_stackcollapse_perf_does_gives_the_folded_stacks(self):
        text = run("report", "--format", "perf-script", self.file)
        got = collections.Counter()
        comm = stack = None
        # the rules of FlameGraph's stackcollapse-perf.pl: a header line
        # starts with the comm and pid[/tid]; a frame line is "pc func+off (module)",
        # frames innermost first; a blank line ends the stack
        for line in text.splitlines():
            if not line.strip():
                if comm is not None:
                    got[";".join([comm] + stack)] += 1
                comm = None
                continue
            head = re.match(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+", line)
            if head and comm is None:
                comm, stack = head.group(1), []
                self.assertRegex(line, r":\s*(\d+)*\s+(\S+):\s*$")
                event = re.search(r":\s*(\d+)*\s+(\S+):\s*$", line).group(2)
                stack.append(event)
                continue
            frame = re.match(r"^\s*(\w+)\s*(.+) \((\S*)\)", line)
            self.assertIsNotNone(frame, line)
            func = re.sub(r"\+0x[\da-f]+$", "", frame.group(2))
            stack.insert(1, func)
        self.assertIsNone(comm, "the last stack has no blank line after it")
        self.assertEqual(set(c.split(";", 1)[0] for c in got), {self.info["run"]["comm"]})
        self.assertEqual(collections.Counter({k.split(";", 1)[1]: v for k, v in got.items()}), self.folded)

    def test_speedscope_file_has_the_schemas_required_fields_and_the_folded_stacks(self):
        doc = json.loads(run("report", "--format", "speedscope", self.file))
        self.assertEqual(doc["$schema"], "https://www.speedscope.app/file-format-schema.json")
        frames = doc["shared"]["frames"]
        for f in frames:
            self.assertIsInstance(f["name"], str)
            self.assertTrue(set(f) <= {"name", "file", "line", "col"})
        got = collections.Counter()
        self.assertTrue(doc["profiles"])
        for p in doc["profiles"]:
            for key in ("type", "name", "unit", "startValue", "endValue", "samples", "weights"):
                self.assertIn(key, p)
            self.assertEqual(p["type"], "sampled")
            self.assertIn(p["unit"], ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"])
            self.assertEqual(len(p["samples"]), len(p["weights"]))
            for s, w in zip(p["samples"], p["weights"]):
                names = [frames[i]["name"] for i in s]
                names[0] = names[0].removesuffix(" [unreliable]")
                got[";".join(names)] += w
        self.assertEqual(got, self.folded)

    def test_html_flame_graph_renders_in_chromium_and_zooms_on_a_click(self):
        chromium = shutil.which("chromium")
        if not chromium:
            self.skipTest("chromium (Debian chromium) is not installed")
        page = os.path.join(self.tmp, "flame.html")
        with open(page, "w") as f:
            f.write(run("report", "--format", "html", self.file))
        # a page of the test loads the graph in a frame, clicks the
        # deepest frame of the least frequent stack and writes what it saw
        leaf = min(self.folded, key=self.folded.get).split(";")[-1]
        probe = os.path.join(self.tmp, "probe.html")
        with open(probe, "w") as f:
            f.write("""<!DOCTYPE html><html><body><pre id="out"></pre>
<iframe id="fr" src="flame.html" style="width:1200px;height:600px"></iframe>
<script>
window.onerror = function (m) { document.getElementById('out').textContent = 'error: ' + m; };
document.getElementById('fr').onload = function () {
  const doc = this.contentDocument, out = ['seen:'];
  const names = [...doc.querySelectorAll('.f')].map(e => e.dataset.name || e.textContent);
  out.push('frames: ' + JSON.stringify(names));
  const leaf = [...doc.querySelectorAll('.f')].find(e => e.dataset.name === %s);
  const before = leaf.getBoundingClientRect().width;
  leaf.click();
  const after = [...doc.querySelectorAll('.f')].find(e => e.dataset.name === %s).getBoundingClientRect().width;
  out.push('width: ' + before + ' -> ' + after);
  out.push('page width: ' + doc.getElementById('g').clientWidth);
  const search = doc.getElementById('search');
  search.value = %s;
  search.dispatchEvent(new Event('input'));
  out.push('marked: ' + [...doc.querySelectorAll('.f.m')].map(e => e.dataset.name).join(','));
  document.getElementById('out').textContent = out.join('\\n');
};
</script></body></html>""" % (json.dumps(leaf), json.dumps(leaf), json.dumps(leaf)))
        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                "--no-first-run", "--user-data-dir=" + os.path.join(self.tmp, "profile"),
                "--virtual-time-budget=5000"]
        dom = subprocess.run(args + ["--dump-dom", "file://" + probe], capture_output=True, text=True,
                             timeout=120).stdout
        result = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
        self.assertIsNotNone(result, dom[-2000:])
        self.assertIn("seen:", result.group(1), result.group(1))
        dom = html.unescape(result.group(1))
        m = re.search(r"frames: (\[.*\])", dom)
        names = set(json.loads(m.group(1)))
        for stack in self.folded:
            for name in stack.split(";"):
                self.assertIn(name, names)
        before, after = map(float, re.search(r"width: ([\d.]+) -> ([\d.]+)", dom).groups())
        page_width = float(re.search(r"page width: ([\d.]+)", dom).group(1))
        self.assertLess(before, page_width / 2)
        self.assertAlmostEqual(after, page_width, delta=2)
        # the search marks the frames whose name holds the text, and no other
        self.assertEqual(re.search(r"marked: (.*)", dom).group(1), leaf)
        os.makedirs(ARTIFACTS, exist_ok=True)
        shot = os.path.join(ARTIFACTS, "flame-graph.png")
        subprocess.run(args + ["--window-size=1200,600", "--screenshot=" + shot, "file://" + page],
                       capture_output=True, timeout=120)
        self.assertTrue(os.path.getsize(shot) > 1000)


if __name__ == "__main__":
    unittest.main(verbosity=2)
