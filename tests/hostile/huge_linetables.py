# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.HugeLineTables: 185 distinct Python functions, each
given a 1 MiB line table (code.replace(co_linetable=...): no memory forged), call each other
in a chain and burn CPU at the bottom, so every sample holds 185 frames whose tables a
profiler may read (185 MiB per sample if nothing bounds it). Prints {"ready": 1} when the
chain is running, then runs for SECONDS.
    huge_linetables.py SECONDS"""
import json
import sys
import time

N = 185
BIG = b"\xf8" * (1 << 20)  # 3.11+ location entries: "no location", one code unit each
seconds = float(sys.argv[1])
chain = []
for i in range(N):
    ns = {"chain": chain, "time": time}
    exec("def hostile_%d(i, end):\n"
         "    if i + 1 < len(chain):\n"
         "        return chain[i + 1](i + 1, end)\n"
         "    print('{\"ready\": 1}', flush=True)\n"
         "    n = 0\n"
         "    while time.time() < end:\n"
         "        n += sum(range(500))\n"
         "    return n\n" % i, ns)
    f = ns["hostile_%d" % i]
    f.__code__ = f.__code__.replace(co_linetable=BIG)
    chain.append(f)
chain[0](0, time.time() + seconds)
print(json.dumps({"done": 1}), flush=True)
