# SPDX-License-Identifier: Apache-2.0
"""A Python workload: native stacks reach libpython's eval loop, complete to _start."""
import glob
import os
import unittest

from itutil import need_root, record, stacks_of, tmpdir

PY_LOOP = """
import time
def inner(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def outer():
    end = time.time() + 2.5
    while time.time() < end:
        inner(20000)
outer()
"""

EVAL = ("_PyEval_EvalFrameDefault", "_PyEval_EvalFrame")


def pythons():
    cands = ["/usr/bin/python3"] + sorted(glob.glob("/root/.pyenv/versions/3.1[0-3].*/bin/python3"))
    return [p for p in cands if os.path.exists(p)][:3]


class RecordPython(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def test_eval_loop_reached(self):
        exes = pythons()
        self.assertTrue(exes, "no python3 found")
        for exe in exes:
            with self.subTest(python=exe):
                pb = os.path.join(self.dir, "py.pb.gz")
                record(["-F", "299", "-q", "-o", pb], [exe, "-c", PY_LOOP])
                _, stacks = stacks_of(pb)
                stacks = [(n, v) for n, v, l in stacks if l["process_name"].startswith("python")]
                tot = sum(v for _, v in stacks)
                self.assertGreater(tot, 300)
                in_eval = sum(v for n, v in stacks if any(x in EVAL for x in n))
                self.assertGreaterEqual(in_eval / tot, 0.9, "%d/%d in eval loop" % (in_eval, tot))
                complete = sum(v for n, v in stacks if n[-1] == "_start"
                               and not any(x.startswith("[truncated") for x in n))
                self.assertGreaterEqual(complete / tot, 0.95,
                                        "%d/%d complete; e.g. %s" % (complete, tot, stacks[0][0]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
