#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Random programs for the unwinder's verdict, one per seed.

A program is a random call graph spread over three objects: the program
itself (exe), a shared library it links (libA) and one it dlopens (libB).
Every function is generated C (or an x86-64 assembly trampoline) that
keeps the shadow stack of gen.h, so tests/gen/oracle.py knows exactly what
each capture must contain.  What varies, per file and per function:

- optimisation (-O0 ... -O3, -Os), frame pointers or not (per file, and
  per function through optimize("omit-frame-pointer") or its opposite),
  leaf frame pointers, files without CFI, CET and stack-protector code;
- realigned frames: a 64-byte aligned local and a VLA (DRAP), or
  force_align_arg_pointer;
- leaves, loops (the same stack captured again: warm captures), tail
  calls (a jump at -O2, a call at -O0: the oracle follows either);
- assembly trampolines with and without CFI: with a frame record, without
  one, one that uses %rbp for data, one that jumps;
- callbacks from the C library: qsort, bsearch, lfind, tsearch, tfind,
  twalk, dl_iterate_phdr;
- signal handlers, raised by raise(), pthread_kill() or a leaf's own
  tgkill system call, on the thread's stack or an alternate one, nested,
  capturing with relstack_capture() and relstack_capture_context();
- the main thread and threads (registered, not registered, an alternate
  stack the library was told about or not), each thread's first capture
  a cold one.

The call graph is acyclic (a function calls only functions after it; a
function raises a signal only if its handler comes after it), and the
number of times each function can run is bounded, so that a program
compiles and runs in about a second.

Usage: generate.py --seed N [--out DIR]   writes the sources and prints
how to build them (tests/gen/run.py builds, runs and judges them).
"""
import argparse
import os
import random
import sys

OBJECTS = ("exe", "libA", "libB")
LIB_FILE = {"libA": "libgenA.so", "libB": "libgenB.so"}

# Signals the programs raise; each gets one handler.
SIGNALS = (("SIGUSR1", 10), ("SIGUSR2", 12), ("SIGURG", 23))

ASM_VARIANTS = ("fp_cfi", "nofp_cfi", "fp_nocfi", "nofp_nocfi", "rbp_cfi", "rbp_nocfi", "jmp_cfi", "jmp_nocfi")

# Most times a callback runs per call into the C library (upper bounds).
QSORT_CMPS = {2: 1, 3: 3, 4: 5, 5: 8}

MAX_RUNS = 48       # most times one function may run in a program
MAX_CAPTURES = 160  # most captures a program may make
CAP_WORDS = 256

RELSTACK_CAPTURE_ABSOLUTE = 0x1
RELSTACK_CAPTURE_CHECK = 0x2

C_TYPES = {
    "plain": ("long", "long x"),
    "leafsig": ("long", "long x"),
    "cmp": ("int", "const void *a, const void *b"),
    "walk": ("void", "const void *node, VISIT which, int depth"),
    "phdr": ("int", "struct dl_phdr_info *info, size_t size, void *data"),
    "thread": ("void *", "void *arg"),
    "signal": ("void", "int sig, siginfo_t *si, void *uc"),
}
POINTER_TYPES = {
    "plain": "long (*)(long)",
    "leafsig": "long (*)(long)",
    "cmp": "int (*)(const void *, const void *)",
    "walk": "void (*)(const void *, VISIT, int)",
    "phdr": "int (*)(struct dl_phdr_info *, size_t, void *)",
    "thread": "void *(*)(void *)",
    "signal": "void (*)(int, siginfo_t *, void *)",
    "tramp": "long (*)(long (*)(long), long)",
}


class Func:
    def __init__(self, idx, kind, obj):
        self.idx = idx
        self.kind = kind
        self.obj = obj
        self.name = "gf_%d" % idx
        self.file = None
        self.fp_attr = None      # None, "omit" or "keep"
        self.drap = False
        self.force_align = False
        self.actions = []
        self.tail = None         # a plain Func this one tail-calls
        self.runs = 0            # most times it runs
        self.signal = None       # (name, number) it handles or, for a leafsig, raises
        self.thread_setup = None  # (altstack, register) for a thread's function
        self.stop = None         # phdr callbacks: 1 stops after the first object

    def traits(self, prog):
        """What this function's code looks like, in words (reports)."""
        f = prog.file_of[self.file]
        out = [self.obj, f.name, f.olevel, "frame pointer" if self.has_fp(prog) else "no frame pointer"]
        if self.drap or self.force_align:
            out[-1] += " (realigned)"
        elif self.fp_attr:
            out[-1] += " (attribute)"
        if not f.cfi:
            out.append("no CFI")
        if self.drap:
            out.append("DRAP")
        if self.force_align:
            out.append("force_align_arg_pointer")
        if self.kind != "plain":
            out.append(self.kind)
        if not self.actions and self.kind == "plain" and not self.tail:
            out.append("leaf")
        return ", ".join(out)

    def has_fp(self, prog):
        f = prog.file_of[self.file]
        if self.drap or self.force_align:
            return True
        return {"omit": False, "keep": True}.get(self.fp_attr, f.fp)


