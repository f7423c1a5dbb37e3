# SPDX-License-Identifier: Apache-2.0
"""A C program embedding the system's libpython: Python frames sit where the eval loop ran,
between the host's native frames, in order, down to _start."""
import os
import unittest

import pprof_reader
from itutil import LIBC_START, WL_DIR, need_root, record, tmpdir

EXE = os.path.join(WL_DIR, "py_embed")
SECS = "3"
FREQ = "499"
EVAL = ("_PyEval_EvalFrameDefault", "_PyEval_EvalFrame")
HOST_BASE = ["run_python", "host_main", "main"]


def sample_frames(path, process_name):
    """(frames leaf first, count) per sample of process_name (a name, or a function of the
    name); each frame is a pprof_reader.frame_details dict plus 'mapping': the mapped file's
    path, "" for a frame with no mapping (a Python frame)."""
    keep = process_name if callable(process_name) else lambda n: n == process_name
    prof = pprof_reader.load(path)
    out = []
    for s in prof.samples:
        if not keep(s["labels"].get("process_name", "")):
            continue
        frames = []
        for lid in s["locs"]:
            m = prof.mappings.get(prof.locations[lid]["mapping"])
            mapping = prof.strings[m["file"]] if m else ""
            frames += [dict(f, mapping=mapping) for f in prof.frame_details(lid)]
        out.append((frames, s["values"][0]))
    return out


def is_python(f):
    return not f["mapping"] and f["file"] != ""


def in_lib(f, prefix):
    return os.path.basename(f["mapping"]).startswith(prefix)


def chain_problem(frames, python_groups, bridge):
    """None when frames (leaf first) are: native frames, then the groups of Python frames
    in python_groups (leaf first; each group contiguous), separated by native frames of
    libpython with `bridge` among them (when given), then libpython frames, the host's
    run_python, host_main, main, libc's start code and _start. Otherwise what is wrong."""
    names = [f["name"] for f in frames]
    if any(n.startswith("[truncated") for n in names):
        return "truncated"
    if any(n in EVAL for n in names):
        return "eval-loop frame left in place"
    py = [i for i, f in enumerate(frames) if is_python(f)]
    want = [n for g in python_groups for n in g]
    if [names[i] for i in py] != want:
        return "python frames %s" % [names[i] for i in py]
    pos = py[0]
    for gi, group in enumerate(python_groups):
        if names[pos:pos + len(group)] != group:
            return "group %s not contiguous" % group
        pos += len(group)
        if gi + 1 == len(python_groups):
            break
        nxt = py[py.index(pos - 1) + 1]
        between = frames[pos:nxt]
        if not between:
            return "no native frames between %s and %s" % (group[-1], python_groups[gi + 1][0])
        if bridge and [f["name"] for f in between].count(bridge) != 1:
            return "%s not between the groups: %s" % (bridge, [f["name"] for f in between])
        if not all(in_lib(f, "libpython3") or f["name"] == bridge for f in between):
            return "foreign frames between groups: %s" % [f["name"] for f in between]
        pos = nxt
    rest = frames[pos:]
    k = 0
    while k < len(rest) and in_lib(rest[k], "libpython3"):
        k += 1
    if k == 0:
        return "no libpython frame below <module>"
    tail = [f["name"] for f in rest[k:]]
    base = len(HOST_BASE)
    if tail[:base] != HOST_BASE or not tail[base:] or tail[-1] != "_start" or \
            not all(n in LIBC_START for n in tail[base:-1]):
        return "host frames %s" % tail
    return None


