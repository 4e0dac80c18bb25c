#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Generated programs against the exact shadow-stack oracle.

For seed after seed (from a base seed it prints), generate.py writes a
program, this script builds it (a program, a linked library, a dlopen'd
library; every file with its own flags) against the build's
librelstack, runs it, and judges every capture with oracle.py: a trace
marked reliable must hold every generated frame the shadow stack names,
in order, none missing, none duplicated, none extra.  For the frames the
oracle cannot name (the C library's), each trace it passed is compared
word for word with libunwind's walk of the same stack, taken by the
program right after the capture (where libunwind is installed, and no
frame on the stack lacks CFI, which libunwind would guess).  On a sample
of the programs it also runs the program under gdb and compares each
reliable trace with gdb's frames at the same point, and takes one
`relstack ps` snapshot of the program while it waits at a capture,
judged by the same oracle.  Good traces are damaged on purpose (each
generated frame dropped, then doubled) to check that the oracle catches
it.

Every failure prints the seed, the program's files and flags, the chain
of functions (with how each was compiled) and both lists, and the run
fails.  The last line sums up: programs, traces, reliable, the count per
reason, and the share reliable.

Usage:
  run.py --build BUILDDIR [--seconds S] [--base-seed N]   a bounded run
  run.py --build BUILDDIR --seed N [--keep DIR]           one program again

The base seed comes from --base-seed, else RELSTACK_GEN_SEED, else at
random; the time budget from --seconds, else RELSTACK_GEN_SECONDS, else
180.  Exit status: 0 all passed, 1 a failure, 2 bad usage, 77 skipped (no
gcc).
"""
import argparse
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import generate  # noqa: E402
import oracle  # noqa: E402

SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))

# Each reason bit's name, as relstack_reason_string() gives it (the programs print them).
REASONS = {}

COMMON_CFLAGS = ["-std=gnu11", "-w", "-fno-reorder-blocks-and-partition", "-fvisibility=default"]
RUNTIME_CFLAGS = ["-O2", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]

GDB_SCRIPT = r'''
import gdb
class GenFrames(gdb.Command):
    def __init__(self):
        super().__init__("gen-frames", gdb.COMMAND_USER)
    def invoke(self, arg, from_tty):
        seq = int(gdb.parse_and_eval("$rdi"))
        f = gdb.newest_frame()
        out = []
        while f is not None:
            if f.type() != gdb.INLINE_FRAME:
                kind = {gdb.SIGTRAMP_FRAME: "sig", gdb.TAILCALL_FRAME: "tail"}.get(f.type(), "fn")
                out.append("%s:%#x" % (kind, f.pc()))
            f = f.older()
        print("==frames== %d %s" % (seq, " ".join(out)))
GenFrames()
'''


class Failure(Exception):
    pass


def sh(cmd, cwd=None, env=None, timeout=120):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise Failure("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:],
                                                         p.stderr[-3000:]))
    return p


class Env:
    """Paths of the build under test, and what every program links."""

    def __init__(self, args, work):
        self.build = os.path.abspath(args.build)
        self.libdir = os.path.join(self.build, "src")
        self.include = os.path.join(SOURCE_ROOT, "include")
        self.tool = os.path.join(self.build, "tools", "relstack")
        if not os.access(self.tool, os.X_OK):
            self.tool = None
        self.gdb = shutil.which(args.gdb or "gdb")
        self.cc = args.cc
        self.work = work
        lib = os.path.join(self.libdir, "librelstack.so")
        if not os.path.exists(lib):
            raise SystemExit("run.py: %s not found: build it first (ninja -C %s)" % (lib, self.build))
        if not self.gdb:
            print("gen: gdb not found (Debian package gdb): no comparisons with gdb", flush=True)
        if not self.tool:
            print("gen: %s not built: no relstack ps snapshots" % os.path.join(self.build, "tools", "relstack"),
                  flush=True)
        self.runtime = os.path.join(work, "genrt.o")
        # libunwind, where its headers are, names the C library's frames at every capture
        probe = os.path.join(work, "probe.c")
        with open(probe, "w") as f:
            f.write("#define UNW_LOCAL_ONLY\n#include <libunwind.h>\nint main(void) { unw_context_t c; "
                    "return unw_getcontext(&c); }\n")
        self.libunwind = subprocess.run([self.cc, probe, "-o", probe + ".out", "-lunwind"],
                                        capture_output=True).returncode == 0
        if not self.libunwind:
            print("gen: libunwind not found (Debian package libunwind-dev): the C library's frames are "
                  "compared with gdb's only", flush=True)
        sh([self.cc, *COMMON_CFLAGS, *RUNTIME_CFLAGS, "-fPIE", "-I", HERE, "-I", self.include] +
           (["-DGEN_LIBUNWIND"] if self.libunwind else []) + ["-c", os.path.join(HERE, "genrt.c"), "-o",
                                                               self.runtime])


class Built:
    def __init__(self, prog, d):
        self.prog = prog
        self.dir = d
        self.exe = os.path.join(d, "prog")
        self.libs = {obj: os.path.join(d, name) for obj, name in generate.LIB_FILE.items()}


def build(env, prog, d):
    texts = generate.sources(prog)
    for name, text in texts.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    objs = {obj: [] for obj in generate.OBJECTS}
    for obj, srcs in generate.build_plan(prog).items():
        for name, flags in srcs:
            out = os.path.join(d, name + ".o")
            pic = "-fPIE" if obj == "exe" else "-fPIC"
            sh([env.cc, *COMMON_CFLAGS, *flags, pic, "-I", d, "-I", HERE, "-I", env.include, "-c",
                os.path.join(d, name), "-o", out])
            objs[obj].append(out)
    b = Built(prog, d)
    for obj in ("libA", "libB"):
        sh([env.cc, "-shared", "-o", b.libs[obj], *objs[obj], "-Wl,-soname," + generate.LIB_FILE[obj]])
    # libA is needed even where only libB's code calls it (gcc links --as-needed by default)
    sh([env.cc, "-pie", "-rdynamic", "-o", b.exe, *objs["exe"], env.runtime, "-Wl,--no-as-needed", b.libs["libA"],
        os.path.join(env.libdir, "librelstack.so"), "-Wl,-rpath," + env.libdir, "-Wl,-rpath," + d,
        *(["-lunwind"] if env.libunwind else []), "-lpthread", "-ldl"])
    return b


def nm_symbols(path):
    p = sh(["nm", "-S", "--defined-only", path])
    syms = []
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            syms.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return syms


def parse_output(path):
    records, objects, final = [], [], None
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "R":
                rec = {}
                for p in parts[1:]:
                    k, _, v = p.partition("=")
                    rec[k] = v
                out = {"kind": rec["kind"]}
                for k in ("seq", "tid", "site", "flags", "skip", "cap", "ra", "reasons", "frames", "status",
                          "refclean"):
                    if k in rec:
                        out[k] = int(rec[k], 16)
                if "ret" in rec:
                    r = int(rec["ret"], 16)
                    out["ret"] = r - (1 << 64) if r >= 1 << 63 else r
                out["words"] = [int(w, 16) for w in rec.get("words", "").split(",") if w]
                if "ref" in rec:
                    out["ref"] = [int(w, 16) for w in rec["ref"].split(",") if w]
                if rec.get("shadow") == "bad":
                    raise Failure("record %s: the shadow stack's depth is out of range (a generator bug)"
                                  % rec["seq"])
                shadow = [(int(k, 16), int(v, 16)) for k, _, v in
                          (e.partition(":") for e in rec.get("shadow", "").split(",") if e)]
                out["shadow"] = [(k & 0xff, v) for k, v in shadow]
                # a function without CFI on the stack (gen.h's GEN_NOCFI): gdb and libunwind guess there
                out["nocfi"] = any(k & 0x100 for k, _ in shadow)
                records.append(out)
            elif parts[0] == "O":
                segs = []
                if len(parts) > 3:
                    for s in parts[3].split(","):
                        lo, hi = s.split("-")
                        segs.append((int(lo, 16), int(hi, 16)))
                objects.append((int(parts[1], 16), parts[2], segs))
            elif parts[0] == "N":
                f = dict(p.split("=", 1) for p in parts[1:])
                REASONS[int(f["bit"], 16)] = f["name"]
            elif parts[0] == "F":
                final = dict(p.split("=") for p in parts[1:])
    return records, objects, final


def symbols_of(b, objects):
    gen_syms = {"exe": nm_symbols(b.exe)}
    for obj, path in b.libs.items():
        gen_syms[os.path.basename(path)] = nm_symbols(path)
    return oracle.Symbols(objects, gen_syms)


def run_program(env, b, out, extra_env=None, timeout=60):
    e = dict(os.environ)
    e.update(extra_env or {})
    p = subprocess.run([b.exe, out, b.libs["libB"]], env=e, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        how = ("killed by signal %d" % -p.returncode) if p.returncode < 0 else ("exit status %d" % p.returncode)
        raise Failure("the program failed (%s): %s" % (how, p.stderr[-2000:]))
    records, objects, final = parse_output(out)
    if final is None:
        raise Failure("the program's output has no final line")
    return records, objects, final


# -- reports

def reason_name(bit):
    return REASONS.get(bit, "bit%d" % bit)


def traits(prog, name):
    if name == "main":
        cf = prog.file_of["main.c"]
        return "exe, main.c, %s" % " ".join(cf.flags())
    f = prog.by_name.get(name)
    return f.traits(prog) if f else "?"


def short_traits(prog, sym, addr):
    """A frame's kind of code in a few words, for grouping failures."""
    if addr is None:
        return "-"
    if addr in oracle.MARKERS:
        return oracle.MARKERS[addr]
    cls = sym.cls(addr)
    if cls == oracle.FOREIGN:
        return "C library"
    if cls != oracle.GENERATED:
        return cls
    name = sym.func_name(addr)
    if name == "main":
        return "main"
    f = prog.by_name[name]
    if isinstance(f, generate.Tramp):
        return "asm " + f.variant
    cf = prog.file_of[f.file]
    out = "C " + ("frame pointer" if f.has_fp(prog) else "no frame pointer")
    if not cf.cfi:
        out += " no CFI"
    if f.drap:
        out += " DRAP"
    elif f.force_align:
        out += " realigned"
    if f.kind in ("cmp", "walk", "phdr"):
        out += " callback"
    elif f.kind == "signal":
        out += " handler"
    elif f.kind == "leafsig":
        out += " leaf"
    return out


def chain_line(sym, rec):
    """The callers on the stack, outermost first: (C library) > main > gf_0 > (C library) > gf_7 > ..."""
    out = []
    for k, v in rec["shadow"]:
        if k == oracle.SIGNAL:
            out.append("SIGNAL at %s" % (sym.func_name(v) or sym.name(v)))
        elif k == oracle.INFUNC:
            out.append(sym.func_name(v) or "?")
        elif sym.cls(v) in (oracle.GENERATED, oracle.RUNTIME):
            out.append(sym.func_name(v))
        else:
            out.append("(C library)")
    if rec["kind"] != "x":
        out.append(sym.func_name(rec["ra"]) or "?")
    return " > ".join(out)


def chain_text(prog, sym, rec):
    out = []
    for k, v in rec["shadow"]:
        if k == oracle.SIGNAL:
            out.append("    SIGNAL, interrupted at %s" % sym.name(v))
        elif k == oracle.INFUNC:
            name = sym.func_name(v) or "?"
            out.append("    %s calls into the C library  [%s]" % (name, traits(prog, name)))
        else:
            out.append("    return to %s" % sym.name(v))
    return "\n".join(out)


def frame_lines(sym, words, prog):
    out = []
    for i, w in enumerate(words):
        name = sym.name(w)
        f = sym.func_name(w) if w not in oracle.MARKERS else None
        extra = ""
        if f and sym.cls(w) == oracle.GENERATED:
            extra = "  [%s]" % traits(prog, f)
        out.append("    %2d %#018x %s%s" % (i, w, name, extra))
    return "\n".join(out)


def failure_report(b, sym, rec, verdict, words, title):
    prog = b.prog
    E = oracle.expected_list(rec, sym)
    lines = ["FAIL seed %d: %s" % (prog.seed, title),
             "  replay: %s --build BUILD --seed %d --keep DIR" % (os.path.relpath(__file__, SOURCE_ROOT), prog.seed),
             "  record: kind %s seq %d site %d thread %d flags %#x skip %d" % (
                 rec["kind"], rec["seq"], rec.get("site", -1), rec.get("tid", 0), rec.get("flags", 0),
                 rec.get("skip", 0)),
             "  problem: %s" % verdict.problem,
             "  " + generate.describe(prog).replace("\n", "\n  "),
             "  chain: " + chain_line(sym, rec),
             "  shadow stack, bottom to top:", chain_text(prog, sym, rec),
             "  expected, top to bottom (after the capture's own frame):"]
    for k, e in enumerate(E):
        lines.append("    %2d %-6s %s" % (k, oracle.KIND_NAMES[e[0]], oracle.entry_text(e, sym)))
    lines.append("  trace (%s):" % ("relstack ps" if rec["kind"] == "p" else "words"))
    lines.append(frame_lines(sym, words, prog))
    return "\n".join(lines)


# -- one seed

class SeedResult:
    def __init__(self, seed):
        self.seed = seed
        self.traces = 0
        self.reliable = 0
        self.reasons = [0] * 32
        self.failures = []      # (category, report)
        self.gdb_compared = 0
        self.gdb_no_cfi = 0
        self.ref_compared = 0
        self.ref_unusable = 0
        self.cover = {}
        self.ps_compared = 0
        self.ps_reliable = 0
        self.dropped = 0
        self.mutants = 0
        self.error = None


COVER = ("signal frame", "context", "C library callback", "thread", "assembly", "no frame pointer", "realigned",
         "skip", "checker")


def cover(prog, sym, rec, counts, main_tid):
    """What a reliable trace went through (the summary's coverage line)."""
    names = {sym.func_name(w) for w in rec["words"] if w not in oracle.MARKERS and sym.cls(w) == oracle.GENERATED}
    funcs = [prog.by_name[n] for n in names if n in prog.by_name]
    got = {
        "signal frame": oracle.SIGNAL_WORD in rec["words"],
        "context": rec["kind"] == "x",
        "C library callback": any(k == oracle.INFUNC for k, _ in rec["shadow"]),
        "thread": rec["tid"] != main_tid,
        "assembly": any(isinstance(f, generate.Tramp) for f in funcs),
        "no frame pointer": any(not f.has_fp(prog) for f in funcs),
        "realigned": any(getattr(f, "drap", False) or getattr(f, "force_align", False) for f in funcs),
        "skip": rec.get("skip", 0) > 0,
        "checker": bool(rec.get("flags", 0) & 2),
    }
    for k, v in got.items():
        if v:
            counts[k] = counts.get(k, 0) + 1


def check_records(b, records, sym, res, main_tid):
    prog = b.prog
    for rec in records:
        if rec["kind"] == "p":
            continue
        res.traces += 1
        for bit in range(32):
            if rec["reasons"] & (1 << bit):
                res.reasons[bit] += 1
        problem = oracle.form_check(rec)
        if problem:
            v = oracle.Verdict(False, problem, "form")
            res.failures.append(("malformed trace: " + problem.split(":")[0],
                                 failure_report(b, sym, rec, v, rec["words"], "malformed trace")))
            continue
        if rec["reasons"]:
            continue
        res.reliable += 1
        cover(b.prog, sym, rec, res.cover, main_tid)
        v = oracle.judge(rec, sym)
        if not v.ok:
            cat = "%s frame: %s, below %s" % (v.what, short_traits(prog, sym, v.frame_addr),
                                             short_traits(prog, sym, v.above_addr))
            res.failures.append((cat, failure_report(
                b, sym, rec, v, rec["words"], "a trace marked reliable is wrong (%s)" % v.what)))
        else:
            if res.mutants < 2:
                mutation_check(b, sym, rec, res)
            reference_check(b, sym, rec, res)


def reference_check(b, sym, rec, res):
    """A trace the oracle passed, against libunwind's at the same point: the C library's frames too.

    libunwind's walk is a reference only where the oracle passes it as
    well (it guesses where there is no CFI) and it reached the outermost
    frame; then the two lists must be equal, word for word.
    """
    if "ref" not in rec:
        res.ref_unusable += 1  # a frame without CFI was on the stack: no reference taken
        return
    ref = rec["ref"][1:] if rec["kind"] == "c" else rec["ref"]  # its first frame is gen_check's own
    ours = rec["words"][:-1]
    if rec["kind"] == "c" and rec["skip"] == 0:
        ours = ours[1:]
    as_ref = dict(rec, words=ref + [oracle.END_WORD], skip=1)
    if not rec.get("refclean") or not oracle.judge(as_ref, sym).ok:
        res.ref_unusable += 1
        return
    res.ref_compared += 1
    if ours != ref:
        first = next((i for i, (x, y) in enumerate(zip(ours, ref)) if x != y), min(len(ours), len(ref)))
        at = ours[first] if first < len(ours) else None
        v = oracle.Verdict(False, "word %d: libunwind unwinds other frames at the same point" % first, "reference")
        rep = failure_report(b, sym, rec, v, rec["words"], "a reliable trace differs from libunwind's frames")
        rep += "\n  libunwind's frames (after the capture's own):\n" + frame_lines(sym, ref, b.prog)
        res.failures.append(("differs from libunwind at: %s, below %s" % (
            short_traits(b.prog, sym, at), short_traits(b.prog, sym, ours[first - 1] if first else None)), rep))


def show_records(b, records, sym):
    """Every trace of a program, named, with its verdict (--show)."""
    for rec in records:
        reasons = ",".join(reason_name(i) for i in range(32) if rec.get("reasons", 0) & (1 << i))
        print("record %d kind %s site %d thread %d flags %#x skip %d: %s" % (
            rec["seq"], rec["kind"], rec.get("site", -1), rec["tid"], rec.get("flags", 0), rec.get("skip", 0),
            reasons or "reliable"))
        print(frame_lines(sym, rec["words"], b.prog))
        if "ref" in rec:
            print("  libunwind%s:\n%s" % ("" if rec.get("refclean") else " (did not finish)",
                                          frame_lines(sym, rec["ref"], b.prog)))
        print("  shadow stack, bottom to top:\n" + chain_text(b.prog, sym, rec))


def mutation_check(b, sym, rec, res):
    """The oracle itself: each generated frame of a good trace, dropped or doubled, must be caught."""
    words = rec["words"]
    for i, w in enumerate(words):
        if sym.cls(w) != oracle.GENERATED or (rec["kind"] == "x" and i == 0):
            continue
        for bad in (words[:i] + words[i + 1:], words[:i + 1] + words[i:]):
            if oracle.judge(rec, sym, trace=bad).ok:
                raise Failure("the oracle accepted trace %d with word %d (%s) dropped or doubled" % (
                    rec["seq"], i, sym.name(w)))
    res.mutants += 1




def gdb_compare(env, b, records, sym, gdb_out, res):
    """Reliable traces the oracle passed against gdb's frames at the same point."""
    by_seq = {}
    for line in gdb_out.splitlines():
        if line.startswith("==frames== "):
            parts = line.split()
            by_seq[int(parts[1])] = [tuple(x.split(":")) for x in parts[2:]]
    for rec in records:
        if rec["kind"] not in ("c", "x") or rec["reasons"] or rec["seq"] not in by_seq:
            continue
        if not oracle.judge(rec, sym).ok:
            continue
        if rec["nocfi"]:
            res.gdb_no_cfi += 1  # gdb guesses frames without CFI, and guesses wrong
            continue
        frames = by_seq[rec["seq"]]
        if rec["kind"] == "c":
            theirs = frames[2:]
            ours = rec["words"][:-1][1 - rec["skip"]:] if rec["skip"] == 0 else rec["words"][:-1]
        else:
            s = next((i for i, f in enumerate(frames) if f[0] == "sig"), None)
            if s is None:
                continue
            theirs = frames[s + 1:]
            ours = rec["words"][:-1]
        gdb_words = [oracle.SIGNAL_WORD if k == "sig" else int(pc, 16) for k, pc in theirs if k in ("fn", "sig")]
        res.gdb_compared += 1
        if gdb_words != ours:
            v = oracle.Verdict(False, "gdb unwinds other frames at the same point", "gdb")
            rep = failure_report(b, sym, rec, v, rec["words"], "a reliable trace differs from gdb's frames")
            rep += "\n  gdb's frames (after the capture's own):\n" + frame_lines(sym, gdb_words, b.prog)
            first = next((i for i, (x, y) in enumerate(zip(ours, gdb_words)) if x != y), min(len(ours),
                                                                                             len(gdb_words)))
            at = ours[first] if first < len(ours) else None
            res.failures.append(("differs from gdb at: %s" % short_traits(b.prog, sym, at), rep))


def run_gdb(env, b, d):
    out = os.path.join(d, "gdb-records")
    script = os.path.join(d, "frames.py")
    cmds = os.path.join(d, "gdb-cmds")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT)
    handles = "".join("handle %s nostop noprint pass\n" % s for s, _ in generate.SIGNALS)
    with open(cmds, "w") as f:
        f.write("set pagination off\nset confirm off\nset print thread-events off\n"
                "set backtrace past-main on\n" + handles +
                "source %s\nbreak gen_gdb_mark\ncommands\nsilent\ngen-frames\ncontinue\nend\n"
                "run %s %s\n" % (script, out, b.libs["libB"]))
    e = dict(os.environ, GEN_GDB_MARKS="48")
    p = subprocess.run([env.gdb, "-batch", "-nx", "-x", cmds, b.exe], capture_output=True, text=True,
                       timeout=300, env=e)
    if "ptrace: Operation not permitted" in p.stdout + p.stderr:
        return None, None
    records, objects, final = parse_output(out)
    if final is None:
        raise Failure("the program under gdb did not finish: %s" % (p.stdout[-2000:] + p.stderr[-2000:]))
    return p.stdout, (records, objects)


