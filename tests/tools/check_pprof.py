#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Cross-checks mlprof's pprof encoder with Go's pprof: stacks, counts, labels, metadata.
"""usage: check_pprof.py MKPROF OUTDIR

Runs MKPROF to write a known profile (pprof, svg, html, folded) into OUTDIR, then
`go tool pprof -raw -symbolize=none` on the pprof file, and compares every sample's
function-name stack and values with what MKPROF says it added. Exits 77 (ctest skip)
when `go` is not installed.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

SKIP = 77


def fail(msg):
    print("check_pprof: FAIL: " + msg)
    sys.exit(1)


def parse_raw(text):
    """Returns (samples [(values, [loc ids leaf first], [labels])], {loc id: name})."""
    samples, locs = [], {}
    section = None
    for line in text.splitlines():
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            section = "mappings"
            continue
        if section == "samples":
            m = re.match(r"^\s+(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$", line)
            if m:
                vals = [int(v) for v in m.group(1).split()]
                ids = [int(i) for i in m.group(2).split()]
                samples.append((vals, ids, []))
                continue
            m = re.match(r"^\s+(\S+:\[.*\])\s*$", line)
            if m and samples:
                samples[-1][2].append(m.group(1))
        elif section == "locations":
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+(?: M=\d+)? (.*) (\S*):(-?\d+):(-?\d+) s=\d+$",
                         line)
            if m:
                locs[int(m.group(1))] = m.group(2)
                continue
            m = re.match(r"^\s*(\d+): 0x[0-9a-f]+(?: M=\d+)?\s*$", line)
            if m:
                locs[int(m.group(1))] = "?"
    return samples, locs


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    mkprof, outdir = sys.argv[1], sys.argv[2]
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    os.makedirs(outdir, exist_ok=True)
    files = {ext: os.path.join(outdir, "known" + ext)
             for ext in (".pb.gz", ".svg", ".html", ".folded")}
    run = subprocess.run([mkprof] + list(files.values()), capture_output=True, text=True)
    if run.returncode != 0:
        fail("mkprof failed: " + run.stderr)

    expected = collections.Counter()
    for line in run.stdout.splitlines():
        count, stack = line.split("\t", 1)
        expected[(int(count), tuple(stack.split(";")))] += 1

    # the other formats were written too and are well formed
    xml.dom.minidom.parse(files[".svg"])
    with open(files[".html"], encoding="utf-8") as f:
        html = f.read()
    if 'id="fg-data"' not in html or not html.rstrip().endswith("</html>"):
        fail("html output incomplete")
    with open(files[".folded"], encoding="utf-8") as f:
        folded = f.read()
    if not folded.endswith("\n") or len(folded.splitlines()) != 4:
        fail("folded output: %r" % folded)

    if not go:
        print("check_pprof: SKIP: go not installed (other formats checked)")
        return SKIP
    env = dict(os.environ, GOTOOLCHAIN="local", GOPROXY="off", GOFLAGS="")
    if "HOME" not in env:
        env["HOME"] = outdir
    env.setdefault("GOCACHE", os.path.join(env["HOME"], ".cache", "go-build"))
    raw = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-raw", files[".pb.gz"]],
                         capture_output=True, text=True, env=env)
    if raw.returncode != 0:
        fail("go tool pprof failed: " + raw.stderr)
    text = raw.stdout
    for needle in ("PeriodType: cpu nanoseconds", "Period: 10000000", "Duration: 10s",
                   "samples/count cpu/nanoseconds", "thread_name:[dataloader]",
                   "bytes:[4096 bytes]", "thread_name:[main]",
                   "/usr/bin/trainer 0123456789abcdef",
                   "libtorch_cpu.so feedfacecafe"):
        if needle not in text:
            fail("missing %r in pprof -raw output:\n%s" % (needle, text))

    samples, locs = parse_raw(text)
    got = collections.Counter()
    for vals, ids, _ in samples:
        if len(vals) != 2 or vals[1] != vals[0] * 10000000:
            fail("bad values %r" % vals)
        try:
            names = tuple(locs[i] for i in reversed(ids))
        except KeyError as e:
            fail("sample references unknown location %s" % e)
        got[(vals[0], names)] += 1
    if got != expected:
        fail("stacks differ\nexpected: %s\ngot:      %s\nraw:\n%s" %
             (sorted(expected.items()), sorted(got.items()), text))
    print("check_pprof: OK: %d samples, %d locations match go tool pprof" %
          (len(samples), len(locs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
