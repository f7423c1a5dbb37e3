# SPDX-License-Identifier: Apache-2.0
"""Fixed-work CPU-bound Python workload for bench/python.sh.

Two threads, one per core, each with a fixed amount of work:
  main thread   <module> -> main -> Trainer.epoch -> Trainer.step -> Model.forward -> layer
                (layer: pure-Python integer arithmetic, holds the GIL)
  "sorter"      Thread._bootstrap -> Thread._bootstrap_inner -> Sorter.run -> Sorter.sort_batch
                -> ctypes -> libffi -> libc qsort(records, strcmp) (native, GIL released)
so Python and native frames interleave in the sorter's stacks. Prints one JSON line with
the wall time of the fixed work (both threads started together, then joined).
Each thread also reports its CPU time and its run-queue wait (/proc/thread-self/schedstat)
over its work, so that time lost to other processes on a shared host can be told apart.
Usage: pywork.py [EPOCHS [SORTS]]   (main-thread epochs, default 40; sorter rounds, default
16; bench/python.sh calibrates both so that each thread works about TARGET_S seconds)
Lines marked "# CALL:<callee>" are the call sites bench/python.sh expects in the frames.
"""
import ctypes
import ctypes.util
import json
import random
import resource
import sys
import threading
import time

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
SORT_ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 16
STEPS, DEPTH, WIDTH = 25, 8, 1000
RECORDS, RECSZ = 1 << 20, 16


def schedstat():
    """(CPU seconds, run-queue wait seconds) of the calling thread so far."""
    with open("/proc/thread-self/schedstat") as f:
        cpu, wait = f.read().split()[:2]
    return int(cpu) / 1e9, int(wait) / 1e9


def layer(x, n):
    s = x
    for i in range(n):
        s = (s * 1103515245 + i) % 2147483647
        s ^= (s >> 7) & 0xFFFF
    return s


class Model:
    def __init__(self, depth, width):
        self.depth, self.width = depth, width

    def forward(self, x):
        for _ in range(self.depth):
            x = layer(x, self.width)  # CALL:layer
        return x


class Trainer:
    def __init__(self, model):
        self.model = model

    def step(self, x):
        return self.model.forward(x)  # CALL:Model.forward

    def epoch(self, x):
        for _ in range(STEPS):
            x = self.step(x)  # CALL:Trainer.step
        return x


libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
libc.qsort.restype = None
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]


class Sorter(threading.Thread):
    """Sorts 1 Mi NUL-terminated 16-byte records with libc qsort and strcmp as the
    comparator: all native once inside qsort, with the GIL released by ctypes."""

    def __init__(self):
        super().__init__(name="sorter")
        rnd = random.Random(42)
        letters = bytes(range(97, 123)) * 10
        table = bytes(letters[i % 260] for i in range(256))
        raw = bytearray(rnd.randbytes(RECORDS * RECSZ).translate(table))
        raw[RECSZ - 1::RECSZ] = bytes(RECORDS)
        self.src = (ctypes.c_char * len(raw)).from_buffer(raw)
        self.buf = ctypes.create_string_buffer(len(raw))
        self.cmp = ctypes.cast(libc.strcmp, ctypes.c_void_p)
        self.seconds = 0.0
        self.sched = (0.0, 0.0)

    def sort_batch(self):
        ctypes.memmove(self.buf, self.src, RECORDS * RECSZ)
        libc.qsort(self.buf, RECORDS, RECSZ, self.cmp)  # CALL:qsort

    def run(self):
        libc.prctl(15, b"sorter", 0, 0, 0)  # PR_SET_NAME: the thread's comm
        t0, s0 = time.perf_counter(), schedstat()
        for _ in range(SORT_ROUNDS):
            self.sort_batch()  # CALL:Sorter.sort_batch
        self.seconds = time.perf_counter() - t0
        s1 = schedstat()
        self.sched = (s1[0] - s0[0], s1[1] - s0[1])


def cpu_s():
    """User + system CPU of this whole process so far (both threads, set-up included)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    trainer = Trainer(Model(DEPTH, WIDTH))
    sorter = Sorter()
    t0, s0 = time.perf_counter(), schedstat()
    sorter.start()
    x = 1
    for _ in range(EPOCHS):
        x = trainer.epoch(x)  # CALL:Trainer.epoch
    main_s = time.perf_counter() - t0
    s1 = schedstat()
    sorter.join()
    wall = time.perf_counter() - t0
    r = lambda v: round(v, 4)  # noqa: E731
    print(json.dumps({"wall_s": r(wall), "main_s": r(main_s), "sorter_s": r(sorter.seconds),
                      "main_cpu_s": r(s1[0] - s0[0]), "main_wait_s": r(s1[1] - s0[1]),
                      "sorter_cpu_s": r(sorter.sched[0]), "sorter_wait_s": r(sorter.sched[1]),
                      "cpu_s": r(cpu_s()), "result": x, "python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()  # CALL:main