def ps_check(env, b, records, sym, ps_path, res):
    for rec in records:
        if rec["kind"] != "p":
            continue
        if rec.get("status") != 0:
            raise Failure("relstack ps exited with status %#x" % rec.get("status", -1))
        with open(ps_path) as f:
            snap = json.load(f)
        t = next((t for t in snap["threads"] if t["tid"] == rec["tid"]), None)
        if t is None:
            raise Failure("relstack ps has no thread %d" % rec["tid"])
        res.ps_compared += 1
        if not t.get("reliable"):
            continue
        res.ps_reliable += 1
        words = [oracle.SIGNAL_WORD if fr.get("marker") == "signal" else int(fr["address"], 16)
                 for fr in t["frames"]]
        v = oracle.judge(rec, sym, trace=words)
        if not v.ok:
            res.failures.append(("relstack ps %s frame: %s, below %s" % (
                v.what, short_traits(b.prog, sym, v.frame_addr), short_traits(b.prog, sym, v.above_addr)),
                failure_report(b, sym, rec, v, words, "a relstack ps stack marked reliable is wrong")))


def run_seed(env, seed, opts):
    res = SeedResult(seed)
    d = os.path.join(env.work, "seed-%d" % seed) if not opts.keep else opts.keep
    os.makedirs(d, exist_ok=True)
    try:
        prog = generate.generate(seed)
        b = build(env, prog, d)
        extra = {}
        ps_path = os.path.join(d, "ps.json")
        use_ps = env.tool and opts.ps_every and seed % opts.ps_every == 0
        if use_ps:
            extra = {"GEN_PS_SEQ": str(random.Random(seed).randint(0, 24)), "GEN_PS_OUT": ps_path,
                     "GEN_RELSTACK": env.tool}
        records, objects, final = run_program(env, b, os.path.join(d, "records"), extra)
        res.dropped = int(final.get("dropped", "0"), 16)
        sym = symbols_of(b, objects)
        check_records(b, records, sym, res, int(final.get("pid", "0"), 16))
        if opts.show:
            show_records(b, records, sym)
        if use_ps:
            ps_check(env, b, records, sym, ps_path, res)
        if env.gdb and opts.gdb_every and seed % opts.gdb_every == 0:
            out, got = run_gdb(env, b, d)
            if got:
                grecords, gobjects = got
                gdb_compare(env, b, grecords, symbols_of(b, gobjects), out, res)
    except (Failure, subprocess.TimeoutExpired) as e:
        res.error = "seed %d: %s" % (seed, e)
    finally:
        if not opts.keep and not (res.failures or res.error):
            shutil.rmtree(d, ignore_errors=True)
    return res


