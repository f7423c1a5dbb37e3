# SPDX-License-Identifier: Apache-2.0
"""PyTorch CUDA training loop for bench/gpu.sh, with a known line for each thing mlprof
must attribute: the batch copy, forward, backward, the NCCL all-reduce of every gradient
(world size 1), the optimizer step, .item() every 10 steps (a sync), and 64 tensors of
4 MiB kept alive (256 MiB in use at the end). With GPU_SLEEP_CYCLES=N (bench/gpu.sh sets
it) each step also sleeps N cycles on the GPU (torch.cuda._sleep, timed with CUDA events)
and synchronizes: a known wait for the GPU (issue 23's gpu_wait check).
With GPU_EXIT_HOLDING=1 (the default) it exits with os._exit, its tensors still held.
Usage: gpuloop.py [STEPS]   (default 300). Prints one JSON line: steps, seconds, kept bytes,
whether NCCL ran, the time spent in synchronizing calls (perf_counter) and in the GPU
sleeps (CUDA events), the same for the training steps as mlprof counts them (from the first
optimizer step's end to the last one's: the first iteration, with cuBLAS and NCCL set-up,
is before them), and the line number of each tagged line."""
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
    steps_sync_s = 0.0  # synchronizing inside the steps mlprof counts
    ar_s = steps_ar_s = 0.0  # in the all-reduce calls (mlprof's comm), likewise
    first_opt_end = last_opt_end = None
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(steps):
        sync0, ar0 = sync_s, ar_s
        x = host.to(dev, non_blocking=True)  # LINE copy
        out = model(x)  # LINE forward
        loss = ((out - target) ** 2).mean()
        loss.backward()  # LINE backward
        if nccl:
            a0 = time.perf_counter()
            for p in model.parameters():
                dist.all_reduce(p.grad)  # LINE allreduce
            ar_s += time.perf_counter() - a0
        opt.step()  # LINE step
        last_opt_end = time.perf_counter()
        if first_opt_end is None:
            first_opt_end = last_opt_end
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
        if i < steps - 1:  # after this optimizer step: in the next step
            steps_sync_s += sync_s - sync0
        if i >= 1:  # before this optimizer step: in the step it ends
            steps_ar_s += ar_s - ar0
        if len(kept) < 64:
            kept.append(torch.empty(1 << 20, dtype=torch.float32, device=dev))  # LINE keep
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    print(json.dumps({"steps": steps, "seconds": secs, "kept_bytes": 64 * (4 << 20),
                      "nccl": nccl, "sync_seconds": sync_s, "gpu_sleep_ms": sleep_ms,
                      "steps_seconds": last_opt_end - first_opt_end,
                      "steps_sync_seconds": steps_sync_s,
                      "steps_allreduce_seconds": steps_ar_s,
                      "lines": tagged_lines(), "pid": os.getpid()}), flush=True)
    if os.environ.get("GPU_EXIT_HOLDING", "1") == "1":
        # exit holding the kept tensors: mlprof's in-use views are "still in use at the end
        # or when the process exited", and an interpreter shutdown frees every tensor first
        os._exit(0)
    if nccl:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
