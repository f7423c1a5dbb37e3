# SPDX-License-Identifier: Apache-2.0
"""Workload for mlprof's integration tests: a small real PyTorch (CPU) training loop.

    python3 py_torch_train.py SECONDS

TinyNet.forward (Linear + ReLU twice, then a Linear head) on a batch large enough that the
matrix products cost real CPU, mse_loss, loss.backward() (the autograd engine, on this
thread for CPU tensors) and an SGD step, for SECONDS. One intra-op thread, fixed seed.
Prints one JSON line: the CPU time of each phase and the step count.
"""
import json
import sys
import time

import torch
from torch import nn

BATCH, D_IN, D_HID = 64, 128, 256


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D_IN, D_HID)
        self.fc2 = nn.Linear(D_HID, D_HID)
        self.head = nn.Linear(D_HID, 1)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return self.head(h)


def train(secs):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyNet()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, D_IN)
    y = torch.randn(BATCH, 1)
    cpu = {"forward": 0.0, "loss": 0.0, "backward": 0.0, "step": 0.0}
    steps = 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        opt.zero_grad()
        t0 = time.thread_time()
        out = model(x)
        t1 = time.thread_time()
        loss = nn.functional.mse_loss(out, y)
        t2 = time.thread_time()
        loss.backward()
        t3 = time.thread_time()
        opt.step()
        t4 = time.thread_time()
        cpu["forward"] += t1 - t0
        cpu["loss"] += t2 - t1
        cpu["backward"] += t3 - t2
        cpu["step"] += t4 - t3
        steps += 1
    return {"torch": torch.__version__, "steps": steps, "cpu": cpu,
            "loss": float(loss.item())}


if __name__ == "__main__":
    print(json.dumps(train(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)), flush=True)
