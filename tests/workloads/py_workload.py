# SPDX-License-Identifier: Apache-2.0
"""Python workload for mlprof's Python-frame test (tests/integration/test_record_python.py).

usage: py_workload.py threads SECONDS LIBPY_NATIVE
       py_workload.py deep SECONDS DEPTH
       py_workload.py fork SECONDS

SECONDS is CPU time: each working thread stops once its own thread CPU clock says SECONDS
(or after WALL_CAP times SECONDS of wall time), so a busy machine still yields as many
samples.

threads: two named threads burn CPU. "py-leaf-a" calls Block.leaf_a (pure Python) at the
  bottom of a 30-deep recursion descend(); "py-native-b" alternates between
  py_native_spin() in the shared library LIBPY_NATIVE, called through ctypes (which releases
  the GIL) from Worker.run -> Worker.run_native -> Worker.step, and the pure-Python leaf
  Block.leaf_b called from Worker.run. Each thread measures its own CPU time (thread CPU
  clock) in total and per leaf. Both leaves of py-native-b run for several sampling periods
  at a time, and each call's size varies (x0.5 to x1.5): a cycle of fixed length can lock
  in phase with the sampler's fixed period (199 Hz: 5.03 ms) and bias the sampled shares
  far past their binomial spread (a CI run once showed leaf_b at 0.067 of the samples
  against its CPU clock's 0.159).
deep: thread "py-deep" recurses DEPTH Python calls deep (deep_recurse) and burns CPU in
  Block.leaf_deep at the bottom.
fork: the main process burns CPU in Python briefly, then forks; the child names itself
  "py-child" and burns CPU in Block.leaf_fork, called via Forked.work -> run_fork.

Each mode prints one JSON line at the end (CPU nanoseconds, thread names, pids). The test
finds each function's line range in this file with ast, so the functions may move freely,
but keep their names and call chains: the test expects them exactly.
"""
import ctypes
import json
import os
import sys
import threading
import time

PR_SET_NAME = 15
DESCEND_DEPTH = 30
# Sizes of one leaf call: Block.leaf_a about 0.5 ms; on "py-native-b" Block.leaf_b about
# 8 ms and py_native_spin about 20 ms, several 5 ms sampling periods (199 Hz) each, which
# keeps that thread's sampled shares within a point or two of its CPU clock's.
LEAF_A_ITERS = 4000
LEAF_B_ITERS = 100000
NATIVE_ITERS = 12000000
SWITCH_INTERVAL = 0.005  # CPython's default, made explicit: leaf_b is cut about once
WALL_CAP = 6

_libc = ctypes.CDLL(None, use_errno=True)


def set_thread_name(name):
    """Sets the OS name of the calling thread (threading.Thread(name=...) sets only the
    Python-level name before 3.14)."""
    if _libc.prctl(PR_SET_NAME, name.encode(), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "prctl(PR_SET_NAME): " + os.strerror(err))


class Block:
    """The pure-Python leaves: integer arithmetic in a loop, no calls."""

    def leaf_a(self):
        s = 0
        for i in range(LEAF_A_ITERS):
            s += i * i ^ (s >> 3)
        return s

    def leaf_b(self, iters):
        s = 1
        for i in range(iters):
            s = (s * 3 + i) & 0xFFFFFF
        return s

    def leaf_deep(self):
        s = 0
        for i in range(LEAF_A_ITERS):
            s += i * i ^ (s >> 3)
        return s

    def leaf_fork(self):
        s = 0
        for i in range(LEAF_A_ITERS):
            s += i * i ^ (s >> 3)
        return s


def descend(depth, block, stats):
    """depth frames of descend(), then Block.leaf_a, timed with the thread CPU clock."""
    if depth > 1:
        return descend(depth - 1, block, stats)
    t0 = time.thread_time_ns()
    block.leaf_a()
    stats["leaf_a_ns"] += time.thread_time_ns() - t0
    return None


class Until:
    """A thread's stop condition: SECONDS of its own CPU time, so that a busy machine
    still gets as many samples, or WALL_CAP times SECONDS of wall time."""

    def __init__(self, seconds):
        self.cpu_ns = int(seconds * 1e9)
        self.deadline = time.monotonic() + WALL_CAP * seconds

    def more(self, start_ns):
        return (time.thread_time_ns() - start_ns < self.cpu_ns
                and time.monotonic() < self.deadline)


