# SPDX-License-Identifier: Apache-2.0
"""A fast PyTorch training loop for bench/steps.sh: a tiny model, a DataLoader over an
in-memory dataset (batch of 1), AdamW. Runs WARMUP_S seconds, then SECONDS more, and prints
"steps STEPS SECONDS CPU_SECONDS". Usage: stepsloop.py [SECONDS [WARMUP_S [WIDTH [BATCH]]]]: WIDTH 0
(default), a Linear(8, 2) over batches of 1 (1500-7000 steps a second on this VM, as its
speed drifts); WIDTH N, three layers 8 -> N -> N -> 2 over batches of BATCH (256 and 96:
about 10^3 steps a second, the issue's rate; widths of 640 and more sit on a cache cliff
here: 385 or 1038 steps a second from one run to the next)."""
import sys
import time

import torch


def main():
    dur = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    warm = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    batch = int(sys.argv[4]) if len(sys.argv) > 4 and width > 0 else 1
    torch.set_num_threads(1)
    model = torch.nn.Linear(8, 2)
    if width > 0:
        model = torch.nn.Sequential(torch.nn.Linear(8, width), torch.nn.Linear(width, width),
                                    torch.nn.Linear(width, 2))
    opt = torch.optim.AdamW(model.parameters())
    data = torch.utils.data.TensorDataset(torch.randn(4096, 8), torch.randint(0, 2, (4096,)))

    def batches():
        while True:
            yield from torch.utils.data.DataLoader(data, batch_size=batch)

    it = batches()
    end = time.time() + warm
    while time.time() < end:
        x, y = next(it)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    t0 = time.time()
    c0 = time.process_time()
    steps = 0
    while time.time() - t0 < dur:
        x, y = next(it)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        steps += 1
    print("steps %d %.3f %.3f" % (steps, time.time() - t0, time.process_time() - c0), flush=True)


main()
