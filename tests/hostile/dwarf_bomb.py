# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.DwarfBomb: copies LIB (libdwarfbomb.so) to OUT with its
.debug_info replaced by a compressed section (ELF compression header, zlib) that inflates to
INFLATED bytes (default 2 GiB) from ~2 MB on disk, loads OUT and burns CPU in bomb_burn for
SECONDS. Prints {"ready": 1} once loaded.
    dwarf_bomb.py LIB OUT SECONDS [INFLATED]"""
import ctypes
import json
import struct
import sys
import zlib

SHF_COMPRESSED = 0x800
ELFCOMPRESS_ZLIB = 1


def bomb(inflated):
    c = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    out = [struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, inflated, 1)]
    for _ in range(inflated >> 20):
        out.append(c.compress(chunk))
    out.append(c.flush())
    return b"".join(out)


def patch(lib, out, inflated):
    data = bytearray(open(lib, "rb").read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    str_off = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    blob = bomb(inflated)
    for i in range(shnum):
        h = shoff + i * shentsize
        name = struct.unpack_from("<I", data, h)[0]
        if data[str_off + name:str_off + name + 12] == b".debug_info\0":
            flags = struct.unpack_from("<Q", data, h + 8)[0]
            struct.pack_into("<Q", data, h + 8, flags | SHF_COMPRESSED)
            struct.pack_into("<QQ", data, h + 0x18, len(data), len(blob))
            break
    else:
        raise SystemExit("no .debug_info in %s" % lib)
    with open(out, "wb") as f:
        f.write(data + blob)


lib, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
patch(lib, out, int(sys.argv[4]) if len(sys.argv) > 4 else 2 << 30)
so = ctypes.CDLL(out)
so.bomb_burn.argtypes = [ctypes.c_double]
so.bomb_burn.restype = ctypes.c_ulong
print(json.dumps({"ready": 1}), flush=True)
so.bomb_burn(seconds)
