# SPDX-License-Identifier: LGPL-2.1-or-later
"""The exact oracle: a reliable trace against the shadow stack (gen.h).

A capture's record (genrt.c) holds the words relstack wrote, the verdict
and the shadow stack at that moment.  From the shadow stack, top to
bottom, comes the EXPECTED list:

  kind c (relstack_capture() in gen_check()):
      EXACT(ra), then every shadow entry from the top down;
      the trace's first word is in gen_check() unless a frame was skipped.
  kind x (relstack_capture_context() in a handler):
      EXACT(interrupted pc), then the entries below the handler's SIGNAL;
  kind p (`relstack ps` while gen_check() waits in waitpid()):
      the C library's frames, one word in the snapshot function, one in
      gen_check(), then as kind c.

A shadow entry is EXACT(a) (the stack holds return address a), INFUNC(f)
(one return address inside generated function f: a call into the C
library) or SIGNAL(pc) (the SIGNAL marker word, then pc).

Every word of a trace is one of: a marker (END, SIGNAL, UNKNOWN); in a
GENERATED function (gf_*, gt_*, main); in the RUNTIME (genrt.c's gen_*);
FOREIGN (any other object's code: the C library, the loader, librelstack,
the signal trampoline, and the generated objects' own start-up code such
as _start); STRAY (inside a generated object but in no function); or
NOWHERE (in no object's code at all).

The comparison, for a reliable trace (reasons == 0), is strict:

1. the words after the expected prefix are matched to the expected list
   in order, each entry by exactly one word (two for SIGNAL);
2. between two consecutive entries, the trace may hold FOREIGN words only
   where the upper entry's address is itself FOREIGN (the code between
   the two generated frames is the C library's: qsort's internals, raise,
   start_thread); where the upper entry is in generated code the next
   entry must be the very next word, since the function it is in pushed
   it;
3. after the last entry, FOREIGN words only (the thread's start in the C
   library, _start), then END, then nothing;
4. a FOREIGN EXACT entry (the return address of a callback, a handler's
   callee or a thread's function into the C library) is never followed
   by the same word: the C library's function would have had to call
   itself from the very instruction that called generated code (none of
   the routines the programs call back through does).

So a generated frame missing, a generated or runtime frame extra (a
duplicate), a wrong address, a marker out of place or a frame lost at the
bottom all fail.  Any reliable trace must end with END, and an unreliable
one must not; `frames` must count the non-marker words.
"""
import bisect

EXACT, INFUNC, SIGNAL = 0, 1, 2
KIND_NAMES = {EXACT: "EXACT", INFUNC: "INFUNC", SIGNAL: "SIGNAL"}

END_WORD = (1 << 64) - 1
UNKNOWN_WORD = (1 << 64) - 2
SIGNAL_WORD = (1 << 64) - 3
MARKERS = {END_WORD: "END", UNKNOWN_WORD: "UNKNOWN", SIGNAL_WORD: "SIGNAL"}

GENERATED, RUNTIME, FOREIGN, STRAY, NOWHERE, MARKER = "generated", "runtime", "foreign", "stray", "nowhere", "marker"