class Descender(threading.Thread):
    """Thread A: pure Python, Block.leaf_a under DESCEND_DEPTH frames of descend()."""

    def __init__(self, seconds):
        super().__init__(name="py-leaf-a")
        self.seconds = seconds
        self.stats = {"leaf_a_ns": 0, "total_ns": 0, "calls": 0}

    def run(self):
        set_thread_name(self.name)
        start = time.thread_time_ns()
        block = Block()
        until = Until(self.seconds)
        while until.more(start):
            descend(DESCEND_DEPTH, block, self.stats)
            self.stats["calls"] += 1
        self.stats["total_ns"] = time.thread_time_ns() - start


class Worker(threading.Thread):
    """Thread B: py_native_spin() through ctypes and the pure-Python Block.leaf_b."""

    def __init__(self, seconds, lib_path):
        super().__init__(name="py-native-b")
        self.seconds = seconds
        lib = ctypes.CDLL(lib_path)
        self.spin = lib.py_native_spin
        self.spin.argtypes = [ctypes.c_long]
        self.spin.restype = ctypes.c_double
        self.stats = {"native_ns": 0, "leaf_b_ns": 0, "total_ns": 0, "calls": 0}

    def step(self, iters):
        t0 = time.thread_time_ns()
        self.spin(iters)
        self.stats["native_ns"] += time.thread_time_ns() - t0

    def run_native(self, iters):
        self.step(iters)

    def run(self):
        set_thread_name(self.name)
        start = time.thread_time_ns()
        block = Block()
        until = Until(self.seconds)
        rng = os.getpid() & 0x7FFFFFFF
        while until.more(start):
            # sizes x0.5 to x1.5 (see the module's doc), from an inline LCG: no Python call
            # that would add chains of its own to this thread's samples
            rng = (rng * 1103515245 + 12345) & 0x7FFFFFFF
            self.run_native(NATIVE_ITERS * (512 + (rng >> 16) % 1024) // 1024)
            rng = (rng * 1103515245 + 12345) & 0x7FFFFFFF
            iters = LEAF_B_ITERS * (512 + (rng >> 16) % 1024) // 1024
            t0 = time.thread_time_ns()
            block.leaf_b(iters)
            self.stats["leaf_b_ns"] += time.thread_time_ns() - t0
            self.stats["calls"] += 1
        self.stats["total_ns"] = time.thread_time_ns() - start


def run_threads(seconds, lib_path):
    sys.setswitchinterval(SWITCH_INTERVAL)
    a = Descender(seconds)
    b = Worker(seconds, lib_path)
    a.start()
    b.start()
    a.join()
    b.join()
    return {"mode": "threads", "pid": os.getpid(), "python": sys.version.split()[0],
            "threads": {a.name: a.stats, b.name: b.stats}}


def deep_recurse(depth, block, until, start):
    if depth > 1:
        return deep_recurse(depth - 1, block, until, start)
    while until.more(start):
        block.leaf_deep()
    return None


class DeepThread(threading.Thread):
    def __init__(self, seconds, depth):
        super().__init__(name="py-deep")
        self.seconds = seconds
        self.depth = depth

    def run(self):
        set_thread_name(self.name)
        deep_recurse(self.depth, Block(), Until(self.seconds), time.thread_time_ns())


def run_deep(seconds, depth):
    t = DeepThread(seconds, depth)
    t.start()
    t.join()
    return {"mode": "deep", "pid": os.getpid(), "depth": depth, "thread": t.name}


class Forked:
    def work(self, seconds):
        block = Block()
        until = Until(seconds)
        start = time.thread_time_ns()
        while until.more(start):
            block.leaf_fork()


def run_fork(seconds):
    # Let mlprof see this process run Python before it forks.
    block = Block()
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        block.leaf_fork()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            set_thread_name("py-child")
            Forked().work(seconds)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return {"mode": "fork", "pid": os.getpid(), "child_pid": pid, "child_status": status,
            "child_thread": "py-child"}


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "threads" and len(argv) == 4:
        out = run_threads(float(argv[2]), argv[3])
    elif mode == "deep" and len(argv) == 4:
        out = run_deep(float(argv[2]), int(argv[3]))
    elif mode == "fork" and len(argv) == 3:
        out = run_fork(float(argv[2]))
    else:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
