# SPDX-License-Identifier: Apache-2.0
"""mlprof record on code without unwind info: Go programs (stripped, unstripped, cgo-linked)
unwound by frame pointer and named from .gopclntab with file:line, and a C program built
without unwind tables. Go cases skip (77) when the Go toolchain was not there to build them."""
import os
import re
import unittest

from itutil import main_chain_ok, need_root, record, stacks_of, tmpdir
import pprof_reader

GO_DIR = os.environ.get("GO_FIXTURE_DIR", "build/tests/go")
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "go", "spin.go")
FREQ = "499"
GO_CHAIN = ["main.leafSpin", "main.middle", "main.outer", "main.main", "runtime.main",
            "runtime.goexit"]
SUMMARY = re.compile(r"code without unwind info: (\d+) frames recovered by frame pointer "
                     r"\((\d+) placed by Go stack deltas\), \d+ by a return address found on "
                     r"the stack \(\d+ where the last scan from the same pc had found it\); "
                     r"chains stopped at (\d+) bad frame "
                     r"pointers, (\d+) beyond the stack copy")


def source_lines():
    """Lines of spin.go: leafSpin's extent and the line where middle calls it."""
    with open(SRC, encoding="utf-8") as f:
        lines = f.read().splitlines()
    first = next(i for i, l in enumerate(lines, 1) if l.startswith("func leafSpin("))
    last = next(i for i, l in enumerate(lines, 1) if i > first and l == "}")
    call = next(i for i, l in enumerate(lines, 1) if "x = leafSpin(" in l)
    return first, last, call


class RecordGo(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def record_go(self, exe):
        path = os.path.join(GO_DIR, exe)
        if not os.path.exists(path):
            self.skipTest("%s not built: go not installed when the tests were built" % path)
        pb = os.path.join(self.dir, exe + ".pb.gz")
        cp, _ = record(["-F", FREQ, "-o", pb], [path, "4"])
        return cp, pb

    def check_go(self, exe):
        cp, pb = self.record_go(exe)
        first, last, call = source_lines()
        prof = pprof_reader.load(pb)
        leaf = full = lined = 0
        bad = []
        for frames, values, labels in prof.detailed_stacks():
            if labels.get("process_name") != exe:
                continue
            names = [f["name"] for f in frames]
            if "main.leafSpin" not in names:
                continue
            leaf += values[0]
            i = names.index("main.leafSpin")
            if names[i:] == GO_CHAIN:
                full += values[0]
            else:
                bad.append(names)
            lf, mid = frames[i], frames[i + 1] if i + 1 < len(frames) else {}
            if (lf["file"].endswith("/tests/go/spin.go") and first <= lf["line"] <= last
                    and lf["start_line"] == first and mid.get("line") == call):
                lined += values[0]
        self.assertGreater(leaf, 50, "too few samples in main.leafSpin: %s" % cp.stderr)
        self.assertGreaterEqual(full / leaf, 0.95, "%s: full chains %d/%d, e.g. %s"
                                % (exe, full, leaf, bad[:3]))
        self.assertGreaterEqual(lined / leaf, 0.95, "%s: spin.go lines %d/%d"
                                % (exe, lined, leaf))
        m = SUMMARY.search(cp.stderr)
        self.assertIsNotNone(m, cp.stderr)
        recovered, go_frames = int(m.group(1)), int(m.group(2))
        # at least main.middle .. runtime.goexit of every leaf sample came by frame pointer,
        # and the frameless leaf's caller by its stack delta
        self.assertGreaterEqual(recovered, 5 * full)
        self.assertGreaterEqual(go_frames, full)

    def test_stripped(self):
        self.check_go("spin_stripped")

    def test_unstripped(self):
        self.check_go("spin_full")

    def test_cgo_linked(self):
        self.check_go("spin_cgo")

    def check_c_chain(self, name, chain):
        """Records the C workload name for 4 s: >= 95% of the samples in chain[0] have the
        whole chain (leaf first) down to main and libc's start code. Returns (ok, stderr)."""
        pb = os.path.join(self.dir, name + ".pb.gz")
        cp, _ = record(["-F", FREQ, "-o", pb], [os.path.join(GO_DIR, name), "4"])
        _, stacks = stacks_of(pb, name)
        grp = [(n, v) for n, v, _ in stacks if chain[0] in n]
        tot = sum(v for _, v in grp)
        self.assertGreater(tot, 50, cp.stderr)
        ok = sum(v for n, v in grp if main_chain_ok(n, chain))
        bad = [n for n, v in grp if not main_chain_ok(n, chain)]
        self.assertGreaterEqual(ok / tot, 0.95, "%d/%d full chains, e.g. %s" % (ok, tot, bad[:3]))
        return ok, cp.stderr

    def test_c_without_unwind_tables(self):
        # frame pointers through our code, then CFI again from libc's start code to _start
        ok, err = self.check_c_chain("nocfi_workload",
                                     ["nocfi_leaf", "nocfi_mid", "nocfi_outer", "main"])
        m = SUMMARY.search(err)
        self.assertIsNotNone(m, err)
        self.assertGreaterEqual(int(m.group(1)), 3 * ok)
        self.assertEqual(int(m.group(2)), 0, "no Go code here")

    def test_kernel_with_a_big_aligned_frame(self):
        """OpenBLAS's GEMM kernels: no CFI, no frame pointer, ~29 KiB of stack aligned to 4
        KiB: the scan for the return address reaches past it (2 KiB did not: 23% of numpy
        matmul samples complete), skips the stale return addresses a deep recursion left
        there, and the callers' chain is whole."""
        self.check_c_chain("bigframe", ["bigframe_kernel", "bf_mid", "bf_outer", "main"])

if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
