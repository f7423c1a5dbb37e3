# SPDX-License-Identifier: Apache-2.0
"""Unprofiled victim for test_hostile.UprobeRedirect: maps FILE executable (as a library is
mapped, so that a uprobe on FILE would be installed in this process too) and compares the
mapped bytes with the file's every 20 ms for SECONDS. Prints {"ready": 1} once mapped, and
at the end {"checks": N, "changed": [file offsets whose mapped byte differed, up to 20]}.
    code_watch.py FILE SECONDS"""
import json
import mmap
import os
import sys
import time

path, seconds = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as f:
    disk = f.read()
fd = os.open(path, os.O_RDONLY)
m = mmap.mmap(fd, len(disk), flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
print(json.dumps({"ready": 1}), flush=True)
changed, checks = set(), 0
end = time.time() + seconds
while time.time() < end:
    mem = m[:]
    checks += 1
    if mem != disk:
        changed.update(i for i in range(len(disk)) if mem[i] != disk[i])
    time.sleep(0.02)
print(json.dumps({"checks": checks, "changed": sorted(changed)[:20]}), flush=True)