class Tramp:
    def __init__(self, idx, obj, variant):
        self.idx = idx
        self.obj = obj
        self.variant = variant
        self.name = "gt_%d" % idx
        self.kind = "tramp"

    def traits(self, prog):
        return "%s, assembly trampoline %s" % (self.obj, self.variant)

    def has_fp(self, prog):
        return self.variant.startswith("fp")


class CFile:
    def __init__(self, obj, name, rng, knobs):
        self.obj = obj
        self.name = name
        self.olevel = rng.choice(["-O0", "-O1", "-O2", "-O2", "-O3", "-Os"])
        self.fp = rng.random() < knobs["fp_file"]
        self.leaf_fp = rng.choice([None, True, False])
        self.cfi = rng.random() >= knobs["nocfi_file"]
        self.cet = rng.random() < 0.15
        self.protector = rng.random() < 0.15
        self.no_sibcall = rng.random() < 0.05

    def flags(self):
        out = [self.olevel, "-fno-omit-frame-pointer" if self.fp else "-fomit-frame-pointer"]
        if self.leaf_fp is not None:
            out.append("-mno-omit-leaf-frame-pointer" if self.leaf_fp else "-momit-leaf-frame-pointer")
        if not self.cfi:
            out += ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]
        if self.cet:
            out.append("-fcf-protection=full")
        if self.protector:
            out.append("-fstack-protector-strong")
        if self.no_sibcall:
            out.append("-fno-optimize-sibling-calls")
        return out


class Program:
    """One generated program: its functions, files and what main does."""

    def __init__(self, seed):
        self.seed = seed
        self.funcs = []
        self.tramps = []
        self.files = []          # CFile, main.c first
        self.file_of = {}
        self.asm_files = {}      # obj -> file name
        self.signals = []        # (name, number, handler Func, onstack)
        self.threads = []        # Func
        self.main_alt = 0
        self.main_calls = []     # (Func, count)
        self.main_capture = None
        self.dl_names = []
        self.sites = 0
        self.captures = 0
        self.by_name = {}
        self.knobs = {}

    def site(self):
        self.sites += 1
        return self.sites - 1


def _callable_ref(prog, caller_obj, f):
    """How code in @caller_obj names @f: directly, or through gen_dl[] (libB from outside it)."""
    if f.obj == "libB" and caller_obj != "libB":
        if f.name not in prog.dl_names:
            prog.dl_names.append(f.name)
        ptype = POINTER_TYPES[f.kind]
        return "((%s)gen_dl[%d])" % (ptype, prog.dl_names.index(f.name))
    return f.name


def _capture_args(rng, allow_skip=True):
    flags = RELSTACK_CAPTURE_ABSOLUTE
    if rng.random() < 0.3:
        flags |= RELSTACK_CAPTURE_CHECK
    skip = 1 if allow_skip and rng.random() < 0.2 else 0
    cap = rng.randint(2, 8) if rng.random() < 0.04 else CAP_WORDS
    return flags, skip, cap


# Each program draws its own weights first (swarm testing): one is mostly
# callbacks from the program itself, another mostly files without frame
# pointers, so that shapes that need several rare choices at once come up.
KNOBS = {
    "fp_file": (0.3, 0.6, 0.9, 1.0),   # a file keeps frame pointers
    "omit_attr": (0.0, 0.1, 0.25),     # a function is built without them whatever its file says
    "nocfi_file": (0.0, 0.08, 0.25),   # a file has no CFI
    "cmp_share": (0.1, 0.22, 0.4),     # a function is a qsort/bsearch/lfind/tsearch callback
    "cb_in_exe": (0.3, 0.6, 0.9),      # a callback is in the program, beside gen_check()
    "cb_capture": (0.2, 0.5, 0.9),     # a callback captures first thing
    "cb_drap": (0.1, 0.3, 0.5),        # a callback realigns its frame
    "cb_pair": (0.2, 0.5, 0.9),        # one C library call site runs two or three callbacks
    "shift": (0.2, 0.4, 0.8),          # a call into the C library from several stack pointers
}


