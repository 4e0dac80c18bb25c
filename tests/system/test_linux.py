#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The patched kernel's raw output, decoded by relstack, against the kernel's own text.

Two boots of the kernel built from linux/patches (KASLR on) sent out, per
boot, the raw pages of a tracefs instance, its format files, its module
table and the kernel's own `trace` text of the same events.  Each boot's
directory is imported (`relstack kernel import`) and reported with the
build's System.map and the test module's .ko.  Then:

- every stack of the kernel's text has its record (same CPU and time
  stamp), and each frame has the kernel's name and offset, in order, and
  the verdict the kernel printed;
- the relative words of the same call sites are the same in both boots,
  though KASLR moved the kernel between them;
- task-context stacks are reliable, stacks that crossed an interrupt (the
  module's timer path) are not;
- the module's frames are named after an unload and a reload (new index);
- no word of the files is an address of the boot's kernel image.

Usage: test_linux.py RELSTACK OUT
         OUT: the harness's output (OUT/bootN/, OUT/System.map, OUT/modules/*.ko);
         when OUT/problems is missing the harness (linux/harness.py) is run first
       test_linux.py RELSTACK --fixture KO
         the same checks on a raw directory made here (pages, formats, module
         table and the text the kernel would print for them), the .ko
         KO (tests/unit/kernel/kmod_fixture.c) as the module: the plain suite's
         check of the command and of this file's comparisons, without QEMU.
Exit status 77 (skipped) when OUT holds no two boots, saying why.
"""
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

RELSTACK = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else ""
ARG = sys.argv[3] if len(sys.argv) > 3 else ""
del sys.argv[1:4]

# Frames of the kernel's interrupt path: a stack through one of these crossed an interrupt.
IRQ_FRAME = re.compile(r"^(asm_sysvec_|sysvec_|__sysvec_|asm_common_interrupt|common_interrupt|"
                       r"hrtimer_interrupt|__hrtimer_run_queues|__run_timers|run_timer_softirq|"
                       r"call_timer_fn|__do_softirq|irq_exit)")


def run(*args, check=0):
    p = subprocess.run([RELSTACK, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode >= 0, f"relstack {args} died of signal {-p.returncode}"
    if check is not None:
        assert p.returncode == check, f"relstack {args}: status {p.returncode}, stderr {p.stderr!r}"
    return p


# ---- the kernel's text ----

HEAD = re.compile(r"^\s*.*-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+)\.(\d{6}):\s+<stack trace>")
FRAME = re.compile(r"^ => (\S+)\+0x([0-9a-f]+)/0x([0-9a-f]+)(?: \[(\S+)\])?\s*$")
HINT = re.compile(r"^ => <([^>]+)>\s*$")
GONE = re.compile(r"^ => 0x([0-9a-f]+) \[(\S+) gone\]\s*$")


def kernel_text_stacks(path):
    """The stacks of the kernel's `trace` text: [{cpu, ts_us, frames: [(name, off, size, module)], hint}]."""
    out, cur = [], None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("#"):
                continue
            m = HEAD.match(line)
            if m:
                cur = {"cpu": int(m.group(2)), "ts_us": int(m.group(3)) * 1000000 + int(m.group(4)),
                       "frames": [], "hint": None}
                out.append(cur)
                continue
            if cur is None or not line.startswith(" => "):
                cur = None
                continue
            fm, hm = FRAME.match(line), HINT.match(line)
            if fm:
                cur["frames"].append((fm.group(1), int(fm.group(2), 16), int(fm.group(3), 16), fm.group(4)))
            elif hm and hm.group(1) in ("reliable", "unreliable"):
                cur["hint"] = hm.group(1)
            else:
                cur["frames"].append((None, None, None, line[4:].strip()))
    return out


def our_frames(rec):
    """A record's frames as the kernel text shows them: markers END left out, the rest named or not."""
    out = []
    for f in rec["frames"]:
        if f.get("marker") == "END":
            continue
        if f.get("symbol"):
            mod = None if f["object"] == "vmlinux" else f["object"]
            out.append((f["symbol"], int(f["symoff"], 16), int(f["symsize"], 16), mod))
        else:
            out.append((None, None, None, f.get("marker") or f.get("reason")))
    return out


def decode(tmp, part_dir, name, symbols, module_table):
    rsb = os.path.join(tmp, name + ".rsb")
    imp = run("kernel", "import", "--raw", part_dir, "-o", rsb, "--module-table", module_table)
    args = ["report", "--format", "json", "--no-lines"]
    for s in symbols:
        args += ["--symbols", s]
    p = run(*args, rsb)
    recs = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    return rsb, imp.stderr, recs


def stacks_by_time(recs):
    """Our stack records by (cpu, time stamp in us, as the kernel's text prints it), in order."""
    out = {}
    for r in sorted((r for r in recs if r["has_stack"]), key=lambda r: r["fields"]["ts_ns"]):
        # the kernel prints microseconds rounded (ns2usecs)
        out.setdefault((r["fields"]["cpu"], (r["fields"]["ts_ns"] + 500) // 1000), []).append(r)
    return out


def boot_stext(boot_dir):
    try:
        with open(os.path.join(boot_dir, "stext")) as f:
            return int(f.read().split()[0], 16)
    except (OSError, ValueError, IndexError):
        return None


def words_in_range(path, lo, hi):
    """Offsets of every 8-byte window of the file, at any alignment, whose value lies in [lo, hi)."""
    with open(path, "rb") as f:
        data = f.read()
    hits = []
    for shift in range(8):
        n = (len(data) - shift) // 8
        for i, w in enumerate(struct.unpack_from(f"<{n}Q", data, shift)):
            if lo <= w < hi:
                hits.append(shift + 8 * i)
    return hits


def decode_boots(tmp, boot_dirs, symbols):
    """Each boot's instances (the main one, and load1/, func/ beside it), imported with the boot's last
    module table (which names the modules unloaded since) and reported."""
    boots = []
    for d in boot_dirs:
        parts = []
        for sub in ("", "load1", "func"):
            pd = os.path.join(d, sub) if sub else d
            if not os.path.isdir(os.path.join(pd, "per_cpu")):
                continue
            name = os.path.basename(d) + ("-" + sub if sub else "")
            rsb, imp, recs = decode(tmp, pd, name, symbols, os.path.join(d, "module_table"))
            print(f"{name}: {imp.strip()}", file=sys.stderr)
            parts.append({"name": sub or "main", "dir": pd, "rsb": rsb, "import": imp, "recs": recs,
                          "text": os.path.join(pd, "trace")})
        boots.append({"dir": d, "parts": parts})
    return boots


def module_stacks(recs, module):
    return [r for r in recs if r["has_stack"] and any(f.get("object") == module for f in r["frames"])]


def raw_rel_stacks(part_dir, fmt_dir):
    """The kernel_stack_rel words as the kernel wrote them in the part's pages: [(reliable, (word, ...))].
    Read here without relstack, from the format file's offsets: the oracle of the words themselves."""
    with open(os.path.join(fmt_dir, "events", "ftrace", "kernel_stack_rel", "format")) as f:
        fmt = f.read()
    ev_id = int(re.search(r"^ID: (\d+)", fmt, re.M).group(1))
    off = {m.group(1): int(m.group(2)) for m in re.finditer(r"field:.*?(\w+)(?:\[\d*\])?;\toffset:(\d+);", fmt)}
    out = []
    for raw in glob.glob(os.path.join(part_dir, "per_cpu", "cpu*", "trace_pipe_raw")):
        with open(raw, "rb") as f:
            data = f.read()
        for page in range(0, len(data), 4096):
            commit = struct.unpack_from("<Q", data, page + 8)[0] & ((1 << 27) - 1)
            pos, end = page + 16, page + 16 + commit
            while pos + 4 <= end:
                hdr = struct.unpack_from("<I", data, pos)[0]
                tl = hdr & 31
                if tl == 0:  # length in the next word
                    length, body = struct.unpack_from("<I", data, pos + 4)[0] - 4, pos + 8
                elif tl <= 28:
                    length, body = tl * 4, pos + 4
                else:  # padding, time extend, time stamp
                    if tl == 29:
                        length = struct.unpack_from("<I", data, pos + 4)[0]
                        pos += 4 + length if length else end
                        continue
                    pos += 8
                    continue
                if struct.unpack_from("<H", data, body)[0] == ev_id:
                    n = struct.unpack_from("<i", data, body + off["size"])[0]
                    words = struct.unpack_from(f"<{n}Q", data, body + off["caller"])
                    out.append((data[body + off["reliable"]], words))
                pos = body + length
    return out


class Checks:
    """What both modes check; setUpClass fills cls.boots (decode_boots()) and cls.module."""

    def all_parts(self, *names):
        return [p for b in self.boots for p in b["parts"] if not names or p["name"] in names]

    def test_every_stack_of_the_kernel_text_decodes_to_the_kernels_frames_and_verdict(self):
        for b in self.all_parts():
            ours = stacks_by_time(b["recs"])
            kernel = kernel_text_stacks(b["text"])
            self.assertTrue(kernel, f"{b['dir']}: no stack in the kernel's text")
            used = {}
            for i, k in enumerate(kernel):
                key = (k["cpu"], k["ts_us"])
                cands = ours.get(key, [])
                n = used.get(key, 0)
                self.assertTrue(n < len(cands), f"{b['dir']}: kernel stack {i} (cpu {key[0]}, "
                                f"{key[1]} us) has no record: {k['frames'][:3]}")
                used[key] = n + 1
                r = cands[n]
                mine = our_frames(r)
                self.assertEqual(len(mine), len(k["frames"]), f"{b['dir']}: stack {i}: {mine} vs {k['frames']}")
                for j, (a, kf) in enumerate(zip(mine, k["frames"])):
                    gone = GONE.match(" => " + kf[3]) if kf[0] is None and kf[3] else None
                    if gone:
                        # a module unloaded since the kernel printed: it gives the offset, we the name
                        f = [f for f in r["frames"] if f.get("marker") != "END"][j]
                        self.assertEqual((f.get("object"), int(f.get("offset", "0"), 16)),
                                         (gone.group(2), int(gone.group(1), 16)), f"{b['dir']}: stack {i} frame {j}")
                        self.assertTrue(f.get("symbol"), f"{b['dir']}: stack {i} frame {j} is not named")
                        continue
                    if kf[0] is None:
                        self.assertIsNone(a[0], f"{b['dir']}: stack {i} frame {j}: the kernel names none")
                        continue
                    # name, offset, size and module as the kernel prints them
                    self.assertEqual(a, kf,
                                     f"{b['dir']}: stack {i} frame {j}")
                if k["hint"]:
                    self.assertEqual(r["reliable"], k["hint"] == "reliable", f"{b['dir']}: stack {i}: {r['reasons']}")
            self.assertEqual(sum(used.values()), sum(len(v) for v in ours.values()),
                             f"{b['dir']}: records without a stack in the kernel's text")
        self.assertTrue(sum(len(kernel_text_stacks(p["text"])) for p in self.all_parts()) >= 8, "too few stacks")

    def test_relative_words_of_the_same_call_sites_are_equal_in_both_boots(self):
        def sites(b):
            out = {}
            for p in b["parts"]:
                for r in module_stacks(p["recs"], self.module):
                    names = tuple(f.get("symbol") for f in r["frames"] if "slot" in f)
                    words = tuple((f["object"], f["offset"]) for f in r["frames"] if "slot" in f)
                    out.setdefault(names, set()).add(words)
            return out
        one, two = sites(self.boots[0]), sites(self.boots[1])
        common = set(one) & set(two)
        self.assertTrue(common, "no call site of the module in both boots")
        for names in common:
            self.assertTrue(one[names] & two[names], f"call site {names}: words differ between the boots")
        # the words themselves, read from the pages without relstack: the task stacks of both boots
        raw = [{w for p in b["parts"] if p["name"] in ("main", "load1")
                for rel, w in raw_rel_stacks(p["dir"], b["dir"]) if rel == 1} for b in self.boots]
        self.assertTrue(raw[0], "no reliable stack in the first boot's pages")
        self.assertEqual(raw[0], raw[1], "the task stacks' words differ between the boots")
        s1, s2 = boot_stext(self.boots[0]["dir"]), boot_stext(self.boots[1]["dir"])
        if s1 is not None and s2 is not None:
            self.assertNotEqual(s1, s2, "KASLR did not move _stext between the boots")

    def test_task_stacks_are_reliable_and_stacks_through_an_interrupt_are_not(self):
        for b in self.all_parts("main", "load1"):
            mod = module_stacks(b["recs"], self.module)
            irq = [r for r in mod if any(IRQ_FRAME.match(f.get("symbol") or "") for f in r["frames"])]
            task = [r for r in mod if r not in irq]
            self.assertTrue(irq, f"{b['dir']}: no stack of the module's interrupt path")
            self.assertTrue(task, f"{b['dir']}: no task-context stack of the module")
            for r in irq:
                self.assertFalse(r["reliable"], r)
            for r in task:
                self.assertTrue(r["reliable"], r)
                self.assertTrue(all(f.get("symbol") for f in r["frames"]), r)

    def test_function_tracer_stacks_through_its_trampoline_are_not_reliable(self):
        func = self.all_parts("func")
        for b in func:
            stacks = [r for r in b["recs"] if r["has_stack"]]
            self.assertTrue(stacks, f"{b['dir']}: no stack")
            for r in stacks:
                self.assertFalse(r["reliable"], r)
                self.assertIn("unknown-text", r["reasons"])

    def test_module_frames_are_named_after_an_unload_and_reload(self):
        for b in self.boots:
            slots = {}
            for p in b["parts"]:
                for r in p["recs"]:
                    for f in r["frames"]:
                        if f.get("object") == self.module:
                            slots.setdefault(f["slot"], []).append(f.get("symbol"))
            self.assertTrue(len(slots) >= 2, f"{b['dir']}: the module's frames name {len(slots)} slot(s), "
                            "expected the first load's and the reload's")
            for slot, names in slots.items():
                self.assertTrue(all(names), f"{b['dir']}: slot {slot} has unnamed frames")

    def test_no_word_of_the_files_is_an_address_of_the_kernel_image(self):
        for b in self.boots:
            stext = boot_stext(b["dir"])
            self.assertIsNotNone(stext, f"{b['dir']}: no stext")
            for p in b["parts"]:
                self.assertEqual(words_in_range(p["rsb"], stext, stext + (64 << 20))[:5], [])


class Linux(Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        out = ARG
        cls.tmp = tempfile.mkdtemp(prefix="relstack-linux-")
        kos = sorted(glob.glob(os.path.join(out, "modules", "*.ko")))
        symbols = ["vmlinux=" + os.path.join(out, "System.map")]
        symbols += [os.path.basename(k)[:-3].replace("-", "_") + "=" + k for k in kos]
        cls.module = "relstack_test"
        cls.boots = decode_boots(cls.tmp, sorted(glob.glob(os.path.join(out, "boot*")))[:2], symbols)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


# ---- the fixture: what a patched kernel would send, made here ----

STEXT = 0xffffffff81000000
SYSTEM_MAP = """ffffffff81000000 T _stext
ffffffff810000ba T entry_SYSCALL_64_after_hwframe
ffffffff81000df0 T asm_sysvec_apic_timer_interrupt
ffffffff81001000 T do_syscall_64
ffffffff81001100 T __x64_sys_write
ffffffff81002000 T __run_timers
ffffffff81002200 T call_timer_fn
ffffffff81003000 T ksys_write
ffffffff8220bb08 T _etext
"""
END, NO_TEXT = (1 << 64) - 1, (1 << 64) - 2
REL_ID, MOD_ID = 13, 500
COMMON = """\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
"""
FORMATS = {
    "ftrace/kernel_stack_rel": f"""name: kernel_stack_rel
ID: {REL_ID}
format:
{COMMON}
\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;
\tfield:unsigned char reliable;\toffset:12;\tsize:1;\tsigned:0;
\tfield:unsigned char module_bit;\toffset:13;\tsize:1;\tsigned:0;
\tfield:unsigned char index_shift;\toffset:14;\tsize:1;\tsigned:0;
\tfield:unsigned char index_bits;\toffset:15;\tsize:1;\tsigned:0;
\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;

print fmt: "\\t=> %lx\\n", REC->caller[0]
""",
    "module/module_text_rel": f"""name: module_text_rel
ID: {MOD_ID}
format:
{COMMON}
\tfield:unsigned int index;\toffset:8;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:1;
\tfield:__data_loc u8[] build_id;\toffset:16;\tsize:4;\tsigned:0;
\tfield:unsigned int text_size;\toffset:20;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] sections;\toffset:24;\tsize:4;\tsigned:1;

print fmt: "%u %s", REC->index, __get_str(name)
""",
}
HEADER_PAGE = ("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
               "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
               "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
               "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n")
# the fixture module's symbols: .text at 0, .text.unlikely at 0x40 (kmod_fixture.c)
MOD_SYMS = [("kfix_mod_a", 0x0, 0x4), ("kfix_mod_b", 0x4, 0x3c), ("kfix_mod_cold", 0x40, 0x40)]
CORE = {name: int(addr, 16) for addr, _, name in (line.split() for line in SYSTEM_MAP.splitlines())}


def kmod_word(index, off):
    return 1 << 63 | index << 53 | off


class Page:
    def __init__(self):
        self.body, self.ts = b"", 1000

    def event(self, ts, data):
        assert len(data) % 4 == 0 and len(data) // 4 <= 28 and ts >= self.ts
        self.body += struct.pack("<I", len(data) // 4 | (ts - self.ts) << 5) + data
        self.ts = ts

    def bytes(self):
        page = struct.pack("<QQ", 1000, len(self.body)) + self.body
        return page + bytes(4096 - len(page))


def rel_event(words, reliable):
    return (struct.pack("<HBBi", REL_ID, 0, 0, 42) + struct.pack("<iBBBB", len(words), reliable, 63, 53, 10)
            + b"".join(struct.pack("<Q", w) for w in words))


def module_event(index, name, bid, size, sections):
    name, sections = name.encode() + b"\0", sections.encode() + b"\0"
    a1 = 28
    a2 = a1 + len(name)
    a3 = a2 + len(bid)
    d = struct.pack("<HBBiIIIII", MOD_ID, 0, 0, 1, index, len(name) << 16 | a1, len(bid) << 16 | a2, size,
                    len(sections) << 16 | a3) + name + bid + sections
    return d + bytes(-len(d) % 4)


def ko_build_id(ko):
    out = subprocess.run(["readelf", "-n", ko], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else "-"


def kernel_text(stacks):
    """The text the kernel prints for @stacks [(cpu, ts_us, words, reliable)]."""
    core = {a: n for n, a in CORE.items() if n != "_stext"}
    starts = sorted(core)
    lines = ["# tracer: nop\n#\n"]
    for cpu, ts, words, reliable in sorted(stacks, key=lambda s: s[1]):
        lines.append(f"          insmod-42      [{cpu:03d}] .....     0.{ts:06d}: <stack trace>\n")
        for w in words:
            if w == END:
                continue
            if w == NO_TEXT:
                lines.append(" => <no text>\n")
            elif w >> 63:
                off = w & ((1 << 53) - 1)
                name, start, size = [s for s in MOD_SYMS if s[1] <= off][-1]
                lines.append(f" => {name}+0x{off - start:x}/0x{size:x} [kmod_fixture]\n")
            else:
                addr = STEXT + w
                i = max(k for k, a in enumerate(starts) if a <= addr)
                lines.append(f" => {core[starts[i]]}+0x{addr - starts[i]:x}/0x{starts[i + 1] - starts[i]:x}\n")
        if reliable:
            lines.append(f" => <{'reliable' if reliable == 1 else 'unreliable'}>\n")
    return "".join(lines)


def write_part(d, stacks, module_table, load=None):
    """One instance's directory: its pages (one CPU page each), module table and the kernel's text."""
    pages = [Page(), Page()]
    if load:
        pages[1].event(1500, load)
    for cpu, ts, words, reliable in stacks:
        pages[cpu].event(ts * 1000, rel_event(words, reliable))
    for cpu in (0, 1):
        os.makedirs(os.path.join(d, "per_cpu", f"cpu{cpu}"))
        with open(os.path.join(d, "per_cpu", f"cpu{cpu}", "trace_pipe_raw"), "wb") as f:
            f.write(pages[cpu].bytes())
    with open(os.path.join(d, "module_table"), "w") as f:
        f.write(module_table)
    with open(os.path.join(d, "trace"), "w") as f:
        f.write(kernel_text(stacks))


def make_boot(d, ko, boot):
    """A boot as the harness sends it: the module's stacks before its reload (load1/), after it (the main
    instance, whose module table is the last), and through the function tracer's trampoline (func/)."""
    os.makedirs(d)
    with open(os.path.join(d, "header_page"), "w") as f:
        f.write(HEADER_PAGE)
    for ev, text in FORMATS.items():
        os.makedirs(os.path.join(d, "events", ev))
        with open(os.path.join(d, "events", ev, "format"), "w") as f:
            f.write(text)
    with open(os.path.join(d, "stext"), "w") as f:
        f.write(f"{STEXT + boot * 0x200000:016x}\n")
    bid = ko_build_id(ko)
    sections = ".text=0x0 .text.unlikely=0x40"
    line = lambda idx, state: f"{idx} kmod_fixture {bid} 0x80 {state} {sections}\n"
    core = {k: v - STEXT for k, v in CORE.items()}
    # a write system call into the module, and the module's timer (softirq through an interrupt)
    task = lambda idx: [kmod_word(idx, 0x4 + 3), core["ksys_write"] + 0x22, core["__x64_sys_write"] + 0x10,
                        core["do_syscall_64"] + 0x3b, core["entry_SYSCALL_64_after_hwframe"] + 0x46, END]
    timer = lambda idx: [kmod_word(idx, 0x40 + 2), core["call_timer_fn"] + 0x1d, core["__run_timers"] + 0x200,
                         core["asm_sysvec_apic_timer_interrupt"] + 0x1a, NO_TEXT]
    bid_bytes = bytes.fromhex(bid) if bid != "-" else b""
    write_part(os.path.join(d, "load1"), [(0, 2000 + boot, task(0), 1), (1, 2500, timer(0), 2)], line(0, "live"),
               module_event(0, "kmod_fixture", bid_bytes, 0x80, sections))
    write_part(d, [(0, 9000, task(1), 1), (1, 9500, timer(1), 2), (0, 9600, [core["ksys_write"] + 0x22, END], 0)],
               line(0, "gone") + line(1, "live"))
    write_part(os.path.join(d, "func"), [(0, 9700, [NO_TEXT] + task(1)[1:-1], 2)], line(0, "gone") + line(1, "live"))


class Fixture(Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="relstack-linux-fixture-")
        cls.module = "kmod_fixture"
        sysmap = os.path.join(cls.tmp, "System.map")
        with open(sysmap, "w") as f:
            f.write(SYSTEM_MAP)
        dirs = []
        for boot in (1, 2):
            dirs.append(os.path.join(cls.tmp, f"boot{boot}"))
            make_boot(dirs[-1], ARG, boot)
        cls.boots = decode_boots(cls.tmp, dirs, ["vmlinux=" + sysmap, "kmod_fixture=" + ARG])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_import_says_what_it_wrote(self):
        main = self.boots[0]["parts"][0]
        self.assertRegex(main["import"], r"3 kernel stacks \(1 reliable\), 2 modules, 0 lost")
        self.assertRegex(main["import"], r"0 words of a module index the module table does not list, "
                                         r"0 beyond their text, 1 in no text")

    def test_report_text_names_module_frames_as_the_kernel_does(self):
        p = run("report", "--symbols", "vmlinux=" + os.path.join(self.tmp, "System.map"),
                "--symbols", "kmod_fixture=" + ARG, self.boots[0]["parts"][0]["rsb"])
        self.assertIn(" => kfix_mod_b+0x3/0x3c [kmod_fixture]", p.stdout)
        self.assertIn(" => kfix_mod_cold+0x2/0x40 [kmod_fixture]", p.stdout)
        self.assertIn(" => ksys_write+0x22/", p.stdout)

    def test_a_hostile_layout_is_refused_with_one_line_naming_the_file_and_field(self):
        d = os.path.join(self.tmp, "hostile")
        shutil.copytree(self.boots[0]["dir"], d)
        page = Page()
        page.event(2000, rel_event([0x10, END], 1)[:15] + bytes([0]) + rel_event([0x10, END], 1)[16:])
        with open(os.path.join(d, "per_cpu", "cpu0", "trace_pipe_raw"), "wb") as f:
            f.write(page.bytes())
        p = run("kernel", "import", d, "-o", os.path.join(self.tmp, "hostile.rsb"), check=2)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn("per_cpu/cpu0/trace_pipe_raw: page 0", p.stderr)
        self.assertIn("index_bits 0 (expected 1..20)", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "hostile.rsb")))


def main():
    if MODE == "--fixture":
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Fixture)
    else:
        if not os.path.exists(os.path.join(MODE, "problems")):
            # the harness has not run in this build tree (linux_boot runs first in make check)
            src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            harness = os.path.join(src, "linux", "harness.py")
            if not os.path.exists(harness):
                print(f"skipped: {MODE} holds no harness output and this tree has no linux/harness.py")
                sys.exit(77)
            h = subprocess.run([sys.executable, harness, os.path.dirname(MODE), MODE])
            if h.returncode == 77:
                print("skipped: the linux/ harness skipped (see its message above)")
                sys.exit(77)
            if h.returncode != 0:
                print(f"the linux/ harness failed with status {h.returncode}")
                sys.exit(1)
        with open(os.path.join(MODE, "problems")) as f:
            problems = f.read().strip()
        if problems:
            print(f"the harness reported problems (decoding what it sent anyway):\n{problems}", file=sys.stderr)
        boots = sorted(glob.glob(os.path.join(MODE, "boot*")))
        if len(boots) < 2 or not os.path.exists(os.path.join(MODE, "System.map")):
            print(f"skipped: {MODE or 'OUT'} holds no two boots and System.map of the patched kernel "
                  "(the linux/ harness writes them)")
            sys.exit(77)
        globals()["ARG"] = MODE
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(Linux)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
