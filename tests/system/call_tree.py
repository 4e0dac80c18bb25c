"""How relstack's call-tree formats (folded, perf-script, speedscope, html,
pprof) name a frame of `relstack report --format json`: the tests that
read those formats compare them with the JSON through this one rule."""
import os


def frame_names(fr):
    """A JSON frame's functions, outermost first: the frame's own function,
    then the functions inlined into it; a marker, a bad word and an
    unnamed offset as the formats name them."""
    if "marker" in fr:
        return ["[signal]" if fr["marker"] == "SIGNAL" else "[unknown]"]
    if "slot" not in fr:
        return ["[invalid]"]
    if not fr.get("symbol"):
        return ["%s+%s" % (os.path.basename(fr["object"]), fr["offset"])]
    return [fr["symbol"]] + [i["symbol"] for i in reversed(fr["inlined"])]


def exit_unless_recordable(cc, sanitize):
    """Exits 77 (meson's skip), saying why, where the tests cannot build
    and sample a program: no compiler @cc (an argv list), or a sanitizer
    build (@sanitize is not "none"), whose runtime refuses the preloaded
    agent."""
    import shutil
    import sys
    if not shutil.which(cc[0]):
        print(f"SKIP: {cc[0]} is not installed (Debian package gcc): the test program is built at test time")
        sys.exit(77)
    if sanitize != "none":
        print("SKIP: relstack record preloads the agent, which a sanitizer build's runtime refuses")
        sys.exit(77)
