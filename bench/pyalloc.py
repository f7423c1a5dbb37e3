# SPDX-License-Identifier: Apache-2.0
"""Allocation-heavy Python loop for bench/heap.sh: a data-loader-like step that builds
records (dicts, strings, 2 KiB bytes objects: the last from malloc, the rest from
pymalloc), keeps one in 64 and drops the rest. Prints one JSON line: steps, wall_s."""
import json
import sys
import time


def make_batch(i):
    return [{"id": i * 64 + k, "name": "item-%d" % k, "payload": bytes(2048)} for k in range(64)]


def main(steps):
    keep = []
    t0 = time.perf_counter()
    for i in range(steps):
        batch = make_batch(i)
        keep.append(batch[0])
    print(json.dumps({"steps": steps, "wall_s": time.perf_counter() - t0, "kept": len(keep)}))


main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
