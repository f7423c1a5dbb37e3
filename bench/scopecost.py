# SPDX-License-Identifier: Apache-2.0
"""Cost of one record_function scope (enter and exit) for bench/steps.sh: opens and closes
N scopes in a loop, REPEATS times, and prints "scope_ns BEST" (the fastest repeat's time
per scope: the least disturbed by the VM's noise)."""
import sys
import time

import torch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    rf = torch.autograd.profiler.record_function
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            with rf("Optimizer.zero_grad#AdamW.zero_grad"):
                pass
        dt = (time.perf_counter() - t0) / n * 1e9
        best = dt if best is None else min(best, dt)
    print("scope_ns %.0f" % best, flush=True)


main()
