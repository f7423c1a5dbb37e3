# SPDX-License-Identifier: Apache-2.0
"""Reader of py-spy's raw output (`py-spy record -f raw`), shared by bench/torch.sh and
bench/python.sh."""
import os
import re


def load_pyspy(path):
    """[(frames leaf first as (name, file basename, line, is_python), count)]: a frame
    "name (file.py:line)" is Python, any other "name (module)" native (line 0)."""
    res = []
    for l in open(path):
        l = l.rstrip("\n")
        if not l:
            continue
        stack, cnt = l.rsplit(" ", 1)
        frames = []
        for f in stack.split(";"):
            m = re.match(r"^(.*) \(([^()]*)\)$", f)
            name, loc = (m.group(1), m.group(2)) if m else (f, "")
            pm = re.match(r"^(.*\.py):(\d+)$", loc)
            if pm:
                frames.append((name, os.path.basename(pm.group(1)), int(pm.group(2)), True))
            else:
                frames.append((name, loc, 0, False))
        res.append((frames[::-1], int(cnt)))
    return res
