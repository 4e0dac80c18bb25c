#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""`relstack report --format html` drawn by headless Chromium (Debian
chromium), held to `relstack report --format json` of the same file.

The profile: a C program built here with the build's compiler (CC) and
sampled, whose work has the shapes that broke the page: a recursive
function (recurse(), thirteen frames of each of its stacks), 120 small
functions that each get a sample or two (frames narrower than a pixel at
the width the test gives the page, and frames between one and two pixels),
a function whose name is too long for its frame, and a callback called
through a function built without frame pointers or CFI (nofp_apply),
whose stacks are unreliable: main() and every frame below it hold a share
of unreliable stacks.

A page of the test loads the graph in a frame, reads every drawn frame
(its box, label, tooltip and hatched part), searches, clicks a frame
under two pixels where a pointer would, zooms, and switches to the icicle
orientation, then writes what it saw into its DOM, which --dump-dom
prints.  Each frame's place in the call tree is found from the geometry
alone (the frame in the row below whose box holds it), so every drawn
frame is checked against the stacks of the JSON output.

Usage: test_html_flamegraph.py RELSTACK ARTIFACT_DIR SANITIZE
Exit status 77 (skipped), saying why, without chromium or the C compiler,
or in a sanitizer build (relstack record cannot preload its agent there).
"""
import collections
import html
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

RELSTACK, ARTIFACTS, SANITIZE = sys.argv[1:4]
del sys.argv[1:4]
RELSTACK = os.path.abspath(RELSTACK)
# The build's C compiler (tests/system/meson.build sets CC: gcc -m32 for an i386 build).
CC = shlex.split(os.environ.get("CC", "gcc"))
CHROMIUM = shutil.which("chromium")

# Built without frame pointers and without CFI: nothing proves its frame,
# so a stack through it is unreliable.
NOFP = r"""
void nofp_apply(void (*f)(unsigned), unsigned n);

__attribute__((noinline)) void nofp_apply(void (*f)(unsigned), unsigned n)
{
	f(n);
	__asm__ volatile("" ::: "memory");
}
"""

# main() loops until the process has used the CPU seconds it is given, so
# that the number of samples does not depend on the machine's speed.
PROGRAM = r"""
#include <stdlib.h>
#include <time.h>

static volatile unsigned sink;

void nofp_apply(void (*f)(unsigned), unsigned n);

__attribute__((noinline)) static void spin(unsigned n)
{
	unsigned x = sink;

	for (unsigned i = 0; i < n; i++)
		x = x * 2654435761u ^ (x >> 13);
	sink = x;
}

