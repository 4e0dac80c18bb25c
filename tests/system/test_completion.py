#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The bash completion offers what the command takes: each command's
options are those its --help lists, and every --format value it completes
is one the command accepts.

Usage: test_completion.py RELSTACK COMPLETION DEMO PLUGIN
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

RELSTACK, COMPLETION, DEMO, PLUGIN = sys.argv[1:5]
del sys.argv[1:5]


def complete(*words):
    """What the completion offers after `relstack WORDS`, the last word being completed."""
    script = ('source "$1"; shift; COMP_WORDS=(relstack "$@"); COMP_CWORD=$#; _relstack; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "bash", COMPLETION, *words], capture_output=True, text=True,
                       check=True, timeout=60)
    return sorted(w for w in p.stdout.split("\n") if w)


class Completion(unittest.TestCase):
    def test_commands_are_completed(self):
        self.assertEqual(complete("re"), ["record", "report"])
        # every command the help lists, no other
        helped = re.findall(r"^  ([a-z]+) ", subprocess.run([RELSTACK, "--help"], capture_output=True, text=True,
                                                              timeout=60).stdout, re.M)
        self.assertIn("ps", helped)
        self.assertEqual([w for w in complete("") if not w.startswith("-")], sorted(helped))
        self.assertEqual(complete("kernel", ""), ["clean", "import", "record", "symbols"])

    def test_each_commands_options_are_those_its_help_lists(self):
        for cmd in ("info", "dump", "report", "record"):
            helped = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)",
                                    subprocess.run([RELSTACK, cmd, "--help"], capture_output=True, text=True,
                                                   timeout=60).stdout))
            offered = set(complete(cmd, "--")) - {"--help"}
            self.assertEqual(offered, helped, cmd)

    def test_every_completed_format_is_accepted_by_report_and_info_gets_its_two(self):
        tmp = tempfile.mkdtemp(prefix="relstack-completion-")
        try:
            path = os.path.join(tmp, "demo.rsb")
            env = dict(os.environ)
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":handle_segv=0:handle_abort=0"
            p = subprocess.run([DEMO, path, PLUGIN], capture_output=True, timeout=60, env=env)
            self.assertEqual(p.returncode, -signal.SIGSEGV)
            formats = complete("report", "--format", "")
            self.assertIn("pprof", formats)
            for fmt in formats:
                p = subprocess.run([RELSTACK, "report", "--format", fmt, path], capture_output=True, timeout=120)
                self.assertEqual(p.returncode, 0, (fmt, p.stderr))
            self.assertEqual(complete("info", "--format", ""), ["json", "text"])
            self.assertEqual(complete("report", "--format", "s"), ["speedscope"])
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main(verbosity=2)
