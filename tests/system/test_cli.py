#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The relstack command on good and damaged files.

Runs the demo program (which records through a plugin it unloads and
reloads, then crashes), then checks what `relstack info|dump|report` print
for the file it left, and that every bad input gets one line naming the
file, exit status 2 (1 for bad usage), and never a crash.

Usage: test_cli.py RELSTACK DEMO PLUGIN MANPAGE
"""
import json
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

from elf_program import elf_word_size

RELSTACK, DEMO, PLUGIN, MANPAGE = sys.argv[1:5]
del sys.argv[1:5]
# The demo writes words of its own pointers' size (4 in a 32-bit build).
WORD_SIZE = elf_word_size(DEMO)

# Under AddressSanitizer the demo's SIGSEGV must reach relstack's crash
# handler and then the default action, as it does in a normal build.
DEMO_ENV = dict(os.environ)
DEMO_ENV["ASAN_OPTIONS"] = DEMO_ENV.get("ASAN_OPTIONS", "") + ":handle_segv=0:handle_abort=0"


def run_demo_exe(exe, path, plugin):
    return subprocess.run([exe, path, plugin], capture_output=True, timeout=60, env=DEMO_ENV)


def run_demo(path, plugin):
    return run_demo_exe(DEMO, path, plugin)


def on_terminal(args, env=None):
    """What `relstack ARGS` writes to a terminal that is its standard output, and its exit status."""
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([RELSTACK, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                             env=env)
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the command is gone, and what it wrote read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    err = p.stderr.read().decode()
    p.stderr.close()
    return p.wait(timeout=120), b"".join(chunks).replace(b"\r\n", b"\n"), err


def run(*args, check=None):
    p = subprocess.run([RELSTACK, *args], capture_output=True, text=True, timeout=120)
    # a crash of the command itself is never acceptable
    assert p.returncode >= 0, f"relstack {args} died of signal {-p.returncode}"
    if check is not None:
        assert p.returncode == check, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-cli-")
        cls.file = os.path.join(cls.tmp, "demo.rsb")
        p = run_demo(cls.file, PLUGIN)
        assert p.returncode == -signal.SIGSEGV, f"demo exited {p.returncode}: {p.stderr!r}"
        with open(cls.file, "rb") as f:
            cls.data = f.read()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def damaged(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def expect_input_error(self, args, path, words):
        p = run(*args, check=2)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(path, lines[0])
        for w in words:
            self.assertIn(w, lines[0].lower())

    # -- good files --

    def test_info_shows_the_plugin_unloaded_and_loaded_again(self):
        out = run("info", self.file, check=0).stdout
        plugin = os.path.realpath(PLUGIN)
        rows = [l for l in out.splitlines() if plugin in l]
        self.assertEqual(len(rows), 2, out)
        self.assertTrue(any(" unloaded " in r for r in rows))
        self.assertTrue(any(" loaded " in r for r in rows))
        self.assertIn(f"format: {WORD_SIZE}-byte words, little-endian", out)
        self.assertRegex(out, r"counters: \d+ records, 0 lost")
        self.assertIn("request", out)

    def test_info_says_how_many_objects_found_no_free_slot_in_the_object_table(self):
        out = run("info", self.file, check=0).stdout
        m = re.search(r"^objects: (\d+) slots; (\d+) objects found no free slot \(their frames are UNKNOWN\)$", out,
                      re.M)
        self.assertIsNotNone(m, out)
        # the demo loads a handful of objects into a table of hundreds of slots: none is refused
        self.assertEqual(int(m.group(2)), 0, out)
        js = json.loads(run("info", "--format", "json", self.file, check=0).stdout)
        self.assertEqual(js["run"]["objtab_full"], 0)
        self.assertEqual(js["run"]["objtab_capacity"], int(m.group(1)))

    def test_info_shows_the_stack_table_with_its_entries_hit_rate_and_fallbacks(self):
        out = run("info", self.file, check=0).stdout
        m = re.search(r"stack table: (\d+) bytes, (\d+) entries in \d+ of \d+ entry bytes; hit rate [\d.]+ % "
                      r"\((\d+) of (\d+) stack records name an entry\); (\d+) stacks written inline", out)
        self.assertIsNotNone(m, out)
        size, entries, named, stacks, full = map(int, m.groups())
        # the demo's requests repeat a few stacks: fewer entries than records naming them
        self.assertTrue(size > 0 and 0 < entries < named <= stacks, out)
        self.assertEqual(full, 0)
        js = json.loads(run("info", "--format", "json", self.file, check=0).stdout)
        self.assertEqual(js["stack_table"]["entries"], entries)

    def test_info_shows_how_many_write_areas_the_ring_has(self):
        out = run("info", self.file, check=0).stdout
        m = re.search(r"geometry: ring (\d+) bytes in chunks of (\d+), (\d+) write areas,", out)
        self.assertIsNotNone(m, out)
        ring, chunk, areas = map(int, m.groups())
        # a power of two, each area at least 8 chunks (docs/format.md)
        self.assertTrue(areas >= 1 and areas & (areas - 1) == 0 and ring // areas >= 8 * chunk, out)
        js = json.loads(run("info", "--format", "json", self.file, check=0).stdout)
        self.assertEqual(js["run"]["write_areas"], areas)

    def test_dump_has_object_and_offset_and_no_symbol(self):
        out = run("dump", self.file, check=0).stdout
        frames = [l for l in out.splitlines() if l.startswith(" => ")]
        self.assertTrue(frames)
        for f in frames:
            self.assertRegex(f, r"^ => (<[a-z ]+>|\S+\+0x[0-9a-f]+)$")
        self.assertNotIn("cache_flush", out)
        self.assertNotIn("plugin_check_quota", out)

    def test_report_names_frames_of_the_unloaded_plugin_and_ends_with_the_crash(self):
        out = run("report", self.file, check=0).stdout
        self.assertIn("plugin_check_quota+0x", out)
        self.assertRegex(out, r"=> plugin_check_quota\+0x[0-9a-f]+/0x[0-9a-f]+ \[librelstack-demo-plugin.so\] \S*plugin.c:\d+")
        heads = [l for l in out.splitlines() if not l.startswith(" => ")]
        self.assertIn(" crash ", heads[-1])
        self.assertIn(" crash reliable ", heads[-1])  # the faulting instruction's row proves its frame
        self.assertIn("signo=11(SIGSEGV)", heads[-1])
        crash = out[out.rindex(heads[-1]):]
        self.assertIn("cache_flush", crash)

    def test_colour_only_when_asked_or_on_a_terminal_and_only_the_verdict(self):
        plain = run("report", "--no-lines", self.file, check=0).stdout
        self.assertNotIn("\033[", plain)  # a pipe: no colour by default
        self.assertEqual(run("report", "--no-lines", "--color", "never", self.file, check=0).stdout, plain)
        colour = run("report", "--no-lines", "--color", "always", self.file, check=0).stdout
        self.assertIn("\033[32mreliable\033[0m", colour)
        # the escapes taken out, the same text
        self.assertEqual(colour.replace("\033[32m", "").replace("\033[31m", "").replace("\033[0m", ""), plain)
        p = run("report", "--color", "sometimes", self.file, check=1)
        self.assertEqual(p.stderr.count("\n"), 2)  # the error and the hint
        self.assertIn("--color: 'sometimes'", p.stderr)

    def test_json_lines_carry_every_required_key(self):
        out = run("report", "--format", "json", self.file, check=0).stdout
        recs = [json.loads(l) for l in out.splitlines()]
        self.assertTrue(recs)
        for r in recs:
            for k in ("run", "ts_ns", "tid", "event", "reliable", "reasons", "fields", "frames"):
                self.assertIn(k, r)
            for f in r["frames"]:
                if "marker" in f:
                    continue
                if "symbol" in f:
                    for k in ("object", "build_id", "offset", "symbol", "symoff", "symsize", "file", "line",
                              "inlined"):
                        self.assertIn(k, f)
                else:
                    self.assertIn("reason", f)
        reqs = [r for r in recs if r["event"] == "request"]
        self.assertTrue(reqs)
        self.assertIn(reqs[0]["fields"]["route"], ("/api/items", "/api/users"))

    def test_names_agree_with_addr2line(self):
        if not shutil.which("addr2line"):
            self.skipTest("addr2line not installed")
        out = run("report", "--format", "json", self.file, check=0).stdout
        checked = 0
        for line in out.splitlines():
            for f in json.loads(line)["frames"]:
                if "symbol" not in f or "libc.so" in f["object"]:
                    continue
                off = int(f["offset"], 16)
                if f["return_address"]:
                    off -= 1  # the call instruction, as relstack symbolises it
                a2l = subprocess.run(["addr2line", "-f", "-i", "-e", f["object"], hex(off)],
                                     capture_output=True, text=True).stdout.split("\n")
                names = a2l[0::2]
                outer = [n for n in names if n][-1]
                self.assertEqual(outer.split(".")[0], f["symbol"].split(".")[0], f)
                checked += 1
        self.assertGreater(checked, 5)

    def test_folded_stacks_count_identical_stacks(self):
        out = run("report", "--format", "folded", self.file, check=0).stdout
        total = 0
        for l in out.splitlines():
            stack, count = l.rsplit(" ", 1)
            total += int(count)
            self.assertNotIn(" ", stack)
        self.assertGreater(total, 3)
        self.assertTrue(any(l.startswith("crash;") for l in out.splitlines()))

    def test_filters_select_by_event_thread_and_time(self):
        out = run("dump", "--event", "crash", self.file, check=0).stdout
        heads = [l for l in out.splitlines() if not l.startswith(" => ")]
        self.assertEqual(len(heads), 1)
        tid = heads[0].split()[2]
        out = run("dump", "--tid", tid, "--format", "json", self.file, check=0).stdout
        self.assertTrue(all(json.loads(l)["tid"] == int(tid) for l in out.splitlines()))
        self.assertEqual(run("dump", "--event", "crash", self.file, check=0).stderr, "")

    def test_a_filter_that_keeps_nothing_says_so_in_one_line_and_exits_0(self):
        p = run("dump", "--since", "+100000", self.file, check=0)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr, f"relstack: no record of the current run of {self.file} matches --since +100000\n")
        p = run("report", "--event", "crash", "--until", "1970-01-01T00:00:01", "--format", "folded", self.file,
                check=0)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr, f"relstack: no record of the current run of {self.file} matches --event crash "
                                   "--until 1970-01-01T00:00:01\n")

    def test_previous_run_survives_a_new_run(self):
        path = os.path.join(self.tmp, "two-runs.rsb")
        shutil.copy(self.file, path)
        p = run_demo(path, PLUGIN)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        prev = run("report", "--run", "previous", "--event", "crash", path, check=0).stdout
        self.assertIn("cache_flush", prev)
        cur = run("info", path, check=0).stdout
        self.assertIn("generation 2", cur)

    # -- bad usage --

    def test_bad_usage_exits_1(self):
        for args in ([], ["frobnicate", self.file], ["dump"], ["dump", "--format", "xml", self.file],
                     ["info", "--tid", "1", self.file], ["dump", "--run", "last", self.file],
                     ["report", "--symbols", "nofile", self.file], ["info", self.file, self.file],
                     ["dump", "-", "-"]):
            p = run(*args)
            self.assertEqual(p.returncode, 1, (args, p.stderr))
            self.assertTrue(p.stderr.startswith("relstack: "), p.stderr)

    def test_a_misplaced_option_is_named_not_its_argument(self):
        p = run("dump", "--debug-dir", "SOMEDIR", self.file, check=1)
        self.assertIn("'--debug-dir' does not apply", p.stderr)
        self.assertNotIn("SOMEDIR", p.stderr)
        p = run("info", "--symbols", "a=b", self.file, check=1)
        self.assertIn("'--symbols' does not apply", p.stderr)
        p = run("info", "--format", "folded", self.file, check=1)
        self.assertIn("text or json", p.stderr)
        p = run("info", "-o", "SOMEFILE", self.file, check=1)
        self.assertIn("'-o' does not apply", p.stderr)

    def test_missing_and_unknown_commands_list_every_command_the_help_lists(self):
        helped = re.findall(r"^  ([a-z]+) ", run("--help", check=0).stdout, re.M)
        self.assertEqual(helped[:3], ["info", "dump", "report"])
        self.assertIn("ps", helped)
        for args in ([], ["frobnicate"]):
            first = run(*args, check=1).stderr.splitlines()[0]
            listed = re.search(r"\(([^)]*)\)$", first)
            self.assertIsNotNone(listed, first)
            self.assertEqual(re.split(r", | or ", listed.group(1)), helped, first)

    def test_top_is_text_and_every_other_format_gets_one_message(self):
        for fmt in ("folded", "json", "pprof", "perf-script", "speedscope", "html"):
            p = run("report", "--top", "2", "--format", fmt, self.file, check=1)
            self.assertEqual(p.stdout, "")
            self.assertTrue(p.stderr.startswith("relstack: report: --top prints the most frequent stacks as text: "
                                                f"it does not apply to --format {fmt}\n"), p.stderr)
        top = run("report", "--top", "2", self.file, check=0).stdout
        self.assertTrue(top.startswith("#1 "), top)
        self.assertEqual(run("report", "--top", "2", "--format", "text", self.file, check=0).stdout, top)

    def test_pprof_is_never_written_to_a_terminal_and_o_writes_any_format_to_a_file(self):
        status, screen, err = on_terminal(["report", "--format", "pprof", self.file])
        self.assertEqual((status, screen), (1, b""))
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("--format pprof writes gzip-compressed bytes", err)
        self.assertIn("-o FILE", err)
        out = os.path.join(self.tmp, "profile.pb.gz")
        status, screen, err = on_terminal(["report", "--format", "pprof", "-o", out, self.file])
        self.assertEqual((status, screen, err), (0, b"", ""))
        with open(out, "rb") as f:
            self.assertEqual(f.read(2), b"\x1f\x8b")
        # what standard output would get, colour aside
        text = os.path.join(self.tmp, "report.txt")
        self.assertEqual(run("report", "--output", text, self.file, check=0).stdout, "")
        with open(text) as f:
            self.assertEqual(f.read(), run("report", self.file, check=0).stdout)
        p = run("report", "-o", os.path.join(self.tmp, "no-such-dir", "x"), self.file, check=2)
        self.assertIn("no-such-dir/x: No such file or directory", p.stderr)

    def test_no_color_in_the_environment_turns_auto_colour_off(self):
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        green = b"\033[32mreliable\033[0m"
        self.assertIn(green, on_terminal(["report", "--no-lines", self.file], env)[1])
        self.assertNotIn(b"\033[", on_terminal(["report", "--no-lines", self.file], dict(env, NO_COLOR="1"))[1])
        # an empty NO_COLOR asks nothing; --color always is asked for
        self.assertIn(green, on_terminal(["report", "--no-lines", self.file], dict(env, NO_COLOR=""))[1])
        self.assertIn(green, on_terminal(["report", "--no-lines", "--color", "always", self.file],
                                         dict(env, NO_COLOR="1"))[1])

    def test_an_empty_debuginfod_option_is_taken(self):
        self.assertEqual(run("report", "--debuginfod", "", "--no-lines", self.file, check=0).stdout,
                         run("report", "--no-lines", self.file, check=0).stdout)

    def test_several_files_and_a_directory_are_read_together_each_record_naming_its_file(self):
        d = os.path.join(self.tmp, "several")
        os.makedirs(d)
        a, b = os.path.join(d, "a.relstack"), os.path.join(d, "b.relstack")
        shutil.copy(self.file, a)
        shutil.copy(self.file, b)
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("not a buffer file\n")
        one = run("report", "--no-lines", self.file, check=0).stdout
        self.assertNotIn("==>", one)
        two = run("report", "--no-lines", a, b, check=0).stdout
        self.assertEqual(two, f"==> {a} <==\n{one}==> {b} <==\n{one}")
        # a directory: its buffer files, in name order
        self.assertEqual(run("report", "--no-lines", d, check=0).stdout, two)
        recs = [json.loads(l) for l in run("dump", "--format", "json", a, b, check=0).stdout.splitlines()]
        self.assertEqual([r["file"] for r in recs], [a] * (len(recs) // 2) + [b] * (len(recs) // 2))
        self.assertNotIn("file", json.loads(run("dump", "--format", "json", a, check=0).stdout.splitlines()[0]))

        def folded(*files):
            lines = run("report", "--format", "folded", *files, check=0).stdout.splitlines()
            return {l.rsplit(" ", 1)[0]: int(l.rsplit(" ", 1)[1]) for l in lines}
        self.assertEqual(folded(a, b), {k: 2 * v for k, v in folded(self.file).items()})
        # a bad file among them: named, and nothing printed of the others
        bad = self.damaged("bad.relstack", b"\0" * 100)
        p = run("report", a, bad, check=2)
        self.assertEqual(p.stdout, "")
        self.assertIn(bad, p.stderr)
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        self.expect_input_error(["report", empty], empty, ["no buffer file"])

    def test_help_for_every_command(self):
        self.assertIn("Commands:", run("--help", check=0).stdout)
        for c in ("info", "dump", "report"):
            self.assertIn(f"relstack {c}", run(c, "--help", check=0).stdout)

    def test_info_as_json_says_what_the_text_says(self):
        text = run("info", self.file, check=0).stdout
        out = run("info", "--format", "json", self.file, check=0).stdout
        self.assertEqual(len(out.splitlines()), 1)
        info = json.loads(out)
        self.assertEqual(info["format"]["word_size"], WORD_SIZE)
        self.assertEqual(info["run"]["generation"], 1)
        self.assertIn(f"id {info['run']['id']}", text)
        self.assertIn(f"{info['run']['records']} records", text)
        plugin = os.path.realpath(PLUGIN)
        slots = [o for o in info["objects"] if o["path"] == plugin]
        self.assertEqual(sorted(o["state"] for o in slots), ["loaded", "unloaded"])
        for o in info["objects"]:
            self.assertRegex(o["text_size"], r"^0x[0-9a-f]+$")
            self.assertIn(f"text {o['text_vaddr']}+{o['text_size']}", text)
        self.assertIn("request", [e["name"] for e in info["events"]])

    def test_a_dash_reads_the_file_from_standard_input(self):
        with open(self.file, "rb") as f:
            p = subprocess.run([RELSTACK, "dump", "-"], stdin=f, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, run("dump", self.file, check=0).stdout)
        p = subprocess.run([RELSTACK, "info", "-"], input=b"\x7fELF" + bytes(200), capture_output=True,
                           timeout=120)
        self.assertEqual(p.returncode, 2)
        self.assertTrue(p.stderr.decode().startswith("relstack: standard input: "), p.stderr)

    def test_json_numbers_follow_one_rule(self):
        """Offsets and sizes in code are "0x" strings, as nm prints them; counts and times are numbers."""
        out = run("report", "--format", "json", self.file, check=0).stdout
        named = 0
        for line in out.splitlines():
            r = json.loads(line)
            for k in ("generation", "ts_ns", "realtime_ns", "tid"):
                self.assertIsInstance(r[k], int, k)
            for k in ("has_stack", "absolute", "reliable"):
                self.assertIsInstance(r[k], bool, k)
            for f in r["frames"]:
                if "offset" in f:
                    self.assertIsInstance(f["slot"], int)
                    self.assertRegex(f["offset"], r"^0x[0-9a-f]+$")
                if "symbol" in f:
                    self.assertRegex(f["symoff"], r"^0x[0-9a-f]+$")
                    self.assertRegex(f["symsize"], r"^0x[0-9a-f]+$")
                    self.assertLessEqual(int(f["symoff"], 16), int(f["symsize"], 16))
                    named += 1
        self.assertGreater(named, 5)

    def test_every_printed_json_key_is_documented_in_the_man_page(self):
        page = open(MANPAGE).read()
        documented = set(re.findall(r"^\.(?:B|I|IR|BR|RI) ([a-z_]+)", page, re.M))
        keys = set()

        def collect(v):
            if isinstance(v, dict):
                for k, x in v.items():
                    if k != "fields" or not isinstance(x, dict):
                        keys.add(k)
                        collect(x)
            elif isinstance(v, list):
                for x in v:
                    collect(x)
        for cmd in (["report", "--format", "json"], ["dump", "--format", "json"], ["info", "--format", "json"]):
            for line in run(*cmd, self.file, check=0).stdout.splitlines():
                collect(json.loads(line))
        self.assertTrue({"generation", "realtime_ns", "has_stack", "absolute", "slot", "return_address"} <= keys)
        self.assertEqual(sorted(keys - documented), [])

    def test_text_that_is_not_ascii_passes_through_and_bad_bytes_say_what_they_were(self):
        d = os.path.join(os.fsencode(self.tmp), "café".encode(), "日本".encode(), b"bad\xffbyte")
        os.makedirs(d)
        plug = os.path.join(d, b"librelstack-demo-plugin.so")
        shutil.copy(PLUGIN, plug)
        path = os.path.join(self.tmp, "utf8.rsb")
        p = subprocess.run([DEMO, path, plug], capture_output=True, timeout=60, env=DEMO_ENV)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        raw = subprocess.run([RELSTACK, "report", "--format", "json", path], capture_output=True, timeout=120)
        self.assertEqual(raw.returncode, 0, raw.stderr)
        self.assertIn("/café/日本/".encode(), raw.stdout)  # UTF-8 as it is, not \u00c3...
        self.assertIn(b"bad\\udcffbyte", raw.stdout)
        want = os.fsdecode(os.path.realpath(plug))  # the bad byte as surrogateescape reads it
        objects = {f["object"] for l in raw.stdout.decode().splitlines() for f in json.loads(l)["frames"]
                   if "object" in f}
        self.assertIn(want, objects)
        self.assertEqual(want.encode("utf-8", "surrogateescape"), os.path.realpath(plug))
        info = subprocess.run([RELSTACK, "info", path], capture_output=True, timeout=120).stdout
        self.assertIn("/café/日本/bad\\xffbyte/".encode(), info)

    def test_nm_output_of_an_executable_names_its_frames(self):
        """nm of any glibc executable lists the weak data symbol data_start: it marks no other build."""
        d = tempfile.mkdtemp(dir=self.tmp)
        exe = os.path.join(d, "relstack-demo")
        shutil.copy(DEMO, exe)
        path = os.path.join(d, "f.rsb")
        p = run_demo_exe(exe, path, PLUGIN)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        nm = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
        self.assertRegex(nm, r"(?m)^[0-9a-f]+ W data_start$")
        nmfile = os.path.join(d, "demo.nm")
        with open(nmfile, "w") as f:
            f.write(nm)
        os.unlink(exe)  # the executable is gone: only its nm output is left
        p = run("report", "--event", "crash", "--symbols", f"relstack-demo={nmfile}", path, check=0)
        self.assertIn("cache_flush+0x", p.stdout)
        self.assertEqual(p.stderr, "")
        # with the build-id line the man page documents, the file is held to it
        bid = re.search(r'"build_id":"([0-9a-f]+)"', run("dump", "--format", "json", path, check=0).stdout)
        with open(nmfile, "w") as f:
            f.write(f"# build-id: {'0' * len(bid.group(1))}\n" + nm)
        p = run("report", "--event", "crash", "--symbols", f"relstack-demo={nmfile}", path, check=2)
        self.assertIn("build-id", p.stderr)
        self.assertIn(nmfile, p.stderr)

    # -- bad input --

    def test_symbols_for_an_object_the_file_lacks_or_a_missing_file_are_refused(self):
        nmfile = os.path.join(self.tmp, "some.nm")
        with open(nmfile, "w") as f:
            f.write("0000000000001000 T f\n")
        p = run("report", "--symbols", f"nosuch={nmfile}", self.file, check=2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("'nosuch'", p.stderr)
        self.assertIn("relstack-demo", p.stderr)  # the objects it could have meant
        absent = os.path.join(self.tmp, "absent.nm")
        p = run("report", "--symbols", f"relstack-demo={absent}", self.file, check=2)
        self.assertIn(absent, p.stderr)
        self.assertIn("no such file", p.stderr.lower())
        self.assertEqual(p.stdout, "")


    def test_missing_file(self):
        path = os.path.join(self.tmp, "absent.rsb")
        self.expect_input_error(["info", path], path, ["no such file"])

    def test_truncated_file(self):
        for n in (0, 10, 100, 5000, len(self.data) // 2, len(self.data) - 1):
            path = self.damaged(f"trunc{n}.rsb", self.data[:n])
            for cmd in ("info", "dump", "report"):
                p = run(cmd, path, check=2)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(path, lines[0])
                self.assertEqual(p.stdout, "", (cmd, n))
                if n:
                    self.assertRegex(lines[0], r"truncated|file ends inside", (cmd, n))

    def test_not_a_relstack_file(self):
        path = self.damaged("notours.rsb", b"\x7fELF" + bytes(4092))
        self.expect_input_error(["info", path], path, [])

    def test_wrong_version(self):
        # the version follows the 8-byte magic
        data = bytearray(self.data)
        v = struct.unpack_from("<I", data, 8)[0]
        struct.pack_into("<I", data, 8, v + 7)
        path = self.damaged("version.rsb", bytes(data))
        self.expect_input_error(["info", path], path, ["version"])

    def test_unknown_event(self):
        self.expect_input_error(["dump", "--event", "nosuchevent", self.file], self.file, ["nosuchevent"])

    def test_object_file_of_another_build_is_refused_by_name(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        plug = os.path.join(d, "librelstack-demo-plugin.so")
        shutil.copy(PLUGIN, plug)
        path = os.path.join(d, "f.rsb")
        p = run_demo(path, plug)
        self.assertEqual(p.returncode, -signal.SIGSEGV)
        nm = subprocess.run(["nm", plug], capture_output=True, text=True).stdout
        shutil.copy(DEMO, plug)  # another build at the recorded path
        p = run("report", path, check=2)
        self.assertNotIn("plugin_check_quota", p.stdout)
        self.assertIn("(build-id mismatch)", p.stdout)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn(plug, lines[0])
        self.assertIn("build-id", lines[0])
        # nm output given for the object names its frames again
        nmfile = os.path.join(d, "plugin.nm")
        with open(nmfile, "w") as f:
            f.write(nm)
        p = run("report", "--symbols", f"librelstack-demo-plugin.so={nmfile}", path)
        self.assertIn("plugin_check_quota+0x", p.stdout)

    def test_a_damaged_run_is_named_damaged_by_every_command_on_stderr(self):
        two = os.path.join(self.tmp, "two-runs.rsb")
        for _ in range(2):
            self.assertEqual(run_demo(two, PLUGIN).returncode, -signal.SIGSEGV)
        with open(two, "rb") as f:
            data = bytearray(f.read())
        areas = struct.unpack_from("<2Q", data, 96)  # file head: run_offset[0], run_offset[1]
        gens = [struct.unpack_from("<Q", data, a + 16)[0] for a in areas]
        prev = areas[gens.index(min(gens))]
        data[prev + 24] ^= 0x01  # one bit of the previous run's run_id, under its head_hash
        path = self.damaged("run-id.rsb", bytes(data))
        for args in (["info", "--run", "previous"], ["dump", "--run", "previous"],
                     ["report", "--run", "previous"]):
            self.expect_input_error([*args, path], path, ["no previous run", "damaged", "checksum mismatch"])

    def test_flipped_bytes_never_crash_the_command(self):
        import random
        rnd = random.Random(7)
        for i in range(60):
            data = bytearray(self.data)
            for _ in range(rnd.randint(1, 16)):
                pos = rnd.randrange(len(data))
                data[pos] ^= 1 << rnd.randrange(8)
            path = self.damaged(f"flip{i}.rsb", bytes(data))
            for cmd in ("info", "dump", "report"):
                p = run(cmd, "--format" if cmd != "info" else "--run",
                        "json" if cmd != "info" else "current", path)
                self.assertIn(p.returncode, (0, 2), (cmd, p.stderr))
                if p.returncode == 2:
                    self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
