# SPDX-License-Identifier: Apache-2.0
"""Cost of one record_function scope (enter and exit) for bench/steps.sh: opens and closes
N scopes in a loop, REPEATS times, and prints "scope_ns BEST" (the fastest repeat's time
per scope: the least disturbed by the VM's noise) and "scope_cpu_ns BEST" (the same in the
thread's CPU time, user and system: the probes' traps are in it, the time the VM's host
takes the CPU away is not)."""
import sys
import time

import torch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    rf = torch.autograd.profiler.record_function
    best = best_cpu = None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(n):
            with rf("Optimizer.zero_grad#AdamW.zero_grad"):
                pass
        dt = (time.perf_counter() - t0) / n * 1e9
        dc = (time.thread_time() - c0) / n * 1e9
        best = dt if best is None else min(best, dt)
        best_cpu = dc if best_cpu is None else min(best_cpu, dc)
    print("scope_ns %.0f" % best, flush=True)
    print("scope_cpu_ns %.0f" % best_cpu, flush=True)


main()
