# SPDX-License-Identifier: Apache-2.0
"""Python workload for it.record_cuda: the CUDA runtime called through ctypes, as Python
ML code does under its frameworks. Loads libcudart.so.13 (argv[1]) and a library of host
functions standing in for kernels (argv[2]), waits until mlprof's uprobe is on
cudaLaunchKernel (mlprof attaches its probes when it sees the runtime mapped, after
verifying its CUDA programs the first time: a loaded machine can take more than a second;
the uprobe is an int3 written over the function's first byte, in this process's copy of
the page), at most 10 s, then calls cudaLaunchKernel LAUNCHES times (1 ms sleep every
5) from a known chain of Python functions. Without a GPU every call returns an error (35), after mlprof's entry
uprobe fired with the real arguments. Prints one JSON line.

Usage: cudart_ctypes.py LIBCUDART LIBPYKERN [LAUNCHES]
"""
import ctypes
import json
import os
import sys
import time


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def wait_probed(addr, timeout_s):
    """Waits until the first byte of the function at addr is an int3 (a uprobe), at most
    timeout_s seconds; returns whether it is."""
    end = time.monotonic() + timeout_s
    while ctypes.string_at(addr, 1) != b"\xcc":
        if time.monotonic() > end:
            return False
        time.sleep(0.002)
    return True


def launch_from_python(cudart, kernel, args, n):
    errs = set()
    for i in range(n):
        errs.add(cudart.cudaLaunchKernel(kernel, Dim3(4, 1, 1), Dim3(128, 1, 1), args, 0, None))
        if i % 5 == 4:
            time.sleep(0.001)  # a modest launch rate: mlprof can keep every launch's stack
    return errs


def training_step(cudart, kernel, args, n):
    errs = launch_from_python(cudart, kernel, args, n)
    return sorted(errs)


def main():
    cudart = ctypes.CDLL(sys.argv[1])
    pykern = ctypes.CDLL(sys.argv[2])
    launches = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    cudart.cudaLaunchKernel.restype = ctypes.c_int
    cudart.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3,
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                        ctypes.c_void_p]
    kernel = ctypes.cast(pykern._Z13py_kernel_onePfi, ctypes.c_void_p)
    buf = (ctypes.c_float * 16)()
    n = ctypes.c_int(16)
    ptr = ctypes.c_void_p(ctypes.addressof(buf))
    args = (ctypes.c_void_p * 2)(ctypes.addressof(ptr), ctypes.addressof(n))
    probed = wait_probed(ctypes.cast(cudart.cudaLaunchKernel, ctypes.c_void_p).value, 10.0)
    errs = training_step(cudart, kernel, args, launches)
    print(json.dumps({"pid": os.getpid(), "launches": launches, "kernel": hex(kernel.value),
                      "errors": errs, "python": "%d.%d" % sys.version_info[:2],
                      "probed": probed}))


if __name__ == "__main__":
    main()
