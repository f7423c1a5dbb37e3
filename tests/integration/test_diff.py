#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`mlprof diff BASE NEW` end to end (no root): profiles written by an independent pprof
writer below (gzip and plain), and by mlprof's own encoder (the mkprof test tool).

Checks: the same profile twice is "no change" (also at another duration and scale); a
function whose share grows 10 -> 30 points is named with +20.00 and the other with -20.00;
--threshold 5 exits 1, --threshold 50 exits 0; bad inputs (missing file, not a pprof,
corrupt gzip, different sample types, empty profile, unknown sample type, bad option) print
exactly one line on stderr and exit 2; -o writes a differential flame graph page with the
names and both colours; a memory profile's growing allocation site fails the gate with
--sample-index inuse_space. Python 3 stdlib only.
"""
import gzip
import os
import subprocess
import tempfile
import unittest

MLPROF = os.environ.get("MLPROF", "build/mlprof")
MKPROF = os.environ.get("MKPROF", "build/tests/mkprof")
TMP_ROOT = os.path.abspath(os.environ.get("TEST_TMP", tempfile.gettempdir()))

GROW = "rgb(224,52,40)"
SHRINK = "rgb(44,110,224)"


# ---- a minimal pprof writer (protobuf wire format by hand) ----

def _varint(n):
    n &= (1 << 64) - 1  # int64 negatives as ten-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _int(field, v):
    return _key(field, 0) + _varint(v) if v else b""


def _msg(field, body):
    return _key(field, 2) + _varint(len(body)) + body


def _packed(field, values):
    return _msg(field, b"".join(_varint(v) for v in values)) if values else b""


class Pprof:
    """Stacks of function names (root first) with one value per sample type."""

    def __init__(self, types, duration_ns=0, default_type=None):
        self.strings = [""]
        self.index = {"": 0}
        self.types = [(self.s(t), self.s(u)) for t, u in types]
        self.funcs = {}  # name -> id (a location per function, same id)
        self.samples = []
        self.duration_ns = duration_ns
        self.default_type = self.s(default_type) if default_type else 0

    def s(self, text):
        if text not in self.index:
            self.index[text] = len(self.strings)
            self.strings.append(text)
        return self.index[text]

    def add(self, stack, *values):
        assert len(values) == len(self.types)
        ids = []
        for name in stack.split(";"):
            if name not in self.funcs:
                self.funcs[name] = len(self.funcs) + 1
            ids.append(self.funcs[name])
        self.samples.append((list(reversed(ids)), list(values)))  # leaf first
        return self

    def encode(self):
        out = bytearray()
        for t, u in self.types:
            out += _msg(1, _int(1, t) + _int(2, u))
        for locs, values in self.samples:
            out += _msg(2, _packed(1, locs) + _packed(2, values))
        for name, fid in self.funcs.items():
            line = _int(1, fid) + _int(2, 10)
            out += _msg(4, _int(1, fid) + _int(3, 0x1000 + fid) + _msg(4, line))
        for name, fid in self.funcs.items():
            out += _msg(5, _int(1, fid) + _int(2, self.s(name)) + _int(3, self.s(name)))
        for text in self.strings:
            out += _msg(6, text.encode())
        out += _int(10, self.duration_ns)
        if self.types:
            out += _msg(11, _int(1, self.types[-1][0]) + _int(2, self.types[-1][1]))
        out += _int(14, self.default_type)
        return bytes(out)

    def write(self, path, compress=True):
        data = self.encode()
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if compress else data)
        return path


CPU = [("samples", "count"), ("cpu", "nanoseconds")]
MEM = [("alloc_space", "bytes"), ("inuse_space", "bytes")]
MS = 1_000_000


def cpu_profile(shares, scale=1, duration_ns=10_000_000_000):
    """shares: {stack: samples}; every sample is 10 ms of CPU, times scale."""
    p = Pprof(CPU, duration_ns)
    for stack, n in shares.items():
        p.add(stack, n * scale, n * scale * 10 * MS)
    return p


def run(*args):
    cp = subprocess.run([MLPROF, "diff"] + [str(a) for a in args], capture_output=True,
                        text=True, timeout=60)
    return cp.returncode, cp.stdout, cp.stderr


def rows(stdout):
    """Table rows: function name -> (self change, self base, self new, cum change, cum base,
    cum new); the name starts in the column of the header's "function"."""
    out, col = {}, None
    for line in stdout.splitlines():
        if col is None:
            if line.endswith("  function"):
                col = len(line) - len("function")
            continue
        if not line.strip():
            break
        out[line[col:]] = tuple(line[:col].split()[:6])
    return out


class DiffTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(TMP_ROOT, exist_ok=True)
        cls.dir = tempfile.mkdtemp(dir=TMP_ROOT, prefix="diff-")

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_one_error_line(self, rc, out, err, *needles):
        self.assertEqual(rc, 2, "exit status 2 for bad input (stdout %r, stderr %r)" % (out, err))
        lines = err.splitlines()
        self.assertEqual(len(lines), 1, "exactly one line on stderr: %r" % err)
        self.assertTrue(lines[0].startswith("mlprof: diff: "), lines[0])
        for n in needles:
            self.assertIn(n, lines[0])

    # ---- the comparison ----

    def test_same_profile_twice(self):
        base = cpu_profile({"main;A": 90, "main;B": 10}).write(self.path("same.pb.gz"))
        rc, out, err = run(base, base)
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("no change", out)
        self.assertIn("sample type: cpu (nanoseconds), the last one", out)
        rc, out, err = run("--threshold", "0", base, base)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok: no function's self share grew", out)

    def test_other_duration_and_scale_is_no_change(self):
        base = cpu_profile({"main;A": 90, "main;B": 10}).write(self.path("d10.pb.gz"))
        new = cpu_profile({"main;A": 90, "main;B": 10}, scale=3,
                          duration_ns=30_000_000_000).write(self.path("d30.pprof"), False)
        rc, out, err = run("--threshold", "0.5", base, new)
        self.assertEqual((rc, err), (0, ""), out)
        self.assertIn("no change", out)
        self.assertIn("total: 1.00 s -> 3.00 s (+2.00 s, +200.0%)", out)
        self.assertIn("profiled: 10.00 s -> 30.00 s", out)

    def test_share_grows(self):
        # B: 10% -> 30% of the total (the new profile is also twice as long)
        base = cpu_profile({"main;run;A": 90, "main;run;B": 10}).write(self.path("b.pb.gz"))
        new = cpu_profile({"main;run;A": 140, "main;run;B": 60}).write(
            self.path("n.pprof"), compress=False)
        rc, out, err = run(base, new)
        self.assertEqual((rc, err), (0, ""))
        r = rows(out)
        self.assertEqual(r.get("B"), ("+20.00", "10.00%", "30.00%", "+20.00", "10.00%", "30.00%"),
                         out)
        self.assertEqual(r.get("A"), ("-20.00", "90.00%", "70.00%", "-20.00", "90.00%", "70.00%"),
                         out)
        self.assertNotIn("main", r, "unchanged functions are left out")
        self.assertIn("total: 1.00 s -> 2.00 s (+1.00 s, +100.0%)", out)
        # absolute values in the row: 100 ms -> 600 ms of self time
        self.assertRegex(out, r"100\.00 ms\s+600\.00 ms\s+100\.00 ms\s+600\.00 ms\s+B\n")

        rc, out, err = run("--threshold", "5", base, new)
        self.assertEqual(rc, 1, out)
        self.assertEqual(err, "")
        self.assertRegex(out, r"regression: the self share of 1 function grew by more than "
                              r"5\.00 points: B \+20\.00")
        rc, out, err = run(base, new, "--threshold", "50")
        self.assertEqual(rc, 0, out)
        self.assertIn("ok: no function's self share grew by more than 50.00 points "
                      "(largest growth: B +20.00)", out)
        # the cumulative gate: run stays at 100%
        rc, out, err = run("--cum", "--threshold", "19.9", base, new)
        self.assertEqual(rc, 1, out)
        self.assertIn("cumulative share change", out)

    def test_top_and_order(self):
        base = cpu_profile({"main;A": 50, "main;B": 30, "main;C": 20}).write(self.path("t1.pb.gz"))
        new = cpu_profile({"main;A": 20, "main;B": 35, "main;C": 20, "main;D;E": 25}).write(
            self.path("t2.pb.gz"))
        rc, out, err = run("--top", "2", base, new)
        self.assertEqual(rc, 0, err)
        self.assertEqual(list(rows(out)), ["A", "E"], out)
        self.assertIn("Top 2 of 4 functions that changed, by self share change", out)
        rc, out, err = run("--cum", "--top", "0", base, new)
        self.assertEqual(list(rows(out)), ["A", "E", "D", "B"], out)  # ties: by self change
        self.assertEqual(rows(out)["D"][:3], ("0.00", "-", "0.00%"), "D only in new")

    def test_flame_graph(self):
        base = cpu_profile({"main;run;A": 90, "main;run;B": 10}).write(self.path("fb.pb.gz"))
        new = cpu_profile({"main;run;A": 70, "main;run;B": 30}).write(self.path("fn.pb.gz"))
        html = self.path("diff.html")
        rc, out, err = run(base, new, "-o", html)
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("differential flame graph: " + html, out)
        with open(html) as f:
            page = f.read()
        self.assertTrue(page.startswith("<!DOCTYPE html>"))
        self.assertIn('"name":"A"', page)
        self.assertIn('"name":"B"', page)
        self.assertIn('"name":"run"', page)
        self.assertIn(GROW, page)
        self.assertIn(SHRINK, page)
        self.assertIn('"d":20.0000', page)  # B grew 20 points
        self.assertIn('"d":-20.0000', page)
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp." in f], [])
        rc, out, err = run(base, new, "-o", self.path("diff.svg"))
        self.assert_one_error_line(rc, out, err, "HTML")
        rc, out, err = run(base, new, "-o", self.path("no/such/dir.html"))
        self.assert_one_error_line(rc, out, err, "cannot write", "No such file")
        self.assertEqual(out, "", "no report when the page cannot be written")

    def test_memory_profile(self):
        def mem(grow_mib):
            p = Pprof(MEM)
            p.add("main;train;load_batch", 400 << 20, 90 << 20)
            p.add("main;train;cache_activations", (grow_mib * 4) << 20, grow_mib << 20)
            return p
        base = mem(10).write(self.path("base.mem.pb.gz"))  # 10% of in-use
        new = mem(60).write(self.path("new.mem.pb.gz"))  # 40% of in-use
        rc, out, err = run("--sample-index", "inuse_space", "--threshold", "5", base, new)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("sample type: inuse_space (bytes), from --sample-index inuse_space", out)
        self.assertIn("regression: the self share of 1 function grew by more than 5.00 "
                      "points: cache_activations +30.00", out)
        self.assertRegex(out, r"10\.00 MiB\s+60\.00 MiB\s+10\.00 MiB\s+60\.00 MiB\s+"
                              r"cache_activations")
        self.assertIn("total: 100.00 MiB -> 150.00 MiB (+50.00 MiB, +50.0%)", out)
        # the default is the last sample type, inuse_space, as pprof does for heap profiles
        rc, out, err = run("--threshold", "5", base, new)
        self.assertEqual(rc, 1, out)
        self.assertIn("sample type: inuse_space (bytes), the last one", out)
        # pprof's single-dash spelling
        rc, out, err = run("-sample_index=inuse_space", "-threshold", "5", base, new)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("from --sample-index inuse_space", out)
        # alloc_space grew by the same share here (by index too)
        rc, out, err = run("--sample-index", "0", "--threshold", "50", base, new)
        self.assertEqual(rc, 0, out)
        self.assertIn("alloc_space (bytes)", out)

    def test_default_sample_type(self):
        p = Pprof(MEM, default_type="alloc_space")
        p.add("main;f", 100, 10)
        path = p.write(self.path("def.pb.gz"))
        rc, out, err = run(path, path)
        self.assertEqual(rc, 0, err)
        self.assertIn("sample type: alloc_space (bytes), the profile's default", out)

    def test_our_own_pprof(self):
        ours = self.path("ours.pb.gz")
        subprocess.run([MKPROF, ours], check=True, capture_output=True)
        rc, out, err = run("--threshold", "1", ours, ours)
        self.assertEqual((rc, err), (0, ""), out)
        self.assertIn("no change", out)
        self.assertIn("sample type: cpu (nanoseconds)", out)

    # ---- bad input: one line, exit 2 ----

    def test_missing_file(self):
        good = cpu_profile({"main": 1}).write(self.path("good.pb.gz"))
        rc, out, err = run(self.path("missing.pb.gz"), good)
        self.assert_one_error_line(rc, out, err, "missing.pb.gz", "No such file")
        self.assertEqual(out, "")

    def test_not_a_pprof(self):
        good = cpu_profile({"main": 1}).write(self.path("good2.pb.gz"))
        text = self.path("notes.txt")
        with open(text, "w") as f:
            f.write("this is not a profile\n")
        rc, out, err = run(good, text)
        self.assert_one_error_line(rc, out, err, "notes.txt", "not a pprof profile")
        bad_gz = self.path("bad.pb.gz")
        with open(bad_gz, "wb") as f:
            f.write(gzip.compress(b"x" * 100)[:30])
        rc, out, err = run(bad_gz, good)
        self.assert_one_error_line(rc, out, err, "bad.pb.gz", "not a pprof profile")
        rc, out, err = run(self.dir, good)
        self.assert_one_error_line(rc, out, err, "Is a directory")

    def test_different_sample_types(self):
        cpu = cpu_profile({"main": 1}).write(self.path("cpu.pb.gz"))
        mem = Pprof(MEM).add("main", 1, 1).write(self.path("mem.pb.gz"))
        rc, out, err = run(cpu, mem)
        self.assert_one_error_line(rc, out, err, "different sample types", "cpu (nanoseconds)",
                                   "inuse_space (bytes)")
        rc, out, err = run("--sample-index", "inuse_space", mem, cpu)
        self.assert_one_error_line(rc, out, err, "no sample type 'inuse_space'",
                                   "samples, cpu")
        rc, out, err = run("--sample-index", "7", mem, mem)
        self.assert_one_error_line(rc, out, err, "out of range")

    def test_empty_profile(self):
        good = cpu_profile({"main": 1}).write(self.path("good3.pb.gz"))
        empty = Pprof(CPU).write(self.path("empty.pb.gz"))
        rc, out, err = run(good, empty)
        self.assert_one_error_line(rc, out, err, "empty.pb.gz", "empty profile")
        zero = self.path("zero.pb.gz")
        open(zero, "wb").close()
        rc, out, err = run(zero, good)
        self.assert_one_error_line(rc, out, err, "zero.pb.gz")

    def test_usage(self):
        rc, out, err = run("--help")
        self.assertEqual(rc, 0)
        self.assertIn("Usage: mlprof diff", out)
        self.assertIn("--sample-index", out)
        for args in (["only-one.pb.gz"], ["--top", "x", "a", "b"], ["--threshold", "-1", "a", "b"],
                     ["--bogus", "a", "b"]):
            rc, out, err = run(*args)
            self.assert_one_error_line(rc, out, err)
        cp = subprocess.run([MLPROF, "--help"], capture_output=True, text=True)
        self.assertIn("diff", cp.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
