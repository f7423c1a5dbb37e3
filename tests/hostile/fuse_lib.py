# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.FuseStall: loads LIB (libdwarfbomb.so as built, from a
FUSE mount whose server the test then stops) and burns CPU in its bomb_burn for SECONDS.
Prints {"ready": 1} once loaded.
    fuse_lib.py LIB SECONDS"""
import ctypes
import json
import sys

so = ctypes.CDLL(sys.argv[1])
so.bomb_burn.argtypes = [ctypes.c_double]
so.bomb_burn.restype = ctypes.c_ulong
print(json.dumps({"ready": 1}), flush=True)
so.bomb_burn(float(sys.argv[2]))
