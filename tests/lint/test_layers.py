#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""lint.layers: src/'s folders include only what their README.md allows and no modules
include each other (layers.py on the real tree); and layers.py does catch an include that
goes up, a circle, a folder without a README and a file outside the folders (a small tree
made here)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LAYERS = os.path.join(HERE, "layers.py")


def run(root):
    cp = subprocess.run([sys.executable, LAYERS, root], capture_output=True, text=True)
    return cp.returncode, cp.stdout + cp.stderr


def write(root, path, text):
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


class Layers(unittest.TestCase):
    def test_tree(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"layers: \d{3} files in 1\d folders")

    def test_catches(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "src/low/README.md", "# low\n\nMay include: nothing\n")
            write(d, "src/high/README.md", "# high\n\nMay include: low\n")
            write(d, "src/low/a.h", "")
            write(d, "src/low/a.c", '#include "low/a.h"\n#include "high/b.h"\n')
            write(d, "src/high/b.h", "")
            write(d, "src/high/b.c", '#include "high/b.h"\n#include "low/a.h"\n')
            write(d, "bpf/x.bpf.h", '#include "y.bpf.h"\n')
            write(d, "bpf/y.bpf.h", '#include "x.bpf.h"\n')
            rc, out = run(d)
            self.assertEqual(rc, 1, out)
            self.assertIn('src/low/a.c: includes "high/b.h": low may not include high', out)
            self.assertIn("include circle between modules: src/high/b <-> src/low/a", out)
            self.assertIn("include circle between modules: bpf/x.bpf <-> bpf/y.bpf", out)
            os.remove(os.path.join(d, "src/high/README.md"))
            write(d, "src/loose.c", "")
            rc, out = run(d)
            self.assertEqual(rc, 1, out)
            self.assertIn("files outside a subsystem folder", out)
            os.remove(os.path.join(d, "src/loose.c"))
            rc, out = run(d)
            self.assertIn("src/high: no README.md", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
