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
