# SPDX-License-Identifier: Apache-2.0
"""mlprof record on -O2 -fomit-frame-pointer workloads: full chains, shares, threads,
recursion, PIE + shared library, non-PIE, short-lived processes, go tool pprof cross-check."""
import os
import shutil
import subprocess
import unittest

from itutil import (WL_DIR, main_chain_ok, need_root, record, stacks_of,
                    thread_chain_ok, tmpdir)

FREQ = "499"


class RecordChains(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def out(self, name):
        return os.path.join(self.dir, name)

    def check_split(self, exe):
        pb = self.out(exe + ".pb.gz")
        _, js = record(["-F", FREQ, "-q", "-o", pb, "-o", self.out(exe + ".html")],
                       [os.path.join(WL_DIR, exe), "split", "4", "25"])
        measured = js[0]
        prof, stacks = stacks_of(pb, exe)
        total = sum(v for _, v, _ in stacks)
        self.assertGreater(total, 500, "too few samples")
        ok = sum(v for names, v, _ in stacks
                 if main_chain_ok(names, ["leaf_a", "phase_a", "run_split", "main"])
                 or main_chain_ok(names, ["leaf_b", "phase_b", "run_split", "main"]))
        a = sum(v for names, v, _ in stacks if names and "leaf_a" in names)
        b = sum(v for names, v, _ in stacks if names and "leaf_b" in names)
        in_leaves = a + b
        self.assertGreaterEqual(in_leaves / total, 0.95,
                                "most samples should be in the leaves: %d/%d" % (in_leaves, total))
        bad = [names for names, v, _ in stacks
               if ("leaf_a" in names or "leaf_b" in names) and not (
                   main_chain_ok(names, ["leaf_a", "phase_a", "run_split", "main"])
                   or main_chain_ok(names, ["leaf_b", "phase_b", "run_split", "main"]))]
        self.assertGreaterEqual(ok / in_leaves, 0.99,
                                "full chains %d/%d; e.g. %s" % (ok, in_leaves, bad[:3]))
        want = measured["leaf_a"] / (measured["leaf_a"] + measured["leaf_b"])
        got = a / in_leaves
        self.assertLess(abs(got - want), 0.04, "leaf_a share %.3f vs measured %.3f" % (got, want))
        # Profile metadata.
        self.assertEqual(prof.type_names(), [("samples", "count"), ("cpu", "nanoseconds")])
        self.assertEqual(prof.period, 1000000000 // int(FREQ))
        self.assertGreater(prof.duration_nanos, 3_000_000_000)
        self.assertGreater(prof.time_nanos, 1_600_000_000 * 10**9)
        for s in prof.samples:
            self.assertEqual(s["values"][1], s["values"][0] * prof.period)
        html = open(self.out(exe + ".html"), encoding="utf-8").read()
        self.assertIn("leaf_a", html)
        self.assertIn("run_split", html)
        return pb, stacks

    def test_split_pie(self):
        pb, stacks = self.check_split("wl_pie")
        # Labels: pid/tid numeric, names as strings.
        labels = stacks[0][2]
        self.assertIsInstance(labels["pid"], int)
        self.assertEqual(labels["process_name"], "wl_pie")
        # Independent reader: go tool pprof must show the same functions and counts.
        go = shutil.which("go") or "/usr/local/go/bin/go"
        if not os.path.exists(go):
            self.skipTest("go not installed")
        top = subprocess.run([go, "tool", "pprof", "-top", "-sample_index=samples",
                              "-symbolize=none", "-nodecount=1000", pb],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(top.returncode, 0, top.stderr)
        flat = {}
        for line in top.stdout.splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[1].endswith("%"):
                flat[parts[5]] = int(float(parts[0]))
        ours_a = sum(v for names, v, _ in stacks if names[0] == "leaf_a")
        prof, all_stacks = stacks_of(pb)
        ours_a = sum(v for names, v, _ in all_stacks if names[0] == "leaf_a")
        self.assertEqual(flat.get("leaf_a"), ours_a, top.stdout[:2000])

    def test_split_nopie(self):
        self.check_split("wl_nopie")

    def test_threads(self):
        pb = self.out("threads.pb.gz")
        _, js = record(["-F", FREQ, "-q", "-o", pb], [os.path.join(WL_DIR, "wl_pie"), "threads", "3"])
        _, stacks = stacks_of(pb, "wl_pie")
        ta = [(n, v, l) for n, v, l in stacks if "leaf_ta" in n]
        tb = [(n, v, l) for n, v, l in stacks if "leaf_tb" in n]
        self.assertGreater(sum(v for _, v, _ in ta), 200)
        self.assertGreater(sum(v for _, v, _ in tb), 200)
        for group, chain, tname in ((ta, ["leaf_ta", "work_a", "thread_loop", "thread_a"], "wl-thread-a"),
                                    (tb, ["leaf_tb", "work_b", "thread_loop", "thread_b"], "wl-thread-b")):
            tot = sum(v for _, v, _ in group)
            ok = sum(v for n, v, _ in group if thread_chain_ok(n, chain))
            bad = [n for n, v, _ in group if not thread_chain_ok(n, chain)]
            self.assertGreaterEqual(ok / tot, 0.99, "%s: %d/%d e.g. %s" % (chain[0], ok, tot, bad[:2]))
            self.assertTrue(all(l["thread_name"] == tname for _, _, l in group))
            self.assertTrue(all(l["tid"] != l["pid"] for _, _, l in group))

    def test_deep_recursion(self):
        pb = self.out("recurse.pb.gz")
        record(["-F", FREQ, "-q", "-o", pb], [os.path.join(WL_DIR, "wl_pie"), "recurse", "3", "80"])
        _, stacks = stacks_of(pb, "wl_pie")
        chain = ["leaf_deep"] + ["recurse"] * 81 + ["run_recurse", "main"]
        grp = [(n, v) for n, v, _ in stacks if "leaf_deep" in n]
        tot = sum(v for _, v in grp)
        self.assertGreater(tot, 500)
        ok = sum(v for n, v in grp if main_chain_ok(n, chain))
        self.assertGreaterEqual(ok / tot, 0.99, "%d/%d full 84+ frame chains" % (ok, tot))

    def test_shared_library(self):
        pb = self.out("lib.pb.gz")
        record(["-F", FREQ, "-q", "-o", pb], [os.path.join(WL_DIR, "wl_pie"), "lib", "3"])
        prof, stacks = stacks_of(pb, "wl_pie")
        chain = ["lib_leaf", "lib_work", "run_lib", "main"]
        grp = [(n, v) for n, v, _ in stacks if "lib_leaf" in n]
        tot = sum(v for _, v in grp)
        self.assertGreater(tot, 500)
        ok = sum(v for n, v in grp if main_chain_ok(n, chain))
        self.assertGreaterEqual(ok / tot, 0.99)
        # The library frames carry a mapping with the .so's path and build id.
        files = {prof.strings[m["file"]]: prof.strings[m["build_id"]] for m in prof.mappings.values()}
        lib = [f for f in files if f.endswith("/libwl.so")]
        self.assertEqual(len(lib), 1, files)
        self.assertRegex(files[lib[0]], "^[0-9a-f]{40}$")

    def test_short_lived_children(self):
        """Processes forked by the command, exiting before the profile is written, still get
        full symbols (follow-children filter + process cache kept after exit)."""
        pb = self.out("short.pb.gz")
        wl = os.path.join(WL_DIR, "wl_pie")
        script = "for i in 1 2 3 4 5; do %s split 0.25 50 >/dev/null; done; true" % wl
        record(["-F", FREQ, "-q", "-o", pb], ["sh", "-c", script])
        _, stacks = stacks_of(pb, "wl_pie")
        pids = {l["pid"] for _, _, l in stacks}
        self.assertGreaterEqual(len(pids), 4, "children seen: %s" % pids)
        tot = sum(v for _, v, _ in stacks)
        named = sum(v for n, v, _ in stacks if "leaf_a" in n or "leaf_b" in n)
        self.assertGreater(tot, 100)
        self.assertGreaterEqual(named / tot, 0.9)

    def test_folded_and_svg(self):
        folded, svg = self.out("x.folded"), self.out("x.svg")
        record(["-F", FREQ, "-q", "-o", folded, "-o", svg], [os.path.join(WL_DIR, "wl_pie"), "split", "1", "50"])
        lines = open(folded).read().splitlines()
        self.assertTrue(any(";main;run_split;phase_a;leaf_a " in l for l in lines), lines[:5])
        s = open(svg).read()
        self.assertTrue(s.lstrip().startswith("<?xml") or s.lstrip().startswith("<svg"))
        self.assertIn("leaf_b", s)


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
