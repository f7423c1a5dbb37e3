# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.SparseSections: copies LIB to OUT as a sparse file of
SIZE bytes (default 4 GiB; ~LIB's size on disk) whose ELF header uses extended section
numbering (e_shnum 0) with section 0's sh_size claiming as many section headers as fit in
the file, maps OUT executable and burns CPU. A parser that trusts that count allocates per
section: gigabytes. Prints {"ready": 1} once mapped.
    sparse_sections.py LIB OUT SECONDS [SIZE]"""
import json
import mmap
import os
import struct
import sys
import time

lib, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
size = int(sys.argv[4]) if len(sys.argv) > 4 else 4 << 30
data = bytearray(open(lib, "rb").read())
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, = struct.unpack_from("<H", data, 0x3a)
struct.pack_into("<H", data, 0x3c, 0)  # e_shnum: see section 0
struct.pack_into("<Q", data, shoff + 0x20, (size - shoff) // shentsize)  # sh0.sh_size
with open(out, "wb") as f:
    f.write(data)
    f.truncate(size)
fd = os.open(out, os.O_RDONLY)
m = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
print(json.dumps({"ready": 1}), flush=True)
end = time.time() + seconds
n = 0
while time.time() < end:
    n += sum(range(1000))