def summary(results, elapsed, base):
    programs = len(results)
    traces = sum(r.traces for r in results)
    reliable = sum(r.reliable for r in results)
    reasons = [sum(r.reasons[i] for r in results) for i in range(32)]
    failures = sum(len(r.failures) for r in results)
    errors = sum(1 for r in results if r.error)
    share = 100.0 * reliable / traces if traces else 0.0
    rtext = " ".join("%s=%d" % (reason_name(i), n) for i, n in enumerate(reasons) if n)
    cov = {k: sum(r.cover.get(k, 0) for r in results) for k in COVER}
    print("gen: reliable traces through: %s" % ", ".join("%s %d" % kv for kv in cov.items()))
    print("gen: compared with libunwind %d (%d left out: frames without CFI, or libunwind lost its way); "
          "with gdb %d (%d left out: frames without CFI)" % (
              sum(r.ref_compared for r in results), sum(r.ref_unusable for r in results),
              sum(r.gdb_compared for r in results), sum(r.gdb_no_cfi for r in results)))
    return ("gen summary: base seed %d, %d programs in %.0fs, %d traces checked, %d reliable (%.1f%% of those "
            "the oracle checks), %d compared with gdb, %d relstack ps snapshots (%d reliable), %d failures "
            "in %d programs, %d errors; reasons: %s" % (
                base, programs, elapsed, traces, reliable, share, sum(r.gdb_compared for r in results),
                sum(r.ps_compared for r in results), sum(r.ps_reliable for r in results), failures,
                sum(1 for r in results if r.failures), errors, rtext or "none"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the meson build directory (librelstack.so, tools/relstack)")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--base-seed", type=int, default=None)
    ap.add_argument("--seed", type=int, action="append", help="run only this seed (repeatable)")
    ap.add_argument("--show", action="store_true", help="print every trace, named, with its verdict")
    ap.add_argument("--keep", help="with one --seed: build in this directory and keep it")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--gdb", help="gdb to compare with (default: gdb on PATH)")
    ap.add_argument("--gdb-every", type=int, default=6, help="compare with gdb every Nth seed (0: never)")
    ap.add_argument("--ps-every", type=int, default=5, help="a relstack ps snapshot every Nth seed (0: never)")
    ap.add_argument("--max-reports", type=int, default=2, help="detailed reports per program")
    ap.add_argument("--cc", default=os.environ.get("CC", "gcc"))
    opts = ap.parse_args()

    if not shutil.which(opts.cc):
        print("skipped: %s not found (the generated programs need a C compiler)" % opts.cc)
        return 77
    if opts.keep and (not opts.seed or len(opts.seed) != 1):
        ap.error("--keep needs exactly one --seed")
    seconds = opts.seconds
    if seconds is None:
        seconds = float(os.environ.get("RELSTACK_GEN_SECONDS", "180"))
    base = opts.base_seed
    if base is None:
        base = int(os.environ["RELSTACK_GEN_SEED"]) if os.environ.get("RELSTACK_GEN_SEED") else \
            random.SystemRandom().randrange(1 << 31)
    if opts.seed:
        base = opts.seed[0]
    print("gen: base seed %d (replay one program: %s --build BUILD --seed N)" % (base, sys.argv[0]), flush=True)

    work = tempfile.mkdtemp(prefix="relstack-gen-")
    start = time.monotonic()
    results = []
    lock = threading.Lock()
    try:
        env = Env(opts, work)
        seeds = iter(opts.seed) if opts.seed else iter(range(base, base + (1 << 40)))

        def worker():
            while True:
                with lock:
                    if not opts.seed and time.monotonic() - start >= seconds:
                        return
                    seed = next(seeds, None)
                if seed is None:
                    return
                r = run_seed(env, seed, opts)
                with lock:
                    results.append(r)
                    report(r, opts)

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as ex:
            for f in [ex.submit(worker) for _ in range(max(1, opts.jobs))]:
                f.result()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - start
    results.sort(key=lambda r: r.seed)
    failed = [r for r in results if r.failures or r.error]
    if failed:
        cats = {}
        for r in results:
            for cat, _ in r.failures:
                cats.setdefault(cat, []).append(r.seed)
        print("gen: failures by kind (seeds):")
        for cat, seeds in sorted(cats.items(), key=lambda kv: -len(kv[1])):
            uniq = sorted(set(seeds))
            print("  %4d  %s  (seeds %s%s)" % (len(seeds), cat, " ".join(map(str, uniq[:12])),
                                               " ..." if len(uniq) > 12 else ""))
        for r in results:
            if r.error:
                print("  error: %s" % r.error.splitlines()[0])
    print(summary(results, elapsed, base))
    if not results:
        print("gen: no program ran")
        return 1
    print("%d passed, %d failed" % (len(results) - len(failed), len(failed)))
    return 1 if failed else 0


def report(r, opts):
    if r.error:
        print("ERROR %s" % r.error, flush=True)
    shown = 0
    for cat, rep in r.failures:
        if shown < opts.max_reports:
            print(rep, flush=True)
            shown += 1
    if len(r.failures) > shown:
        print("  (seed %d: %d more failures: %s)" % (r.seed, len(r.failures) - shown,
                                                      "; ".join(sorted({c for c, _ in r.failures[shown:]}))))
    if not r.failures and not r.error and opts.seed:
        print("seed %d: %d traces, %d reliable, all correct" % (r.seed, r.traces, r.reliable), flush=True)


if __name__ == "__main__":
    sys.exit(main())
