# SPDX-License-Identifier: Apache-2.0
"""Two-rank PyTorch training on CPU (gloo) with a known wait for collectives, for
it.record_steps: rank 1 sleeps SKEW seconds each step before the collective, so rank 0
waits about that long for it (the comm phase). MODE allreduce: an explicit
dist.all_reduce of the gradients (c10d::Work::wait); MODE ddp: DistributedDataParallel,
rank 1 sleeping before its backward (DDP's all-reduces finish in
c10d::Reducer::finalize_backward). Each rank measures its own step time and the time of
the call that waits (all_reduce, or the whole backward for ddp) and prints one JSON line.
Usage: py_comm_steps.py MODE STEPS SKEW PORT"""
import json, os, sys, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MODE, STEPS, SKEW, PORT = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]


def run(rank):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = PORT
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))
    if MODE == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(16, 64), torch.randint(0, 8, (16,))
    t = {"total": 0.0, "wait": 0.0}
    prev = None
    for s in range(STEPS + 1):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if MODE == "ddp":
            if rank == 1:
                time.sleep(SKEW)
            w0 = time.perf_counter()
            loss.backward()         # DDP's all-reduces end in here
            w = time.perf_counter() - w0
        else:
            loss.backward()
            if rank == 1:
                time.sleep(SKEW)
            flat = torch.cat([p.grad.view(-1) for p in model.parameters()])
            w0 = time.perf_counter()
            dist.all_reduce(flat)   # the line that waits for the other rank
            w = time.perf_counter() - w0
        opt.step()
        opt.zero_grad()
        now = time.perf_counter()
        if s:
            t["total"] += now - prev
            t["wait"] += w
        prev = now
    # one write: the two ranks share the pipe
    os.write(1, (json.dumps({"rank": rank, "pid": os.getpid(), "steps": STEPS, **t}) + "\n")
             .encode())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, nprocs=2)