__attribute__((noinline)) static void callback(unsigned n)
{
	spin(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void through_nofp(void)
{
	nofp_apply(callback, 1500000);
	spin(500000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) unsigned recurse(unsigned n)
{
	unsigned r;

	if (!n) {
		spin(2000000);
		return 0;
	}
	r = recurse(n - 1);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static int compare(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	spin(20);
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) void a_function_whose_name_is_longer_than_its_frame_is_wide(void)
{
	spin(500000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void sort(void)
{
	static unsigned v[2000];

	for (unsigned i = 0; i < 2000; i++)
		v[i] = i * 2654435761u;
	qsort(v, 2000, sizeof(v[0]), compare);
}

#define TINY(n) \
	__attribute__((noinline)) void tiny_##n(void) \
	{ \
		spin(6000); \
		__asm__ volatile("" ::: "memory"); \
	}
#define TINY10(n) TINY(n##0) TINY(n##1) TINY(n##2) TINY(n##3) TINY(n##4) TINY(n##5) TINY(n##6) TINY(n##7) \
	TINY(n##8) TINY(n##9)
#define LIST10(n) tiny_##n##0, tiny_##n##1, tiny_##n##2, tiny_##n##3, tiny_##n##4, tiny_##n##5, tiny_##n##6, \
	tiny_##n##7, tiny_##n##8, tiny_##n##9
TINY10(10) TINY10(11) TINY10(12) TINY10(13) TINY10(14) TINY10(15) TINY10(16) TINY10(17) TINY10(18) TINY10(19)
TINY10(20) TINY10(21)
static void (*const tiny[])(void) = { LIST10(10), LIST10(11), LIST10(12), LIST10(13), LIST10(14), LIST10(15),
	LIST10(16), LIST10(17), LIST10(18), LIST10(19), LIST10(20), LIST10(21) };

__attribute__((noinline)) void scatter(void)
{
	for (unsigned i = 0; i < sizeof(tiny) / sizeof(tiny[0]); i++)
		tiny[i]();
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = atof(argv[1]);
	struct timespec ts;

	do {
		through_nofp();
		recurse(12);
		sort();
		scatter();
		a_function_whose_name_is_longer_than_its_frame_is_wide();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < seconds);
	return 0;
}
"""
CPU_SECONDS = "1.5"
# The page is given 0.75 px per sample: a frame of one sample is narrower
# than a pixel, one of two is between one and two pixels.
PX_PER_SAMPLE = 0.75
# recurse is thirteen frames of its stacks, sort several (sort, the C library's qsort and what it
# calls); tiny_1 matches tiny_100..tiny_199, each in stacks of their own
TERMS = ["recurse", "sort", "tiny_1"]
ZOOM = "scatter"
ROW = 17

PROBE = r"""<!DOCTYPE html><html><body style="margin:0"><pre id="out"></pre>
<iframe id="fr" src="flame.html" style="width:%(width)dpx;height:%(height)dpx;border:0"></iframe>
<script>
const TERMS = %(terms)s, ZOOM = %(zoom)s;
function snapshot(doc) {
  return [...doc.querySelectorAll('#g .f')].map(e => {
    const r = e.getBoundingClientRect(), h = e.querySelector('.h'), l = e.querySelector('.l');
    return {name: e.dataset.name === undefined ? null : e.dataset.name, cls: e.className,
            x: r.left, y: r.top, w: r.width, h: r.height, inner: e.clientWidth, title: e.title,
            hatch: h ? h.getBoundingClientRect().width : 0, hatchRight: h ? h.getBoundingClientRect().right : 0,
            label: l ? l.textContent : '', labelRight: l ? l.getBoundingClientRect().right : 0};
  });
}
/* the root's frame zooms out in any page; this one also has a button */
function unzoom(doc) { [...doc.querySelectorAll('#g .f')].find(e => e.dataset.name === 'all').click(); }
document.getElementById('fr').onload = function () {
  const doc = this.contentDocument, res = {errors: {}};
  const steps = {
    flame() {
      res.width = doc.getElementById('g').clientWidth;
      res.flame = snapshot(doc);
    },
    search() {
      const search = doc.getElementById('search');
      res.search = {};
      for (const term of TERMS) {
        search.value = term;
        search.dispatchEvent(new Event('input'));
        res.search[term] = {text: doc.getElementById('matched').textContent,
                            marked: [...doc.querySelectorAll('#g .f.m')].map(e => e.dataset.name || null)};
      }
      search.value = '';
      search.dispatchEvent(new Event('input'));
    },
    /* frames under two pixels, each clicked where a pointer at its centre would */
    narrow() {
      res.narrow = [];
      const narrow = snapshot(doc).filter(f => f.name !== null && f.w < 2);
      for (const r of [0, narrow.length >> 1, narrow.length - 1].filter(i => i >= 0).map(i => narrow[i])) {
        const e = [...doc.querySelectorAll('#g .f')].find(e => e.getBoundingClientRect().left === r.x &&
                                                                e.getBoundingClientRect().top === r.y);
        /* a pointer's place is a whole pixel: the one at the centre */
        const hit = doc.elementFromPoint(Math.floor(r.x + r.w / 2), Math.floor(r.y + r.h / 2));
        const under = hit && hit.closest('.f');
        const d = {frame: r, same: under === e, under: under && {name: under.dataset.name || null,
                                                                   x: under.getBoundingClientRect().left,
                                                                   y: under.getBoundingClientRect().top}};
        if (under)
          under.click();
        d.after = snapshot(doc);
        res.narrow.push(d);
        unzoom(doc);
      }
    },
    zoomed() {
      [...doc.querySelectorAll('#g .f')].find(e => e.dataset.name === ZOOM).click();
      res.zoomed = snapshot(doc);
      const reset = doc.getElementById('reset');
      res.resetDisabled = [reset.disabled];
      reset.click();
      res.resetDisabled.push(reset.disabled);
      res.afterReset = snapshot(doc);
    },
    icicle() {
      unzoom(doc);
      const box = doc.getElementById('orientation');
      box.click();
      res.icicleChecked = box.checked;
      res.icicle = snapshot(doc);
    },
  };
  for (const [name, step] of Object.entries(steps)) {
    try {
      step();
    } catch (e) {
      res.errors[name] = String(e) + ' ' + e.stack;
    }
  }
  document.getElementById('out').textContent = JSON.stringify(res);
};
</script></body></html>
"""


def relstack(*args):
    p = subprocess.run([RELSTACK, *args], capture_output=True, timeout=300)
    assert p.returncode == 0, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p.stdout


def parse_title(title):
    """A tooltip: (samples, % of all, (% of the zoomed frame, its name) or None, unreliable, its %)."""
    m = re.search(r"^(\d+) samples, ([\d.]+)% of all(?:, ([\d.]+)% of (.*))?$", title, re.M)
    assert m, title
    u = re.search(r"^(\d+) unreliable \(([\d.]+)%", title, re.M)
    return (int(m.group(1)), m.group(2), (m.group(3), m.group(4)) if m.group(3) else None,
            int(u.group(1)) if u else 0, u.group(2) if u else None)


def rows(frames, icicle):
    """Depth of each drawn frame, from the rows' order (the root's row at the bottom, or the top)."""
    ys = sorted({f["y"] for f in frames}, reverse=not icicle)
    depth = {y: i for i, y in enumerate(ys)}
    return [depth[f["y"]] for f in frames]


def paths(frames, icicle):
    """Each drawn frame's path of names from the root, found from the boxes alone: its parent is the
    frame one row nearer the root whose box holds it.  None for a box of merged frames."""
    depths = rows(frames, icicle)
    by_depth = collections.defaultdict(list)
    for f, d in zip(frames, depths):
        by_depth[d].append(f)
    path = {}

    def of(f, d):
        if id(f) not in path:
            if d == 0:
                path[id(f)] = (f["name"],)
            else:
                (parent,) = [p for p in by_depth[d - 1] if p["name"] is not None and p["x"] <= f["x"] and
                             f["x"] + f["w"] <= p["x"] + p["w"]]
                path[id(f)] = of(parent, d - 1) + (f["name"],)
        return path[id(f)]

    return [of(f, d) if f["name"] is not None else None for f, d in zip(frames, depths)]


@unittest.skipIf(SANITIZE != "none", "relstack record preloads the agent, which a sanitizer build's runtime refuses")
class HtmlFlameGraph(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-html-")
        prog = os.path.join(cls.tmp, "flamegraph_target")
        for name, text in (("nofp.c", NOFP), ("prog.c", PROGRAM)):
            with open(os.path.join(cls.tmp, name), "w") as f:
                f.write(text)
        subprocess.run(CC + ["-O2", "-g", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables",
                             "-fno-unwind-tables", "-c", "-o", prog + "-nofp.o", os.path.join(cls.tmp, "nofp.c")],
                       check=True)
        subprocess.run(CC + ["-O2", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls", "-o", prog,
                             os.path.join(cls.tmp, "prog.c"), prog + "-nofp.o"], check=True)
        out = os.path.join(cls.tmp, "run")
        p = subprocess.run([RELSTACK, "record", "-o", out, "--sample", "999", "--", prog, CPU_SECONDS],
                           capture_output=True, text=True, cwd=cls.tmp, timeout=300)
        assert p.returncode == 0, p.stderr
        (file,) = [os.path.join(out, f) for f in os.listdir(out)]
        cls.records = [json.loads(line) for line in relstack("report", "--format", "json", file).splitlines()]
        cls.stacks = [(["all", r["event"]] + [n for fr in reversed(r["frames"]) for n in frame_names(fr)],
                       r["reliable"]) for r in cls.records if r["has_stack"]]
        # every path of the call tree: [samples, unreliable samples]
        cls.tree = collections.defaultdict(lambda: [0, 0])
        for names, reliable in cls.stacks:
            for i in range(1, len(names) + 1):
                cls.tree[tuple(names[:i])][0] += 1
                cls.tree[tuple(names[:i])][1] += not reliable
        cls.total = len(cls.stacks)
        page = os.path.join(cls.tmp, "flame.html")
        with open(page, "wb") as f:
            f.write(relstack("report", "--format", "html", file))
        width = round(PX_PER_SAMPLE * cls.total) + 16  # the page's body has a margin of 8 px
        height = 200 + ROW * max(len(names) for names, _ in cls.stacks)
        probe = os.path.join(cls.tmp, "probe.html")
        with open(probe, "w") as f:
            f.write(PROBE % {"width": width, "height": height, "terms": json.dumps(TERMS), "zoom": json.dumps(ZOOM)})
        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
                "--no-first-run", "--hide-scrollbars", "--user-data-dir=" + os.path.join(cls.tmp, "profile"),
                "--virtual-time-budget=10000"]
        dom = subprocess.run(args + ["--dump-dom", "file://" + probe], capture_output=True, text=True,
                             timeout=300).stdout
        m = re.search(r'<pre id="out">(.*?)</pre>', dom, re.S)
        assert m and m.group(1), "the probe page wrote nothing: " + dom[-2000:]
        cls.seen = json.loads(html.unescape(m.group(1)))
        # what the page looks like, kept for people (flame, and icicle from the page's #icicle)
        os.makedirs(ARTIFACTS, exist_ok=True)
        for name, url in (("html-flamegraph.png", page), ("html-flamegraph-icicle.png", page + "#icicle")):
            shot = os.path.join(ARTIFACTS, name)
            subprocess.run(args + ["--window-size=%d,%d" % (width, height), "--screenshot=" + shot, "file://" + url],
                           capture_output=True, timeout=300)
            assert os.path.getsize(shot) > 1000, shot

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def steps(self, *names):
        """The probe page's steps @names ran without an error."""
        for name in names:
            self.assertNotIn(name, self.seen["errors"], "the page failed at step %s: %s" %
                             (name, self.seen["errors"].get(name)))

    def count_matching(self, term):
        return sum(1 for names, _ in self.stacks if any(term in n for n in names[1:]))

    def test_the_search_counts_each_matching_stack_once_however_many_of_its_frames_match(self):
        self.steps("search")
        for term in TERMS:
            want = self.count_matching(term)
            text = self.seen["search"][term]["text"]
            self.assertEqual(text, "matched: %d of %d samples (%.2f%%)" % (want, self.total, 100 * want / self.total))
            # several frames of the stacks that hold them
            if term != "tiny_1":
                self.assertTrue(any(sum(term in n for n in names) > 1 for names, _ in self.stacks), term)
            self.assertGreater(want, 0, term)
            self.assertTrue(self.seen["search"][term]["marked"], term)
            self.assertTrue(all(name is None or term in name for name in self.seen["search"][term]["marked"]))

    def check_boxes(self, frames):
        """Whole pixels, at least one wide, none overlapping another of its row."""
        by_row = collections.defaultdict(list)
        for f in frames:
            self.assertGreaterEqual(f["w"], 1, f)
            self.assertEqual(f["w"], round(f["w"]), f)
            self.assertEqual(f["x"], round(f["x"]), f)
            self.assertEqual(f["h"], ROW - 1, f)
            by_row[f["y"]].append(f)
        ys = sorted(by_row)
        self.assertTrue(all(b - a == ROW for a, b in zip(ys, ys[1:])), ys)
        for row in by_row.values():
            row.sort(key=lambda f: f["x"])
            for a, b in zip(row, row[1:]):
                self.assertLessEqual(a["x"] + a["w"], b["x"], (a, b))

    def test_frames_are_boxes_of_whole_pixels_that_never_overlap_and_frames_narrower_than_a_pixel_are_not_drawn(self):
        self.steps("flame", "icicle")
        frames, width = self.seen["flame"], self.seen["width"]
        self.check_boxes(frames)
        self.check_boxes(self.seen["icicle"])
        # drawn: exactly the frames at least a pixel wide (whose callers all are)
        want = {p for p in self.tree
                if all(width * self.tree[p[:i]][0] / self.total >= 1 for i in range(1, len(p) + 1))}
        got = [p for p in paths(frames, False) if p is not None]
        self.assertEqual(len(got), len(set(got)), "a path drawn twice")
        self.assertEqual(set(got), want)
        narrower = {p for p, (n, _) in self.tree.items() if width * n / self.total < 1}
        self.assertGreater(len(narrower), 20, "the profile has too few frames narrower than a pixel to test")
        # a frame's width is its share of the samples, within the pixel its edges are rounded to
        for f, p in zip(frames, paths(frames, False)):
            if p is not None:
                self.assertLessEqual(abs(f["w"] - width * self.tree[p][0] / self.total), 1, (p, f))
        # runs of such siblings are one grey box when they add up to a pixel
        merged = [f for f in frames if f["name"] is None]
        self.assertTrue(merged)
        for f in merged:
            self.assertIn(" g", " " + f["cls"])
            self.assertRegex(f["title"], r"^\d+ frames narrower than a pixel\n")

    def test_a_frame_under_two_pixels_takes_the_click_at_its_centre_and_zooms_to_it(self):
        self.steps("flame", "narrow")
        self.assertEqual(len(self.seen["narrow"]), 3, "no frame under two pixels was drawn")
        flame_paths = dict(zip(map(id, self.seen["flame"]), paths(self.seen["flame"], False)))
        for d in self.seen["narrow"]:
            f = d["frame"]
            self.assertTrue(1 <= f["w"] < 2, f)
            self.assertTrue(d["same"], "the point at the centre of %s is %s's" % (f, d["under"]))
            (path,) = [flame_paths[id(g)] for g in self.seen["flame"] if (g["x"], g["y"]) == (f["x"], f["y"])]
            after = d["after"]
            zoomed = [g for g in after if " a" not in " " + g["cls"]][0]
            self.assertEqual(zoomed["name"], f["name"])
            self.assertEqual(zoomed["w"], self.seen["width"])
            self.assertEqual(tuple(g["name"] for g in after if " a" in " " + g["cls"]) + (zoomed["name"],), path)

    def test_each_frame_hatches_its_share_of_unreliable_stacks_and_its_tooltip_gives_the_counts(self):
        self.steps("flame")
        frames = self.seen["flame"]
        partial = 0
        for f, p in zip(frames, paths(frames, False)):
            if p is None:
                continue
            samples, unreliable = self.tree[p]
            self.assertEqual(f["title"].split("\n")[0].removesuffix(" (inlined)"), p[-1], f)
            got = parse_title(f["title"])
            self.assertEqual(got, (samples, "%.2f" % (100 * samples / self.total), None, unreliable,
                                   "%.2f" % (100 * unreliable / samples) if unreliable else None), p)
            if unreliable:
                # at the right end, in proportion to the frame's width
                self.assertLessEqual(abs(f["hatch"] - f["inner"] * unreliable / samples), 1, (p, f))
                self.assertEqual(f["hatchRight"], f["x"] + f["inner"], (p, f))
                partial += unreliable < samples
            else:
                self.assertEqual(f["hatch"], 0, (p, f))
        self.assertGreater(partial, 3, "no frame holds both reliable and unreliable stacks")
        root = self.tree[("all",)]
        self.assertTrue(0 < root[1] < root[0] / 2, root)

    def test_after_a_zoom_the_ancestor_rows_keep_their_tooltips_and_hatching(self):
        self.steps("flame", "zoomed")
        frames = self.seen["zoomed"]
        width = self.seen["width"]
        # the button is there to zoom out, and only while zoomed
        self.assertEqual(self.seen["resetDisabled"], [False, True])
        self.assertLess([f["w"] for f in self.seen["afterReset"] if f["name"] == ZOOM], [width])
        ancestors = [f for f in frames if " a" in " " + f["cls"]]
        zoom_path = [p for p in self.tree if p[-1] == ZOOM]
        self.assertEqual(len(zoom_path), 1)
        (zoom_path,) = zoom_path
        self.assertEqual(tuple(f["name"] for f in ancestors), zoom_path[:-1])
        hatched = 0
        for f, p in zip(frames, paths(frames, False)):
            if p is None:
                continue
            samples, unreliable = self.tree[p]
            got = parse_title(f["title"])
            self.assertEqual(got[0], samples, p)
            self.assertEqual(got[3], unreliable, p)
            if len(p) < len(zoom_path):
                self.assertEqual(f["w"], width)
                self.assertIsNone(got[2], "an ancestor's share of the zoomed frame: %s" % f["title"])
                if unreliable:
                    self.assertLessEqual(abs(f["hatch"] - f["inner"] * unreliable / samples), 1, (p, f))
                    hatched += 1
            elif len(p) > len(zoom_path):
                self.assertEqual(got[2], ("%.2f" % (100 * samples / self.tree[zoom_path][0]), ZOOM), f["title"])
        self.assertGreater(hatched, 2, "no ancestor of %s holds unreliable stacks" % ZOOM)

    def test_flame_puts_the_root_at_the_bottom_and_icicle_at_the_top(self):
        self.steps("flame", "icicle")
        self.assertTrue(self.seen["icicleChecked"])
        flame, icicle = self.seen["flame"], self.seen["icicle"]
        (root_flame,) = [f for f in flame if f["name"] == "all"]
        (root_icicle,) = [f for f in icicle if f["name"] == "all"]
        self.assertEqual(root_flame["y"], max(f["y"] for f in flame))
        self.assertEqual(root_icicle["y"], min(f["y"] for f in icicle))
        # the same frames, mirrored
        self.assertEqual(sorted(paths(flame, False), key=str), sorted(paths(icicle, True), key=str))
        top = root_flame["y"]
        self.assertEqual(sorted((f["x"], f["w"], top - f["y"]) for f in flame),
                         sorted((f["x"], f["w"], f["y"] - root_icicle["y"]) for f in icicle))

    def test_labels_are_whole_or_cut_with_an_ellipsis_and_fit_their_frame(self):
        cut = whole = 0
        self.steps("flame")
        for f in self.seen["flame"] + self.seen.get("zoomed", []) + self.seen.get("icicle", []):
            label = f["label"]
            if not label or f["name"] is None:
                continue
            if label == f["name"]:
                whole += 1
            else:
                self.assertTrue(label.endswith("\u2026") and len(label) > 2 and f["name"].startswith(label[:-1]),
                                (label, f["name"]))
                cut += 1
            self.assertLessEqual(f["labelRight"], f["x"] + f["inner"], f)
        self.assertTrue(cut and whole, (cut, whole))


if __name__ == "__main__":
    if not CHROMIUM:
        print("SKIP: chromium (Debian chromium) is not installed: headless Chromium draws the page")
        sys.exit(77)
    exit_unless_recordable(CC, SANITIZE)
    unittest.main(verbosity=2)
