# SPDX-License-Identifier: Apache-2.0
"""One-thread PyTorch CPU training loop for bench/torch.sh.

A small MLP (256 -> 512 -> 10) trained with AdamW on one fixed batch, on one intra-op
thread, with denormals flushed to zero (without it the loop slows down by itself after
~12 s and runs of different profilers would not compare). The Python chain the profilers
should show is <module> -> main -> train_step (-> torch).
Usage: torchloop.py [SECONDS [WARMUP_S]]   (defaults 8 and 2)
Runs WARMUP_S seconds of steps, prints "ready PID", then trains for SECONDS more and prints
progress lines "progress UNIX_TIME STEPS" (steps since the start of the timed part) about
every 0.25 s, and at the end "steps STEPS SECONDS".
"""
import os
import sys
import time

import torch


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def main():
    dur = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    warm = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))
    end = time.time() + warm
    while time.time() < end:
        train_step(model, opt, x, y)
    print("ready", os.getpid(), flush=True)
    t0 = time.time()
    end, tick, steps = t0 + dur, t0, 0
    while True:
        now = time.time()
        if now >= tick:
            print("progress %.6f %d" % (now, steps), flush=True)
            tick = now + 0.25
        if now >= end:
            break
        train_step(model, opt, x, y)
        steps += 1
    print("steps %d %.3f" % (steps, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
