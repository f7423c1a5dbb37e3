# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.ManyMaps: maps one small file COUNT times executable
(separate mappings: same offset each time, so the kernel cannot merge them), the file's
path about 4,000 bytes long (nested directories of 250-character names under DIR), then
burns CPU. Each line of its /proc/PID/maps is ~4 KiB: 60,000 of them are ~250 MB of text
to read and keep. Prints {"ready": 1, "maps": N} once mapped.
    many_maps.py DIR COUNT SECONDS"""
import ctypes
import json
import mmap
import os
import sys
import time

d, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for i in range(15):
    d = os.path.join(d, chr(ord("a") + i) * 250)
os.makedirs(d, exist_ok=True)
path = os.path.join(d, "x" * 200 + ".so")
with open(path, "wb") as f:
    f.write(b"\x7fELF" + bytes(4092))
fd = os.open(path, os.O_RDONLY)
# libc's mmap, not the mmap module's (each of its objects holds a dup of the fd)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
n = 0
for _ in range(count):
    if libc.mmap(None, 4096, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, fd,
                 0) in (None, ctypes.c_void_p(-1).value):
        break  # vm.max_map_count reached
    n += 1
print(json.dumps({"ready": 1, "maps": n}), flush=True)
end = time.time() + seconds
n = 0
while time.time() < end:
    n += sum(range(1000))