class PythonEmbed(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def check(self, mode, python_groups, bridge):
        pb = os.path.join(self.dir, mode + ".pb.gz")
        _, js = record(["-F", FREQ, "-q", "-o", pb], [EXE, mode, SECS])
        self.assertEqual(len(js), 1, "workload output %s" % js)
        info = js[0]
        everything = sample_frames(pb, "py_embed")
        # Startup (the dynamic loader, Py_Initialize) costs a fixed ~50 ms of CPU, a share
        # that grows on a loaded machine: judge the samples taken while run_python ran, and
        # check separately that these are nearly all of them.
        samples = [(f, v) for f, v in everything if any(x["name"] == "run_python" for x in f)]
        total = sum(v for _, v in samples)
        self.assertGreater(total, 250, "too few samples")
        self.assertGreaterEqual(total / sum(v for _, v in everything), 0.9,
                                "samples under run_python")
        good, bad, chains = 0, {}, []
        for frames, v in samples:
            why = chain_problem(frames, python_groups, bridge)
            if why is None:
                good += v
                chains.append((frames, v))
            else:
                key = (why, tuple(f["name"] for f in frames))
                bad[key] = bad.get(key, 0) + v
        worst = sorted(bad.items(), key=lambda kv: -kv[1])[:4]
        print("%s: exact chain in %d/%d samples under run_python (%.1f%%), %d in all" %
              (mode, good, total, 100.0 * good / total, sum(v for _, v in everything)))
        self.assertGreaterEqual(good / total, 0.95, "%s: exact chain in %d/%d; others: %s" %
                                (mode, good, total, worst))
        # Function and line data of the Python frames.
        hot_lines = {}
        for frames, v in chains:
            for f in frames:
                if not is_python(f):
                    continue
                self.assertEqual(f["file"], info["file"], f)
                if f["name"] == "<module>":
                    self.assertEqual(f["start_line"], 1, f)
                elif f["name"] in info["first"]:
                    self.assertEqual(f["start_line"], info["first"][f["name"]], f)
                if f["name"] == "Embedded.hot":
                    hot_lines[f["line"]] = hot_lines.get(f["line"], 0) + v
        in_body = sum(v for ln, v in hot_lines.items() if ln in info["hot_body"])
        self.assertGreaterEqual(in_body / sum(hot_lines.values()), 0.99,
                                "Embedded.hot lines %s, body %s" % (hot_lines, info["hot_body"]))

    def test_simple(self):
        self.check("simple", [["Embedded.hot", "Embedded.middle", "Embedded.outer", "<module>"]],
                   None)

    def test_callback(self):
        # Embedded.outer -> host.call (C, in the host binary) -> Embedded.middle: two eval-loop
        # activations, each replaced by its own Python frames.
        self.check("callback", [["Embedded.hot", "Embedded.middle"],
                                ["Embedded.outer", "<module>"]], "host_call")


class PythonCodeReuse(unittest.TestCase):
    """Code objects are named after the sample, in user space: a code object freed and
    another made at its address (alike in the fields the frame validator covers) must not
    take the first one's name."""

    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def test_generated_code_at_one_address(self):
        pb = os.path.join(self.dir, "reuse.pb.gz")
        _, js = record(["-F", FREQ, "-q", "-o", pb], [EXE, "reuse", SECS])
        self.assertEqual(len(js), 2, "workload output %s" % js)
        cpu = js[1]["cpu"]
        self.assertGreater(js[1]["rounds"], 20)
        seen = {"alpha": 0, "beta": 0}
        total = 0
        for frames, v in sample_frames(pb, "py_embed"):
            for f in frames:
                if is_python(f) and f["name"] in seen:
                    self.assertEqual(f["file"], "gen_%s.py" % f["name"], f)
                    seen[f["name"]] += v
                    total += v
                    break
        self.assertGreater(total, 250, "too few samples in alpha or beta")
        want = cpu["alpha"] / (cpu["alpha"] + cpu["beta"])
        got = seen["alpha"] / total
        print("alpha share: measured %.3f, profile %.3f (%s)" % (want, got, seen))
        self.assertLess(abs(got - want), 0.06, "alpha share %.3f in the profile (%s), %.3f "
                        "measured (%s)" % (got, seen, want, cpu))


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