class Symbols:
    """Addresses of one run: its objects (O lines) and the generated objects' symbols (nm)."""

    def __init__(self, objects, gen_syms):
        """@objects: [(bias, name, [(lo, hi)])]; @gen_syms: {object base name: [(value, size, name)]}."""
        self.ranges = []   # (lo, hi, object name)
        self.funcs = []    # (start, end, name, class)
        self.gen_objects = []
        for bias, name, segs in objects:
            base = "exe" if name == "-" else name.rsplit("/", 1)[-1]
            for lo, hi in segs:
                self.ranges.append((lo, hi, base))
            key = base if base in gen_syms else None
            if key:
                for lo, hi in segs:
                    self.gen_objects.append((lo, hi))
                for value, size, sym in gen_syms[key]:
                    if not size:
                        continue
                    if sym.startswith(("gf_", "gt_")) or sym == "main":
                        cls = GENERATED
                    elif sym.startswith("gen_"):
                        cls = RUNTIME
                    else:
                        cls = FOREIGN
                    self.funcs.append((bias + value, bias + value + size, sym, cls))
        self.ranges.sort()
        self.funcs.sort()
        self.func_starts = [f[0] for f in self.funcs]
        self.range_starts = [r[0] for r in self.ranges]
        self.start_of = {f[2]: f[0] for f in self.funcs}

    def func(self, addr):
        i = bisect.bisect_right(self.func_starts, addr) - 1
        if i >= 0 and self.funcs[i][0] <= addr < self.funcs[i][1]:
            return self.funcs[i]
        return None

    def cls(self, addr):
        if addr in MARKERS:
            return MARKER
        f = self.func(addr)
        if f:
            return f[3]
        if any(lo <= addr < hi for lo, hi in self.gen_objects):
            return STRAY
        i = bisect.bisect_right(self.range_starts, addr) - 1
        if i >= 0 and self.ranges[i][0] <= addr < self.ranges[i][1]:
            return FOREIGN
        return NOWHERE

    def name(self, addr):
        if addr in MARKERS:
            return MARKERS[addr]
        f = self.func(addr)
        if f:
            return "%s+%#x" % (f[2], addr - f[0])
        i = bisect.bisect_right(self.range_starts, addr) - 1
        if i >= 0 and self.ranges[i][0] <= addr < self.ranges[i][1]:
            return "%s@%#x" % (self.ranges[i][2], addr)
        return "?%#x" % addr

    def func_name(self, addr):
        f = self.func(addr)
        return f[2] if f else None


class Verdict:
    """The oracle's answer for one record: ok, or the first problem and where."""

    def __init__(self, ok, problem="", what="", at_word=None, frame_addr=None, above_addr=None):
        self.ok = ok
        self.problem = problem      # one line
        self.what = what            # missing | extra | duplicated | wrong | end | form
        self.at_word = at_word      # index in the trace words
        self.frame_addr = frame_addr  # the address whose frame is missing or extra
        self.above_addr = above_addr  # the word above it (its callee's frame)


def expected_list(rec, sym):
    """[(kind, value)] top to bottom for a record.

    A call into the C library (INFUNC f) whose callback's own return
    address (the EXACT entry just above) is inside f itself: the library
    jumped to the callback (twalk on a one-node tree tail-calls its
    action), so its frame is gone and that return address is the one
    word the call left in f.  The two entries are one word.
    """
    shadow = rec["shadow"]
    if rec["kind"] == "x":
        m = max(i for i, (k, _) in enumerate(shadow) if k == SIGNAL)
        E = [(EXACT, shadow[m][1])] + list(reversed(shadow[:m]))
    else:
        E = [(EXACT, rec["ra"])] + list(reversed(shadow))
    out = []
    for e in E:
        if e[0] == INFUNC and out and out[-1][0] == EXACT:
            f = sym.func(out[-1][1])
            if f is not None and f[0] == e[1]:
                continue
        out.append(e)
    return out


def form_check(rec):
    """What every capture must satisfy, reliable or not: END exactly when reliable, frames counted."""
    words = rec["words"]
    reliable = rec["reasons"] == 0
    if rec["ret"] < 0:
        return "capture returned %d" % rec["ret"]
    if rec["ret"] != len(words):
        return "capture returned %d but wrote %d words" % (rec["ret"], len(words))
    if reliable and (not words or words[-1] != END_WORD):
        return "reliable trace without END at its end"
    if END_WORD in words[:-1] or (not reliable and words and words[-1] == END_WORD):
        return "END %s" % ("before the last word" if END_WORD in words[:-1] else "in an unreliable trace")
    code = sum(1 for w in words if w not in MARKERS)
    if rec["frames"] != code:
        return "verdict.frames %d, but %d code addresses written" % (rec["frames"], code)
    return None


