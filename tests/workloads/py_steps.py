# SPDX-License-Identifier: Apache-2.0
"""A PyTorch training loop of known phases for it.record_steps: a dataset that sleeps SLEEP
seconds per item (data wait), a fixed compute load (20 tanh(a @ a) on 256x256) and a small
MLP with AdamW (optimizer), measuring its own phases with perf_counter and the thread's CPU
time. A step runs from one optimizer step's end to the next. Prints one JSON line.
With FAKE_CUDA=path of tests/cuda's test double of libcuda.so.1 (no GPU here), each step
also calls its cuStreamSynchronize, which waits GPU_WAIT_MS (a stand-in for waiting on the
GPU: the gpu_wait phase). COMPUTE_ITERS (default 20) sets the compute load: 0 makes steps
of about 1 ms. NO_CPU_CLOCK=1 reads no CPU clock per step (reading one brings the kernel's
runtime of the thread up to date, which hides a profiler's stale reads): the compute time is
then the step's rest, right only when nothing sleeps (SLEEP 0, no workers). WAIT_GO=1:
waits for a line on stdin before the first step (a profiler started after it gets ready).
Usage: py_steps.py STEPS [SLEEP [WORKERS]]"""
import ctypes, json, os, sys, time
import torch

SLEEP = float(sys.argv[2]) if len(sys.argv) > 2 else 0.01
WORKERS = int(sys.argv[3]) if len(sys.argv) > 3 else 0
COMPUTE_ITERS = int(os.environ.get("COMPUTE_ITERS", "20"))
NO_CPU_CLOCK = os.environ.get("NO_CPU_CLOCK") == "1"
thread_time = (lambda: 0.0) if NO_CPU_CLOCK else time.thread_time

class SleepyData(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20
    def __getitem__(self, i):
        if SLEEP:
            time.sleep(SLEEP)      # the dataset's line: data wait
        return torch.ones(64), 1

def fake_gpu():
    """The test double's synchronize, or None."""
    path = os.environ.get("FAKE_CUDA")
    if not path:
        return None
    lib = ctypes.CDLL(path)
    lib.fake_cuda_set_sync_ns(ctypes.c_long(int(float(os.environ.get("GPU_WAIT_MS", "5")) * 1e6)))
    return lib.cuStreamSynchronize

def main(steps):
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters())
    dl = torch.utils.data.DataLoader(SleepyData(), batch_size=1, num_workers=WORKERS)
    it = iter(dl)
    t = {"data": 0.0, "opt": 0.0, "total": 0.0, "compute_cpu": 0.0, "gpu": 0.0}
    sync = fake_gpu()
    a = torch.randn(256, 256)
    if os.environ.get("WAIT_GO") == "1":
        sys.stdin.readline()
    prev = None
    for s in range(steps + 1):
        c0 = thread_time()
        t0 = time.perf_counter()
        x, y = next(it)
        t1 = time.perf_counter()
        c1 = thread_time()
        for _ in range(COMPUTE_ITERS):
            a = torch.tanh(a @ a)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if sync:
            g0 = time.perf_counter()
            sync(None)          # the line that waits for the GPU
            g = time.perf_counter() - g0
        else:
            g = 0.0
        c2 = thread_time()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        t3 = time.perf_counter()
        if s:   # step s: from the previous optimizer step's end to this one's
            t["data"] += t1 - t0
            t["opt"] += t3 - t2
            t["total"] += t3 - prev
            t["compute_cpu"] += (c2 - c1) + (c0 - prevc)
            t["gpu"] += g
        prev = t3
        prevc = thread_time()
    if NO_CPU_CLOCK:
        t["compute_cpu"] = t["total"] - t["data"] - t["opt"] - t["gpu"]
    with open(__file__, encoding="utf-8") as f:
        sync_line = next(n for n, text in enumerate(f, 1)
                         if text.rstrip().endswith("# the line that waits for the GPU"))
    print(json.dumps({"steps": steps, "sync_line": sync_line, **t}), flush=True)

main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
