# SPDX-License-Identifier: Apache-2.0
"""PyTorch CUDA training loop for bench/gpu.sh, with a known line for each thing mlprof
must attribute: the batch copy, forward, backward, the NCCL all-reduce of every gradient
(world size 1), the optimizer step, .item() every 10 steps (a sync), and 64 tensors of
4 MiB kept alive (256 MiB in use at the end). With GPU_SLEEP_CYCLES=N (bench/gpu.sh sets
it) each step also sleeps N cycles on the GPU (torch.cuda._sleep, timed with CUDA events)
and synchronizes: a known wait for the GPU (issue 23's gpu_wait check).
Usage: gpuloop.py [STEPS]   (default 300). Prints one JSON line: steps, seconds, kept bytes,
whether NCCL ran, the time spent in synchronizing calls (perf_counter) and in the GPU
sleeps (CUDA events), and the line number of each tagged line."""
import json
import os
import re
import sys
import time

import torch
import torch.distributed as dist


def tagged_lines():
    """{tag: line number} of the code lines ending in a LINE tag comment."""
    out = {}
    with open(__file__, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"\S.*  # LINE (\w+)$", line.rstrip())
            if m:
                out[m.group(1)] = n
    return out


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    dev = torch.device("cuda")
    nccl = dist.is_available() and dist.is_nccl_available()
    if nccl:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("nccl", rank=0, world_size=1)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    host = torch.randn(256, 1024).pin_memory()
    target = torch.randn(256, 1024, device=dev)
    kept = []
    cycles = int(os.environ.get("GPU_SLEEP_CYCLES", "0"))
    ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sync_s = sleep_ms = 0.0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        x = host.to(dev, non_blocking=True)  # LINE copy
        out = model(x)  # LINE forward
        loss = ((out - target) ** 2).mean()
        loss.backward()  # LINE backward
        if nccl:
            for p in model.parameters():
                dist.all_reduce(p.grad)  # LINE allreduce
        opt.step()  # LINE step
        opt.zero_grad(set_to_none=True)
        if i % 10 == 0:
            s0 = time.perf_counter()
            loss.item()  # LINE item
            sync_s += time.perf_counter() - s0
        if cycles:
            ev0.record()
            torch.cuda._sleep(cycles)
            ev1.record()
            s0 = time.perf_counter()
            torch.cuda.synchronize()  # LINE gpusleep
            sync_s += time.perf_counter() - s0
            sleep_ms += ev0.elapsed_time(ev1)
        if len(kept) < 64:
            kept.append(torch.empty(1 << 20, dtype=torch.float32, device=dev))  # LINE keep
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    print(json.dumps({"steps": steps, "seconds": secs, "kept_bytes": 64 * (4 << 20),
                      "nccl": nccl, "sync_seconds": sync_s, "gpu_sleep_ms": sleep_ms,
                      "lines": tagged_lines(), "pid": os.getpid()}))
    if nccl:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
