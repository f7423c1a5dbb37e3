#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small ML-style training loop for trying mlprof without a GPU.

A data loader (worker threads doing Python-side decoding and augmentation, as
torch.utils.data workers do) feeds batches to a two-layer MLP trained with SGD in
NumPy (BLAS matmuls: native frames) or, without NumPy, in pure Python.

  mlprof record -o train.pb.gz -o train.html -- python3 examples/train.py --steps 200
"""
import argparse
import math
import queue
import random
import threading
import time

try:
    import numpy as np
except ImportError:  # pure-Python fallback keeps the example runnable anywhere
    np = None


def decode_sample(rng, dim):
    """Stands in for JPEG/tokenizer decoding: pure-Python CPU work per sample."""
    raw = [rng.random() for _ in range(dim)]
    return [math.tanh(2.0 * x - 1.0) for x in raw]


def augment(sample, rng):
    """Random flip + noise, the kind of per-sample Python work data loaders burn CPU on."""
    if rng.random() < 0.5:
        sample = sample[::-1]
    return [x + rng.gauss(0.0, 0.01) for x in sample]


def loader_worker(wid, batches, batch_size, dim, stop):
    rng = random.Random(wid)
    while not stop.is_set():
        batch = [augment(decode_sample(rng, dim), rng) for _ in range(batch_size)]
        labels = [int(sum(s) > 0) for s in batch]
        try:
            batches.put((batch, labels), timeout=0.5)
        except queue.Full:
            continue


class MLP:
    def __init__(self, dim, hidden, seed=0):
        rng = np.random.default_rng(seed)
        self.w1 = rng.standard_normal((dim, hidden)) / math.sqrt(dim)
        self.w2 = rng.standard_normal((hidden, 1)) / math.sqrt(hidden)

    def forward(self, x):
        self.x = x
        self.h = np.maximum(x @ self.w1, 0.0)
        return 1.0 / (1.0 + np.exp(-(self.h @ self.w2)))

    def backward(self, p, y, lr):
        g = (p - y) / len(y)
        gw2 = self.h.T @ g
        gh = (g @ self.w2.T) * (self.h > 0)
        gw1 = self.x.T @ gh
        self.w2 -= lr * gw2
        self.w1 -= lr * gw1


def train_step_numpy(model, batch, labels, lr):
    x = np.asarray(batch)
    y = np.asarray(labels, dtype=float).reshape(-1, 1)
    p = model.forward(x)
    loss = float(-np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9)))
    model.backward(p, y, lr)
    return loss


def train_step_python(weights, batch, labels, lr):
    loss = 0.0
    for x, y in zip(batch, labels):
        z = sum(w * v for w, v in zip(weights, x))
        p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
        loss -= math.log(p + 1e-9) if y else math.log(1 - p + 1e-9)
        for i, v in enumerate(x):
            weights[i] -= lr * (p - y) * v
    return loss / len(batch)


_kept = []


def keep_batch(batch):
    """The optional leak (--leak): every batch is kept, as a cache that never evicts or a
    list of tensors kept for logging would."""
    if np is not None:
        # with its augmented views: 512 KiB a batch, allocated fresh (above malloc's mmap
        # threshold), so the pages are first touched here
        _kept.append(np.tile(np.array(batch, dtype=np.float64), (4, 1)))
    else:
        _kept.append([list(s) for s in batch])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--leak", action="store_true",
                    help="keep every batch (a memory leak to find with the memory profile)")
    args = ap.parse_args()

    batches = queue.Queue(maxsize=8)
    stop = threading.Event()
    workers = [threading.Thread(target=loader_worker, name="loader-%d" % i,
                                args=(i, batches, args.batch_size, args.dim, stop), daemon=True)
               for i in range(args.workers)]
    for w in workers:
        w.start()
    model = MLP(args.dim, args.hidden) if np is not None else [0.0] * args.dim
    t0 = time.time()
    loss = 0.0
    for step in range(args.steps):
        batch, labels = batches.get()
        if args.leak:
            keep_batch(batch)
        if np is not None:
            loss = train_step_numpy(model, batch, labels, 0.05)
        else:
            loss = train_step_python(model, batch, labels, 0.05)
        if step % 50 == 0:
            print("step %4d  loss %.4f" % (step, loss), flush=True)
    stop.set()
    print("trained %d steps in %.1f s (numpy=%s), final loss %.4f"
          % (args.steps, time.time() - t0, np is not None, loss), flush=True)
    if args.leak:
        print("kept %d batches (%.0f MiB)" % (len(_kept), len(_kept) * 4 * args.batch_size
                                                * args.dim * 8 / 2**20), flush=True)
        # leave without tearing the heap down: the profile's in-use view at exit shows
        # who holds the memory, as an out-of-memory kill would leave it
        import os
        os._exit(0)


if __name__ == "__main__":
    main()