def generate(seed):
    rng = random.Random(seed)
    prog = Program(seed)
    knobs = prog.knobs = {k: rng.choice(v) for k, v in KNOBS.items()}

    # -- the program's shape
    n = rng.randint(8, 22)
    nthreads = rng.choice([0, 0, 1, 1, 2])
    nsignals = rng.choice([0, 1, 1, 2, 2, 3])
    sigs = rng.sample(SIGNALS, nsignals)

    kinds = ["plain"] * n
    for t in range(nthreads):
        kinds[1 + t] = "thread"
    free = list(range(1 + nthreads, n))
    # handlers in the upper half, so that most functions may raise their signal
    handler_at = {}
    for s in sigs:
        upper = [i for i in free if i >= n // 2]
        if not upper:
            break
        i = rng.choice(upper)
        free.remove(i)
        kinds[i] = "signal"
        handler_at[s] = i
    for s, h in handler_at.items():
        below = [i for i in free if i < h]
        if below and rng.random() < 0.6:
            i = rng.choice(below)
            free.remove(i)
            kinds[i] = "leafsig"
    for i in list(free):
        r = rng.random()
        c = knobs["cmp_share"]
        if r < c:
            kinds[i] = "cmp"
        elif r < c + 0.05:
            kinds[i] = "walk"
        elif r < c + 0.09:
            kinds[i] = "phdr"

    # -- objects and files
    files = {"exe": [CFile("exe", "main.c", rng, knobs)]}
    for obj in OBJECTS:
        files.setdefault(obj, [])
        for k in range(rng.randint(1, 2)):
            files[obj].append(CFile(obj, "%s_%d.c" % (obj, k), rng, knobs))
    prog.files = [f for obj in OBJECTS for f in files[obj]]
    prog.file_of = {f.name: f for f in prog.files}
    for i, kind in enumerate(kinds):
        # callbacks mostly in the program, beside the capture's own frame:
        # the walk's fast path runs through them then
        if kind in ("cmp", "walk", "phdr"):
            obj = "exe" if rng.random() < knobs["cb_in_exe"] else rng.choice(OBJECTS[1:])
        else:
            obj = rng.choices(OBJECTS, weights=[4, 3, 3])[0]
        f = Func(i, kind, obj)
        f.file = rng.choice([c for c in files[obj] if c.name != "main.c"]).name
        r = rng.random()
        f.fp_attr = "omit" if r < knobs["omit_attr"] else "keep" if r < knobs["omit_attr"] + 0.15 else None
        if kind != "leafsig":
            # callbacks realign more often: a realigned frame returning into
            # the C library is where frame records and CFI part ways
            d = knobs["cb_drap"] if kind in ("cmp", "walk", "phdr") else 0.12
            r = rng.random()
            f.drap = r < d
            f.force_align = d <= r < d + 0.05
        prog.funcs.append(f)
        prog.by_name[f.name] = f
    for s, h in handler_at.items():
        prog.funcs[h].signal = s
    for f in prog.funcs:
        if f.kind == "leafsig":
            hs = [s for s, h in handler_at.items() if h > f.idx]
            f.signal = rng.choice(hs)

    tid = 0
    for obj in OBJECTS:
        if rng.random() < 0.5:
            prog.asm_files[obj] = "%s_tramp.S" % obj
            for _ in range(rng.randint(1, 3)):
                t = Tramp(tid, obj, rng.choice(ASM_VARIANTS))
                tid += 1
                prog.tramps.append(t)
                prog.by_name[t.name] = t

    # -- main: signals, its own alternate stack, roots, threads
    for s in sigs:
        if s in handler_at:
            prog.signals.append((s[0], s[1], prog.funcs[handler_at[s]], rng.random() < 0.5))
    if any(onstack for _, _, _, onstack in prog.signals):
        prog.main_alt = rng.choices([0, 1, 2], weights=[3, 6, 1])[0]
    prog.main_calls.append((prog.funcs[0], rng.choice([1, 1, 2])))
    prog.funcs[0].runs = prog.main_calls[0][1]
    for t in range(nthreads):
        f = prog.funcs[1 + t]
        f.thread_setup = (rng.choices([0, 1, 2], weights=[4, 5, 1])[0], rng.random() < 0.95)
        f.runs = 1
        prog.threads.append(f)
    if rng.random() < 0.3:
        prog.main_capture = (prog.site(),) + _capture_args(rng)
        prog.captures += 1

    # -- bodies, in order: every caller of a function comes before it
    for f in prog.funcs:
        _body(prog, rng, f)
    return prog


def _later(prog, f, kinds):
    return [g for g in prog.funcs[f.idx + 1:] if g.kind in kinds]


def _pick_callee(rng, cands):
    """Prefer functions nothing reaches yet, so that most of the program runs."""
    unreached = [g for g in cands if g.runs == 0]
    if unreached and rng.random() < 0.7:
        return rng.choice(unreached)
    return rng.choice(cands)


def _add_capture(prog, rng, f, runs):
    """A capture, or the same one two or three times in a row (a warm cache, the same stack)."""
    repeat = rng.choice([1, 1, 2, 3])
    if prog.captures + runs * repeat > MAX_CAPTURES:
        repeat = 1
        if prog.captures + runs > MAX_CAPTURES:
            return
    prog.captures += runs * repeat
    f.actions.append(("capture", prog.site()) + _capture_args(rng) + (repeat,))


def _body(prog, rng, f):
    if f.kind == "leafsig":
        h = next(h for (name, num, h, _) in prog.signals if (name, num) == f.signal)
        h.runs += f.runs
        return
    if f.kind == "plain" and f.idx > 2 and rng.random() < 0.15:
        return  # a leaf
    runs = max(f.runs, 1)
    nact = rng.randint(1, 4)
    if f.kind in ("cmp", "walk", "phdr") and rng.random() < prog.knobs["cb_capture"]:
        _add_capture(prog, rng, f, runs)  # first thing: its frame right above the C library's
    for _ in range(nact):
        choices = ["call", "capture"]
        weights = [35, 22]
        plains = _later(prog, f, ("plain", "leafsig"))
        if not plains:
            weights[0] = 0
        if prog.tramps and plains:
            choices.append("tramp")
            weights.append(10)
        cbs = _later(prog, f, ("cmp", "phdr"))
        if cbs:
            choices.append("callout")
            weights.append(14)
        handlers = [h for (_, _, h, _) in prog.signals if h.idx > f.idx]
        if handlers:
            choices.append("raise")
            weights.append(9)
        if f.kind == "signal":
            choices.append("ctx")
            weights.append(12)
        what = rng.choices(choices, weights=weights)[0]
        if what == "capture":
            _add_capture(prog, rng, f, runs)
        elif what == "ctx":
            if prog.captures + runs > MAX_CAPTURES:
                continue
            prog.captures += runs
            flags, _, cap = _capture_args(rng, allow_skip=False)
            f.actions.append(("ctx", prog.site(), flags, cap))
        elif what in ("call", "tramp"):
            g = _pick_callee(rng, plains)
            count = rng.choice([1, 1, 1, 2, 3])
            if runs * count > MAX_RUNS:
                count = 1
            if g.runs + runs * count > MAX_RUNS:
                continue
            g.runs += runs * count
            if what == "call":
                f.actions.append(("call", g, count))
            else:
                t = rng.choice(prog.tramps)
                f.actions.append(("tramp", t, g, count))
        elif what == "callout":
            cb = _pick_callee(rng, cbs)
            if cb.kind == "phdr":
                if cb.stop is None:
                    cb.stop = 1 if runs > 2 or rng.random() < 0.7 else 0
                per = 1 if cb.stop else 16
                if cb.runs + runs * per > MAX_RUNS:
                    continue
                cb.runs += runs * per
                f.actions.append(("phdr", cb))
                continue
            lib = rng.choice(["qsort", "bsearch", "lfind", "tsearch"])
            if lib == "qsort":
                k = rng.randint(2, 5)
                per = QSORT_CMPS[k]
            elif lib == "bsearch":
                k = rng.randint(1, 6)
                per = 3
            elif lib == "lfind":
                k = rng.randint(1, 4)
                per = k
            else:
                k = rng.randint(1, 3)
                per = k * (k - 1) // 2 + 2
            # the same call into the C library with two or three callbacks in
            # turn: one call site there returns into each (a cached tail
            # made under one callback is offered to the next)
            cbl = [cb]
            cmps = [g for g in cbs if g.kind == "cmp" and g is not cb]
            if lib != "tsearch" and cmps and rng.random() < prog.knobs["cb_pair"]:
                # one that realigns and one that does not, where there are both
                other = [g for g in cmps if g.drap != cb.drap]
                cbl.append(rng.choice(other if other and rng.random() < 0.7 else cmps))
                rest = [g for g in cmps if g not in cbl]
                if rest and rng.random() < 0.3:
                    cbl.append(rng.choice(rest))
                rng.shuffle(cbl)
            shifts = rng.randint(2, 4) if rng.random() < prog.knobs["shift"] else 1
            if shifts > 1 and len({g.drap for g in cbl}) > 1:
                shifts = 4  # every stack pointer modulo 64 under the realigned one
            per *= shifts
            if any(g.runs + runs * per > MAX_RUNS for g in cbl):
                shifts, per = 1, per // shifts
                if any(g.runs + runs * per > MAX_RUNS for g in cbl):
                    continue
            for g in cbl:
                g.runs += runs * per
            walker = None
            if lib == "tsearch":
                walks = _later(prog, f, ("walk",))
                if walks and rng.random() < 0.7:
                    walker = _pick_callee(rng, walks)
                    if walker.runs + runs * 3 * k * shifts > MAX_RUNS:
                        walker = None
                    else:
                        walker.runs += runs * 3 * k * shifts
            f.actions.append((lib, cbl, k, walker, [rng.randint(0, 9) for _ in range(k)], shifts))
        elif what == "raise":
            h = rng.choice(handlers)
            if h.runs + runs > MAX_RUNS:
                continue
            h.runs += runs
            f.actions.append(("raise", h.signal, rng.choice(["raise", "pthread_kill"])))
    if f.kind == "plain" and rng.random() < 0.3:
        tails = _later(prog, f, ("plain", "leafsig"))
        if tails:
            g = _pick_callee(rng, tails)
            if g.runs + runs <= MAX_RUNS:
                g.runs += runs
                f.tail = g


# -- C text

def _attrs(f):
    a = ["noipa", "used"]
    if f.fp_attr == "omit":
        a.append('optimize("omit-frame-pointer")')
    elif f.fp_attr == "keep":
        a.append('optimize("no-omit-frame-pointer")')
    if f.force_align:
        a.append("force_align_arg_pointer")
    return "__attribute__((%s))" % ", ".join(a)


def _c_action(prog, f, act, out):
    obj = f.obj
    kind = act[0]
    if kind == "capture":
        _, site, flags, skip, cap, repeat = act
        if repeat == 1:
            out.append("\tgen_check(%d, %#x, %d, %d);" % (site, flags, skip, cap))
        else:
            out.append("\tfor (int gen_c = 0; gen_c < %d; gen_c++)" % repeat)
            out.append("\t\tgen_check(%d, %#x, %d, %d);" % (site, flags, skip, cap))
    elif kind == "ctx":
        _, site, flags, cap = act
        out.append("\tgen_check_ctx(%d, uc, %#x, %d);" % (site, flags, cap))
    elif kind in ("call", "tramp"):
        if kind == "call":
            _, g, count = act
            expr = "%s(r + gen_i)" % _callable_ref(prog, obj, g)
        else:
            _, t, g, count = act
            expr = "%s(%s, r + gen_i)" % (_callable_ref(prog, obj, t), _callable_ref(prog, obj, g))
        out.append("\tfor (int gen_i = 0; gen_i < %d; gen_i++) {" % count)
        out.append("\t\tr += %s;" % expr)
        out.append("\t\tGEN_RESYNC();")
        out.append("\t}")
    elif kind in ("qsort", "bsearch", "lfind", "tsearch"):
        _, cbl, k, walker, vals, shifts = act
        body = []
        if len(cbl) == 1:
            cbref = _callable_ref(prog, obj, cbl[0])
        else:
            cbref = "gen_cbs[gen_j]"
        if kind == "tsearch":
            body.append("static const int gen_keys[%d] = { %s };" % (k, ", ".join(map(str, vals))))
            body.append("void *gen_root = NULL;")
            body.append("GEN_CALLOUT(%s);" % f.name)
            body.append("for (int gen_i = 0; gen_i < %d; gen_i++)" % k)
            body.append("\tgen_libc->tsearch(&gen_keys[gen_i], &gen_root, %s);" % cbref)
            body.append("r += gen_libc->tfind(&gen_keys[0], &gen_root, %s) != NULL;" % cbref)
            if walker:
                body.append("gen_libc->twalk(gen_root, %s);" % _callable_ref(prog, obj, walker))
            body.append("gen_libc->tdestroy(gen_root, gen_libc->nofree);")
        else:
            if kind == "bsearch":
                vals = sorted(vals)
            body.append("int gen_a[%d] = { %s };" % (k, ", ".join(map(str, vals))))
            body.append("int gen_k = %d;" % vals[-1])
            body.append("size_t gen_n = %d;" % k)
            body.append("GEN_CALLOUT(%s);" % f.name)
            if kind == "qsort":
                body.append("gen_libc->qsort(gen_a, gen_n, sizeof(int), %s);" % cbref)
                body.append("r += gen_a[0] + gen_k;")
            elif kind == "bsearch":
                body.append("r += gen_libc->bsearch(&gen_k, gen_a, gen_n, sizeof(int), %s) != NULL;" % cbref)
            else:
                body.append("r += gen_libc->lfind(&gen_k, gen_a, &gen_n, sizeof(int), %s) != NULL;" % cbref)
        if len(cbl) > 1:
            body = ["for (int gen_j = 0; gen_j < %d; gen_j++) {" % len(cbl)] + ["\t" + x for x in body] + ["}"]
            body.insert(0, "int (*const gen_cbs[%d])(const void *, const void *) = { %s };" % (
                len(cbl), ", ".join(_callable_ref(prog, obj, g) for g in cbl)))
        if shifts > 1:
            # the same calls from stack pointers 16 bytes apart: a realigned
            # callback's padding differs at each
            body = ["for (int gen_s = 0; gen_s < %d; gen_s++) {" % shifts,
                    "\tchar gen_pad[16 * gen_s + 1];",
                    '\t__asm__ volatile("" ::"r"(gen_pad) : "memory");'] + ["\t" + x for x in body] + ["}"]
        body.append("GEN_RESYNC();")
        out.append("\t{")
        out.extend("\t\t" + x for x in body)
        out.append("\t}")
    elif kind == "phdr":
        _, cb = act
        out.append("\tGEN_CALLOUT(%s);" % f.name)
        out.append("\tr += gen_libc->dl_iterate_phdr(%s, NULL);" % _callable_ref(prog, obj, cb))
        out.append("\tGEN_RESYNC();")
    elif kind == "raise":
        _, (sname, _), how = act
        out.append("\tGEN_CALLOUT(%s);" % f.name)
        if how == "raise":
            out.append("\tgen_libc->raise(%s);" % sname)
        else:
            out.append("\tgen_libc->pthread_kill(gen_libc->pthread_self(), %s);" % sname)
        out.append("\tGEN_RESYNC();")
    else:
        raise AssertionError(kind)


def _c_function(prog, f):
    ret, params = C_TYPES[f.kind]
    out = ["%s %s %s(%s)" % (_attrs(f), ret, f.name, params), "{"]
    if f.kind == "signal":
        out.append("\tGEN_ENTER_SIGNAL(uc);")
        out.append("\tlong r = sig + (si != NULL);")
    else:
        out.append("\tGEN_ENTER();")
        init = {
            "plain": "x * %d + %d" % (f.idx + 3, f.idx),
            "leafsig": "x ^ %d" % f.idx,
            "cmp": "*(const int *)a + 2 * *(const int *)b",
            "walk": "(long)which + depth + (node != NULL)",
            "phdr": "(long)size + (info != NULL) + (data != NULL)",
            "thread": "(long)arg",
        }[f.kind]
        out.append("\tlong r = %s;" % init)
    if f.kind == "thread":
        alt, reg = f.thread_setup
        out.append("\tgen_thread_setup(%d, %d);" % (alt, int(reg)))
    if f.drap:
        out.append("\t_Alignas(64) volatile char gen_al[64];")
        out.append("\tchar gen_vla[(r & 7) + 1];")
        out.append("\tgen_al[0] = (char)r;")
        out.append("\tgen_vla[0] = (char)r;")
        out.append('\t__asm__ volatile("" ::"r"(gen_al), "r"(gen_vla) : "memory");')
    if f.kind == "leafsig":
        out.append("\tGEN_LEAF_KILL(%s);" % f.signal[0])
    for act in f.actions:
        _c_action(prog, f, act, out)
    if f.tail:
        out.append("\tGEN_TAIL();")
        out.append("\treturn %s(r);" % _callable_ref(prog, f.obj, f.tail))
    else:
        out.append("\tGEN_LEAVE();")
        out.append({
            "plain": "\treturn r;",
            "leafsig": "\treturn r;",
            "cmp": "\treturn (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b) + 0 * (int)r;",
            "walk": "\t(void)r;",
            "phdr": "\treturn %d + 0 * (int)r;" % (f.stop if f.stop is not None else 1),
            "thread": "\treturn (void *)r;",
            "signal": "\t(void)r;",
        }[f.kind])
    out.append("}")
    return "\n".join(out) + "\n"


def _main_c(prog):
    out = ['__attribute__((used)) int main(int argc, char **argv)']
    out.append("{")
    out.append("\tGEN_ENTER();")
    out.append("\tlong r = argc;")
    out.append("\tgen_rt_init(argc, argv, gen_dl_names, GEN_DL_COUNT);")
    for sname, _, h, onstack in prog.signals:
        out.append("\tgen_install_handler(%s, %s, %d);" % (sname, _callable_ref(prog, "exe", h), int(onstack)))
    out.append("\tgen_thread_setup(%d, 1);" % prog.main_alt)
    if prog.main_capture:
        site, flags, skip, cap = prog.main_capture[:4]
        out.append("\tgen_check(%d, %#x, %d, %d);" % (site, flags, skip, cap))
    f, count = prog.main_calls[0]
    out.append("\tfor (int gen_i = 0; gen_i < %d; gen_i++) {" % count)
    out.append("\t\tr += %s(r + gen_i);" % _callable_ref(prog, "exe", f))
    out.append("\t\tGEN_RESYNC();")
    out.append("\t}")
    for t in prog.threads:
        out.append("\tgen_run_thread(%s, r);" % _callable_ref(prog, "exe", t))
        out.append("\tGEN_RESYNC();")
    out.append("\tgen_rt_finish(r);")
    out.append("\tGEN_LEAVE();")
    out.append("\treturn 0;")
    out.append("}")
    # the names main() itself looked up are in the list too
    names = prog.dl_names
    head = [_head(prog.file_of["main.c"]).rstrip("\n"),
            "#define GEN_DL_COUNT %d" % len(names),
            "static const char *const gen_dl_names[] = { %s };" % (
                ", ".join('"%s"' % n for n in names) if names else "NULL"), ""]
    return "\n".join(head + out) + "\n"


def _decls(prog):
    out = ["/* generated: every function of the program, for every file */"]
    for f in prog.funcs:
        ret, params = C_TYPES[f.kind]
        out.append("%s %s(%s);" % (ret, f.name, params))
    for t in prog.tramps:
        out.append("long %s(long (*fn)(long), long x);" % t.name)
    return "\n".join(out) + "\n"


# The shadow stack push of a trampoline's own return address: gen.h's
# layout (n at 0, value[] at 8, kind[] at 8 + 8 * 256); leaves the old
# depth in %r10.  ${kind}: GEN_EXACT, or GEN_EXACT | GEN_NOCFI.
ASM_PUSH = """\
	movq	gen_sh@gottpoff(%rip), %r11
	movq	%fs:(%r11), %r10
	movq	(%rsp), %rax
	movq	%rax, %fs:8(%r11,%r10,8)
	movq	${kind}, %fs:2056(%r11,%r10,8)
	leaq	1(%r10), %rax
	movq	%rax, %fs:(%r11)
"""
ASM_CALL = """\
	movq	%rdi, %rax
	movq	%rsi, %rdi
	call	*%rax
"""
ASM_RESTORE = """\
	movq	gen_sh@gottpoff(%rip), %r11
	movq	{reg}, %fs:(%r11)
"""

ASM_BODIES = {
    # a frame record, CFA on %rbp; the old depth at -8(%rbp)
    "fp": [ASM_PUSH, "\tpushq\t%rbp\n", "@\t.cfi_def_cfa_offset 16\n", "@\t.cfi_offset %rbp, -16\n",
           "\tmovq\t%rsp, %rbp\n", "@\t.cfi_def_cfa_register %rbp\n", "\tpushq\t%r10\n", "\tsubq\t$8, %rsp\n",
           ASM_CALL, "\tmovq\t-8(%rbp), %r10\n", ASM_RESTORE.format(reg="%r10"), "\tleave\n",
           "@\t.cfi_def_cfa %rsp, 8\n", "\tret\n"],
    # no frame record: the old depth pushed (which aligns the stack)
    "nofp": [ASM_PUSH, "\tpushq\t%r10\n", "@\t.cfi_adjust_cfa_offset 8\n", ASM_CALL, "\tpopq\t%r10\n",
             "@\t.cfi_adjust_cfa_offset -8\n", ASM_RESTORE.format(reg="%r10"), "\tret\n"],
    # %rbp saved, then used for data (the old depth) across the call
    "rbp": [ASM_PUSH, "\tpushq\t%rbp\n", "@\t.cfi_adjust_cfa_offset 8\n", "@\t.cfi_offset %rbp, -16\n",
            "\tmovq\t%r10, %rbp\n", ASM_CALL, ASM_RESTORE.format(reg="%rbp"), "\tpopq\t%rbp\n",
            "@\t.cfi_adjust_cfa_offset -8\n", "@\t.cfi_restore %rbp\n", "\tret\n"],
    # no frame at all: the callee returns straight to our caller
    "jmp": ["\tmovq\t%rdi, %rax\n", "\tmovq\t%rsi, %rdi\n", "\tjmp\t*%rax\n"],
}


def _asm(prog, obj):
    out = ["/* generated: trampolines long gt_N(long (*fn)(long), long x) { return fn(x); } */",
           "\t.text"]
    for t in prog.tramps:
        if t.obj != obj:
            continue
        shape, cfi = t.variant.split("_")
        out.append("\t.globl\t%s\n\t.type\t%s, @function\n\t.p2align 4\n%s:" % (t.name, t.name, t.name))
        if cfi == "cfi":
            out.append("\t.cfi_startproc")
        for part in ASM_BODIES[shape]:
            if part.startswith("@"):
                if cfi == "cfi":
                    out.append(part[1:].rstrip("\n"))
            else:
                # GEN_EXACT, with GEN_NOCFI where there is no CFI
                out.append(part.replace("${kind}", "$0" if cfi == "cfi" else "$0x100").rstrip("\n"))
        if cfi == "cfi":
            out.append("\t.cfi_endproc")
        out.append("\t.size\t%s, .-%s" % (t.name, t.name))
    out.append('\t.section\t.note.GNU-stack,"",@progbits')
    return "\n".join(out) + "\n"


def _head(cf):
    flags = "" if cf.cfi else "#define GEN_SELF_FLAGS GEN_NOCFI /* built without CFI */\n"
    return flags + '#include "gen.h"\n#include "gen_decls.h"\n\n'


def sources(prog):
    """{file name: text} of the program: C files, assembly, gen_decls.h."""
    texts = {}
    body = {f.name: [] for f in prog.files}
    for f in prog.funcs:
        body[f.file].append(_c_function(prog, f))
    # main.c names gen_dl[] entries only after every function has been written
    for cf in prog.files:
        if cf.name == "main.c":
            continue
        texts[cf.name] = _head(cf) + "\n".join(body[cf.name])
    texts["main.c"] = _main_c(prog)
    texts["gen_decls.h"] = _decls(prog)
    for obj, name in prog.asm_files.items():
        texts[name] = _asm(prog, obj)
    return texts


def build_plan(prog):
    """Per object: its sources and each one's compiler flags."""
    plan = {}
    for obj in OBJECTS:
        srcs = [(cf.name, cf.flags()) for cf in prog.files if cf.obj == obj]
        if obj in prog.asm_files:
            srcs.append((prog.asm_files[obj], []))
        plan[obj] = srcs
    return plan


def describe(prog):
    """The program in a few lines: objects, files, functions (reports)."""
    out = ["seed %d: %d functions, %d trampolines, %d threads, signals %s, main alternate stack %d" % (
        prog.seed, len(prog.funcs), len(prog.tramps), len(prog.threads),
        ",".join("%s%s" % (s, "(onstack)" if o else "") for s, _, _, o in prog.signals) or "none", prog.main_alt)]
    out.append("  weights: " + " ".join("%s=%g" % kv for kv in prog.knobs.items()))
    for cf in prog.files:
        out.append("  %s/%s: %s" % (cf.obj, cf.name, " ".join(cf.flags())))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", help="directory to write the sources to (default: print them)")
    args = ap.parse_args()
    prog = generate(args.seed)
    texts = sources(prog)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name, text in texts.items():
            with open(os.path.join(args.out, name), "w") as f:
                f.write(text)
    else:
        for name, text in sorted(texts.items()):
            sys.stdout.write("/* ==== %s ==== */\n%s\n" % (name, text))
    print(describe(prog), file=sys.stderr)
    for obj, srcs in build_plan(prog).items():
        for name, flags in srcs:
            print("  %s %s %s" % (obj, name, " ".join(flags)), file=sys.stderr)


if __name__ == "__main__":
    main()
