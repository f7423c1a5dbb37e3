# SPDX-License-Identifier: Apache-2.0
"""The numbers issue 20 asks of a GPU host, from one bench/gpu.sh run directory:
launches named, launch weight under the loop's Python frames, sync wait under the .item()
line, GPU memory in use at the keeping line against the bytes the loop holds, NCCL calls
under the all-reduce line, dropped samples, steps/s with and without mlprof; and issue 23's:
the steps line's gpu_wait share against the loop's own time in synchronizing calls (and its
GPU sleeps as CUDA events timed them), comm with NCCL.
Usage: gpu_report.py DIR   (DIR holds base.json, prof.json, record.err, gpu.*.pb.gz)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import pprof_reader  # noqa: E402

LOOP = "gpuloop.py"


def load(d, kind):
    p = os.path.join(d, "gpu.%s.pb.gz" % kind)
    return list(pprof_reader.load(p).detailed_stacks()) if os.path.exists(p) else None


def at_line(frames, line):
    return any(f["file"].endswith(LOOP) and f["line"] == line for f in frames)


def share(rows, pred, vi=0):
    tot = sum(v[vi] for _, v, _ in rows)
    part = sum(v[vi] for fr, v, _ in rows if pred(fr))
    return part, tot


def pct(part, tot):
    return "%.1f%% (%d of %d)" % (100.0 * part / tot, part, tot) if tot else "n/a (none)"


def main():
    d = sys.argv[1]
    base = json.load(open(os.path.join(d, "base.json")))
    prof = json.load(open(os.path.join(d, "prof.json")))
    err = open(os.path.join(d, "record.err"), encoding="utf-8", errors="replace").read()
    lines = prof["lines"]
    print("steps/s: %.1f without mlprof, %.1f with (%+.1f%%)" % (
        base["steps"] / base["seconds"], prof["steps"] / prof["seconds"],
        100.0 * (base["seconds"] / prof["seconds"] - 1)))
    m = re.search(r"^mlprof: (\d+) samples in .*?(\d+) dropped", err, re.M)
    print("CPU samples: %s, dropped (ring buffer full): %s" % (
        m.group(1) if m else "?", m.group(2) if m else "?"))
    for line in err.splitlines():
        if line.startswith("mlprof: cuda:"):
            print(line)
    rows = load(d, "cuda_launches")
    if rows is not None:
        print("launches named: %s" % pct(*share(
            rows, lambda fr: fr and not fr[0]["name"].startswith("[cuda kernel"))))
        print("launch weight under the loop's Python frames: %s" % pct(*share(
            rows, lambda fr: any(f["file"].endswith(LOOP) for f in fr))))
    rows = load(d, "cuda_sync")
    if rows is not None:
        print("sync wait under the .item() line (%d): %s" % (lines["item"], pct(*share(
            rows, lambda fr: at_line(fr, lines["item"])))))
    rows = load(d, "cuda_memory")
    if rows is not None:
        part, tot = share(rows, lambda fr: at_line(fr, lines["keep"]), vi=1)
        print("GPU memory in use at the keeping line (%d): %d bytes of %d held by the loop "
              "(%+.1f%%); all in use: %d" % (lines["keep"], part, prof["kept_bytes"],
                                             100.0 * (part / prof["kept_bytes"] - 1), tot))
    rows = load(d, "cuda_memcpy")
    if rows is not None:
        print("copy bytes under the batch-copy line (%d): %s" % (lines["copy"], pct(*share(
            rows, lambda fr: at_line(fr, lines["copy"])))))
    rows = load(d, "nccl")
    if rows is not None and prof["nccl"]:
        print("NCCL calls under the all-reduce line (%d): %s" % (lines["allreduce"], pct(*share(
            rows, lambda fr: at_line(fr, lines["allreduce"])))))
    elif not prof["nccl"]:
        print("NCCL: not available in this torch build")
    m = re.search(r"^mlprof: steps: pid %d .*? ([0-9.]+) ms each on average.*?gpu_wait "
                  r"([0-9.]+)%%.*?comm ([0-9.]+)%%" % prof["pid"], err, re.M)
    if m:
        print("steps: gpu_wait %s%% of the steps; the loop's synchronizing calls: %.1f%% of its "
              "time (%.3f s; GPU sleeps by CUDA events: %.3f s); comm %s%%" % (
                  m.group(2), 100.0 * prof["sync_seconds"] / prof["seconds"],
                  prof["sync_seconds"], prof["gpu_sleep_ms"] / 1e3, m.group(3)))
        print("steps line: " + re.search(r"^mlprof: steps: pid %d .*$" % prof["pid"], err,
                                         re.M).group(0))
    else:
        print("steps: no steps line for the loop (torch without record_function probes?)")


if __name__ == "__main__":
    main()
