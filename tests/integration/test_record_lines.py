# SPDX-License-Identifier: Apache-2.0
"""Source lines of native frames (DWARF, libdw): mlprof record on tests/dwarf/lines_prog.c
built with -O2 -g. Leaf samples in leaf_lines carry its file, its first line and lines
inside it; the caller's frames carry the call's line (the lines come from the marker comments
of the source); `go tool pprof -list leaf_lines` shows the source with counts on the loop.
Exit 77 (skipped) when not root."""
import os
import re
import shutil
import subprocess
import unittest

import pprof_reader
from itutil import need_root, record, tmpdir

DW_DIR = os.environ.get("DW_DIR", "build/tests/dwarf")
SRC = os.path.join(os.environ.get("TEST_SRC_DIR", "tests"), "dwarf", "lines_prog.c")


def marker(what):
    with open(SRC, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if "MARK %s */" % what in line:
                return n
    raise AssertionError("no marker %r in %s" % (what, SRC))


class RecordLines(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def test_lines(self):
        pb = os.path.join(self.dir, "lines.pb.gz")
        _, js = record(["-F", "499", "-q", "-o", pb], [os.path.join(DW_DIR, "lines_prog"), "3"])
        self.assertEqual(len(js), 1)
        prof = pprof_reader.load(pb)
        lb, le, hot = marker("leaf_lines begin"), marker("leaf_lines end"), marker("leaf_lines hot")
        call = marker("mid_lines call")
        leaf = inside = at_call = with_mid = 0
        bad = []
        for frames, values, labels in prof.detailed_stacks():
            if labels.get("process_name") != "lines_prog" or frames[0]["name"] != "leaf_lines":
                continue
            v = values[0]
            leaf += v
            f = frames[0]
            if f["file"] == os.path.realpath(SRC) or f["file"].endswith("/dwarf/lines_prog.c"):
                if lb < f["line"] < le and f["start_line"] == lb + 1:
                    inside += v
                elif len(bad) < 3:
                    bad.append(f)
            elif len(bad) < 3:
                bad.append(f)
            if len(frames) > 1 and frames[1]["name"] == "mid_lines":
                with_mid += v
                at_call += v if frames[1]["line"] == call else 0
        self.assertGreater(leaf, 300, "too few leaf samples")
        self.assertGreaterEqual(inside / leaf, 0.99, "leaf lines in %d-%d: %d/%d, e.g. %s" % (
            lb, le, inside, leaf, bad))
        self.assertGreaterEqual(at_call / with_mid, 0.99, "mid_lines at line %d: %d/%d" % (
            call, at_call, with_mid))
        # pprof's own view of it.
        go = shutil.which("go") or "/usr/local/go/bin/go"
        if not os.path.exists(go):
            self.skipTest("go not installed")
        out = subprocess.run([go, "tool", "pprof", "-list", "^leaf_lines$",
                              "-sample_index=samples", "-symbolize=none", pb],
                             capture_output=True, text=True, timeout=120,
                             cwd="/")  # pprof trims source paths by the working directory
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("ROUTINE", out.stdout)
        self.assertIn("lines_prog.c", out.stdout)
        counted = {}
        for line in out.stdout.splitlines():
            m = re.match(r"\s*(\S+)\s+(\S+)\s+(\d+):", line)
            if m and m.group(1) != ".":
                counted[int(m.group(3))] = line
        self.assertTrue(counted, out.stdout)
        self.assertTrue(all(lb < n < le for n in counted), out.stdout)
        self.assertTrue(any("MARK leaf_lines hot" in s or n in (hot, hot + 1)
                            for n, s in counted.items()), out.stdout)


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