def judge(rec, sym, trace=None):
    """Judge one reliable record.  @trace: the words to judge (ps snapshots), else rec's."""
    kind = rec["kind"]
    words = list(rec["words"]) if trace is None else list(trace)
    E = expected_list(rec, sym)
    i = 0
    if kind in ("c", "x"):
        if not words or words[-1] != END_WORD:
            return Verdict(False, "reliable trace without END", "end")
        words = words[:-1]
    if kind == "c" and rec["skip"] == 0:
        if not words or sym.func_name(words[0]) != "gen_check":
            return Verdict(False, "first word %s is not in gen_check()" % (sym.name(words[0]) if words else "(none)"),
                           "wrong", 0)
        i = 1
    if kind == "p":
        while i < len(words) and sym.cls(words[i]) == FOREIGN:
            i += 1
        for fn in ("gen_ps_snapshot", "gen_check"):
            if i >= len(words) or sym.func_name(words[i]) != fn:
                return Verdict(False, "word %d: %s where a return into %s() belongs" % (
                    i, sym.name(words[i]) if i < len(words) else "(end)", fn), "wrong", i)
            i += 1
    filler = False
    for k, (ek, ev) in enumerate(E):
        if filler:
            while i < len(words) and sym.cls(words[i]) == FOREIGN:
                i += 1
        if i < len(words):
            w = words[i]
            if ek == EXACT:
                ok = w == ev
            elif ek == INFUNC:
                f = sym.func(w) if w not in MARKERS else None
                ok = f is not None and f[0] == ev
            else:
                ok = w == SIGNAL_WORD and i + 1 < len(words) and words[i + 1] == ev
            if ok:
                i += 2 if ek == SIGNAL else 1
                filler = sym.cls(ev) == FOREIGN
                if filler and ek == EXACT and i < len(words) and words[i] == ev:
                    return Verdict(False, "word %d: the C library's frame %s twice: it called a generated "
                                   "function from there, which its own caller cannot have done too" % (
                                       i, sym.name(ev)), "duplicated", i, ev, words[i - 2] if i >= 2 else None)
                continue
        return _diagnose(E, k, words, i, sym)
    if filler:
        while i < len(words) and sym.cls(words[i]) == FOREIGN:
            i += 1
    if i != len(words):
        w = words[i]
        return Verdict(False, "word %d: %s after the outermost generated frame, where only the C library's "
                       "start of the thread belongs" % (i, sym.name(w)), "extra", i, w,
                       words[i - 1] if i else None)
    return Verdict(True)


def _entry_matches(entry, words, j, sym):
    ek, ev = entry
    w = words[j]
    if ek == EXACT:
        return w == ev
    if ek == INFUNC:
        f = sym.func(w) if w not in MARKERS else None
        return f is not None and f[0] == ev
    return w == SIGNAL_WORD and j + 1 < len(words) and words[j + 1] == ev


def entry_text(entry, sym):
    ek, ev = entry
    if ek == EXACT:
        return sym.name(ev)
    if ek == INFUNC:
        return "somewhere in %s" % (sym.func_name(ev) or "?%#x" % ev)
    return "SIGNAL, %s" % sym.name(ev)


def _diagnose(E, k, words, i, sym):
    """The first mismatch, named: a frame missing, one extra (or a duplicate), or a wrong one."""
    above = words[i - 1] if i > 0 else None
    if i >= len(words):
        ev = E[k][1]
        return Verdict(False, "trace ends before expected %s (%d expected entries not found)" % (
            entry_text(E[k], sym), len(E) - k), "missing", i, ev, above)
    # the expected entry further down: the words in between are extra; or
    # the word found is a later expected entry: the ones in between are
    # missing.  The explanation with fewer frames wins (an address can be
    # expected twice: a trampoline above and below a signal frame).
    extra_at = next((j for j in range(i + 1, min(len(words), i + 8)) if _entry_matches(E[k], words, j, sym)), None)
    missing_to = next((kk for kk in range(k + 1, min(len(E), k + 8)) if _entry_matches(E[kk], words, i, sym)), None)
    if missing_to is not None and (extra_at is None or missing_to - k <= extra_at - i):
        missing = E[k:missing_to]
        return Verdict(False, "word %d: frame(s) missing: expected %s, found %s (expected %d entries later)" % (
            i, "; ".join(entry_text(e, sym) for e in missing), sym.name(words[i]), missing_to - k),
            "missing", i, missing[0][1], above)
    if extra_at is not None:
        extra = words[i:extra_at]
        dup = any(w in words[:i] or w in words[extra_at:extra_at + 1] for w in extra if w not in MARKERS)
        what = "duplicated" if dup else "extra"
        if i >= 2 and extra[0] == above:
            above = words[i - 2]  # the frame above the first copy: where the walk went wrong
        return Verdict(False, "word %d: %s frame(s) %s before expected %s" % (
            i, what, ", ".join(sym.name(w) for w in extra), entry_text(E[k], sym)), what, i, extra[0], above)
    return Verdict(False, "word %d: %s where %s was expected" % (i, sym.name(words[i]), entry_text(E[k], sym)),
                   "wrong", i, words[i], above)
