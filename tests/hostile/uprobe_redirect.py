# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.UprobeRedirect: maps a CUDA library (a copy of
LIB in DIR), deletes it and puts a symlink named exactly like its deleted mapping
("DIR/libcuda.so.1 (deleted)") in its place, pointing at VICTIM. A profiler that attaches
its uprobes through the mapping's path, resolved again, writes breakpoints into VICTIM,
which other processes run. Prints {"ready": 1} once set up, then burns CPU for SECONDS.
    uprobe_redirect.py LIB DIR VICTIM SECONDS"""
import ctypes
import json
import os
import shutil
import sys
import time

lib, d, victim, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
mine = os.path.join(d, "libcuda.so.1")
shutil.copy(lib, mine)
handle = ctypes.CDLL(mine)
os.unlink(mine)
os.symlink(victim, mine + " (deleted)")
print(json.dumps({"ready": 1}), flush=True)
end = time.time() + seconds
n = 0
while time.time() < end:
    n += sum(range(1000))
