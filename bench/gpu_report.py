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


def load(d, kind, prefix="gpu"):
    p = os.path.join(d, "%s.%s.pb.gz" % (prefix, kind))
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
    rows = load(d, "cuda_sync.v0", "lb1")  # the launch-bound run: .item() is its only sync
    if rows is not None:
        print("sync wait under the .item() line (%d), launch-bound run: %s" % (
            lines["item"], pct(*share(rows, lambda fr: at_line(fr, lines["item"])))))
    rows = load(d, "cuda_sync")
    if rows is not None:
        print("sync wait under the .item() and synchronize lines, GPU-sleep run: %s" % pct(
            *share(rows, lambda fr: at_line(fr, lines["item"]) or
                   at_line(fr, lines["gpusleep"]))))
    rows = load(d, "cuda_memory")
    if rows is not None:
        part, tot = share(rows, lambda fr: at_line(fr, lines["keep"]), vi=1)
        print("GPU memory in use at the keeping line (%d): %d bytes of %d held by the loop "
              "(%+.1f%%); all in use: %d" % (lines["keep"], part, prof["kept_bytes"],
                                             100.0 * (part / prof["kept_bytes"] - 1), tot))
    rows = load(d, "cuda_tensors")
    if rows is not None:
        part, tot = share(rows, lambda fr: at_line(fr, lines["keep"]), vi=3)
        print("tensor memory in use at the keeping line (%d): %d bytes of %d held by the loop "
              "(%+.1f%%); all tensors in use: %d" % (
                  lines["keep"], part, prof["kept_bytes"],
                  100.0 * (part / prof["kept_bytes"] - 1), tot))
    else:
        print("tensor memory: no cuda_tensors profile (no caching-allocator probes?)")
    p = os.path.join(d, "gpu.cuda_memcpy.pb.gz")
    if os.path.exists(p):
        rows = [(fr, v, lab) for fr, v, lab in pprof_reader.load(p).detailed_stacks()
                if lab.get("direction") == "host_to_device"]
        print("host-to-device bytes under the batch-copy line (%d): %s" % (
            lines["copy"], pct(*share(rows, lambda fr: at_line(fr, lines["copy"])))))
    rows = load(d, "nccl")
    if rows is not None and prof["nccl"]:
        print("NCCL calls under the all-reduce line (%d): %s" % (lines["allreduce"], pct(*share(
            rows, lambda fr: at_line(fr, lines["allreduce"])))))
    elif not prof["nccl"]:
        print("NCCL: not available in this torch build")
    m = re.search(r"^mlprof: steps: pid %d .*? ([0-9.]+) ms each on average.*?gpu_wait "
                  r"([0-9.]+)%%.*?comm ([0-9.]+)%%" % prof["pid"], err, re.M)
    if m:
        mm = re.search(r"^mlprof: steps: pid %d .*?: (\d+) steps" % prof["pid"], err, re.M)
        n = int(mm.group(1))
        wall = n * float(m.group(1)) / 1e3
        gpu = float(m.group(2)) / 100 * wall
        truth = prof.get("steps_sync_seconds", prof["sync_seconds"])
        print("steps: %d steps, %.3f s (the loop: %.3f s from its first optimizer step's end "
              "to its last); gpu_wait %s%% = %.3f s, the loop's synchronizing calls in those "
              "steps %.3f s (%+.1f%%; GPU sleeps by CUDA events: %.3f s in all); comm %s%%" % (
                  n, wall, prof.get("steps_seconds", 0), m.group(2), gpu, truth,
                  100.0 * (gpu / truth - 1) if truth else 0, prof["gpu_sleep_ms"] / 1e3,
                  m.group(3)))
        if "steps_allreduce_seconds" in prof and prof["steps_seconds"]:
            print("comm %s%% of the steps; the loop's all-reduce calls in those steps: %.1f%% "
                  "(%.3f s)" % (m.group(3), 100.0 * prof["steps_allreduce_seconds"] /
                                prof["steps_seconds"], prof["steps_allreduce_seconds"]))
        p = os.path.join(d, "gpu.steps.pb.gz")
        if os.path.exists(p):
            rows = [(fr, v, lab) for fr, v, lab in pprof_reader.load(p).detailed_stacks()]
            gw = [(fr, v, lab) for fr, v, lab in rows if lab.get("ml_phase") == "gpu_wait"]
            print("steps profile: gpu_wait %s of its wall time; of that, under the synchronize "
                  "line (%d): %s" % (pct(sum(v[0] for _, v, _ in gw), sum(
                      v[0] for _, v, _ in rows)), lines["gpusleep"], pct(*share(
                          gw, lambda fr: at_line(fr, lines["gpusleep"])))))
        print("steps line: " + re.search(r"^mlprof: steps: pid %d .*$" % prof["pid"], err,
                                         re.M).group(0))
    else:
        print("steps: no steps line for the loop (torch without record_function probes?)")


if __name__ == "__main__":
    main()
