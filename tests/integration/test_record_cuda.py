# SPDX-License-Identifier: Apache-2.0
"""mlprof record --cuda: kernel launches, synchronize time, copies, GPU memory and NCCL
calls from uprobes on the CUDA runtime, the driver and NCCL, on a machine without a GPU.

- CUDA 13 runtime (the real libcudart, from PyPI), shared and static: exact launch counts
  per kernel in the summary, kernel names as leaves over full call chains, exact weights
  when every launch is captured, and sampled launch stacks calibrated to the exact counts
  (each kernel's weights sum to its count), copy bytes
  by direction (runtime calls fail without a driver, after the entry probe fired).
- CUDA 12 runtime (libcudart.so.12) called from C the way nvcc's stubs call it.
- Driver API (Triton's way: dlopen libcuda.so.1, cuModuleGetFunction, cuLaunchKernel) on a
  test double of libcuda.so.1: kernel names from handles, synchronize time against the
  program's own clock, GPU memory allocated and in use by site, a handle made before
  mlprof attached.
- NCCL on a test double of libnccl.so.2: calls, bytes, op and dtype labels.
- Python calling cudart through ctypes: Python frames under the launch.
- Bad input: a stripped libcudart, a stripped static binary, libraries named
  libcudart.so.13 that are no CUDA runtime, many short-lived CUDA processes.

The workloads are built by tests/cuda.cmake (see tests/cuda/). Cases whose toolchain is
missing are skipped, saying why (scripts/cuda-toolchain.sh installs it); the test exits 77
(ctest: skipped) when nothing ran at all.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

from itutil import LIBC_START, MLPROF, need_root, tmpdir
import pprof_reader

CUDA_DIR = os.environ.get("CUDA_TEST_DIR", "build/tests/cuda")
CUDA13_LIB = os.environ.get("CUDA13_LIB", "")
CUDA12_LIB = os.environ.get("CUDA12_LIB", "")
SKIP_NVCC = os.environ.get("CUDA_SKIP_NVCC", "")
SKIP_CU12 = os.environ.get("CUDA_SKIP_CU12", "")
FAKE_DRV_DIR = os.path.join(CUDA_DIR, "fakedrv")
EVERY = "10000000"  # --cuda-rate high enough that every call is captured (weight 1)
MIB = 1 << 20

RAN = []  # cases that ran; none at all -> exit 77

# What the workloads do (keep in sync with tests/cuda/*.c, *.cu).
K_ALPHA = "kern_alpha(float*, int)"
K_BETA = "kern_beta(float*, float, int)"
K_GAMMA = "void mlp::kern_gamma<double>(double*, int)"
CU13_CHAINS = {  # kernel -> (stub, chain below the stub)
    K_ALPHA: ("__device_stub__Z10kern_alphaPfi", ["launch_alpha", "phase_alpha"]),
    K_BETA: ("__device_stub__Z9kern_betaPffi", ["launch_beta", "phase_beta"]),
    K_GAMMA: ("__device_stub__ZN3mlp10kern_gammaIdEEvPT_i", ["launch_gamma", "phase_gamma"]),
}


# --- helpers -------------------------------------------------------------------------

def need(test, *paths, why=""):
    need_root(test)
    if why:
        raise unittest.SkipTest(why)
    for p in paths:
        if not p or not os.path.exists(p):
            raise unittest.SkipTest("missing %s (not built: see tests/cuda.cmake)" % p)


def chain_ok(names, expected):
    """names leaf first; expected: str (exact) or compiled regex (full match), from the leaf
    down to main; below main only libc's start code and _start; nothing truncated."""
    if any(n.startswith("[truncated") for n in names) or len(names) <= len(expected):
        return False
    for n, e in zip(names, expected):
        if (n != e) if isinstance(e, str) else not e.fullmatch(n):
            return False
    rest = names[len(expected):]
    return rest[-1] == "_start" and all(n in LIBC_START for n in rest[:-1])


def stub(prefix):
    """A host stub frame: its demangled name starts with the stub symbol."""
    return re.compile(re.escape(prefix) + r"(\(.*\))?")


def load(path):
    """[(names leaf first, values, labels)] of a pprof file."""
    return list(pprof_reader.load(path).stacks())


def total(stacks, pred=lambda n, l: True, i=0):
    return sum(v[i] for n, v, l in stacks if pred(n, l))


SUMMARY_RE = re.compile(
    r"^mlprof: cuda: (\d+) kernel launches, (\d+) graph launches, (\d+) synchronize calls "
    r"\(([\d.]+) s blocked\), (\d+) copies, (\d+) allocations, (\d+) frees, "
    r"(\d+) NCCL calls")
GPU_MEM_RE = re.compile(r"^mlprof: cuda: GPU memory: (-?\d+) bytes allocated, (-?\d+) bytes "
                        r"still in use")
KERNEL_RE = re.compile(r"^ +(\d+)  (\S.*)$")


def summary(stderr):
    """The CUDA lines of record's summary: dict with launches, graphs, syncs, blocked_s,
    copies, allocs, frees, nccl, kernels {name: count}, and mem (allocated, in use) if any;
    None when there is no CUDA line."""
    out = None
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = SUMMARY_RE.match(line)
        if not m:
            continue
        out = dict(zip(("launches", "graphs", "syncs"), map(int, m.group(1, 2, 3))))
        out["blocked_s"] = float(m.group(4))
        out.update(zip(("copies", "allocs", "frees", "nccl"), map(int, m.group(5, 6, 7, 8))))
        out["kernels"] = {}
        for nxt in lines[i + 1:]:
            mm = GPU_MEM_RE.match(nxt)
            if mm:
                out["mem"] = tuple(map(int, mm.groups()))
                continue
            km = KERNEL_RE.match(nxt)
            if not km:
                break
            out["kernels"][km.group(2)] = int(km.group(1))
    return out


def once(cls, make):
    """The class's one recording, made by make() for its first test; a recording that
    failed is not tried again by the other tests of the class."""
    if "rec" not in cls.__dict__:
        cls.rec = None
        cls.rec = make()
    if cls.rec is None:
        raise AssertionError("the recording failed (see the class's first failure)")
    return cls.rec


class NoSummary:
    """A recording's summary without a CUDA line: false, and any lookup fails the test with
    what mlprof printed (not a TypeError that hides it)."""

    def __init__(self, stderr):
        self.stderr = stderr

    def __bool__(self):
        return False

    def __getitem__(self, key):
        raise AssertionError("no CUDA summary line (looking for %r); mlprof stderr:\n%s"
                             % (key, self.stderr))

    def get(self, key, default=None):
        return self[key]


class Recorded:
    """One mlprof record run (outputs in a fresh directory); env: extra environment for
    mlprof and so for the command (no wrapper process that execs)."""

    def __init__(self, name, args, cmd, env=None, timeout=240):
        self.dir = tmpdir()
        self.base = os.path.join(self.dir, name)
        argv = [MLPROF, "record", "-o", self.base + ".pb.gz"] + args + ["--"] + cmd
        t0 = time.monotonic()
        self.cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                 env=dict(os.environ, **(env or {})))
        self.wall = time.monotonic() - t0
        if self.cp.returncode != 0:
            raise AssertionError("mlprof failed (%d): %s\n%s" % (
                self.cp.returncode, " ".join(argv), self.cp.stderr))
        self.js = [json.loads(line) for line in self.cp.stdout.splitlines()
                   if line.startswith("{")]
        self.sum = summary(self.cp.stderr) or NoSummary(self.cp.stderr)
        print("  [%s: mlprof record took %.1f s]" % (name, self.wall), file=sys.stderr)

    def path(self, kind):
        return "%s.%s.pb.gz" % (self.base, kind)

    def stacks(self, kind):
        p = self.path(kind)
        if not os.path.exists(p):
            raise AssertionError("%s not written; mlprof said:\n%s" % (p, self.cp.stderr))
        return load(p)

    def types(self, kind):
        return pprof_reader.load(self.path(kind)).type_names()

    def ctx(self):
        return "\nmlprof stderr:\n" + self.cp.stderr


def probing_lines(stderr):
    """Paths of the files mlprof said it probes."""
    return [line.split(" entry points in ", 1)[1] for line in stderr.splitlines()
            if line.startswith("mlprof: cuda: probing ") and " entry points in " in line]


def check_cu13_summary(t, rec):
    """Exact counts in the summary, each kernel under its name (the process has exited)."""
    js = rec.js[0]
    want = {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]}
    s = rec.sum
    t.assertIsNotNone(s, rec.ctx())
    t.assertEqual(s["launches"], sum(want.values()), rec.ctx())
    t.assertEqual((s["graphs"], s["syncs"], s["copies"], s["allocs"], s["nccl"]),
                  (0, js["sync_calls"], js["h2d_calls"] + 3, 1, 0), rec.ctx())
    t.assertEqual(sorted(s["kernels"].values()), sorted(want.values()), rec.ctx())
    t.assertEqual(s["kernels"], want, rec.ctx())


def check_cu13_exact(t, rec):
    """A CUDA 13 workload (cuda_launch ITER) recorded with every launch captured: the
    profiles."""
    js = rec.js[0]
    want = {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]}
    # launches: the kernel as leaf over the full chain, every launch captured (weight 1)
    t.assertEqual(rec.types("cuda_launches"), [("cuda_launches", "count")])
    st = rec.stacks("cuda_launches")
    for k, n in want.items():
        stub_name, below = CU13_CHAINS[k]
        chain = [k, "cudaLaunchKernel", stub(stub_name)] + below + ["train_step", "run_steps",
                                                                     "main"]
        got = total(st, lambda names, l, k=k: names[0] == k)
        full = total(st, lambda names, l, c=chain: chain_ok(names, c))
        bad = [names for names, v, l in st if names[0] == k and not chain_ok(names, chain)]
        t.assertEqual(got, n, "%s: weight %d, launched %d%s" % (k, got, n, rec.ctx()))
        t.assertEqual(full, n, "%s: %d/%d full chains, e.g. %s" % (k, full, n, bad[:2]))
    t.assertEqual(total(st), sum(want.values()), "launch weights of other leaves: %s" % [
        names[:3] for names, v, l in st if names[0] not in want])
    # copies: bytes by direction, from the entry arguments of calls that then failed
    t.assertNotEqual(js["copy_err"], [0, 0, 0, 0])
    t.assertEqual(rec.types("cuda_memcpy"), [("memcpy_bytes", "bytes")])
    st = rec.stacks("cuda_memcpy")
    copies = {
        "host_to_device": (js["h2d_calls"] * js["h2d_bytes"], ["cudaMemcpy", "copy_inputs"]),
        "device_to_host": (js["d2h_bytes"], ["cudaMemcpy", "copy_outputs"]),
        "device_to_device": (js["d2d_bytes"], ["cudaMemcpyAsync", "copy_on_device"]),
        "default": (js["default_bytes"], ["cudaMemcpyAsync", "copy_default"]),
    }
    for d, (nbytes, chain) in copies.items():
        got = total(st, lambda names, l, d=d: l.get("direction") == d)
        full = total(st, lambda names, l, d=d, c=chain: l.get("direction") == d and
                     chain_ok(names, c + ["main"]))
        t.assertEqual((got, full), (nbytes, nbytes), "%s: %s" % (d, [
            (names, v) for names, v, l in st if l.get("direction") == d]))
    t.assertEqual(total(st), sum(b for b, _ in copies.values()))
    # synchronize calls: both seen, from finish()
    t.assertEqual(rec.types("cuda_sync"), [("cuda_sync_wait", "nanoseconds")])
    st = rec.stacks("cuda_sync")
    for api in ("cudaStreamSynchronize", "cudaDeviceSynchronize"):
        ns = total(st, lambda names, l, a=api: chain_ok(names, [a, "finish", "main"]))
        t.assertTrue(0 < ns < 1_000_000_000, "%s: %d ns blocked: %s" % (api, ns, st))
    # cudaMalloc failed (no driver): nothing was allocated
    t.assertNotEqual(js["malloc_err"], 0)
    if os.path.exists(rec.path("cuda_memory")):
        st = rec.stacks("cuda_memory")
        t.assertEqual((total(st, i=0), total(st, i=1)), (0, 0), st)
    t.assertTrue(os.path.exists(rec.base + ".pb.gz"))


# --- CUDA 13 runtime -----------------------------------------------------------------

class Cuda13Shared(unittest.TestCase):
    """cudart shared (libcudart.so.13): 500 steps of 6 kern_alpha, 2 kern_beta, 1
    mlp::kern_gamma<double> launches, every one captured."""
    exe = "cuda_launch_shared"

    def setUp(self):
        need(self, os.path.join(CUDA_DIR, self.exe), why=SKIP_NVCC)
        RAN.append(self.exe)
        self.rec = once(type(self), lambda: Recorded(
            self.exe, ["--cuda-rate", EVERY], [os.path.join(CUDA_DIR, self.exe), "500"]))

    def test_profiles(self):
        check_cu13_exact(self, self.rec)

    def test_summary(self):
        check_cu13_summary(self, self.rec)


class Cuda13Static(Cuda13Shared):
    """cudart static: the runtime's entry points only in the executable's .symtab."""
    exe = "cuda_launch_static"


class Cuda13Sampled(unittest.TestCase):
    """Default --cuda-rate (500 per CPU per second) below the launch rate: counts stay exact
    in the summary, the profile holds a sample of the stacks whose weights are calibrated to
    those counts (each kernel's total is its count; the estimate before was within 10%)."""

    def test_sampled_shares(self):
        exe = os.path.join(CUDA_DIR, "cuda_launch_shared")
        need(self, exe, why=SKIP_NVCC)
        rec = Recorded("sampled", [], [exe, "1000"])
        RAN.append("sampled")
        js = rec.js[0]
        want = {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]}
        n = sum(want.values())
        # exact counts (the names in the summary are Cuda13Shared.test_summary's business)
        self.assertEqual(rec.sum["launches"], n, rec.ctx())
        self.assertEqual(sorted(rec.sum["kernels"].values()), sorted(want.values()), rec.ctx())
        st = rec.stacks("cuda_launches")
        samples = sum(1 for names, v, l in st if names[0] in want)
        self.assertLess(samples, n * 0.6, "launches were not sampled: %d stacks" % samples)
        # the sampled weights are calibrated to the exact counts: each kernel's total is
        # its count, split over its call sites in proportion to their captures
        tot = total(st)
        self.assertEqual(tot, n, "weights %d vs %d launches%s" % (tot, n, rec.ctx()))
        for k, c in want.items():
            self.assertEqual(total(st, lambda names, l, k=k: names[0] == k), c, rec.ctx())
        m = re.search(r"^mlprof: cuda: launch stacks calibrated to the exact counts: 3 "
                      r"kernels, sampled weights (\d+) -> %d launches$" % n, rec.cp.stderr, re.M)
        self.assertIsNotNone(m, rec.ctx())
        # what the weights said before: an unbiased estimate, within 10%
        self.assertLess(abs(int(m.group(1)) - n) / n, 0.10, rec.ctx())
        stub_name, below = CU13_CHAINS[K_ALPHA]
        chain = [K_ALPHA, "cudaLaunchKernel", stub(stub_name)] + below + ["train_step",
                                                                         "run_steps", "main"]
        a = total(st, lambda names, l: names[0] == K_ALPHA)
        self.assertEqual(total(st, lambda names, l: chain_ok(names, chain)), a)


class AgentCalibrated(unittest.TestCase):
    """The agent's windows: launches over several 2 s windows, sampled (--cuda-rate 100 per
    CPU per second against ~4000 launches a second); BPF counts per window, and each
    window's stacks are calibrated to its own counts, so every kernel's weight summed over
    the windows is its exact count (uncalibrated, the estimate is off by a few percent;
    counted per process instead of per window, the grace period's launches went to the
    wrong window)."""

    def test_windows_sum_to_exact_counts(self):
        exe = os.path.join(CUDA_DIR, "cuda_launch_shared")
        need(self, exe, why=SKIP_NVCC)
        RAN.append("agent")
        d = tmpdir()
        out = os.path.join(d, "out")
        logpath = os.path.join(d, "agent.log")
        log = open(logpath, "w")

        def logtext():
            with open(logpath) as f:
                return f.read()[-3000:]

        agent = subprocess.Popen(
            [MLPROF, "agent", "--output-dir", out, "--upload-interval", "2", "--cuda",
             "launches", "--cuda-rate", "100", "--memory=false", "--process-regex",
             "cuda_launch_shared", "--metrics-addr", "127.0.0.1:0"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            time.sleep(2)
            self.assertIsNone(agent.poll(), logtext())
            cp = subprocess.run([exe, "2500", "0"], capture_output=True, text=True, timeout=120)
            self.assertEqual(cp.returncode, 0, cp.stderr)
            js = json.loads(cp.stdout.strip().splitlines()[-1])
            time.sleep(3.5)  # the last window closes (2 s + grace)
        finally:
            agent.send_signal(signal.SIGINT)
            agent.wait(timeout=60)
            log.close()
        files = glob.glob(os.path.join(out, "**", "*cuda_launches*.pb.gz"), recursive=True)
        ctx = "\nfiles %s\nagent log:\n%s" % (sorted(files), logtext())
        self.assertGreaterEqual(len(files), 2, "launches should span windows" + ctx)
        got = {K_ALPHA: 0, K_BETA: 0, K_GAMMA: 0}
        stacks = 0
        for f in files:
            for names, v, l in load(f):
                if names and names[0] in got:
                    got[names[0]] += v[0]
                    stacks += 1
        want = {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]}
        self.assertLess(stacks, sum(want.values()) * 0.2, "launches were not sampled" + ctx)
        self.assertEqual(got, want, ctx)


# --- CUDA 12 runtime -----------------------------------------------------------------

class Cuda12(unittest.TestCase):
    """libcudart.so.12 called like nvcc's CUDA 12 stubs do: the launched function is the
    kernel's host function, named by its symbol (the kernel's mangled name)."""
    KERNELS = {  # name -> (API, stub, host function, caller)
        "cu12_alpha(float*, int)": ("cudaLaunchKernel", "__device_stub__Z10cu12_alphaPfi",
                                    "forward_layer", "alpha"),
        "ops::cu12_beta(float const*, float*, unsigned long)": (
            "cudaLaunchKernelExC", "__device_stub__ZN3ops9cu12_betaEPKfPfm", "backward_layer",
            "beta"),
        "void cu12_gamma<float>(float*, int)": (
            "cudaLaunchKernel_ptsz", "__device_stub__Z10cu12_gammaIfEvPT_i", "optimizer_step",
            "gamma"),
    }

    def setUp(self):
        need(self, os.path.join(CUDA_DIR, "cu12_launch"), CUDA12_LIB, why=SKIP_CU12)
        RAN.append("cu12")
        self.rec = once(Cuda12, lambda: Recorded(
            "cu12", ["--cuda-rate", EVERY], [os.path.join(CUDA_DIR, "cu12_launch"), "500"]))

    def test_profile(self):
        rec = self.rec
        js = rec.js[0]
        self.assertNotEqual(js["err"], 0)  # no driver: the runtime failed every launch
        st = rec.stacks("cuda_launches")
        for k, (api, stub_name, caller, key) in self.KERNELS.items():
            chain = [k, api, stub(stub_name), k, caller, "train_iteration", "main"]
            got = total(st, lambda names, l, k=k: names[0] == k)
            full = total(st, lambda names, l, c=chain: chain_ok(names, c))
            self.assertEqual((got, full), (js[key], js[key]), "%s: %s" % (k, [
                names for names, v, l in st if names[0] == k and not chain_ok(names, chain)][:2]))
        self.assertEqual(total(st), js["alpha"] + js["beta"] + js["gamma"])

    def test_summary(self):
        """Exact counts under the kernels' names (the process has exited by then)."""
        rec = self.rec
        js = rec.js[0]
        want = {k: js[v[3]] for k, v in self.KERNELS.items()}
        self.assertEqual(rec.sum["launches"], sum(want.values()), rec.ctx())
        self.assertEqual(sorted(rec.sum["kernels"].values()), sorted(want.values()), rec.ctx())
        self.assertEqual(rec.sum["kernels"], want, rec.ctx())


# --- driver API (test double of libcuda.so.1) ----------------------------------------

class Driver(unittest.TestCase):
    """drv_triton run 100 on the libcuda.so.1 test double: 1200 triton_kernel_a
    (cuLaunchKernel), 400 triton_kernel_b (cuLaunchKernelEx), 200 triton_kernel_c (a
    cuLibraryGetKernel handle), 100 triton_kernel_d (cuLibraryGetKernel +
    cuKernelGetFunction); allocations and frees at known sites; 10 x 20 ms
    cuStreamSynchronize and 5 x 7 ms cuCtxSynchronize."""

    def setUp(self):
        exe = os.path.join(CUDA_DIR, "drv_triton")
        need(self, exe, os.path.join(FAKE_DRV_DIR, "libcuda.so.1"))
        RAN.append("driver")
        self.rec = once(Driver, lambda: Recorded(
            "drv", ["--cuda-rate", EVERY, "--log-level", "info"], [exe, "run", "100"],
            env={"LD_LIBRARY_PATH": FAKE_DRV_DIR}))
        self.js = [j for j in self.rec.js if "handles" in j][0]
        self.mem = [j for j in self.rec.js if "mem" in j][0]["mem"]

    def launches(self, name):
        return total(self.rec.stacks("cuda_launches"), lambda names, l: names[0] == name)

    def check_kernel(self, name, api, site, caller, n):
        st = self.rec.stacks("cuda_launches")
        chain = [name, api, site, caller, "run_kernels", "main"]
        got = total(st, lambda names, l: names[0] == name)
        full = total(st, lambda names, l: chain_ok(names, chain))
        self.assertEqual((got, full), (n, n), "%s: %s%s" % (name, [
            (names, v) for names, v, l in st if not chain_ok(names, chain)][:4], self.rec.ctx()))

    def test_link_kind(self):
        """Probes go through one uprobe_multi link per program and library where the
        kernel has them (a per-offset link each costs an RCU grace period to detach:
        seconds at exit for PyTorch's ~80 CUDA/NCCL probes); MLPROF_TEST_NO_UPROBE_MULTI=1
        (it.record_cuda_per_probe) takes the per-offset fallback of older kernels."""
        per_probe = os.environ.get("MLPROF_TEST_NO_UPROBE_MULTI") == "1"
        want = "one link per probe" if per_probe else "uprobe_multi links"
        self.assertIn("CUDA/NCCL uprobe programs loaded (" + want, self.rec.cp.stderr,
                      self.rec.ctx())

    def test_module_function_names(self):
        self.assertEqual(self.js["err"], 0)
        self.check_kernel("triton_kernel_a", "cuLaunchKernel", "launch_a", "triton_forward",
                          self.js["a"])
        self.check_kernel("triton_kernel_b", "cuLaunchKernelEx", "launch_b", "triton_backward",
                          self.js["b"])

    def test_library_kernel_name(self):
        """A CUkernel from cuLibraryGetKernel passed to cuLaunchKernel."""
        self.check_kernel("triton_kernel_c", "cuLaunchKernel", "launch_c", "triton_forward",
                          self.js["c"])

    def test_kernel_get_function_name(self):
        """The CUfunction cuKernelGetFunction gives for a named CUkernel (docs/cuda.md:
        names come from cuModuleGetFunction / cuLibraryGetKernel + cuKernelGetFunction)."""
        self.check_kernel("triton_kernel_d", "cuLaunchKernel", "launch_d", "triton_backward",
                          self.js["d"])

    def test_all_launches_counted(self):
        st = self.rec.stacks("cuda_launches")
        n = sum(self.js[k] for k in "abcd")
        self.assertEqual(total(st), n)
        self.assertEqual(self.rec.sum["launches"], n, self.rec.ctx())
        unnamed = [names[0] for names, v, l in st if names[0].startswith("[cuda kernel")]
        self.assertTrue(all(re.fullmatch(r"\[cuda kernel 0x[0-9a-f]+\]", u) for u in unnamed))

    def test_summary_kernels(self):
        """Exact counts under the kernels' names (the process has exited by then)."""
        want = {"triton_kernel_a": self.js["a"], "triton_kernel_b": self.js["b"],
                "triton_kernel_c": self.js["c"], "triton_kernel_d": self.js["d"]}
        self.assertEqual(sorted(self.rec.sum["kernels"].values()), sorted(want.values()),
                         self.rec.ctx())
        self.assertEqual(self.rec.sum["kernels"], want, self.rec.ctx())

    def test_sync_time(self):
        """Blocked time per API within 10% of the program's own CLOCK_MONOTONIC sums."""
        st = self.rec.stacks("cuda_sync")
        self.assertEqual(self.rec.types("cuda_sync"), [("cuda_sync_wait", "nanoseconds")])
        for api, caller, key in (("cuStreamSynchronize", "wait_stream", "stream_sync_ns"),
                                 ("cuCtxSynchronize", "wait_ctx", "ctx_sync_ns")):
            ns = total(st, lambda names, l: chain_ok(names, [api, caller, "run_sync", "main"]))
            want = self.js[key]
            self.assertLess(abs(ns - want) / want, 0.10,
                            "%s: %d ns in the profile, %d measured: %s" % (api, ns, want, st))
        self.assertEqual(total(st), total(st, lambda names, l: chain_ok(
            names, [names[0], names[1], "run_sync", "main"])))
        s = self.rec.sum
        want = self.js["stream_sync_calls"] + self.js["ctx_sync_calls"]
        self.assertEqual(s["syncs"], want, self.rec.ctx())
        measured = (self.js["stream_sync_ns"] + self.js["ctx_sync_ns"]) / 1e9
        self.assertLess(abs(s["blocked_s"] - measured) / measured, 0.10, self.rec.ctx())

    def test_memory_by_site(self):
        """A: 3 x 1 MiB, 1 freed; B: 2 x 4 MiB (the first at the address A freed), both
        freed; C: 64 MiB + 1 fails. alloc_space A 3 MiB, B 8 MiB, C 0; inuse_space A 2 MiB,
        B 0 (what was not freed when the process ended)."""
        self.assertEqual(self.mem["b"][0], self.mem["a"][1])  # the double reused the address
        self.assertNotEqual(self.js["alloc_c_err"], 0)
        self.assertEqual(self.rec.types("cuda_memory"),
                         [("alloc_space", "bytes"), ("inuse_space", "bytes")])
        st = self.rec.stacks("cuda_memory")
        got = {}
        for site in ("alloc_site_a", "alloc_site_b", "alloc_site_c"):
            pred = (lambda names, l, s=site:
                    chain_ok(names, ["cuMemAlloc_v2", s, "run_memory", "main"]))
            got[site] = (total(st, pred, 0), total(st, pred, 1))
        self.assertEqual(got, {"alloc_site_a": (3 * MIB, 2 * MIB),
                               "alloc_site_b": (8 * MIB, 0), "alloc_site_c": (0, 0)},
                         "%s%s" % (st, self.rec.ctx()))
        self.assertEqual((total(st, i=0), total(st, i=1)), (11 * MIB, 2 * MIB), st)

    def test_memory_summary(self):
        """The summary: 6 cuMemAlloc_v2 calls (5 succeeded) and 3 frees counted apart, and
        2 MiB in use at the end."""
        s = self.rec.sum
        with self.subTest("allocation calls"):
            self.assertIn(s["allocs"], (5, 6), "allocations in the summary" + self.rec.ctx())
            self.assertEqual(s["frees"], 3, "frees in the summary" + self.rec.ctx())
        with self.subTest("GPU memory line"):
            self.assertEqual(s.get("mem"), (11 * MIB, 2 * MIB), self.rec.ctx())


TENSOR_RE = re.compile(r"^mlprof: cuda: PyTorch tensors \(caching allocator\): (\d+) "
                       r"allocations, (\d+) frees \(exact counts\)")


class TorchAllocator(unittest.TestCase):
    """torch_alloc 200: the test double of PyTorch's CUDA caching allocator (its USDT
    probes pytorch:malloc/free behind semaphores; no GPU here). keep_tensors keeps 64 x
    4 MiB; step_tensors allocates 8 x 3 MiB + 64 x 16 KiB a step and frees them all. The
    cuda_tensors profile is sampled by bytes (1 MiB on average)."""

    def setUp(self):
        exe = os.path.join(CUDA_DIR, "torch_alloc")
        need(self, exe)
        RAN.append("torch_alloc")
        self.rec = once(TorchAllocator, lambda: Recorded(
            "talloc", ["--log-level", "info"], [exe, "200"]))
        self.js = self.rec.js[0]

    def test_in_use_by_site(self):
        """In use at the end: the kept tensors' 256 MiB under keep_tensors (within 10%),
        nothing under step_tensors; allocated under step_tensors within 5% of the bytes."""
        self.assertEqual(self.rec.types("cuda_tensors"),
                         [("alloc_objects", "count"), ("alloc_space", "bytes"),
                          ("inuse_objects", "count"), ("inuse_space", "bytes")])
        st = self.rec.stacks("cuda_tensors")
        ctx = "\n%s%s" % (self.js, self.rec.ctx())

        def under(fn, i):
            return total(st, lambda names, l: chain_ok(
                names, ["tensor_malloc", fn, "main"]), i)
        kept = under("keep_tensors", 3)
        self.assertLess(abs(kept / self.js["kept_bytes"] - 1), 0.10, "in use: %d%s" % (kept, ctx))
        self.assertEqual(under("step_tensors", 3), 0, ctx)
        alloc = under("step_tensors", 1)
        self.assertLess(abs(alloc / self.js["step_bytes"] - 1), 0.05, "allocated: %d%s" % (
            alloc, ctx))
        # objects: 64 kept, in use (sampled: 4 MiB tensors at 1 MiB are nearly all drawn)
        self.assertLess(abs(under("keep_tensors", 2) - 64), 8, ctx)
        self.assertEqual(total(st, i=3), kept, ctx)

    def test_exact_counts(self):
        """The summary counts every allocation and free (the semaphores were set: the
        double waits for them, and runs its probe sites only while they are)."""
        m = [TENSOR_RE.match(line) for line in self.rec.cp.stderr.splitlines()]
        m = [x for x in m if x]
        self.assertEqual(len(m), 1, self.rec.ctx())
        self.assertEqual((int(m[0].group(1)), int(m[0].group(2))),
                         (self.js["allocs"], self.js["frees"]), self.rec.ctx())


class AutogradWorker(unittest.TestCase):
    """autograd_engine 40 25: the test double of PyTorch's autograd engine on a GPU (no GPU
    here): main -> run_backward -> Engine::execute waits while the thread pt_autograd_0
    launches a kernel and burns CPU in worker_burn for 25 ms, 40 times. From the second
    pass (the first launch from a worker tells mlprof the passes run on a GPU), the
    worker's samples are shown under the stack that entered Engine::execute (probed in
    the executable, as in libtorch_cpu)."""

    def setUp(self):
        exe = os.path.join(CUDA_DIR, "autograd_engine")
        need(self, exe)
        RAN.append("autograd_engine")
        self.rec = once(AutogradWorker, lambda: Recorded(
            "autograd", ["--log-level", "info"], [exe, "40", "25"]))

    def test_worker_under_caller(self):
        st = load(self.rec.base + ".pb.gz")
        engine = re.compile(r"torch::autograd::Engine::execute\(.*")
        # run_backward tail-calls Engine::execute: main is its caller's frame
        chain = ["worker_burn", "worker_main", "start_thread", "clone3", engine, "main"]
        work = [(n, v) for n, v, l in st
                if l.get("thread_name") == "pt_autograd_0" and n and n[0] == "worker_burn"]
        got = sum(v[0] for n, v in work)
        under = sum(v[0] for n, v in work if chain_ok(n, chain))
        self.assertGreaterEqual(got, 40, "worker samples%s" % self.rec.ctx())
        # all but the first pass's (~1/40)
        self.assertGreaterEqual(under / got, 0.90, "%s%s" % (
            [n for n, v in work if not chain_ok(n, chain)][:3], self.rec.ctx()))
        # the caller's own samples stay its own
        for n, v, l in st:
            if l.get("thread_name") != "pt_autograd_0":
                self.assertNotIn("worker_main", n, self.rec.ctx())

    def test_summary(self):
        m = re.search(r"^mlprof: torch: (\d+) backward passes; (\d+) samples of their "
                      r"autograd worker threads shown under the caller", self.rec.cp.stderr,
                      re.M)
        self.assertIsNotNone(m, self.rec.ctx())
        self.assertEqual(int(m.group(1)), 39, self.rec.ctx())
        self.assertGreater(int(m.group(2)), 40, self.rec.ctx())


class PendingReturnProbe(unittest.TestCase):
    """autograd_engine 40 25 cpu: Engine::execute burns the CPU on the calling thread (as
    CPU-only PyTorch runs a backward pass) while mlprof's return probe on it is pending: the
    caller's return address on the stack is the uprobe trampoline, and an unwind of the
    stack copy ended there (Engine::execute the outermost frame: PyTorch's loop lost the
    Python frames of every backward sample). The capture puts the original addresses back
    (the task's return instances): >= 95% of the samples in caller_burn reach main."""

    def test_callers_past_the_trampoline(self):
        exe = os.path.join(CUDA_DIR, "autograd_engine")
        need(self, exe)
        RAN.append("pending-uretprobe")
        rec = Recorded("uret", [], [exe, "40", "25", "cpu"])
        self.assertEqual(rec.js[0]["on_caller"], 1, rec.ctx())
        st = load(rec.base + ".pb.gz")
        engine = re.compile(r"torch::autograd::Engine::execute\(.*")
        # run_backward tail-calls Engine::execute: main is its caller's frame
        chain = ["worker_burn", "caller_burn", engine, "main"]
        work = [(n, v) for n, v, l in st if n and n[0] == "worker_burn"]
        got = sum(v[0] for n, v in work)
        under = sum(v[0] for n, v in work if chain_ok(n, chain))
        self.assertGreaterEqual(got, 40, "samples in caller_burn%s" % rec.ctx())
        self.assertGreaterEqual(under / got, 0.95, "%s%s" % (
            [n for n, v in work if not chain_ok(n, chain)][:3], rec.ctx()))


class RuntimeOverDriver(unittest.TestCase):
    """drv_triton rt 400: a CUDA runtime (the fake_rt_over_drv.c test double) whose every
    cudaLaunchKernel makes one cuLaunchKernel on the same thread, as cudart does on a GPU
    host, then 200 direct cuLaunchKernel, then 100 cudaMalloc + cudaFree pairs (each making
    cuMemAlloc_v2 / cuMemFree_v2). Each launch is counted once: 400 under cudaLaunchKernel
    (none of them again under cuLaunchKernel), 200 under cuLaunchKernel; 100 allocations and
    100 frees (a GPU host counted 400 frees for 200 cudaFree calls), nothing left in use."""

    def test_runtime_launch_counted_once(self):
        exe = os.path.join(CUDA_DIR, "drv_triton")
        rt = os.path.join(CUDA_DIR, "fakert", "libfakert.so")
        need(self, exe, rt, os.path.join(FAKE_DRV_DIR, "libcuda.so.1"))
        RAN.append("rt-over-driver")
        rec = Recorded("rtdrv", ["--cuda-rate", EVERY], [exe, "rt", "400", rt],
                       env={"LD_LIBRARY_PATH": FAKE_DRV_DIR})
        js = rec.js[0]
        self.assertEqual(js["err"], 0)
        n_rt, n_drv = js["rt"], js["direct"]
        self.assertEqual(rec.sum["launches"], n_rt + n_drv, rec.ctx())
        st = rec.stacks("cuda_launches")
        both = [names for names, v, l in st if "cudaLaunchKernel" in names and
                "cuLaunchKernel" in names]
        self.assertEqual(both, [], "a runtime launch counted again at the driver")
        via_rt = total(st, lambda names, l: chain_ok(names, [
            names[0], "cudaLaunchKernel", "launch_rt", "run_rt", "main"]))
        direct = total(st, lambda names, l: chain_ok(names, [
            "triton_kernel_a", "cuLaunchKernel", "launch_a", "run_rt", "main"]))
        self.assertEqual((via_rt, direct, total(st)), (n_rt, n_drv, n_rt + n_drv), "%s%s" % (
            [(names[:4], v) for names, v, l in st][:6], rec.ctx()))
        n_mem = js["rt_allocs"]
        self.assertEqual((rec.sum["allocs"], rec.sum["frees"]), (n_mem, n_mem), rec.ctx())
        self.assertEqual(rec.sum.get("mem"), (n_mem * 4096, 0), rec.ctx())


class DriverAttach(unittest.TestCase):
    """mlprof record -p PID after the program loaded libcuda.so.1 and got a kernel handle:
    the library is probed when mlprof starts; launches of that handle show as
    [cuda kernel 0x...]; a handle made after attaching is named."""

    def test_handle_before_attach(self):
        exe = os.path.join(CUDA_DIR, "drv_triton")
        need(self, exe, os.path.join(FAKE_DRV_DIR, "libcuda.so.1"))
        RAN.append("attach")
        d = tmpdir()
        out = os.path.join(d, "attach.pb.gz")
        env = dict(os.environ, LD_LIBRARY_PATH=FAKE_DRV_DIR)
        prog = subprocess.Popen([exe, "attach"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, env=env)
        prof, late_attach = None, None
        log, attached, started = [], threading.Event(), threading.Event()
        try:
            first = prog.stdout.readline()
            early = re.search(r'"early": "(0x[0-9a-f]+)"', first)
            self.assertIsNotNone(early, first)
            t0 = time.monotonic()
            prof = subprocess.Popen([MLPROF, "record", "--log-level", "info", "--cuda-rate",
                                     EVERY, "-p", str(prog.pid), "-o", out],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

            def reader():
                for line in prof.stderr:
                    log.append(line)
                    if "sampling" in line:
                        started.set()
                    if "probing" in line and "libcuda.so.1" in line:
                        attached.set()

            th = threading.Thread(target=reader, daemon=True)
            th.start()
            self.assertTrue(started.wait(120), "mlprof did not start:\n" + "".join(log))
            if not attached.wait(5):
                # not probed at start: let the process run on a CPU (a sample makes mlprof
                # read its maps), so the rest can still be checked; fails at the end
                late_attach = "libcuda.so.1, mapped before mlprof started, was not probed " \
                    "within 5 s of mlprof sampling (%.1f s after it was started)" % (
                        time.monotonic() - t0)
                for _ in range(20):
                    prog.stdin.write("spin\n")
                    prog.stdin.flush()
                    if attached.wait(1):
                        late_attach += "; probed only after the process ran on a CPU"
                        break
            self.assertTrue(attached.is_set(), "never probed:\n" + "".join(log))
            prog.stdin.write("go\n")
            prog.stdin.flush()
            rest = prog.stdout.read()
            self.assertEqual(prog.wait(60), 0, rest)
            self.assertEqual(prof.wait(120), 0, "".join(log))
            th.join(10)
        finally:
            for p in (prog, prof):
                if p and p.poll() is None:
                    p.kill()
                    p.wait()
            for f in (prog.stdin, prog.stdout, prof and prof.stderr):
                if f:
                    f.close()
        ctx = "\nmlprof stderr:\n" + "".join(log)
        js = [json.loads(line) for line in rest.splitlines() if line.startswith("{")][0]
        st = load(os.path.join(d, "attach.cuda_launches.pb.gz"))
        unnamed = "[cuda kernel %s]" % early.group(1)
        for name, caller, n in ((unnamed, "launch_early", js["early_launches"]),
                                ("triton_kernel_late", "launch_late", js["late_launches"])):
            got = total(st, lambda names, l: names[0] == name)
            ok = total(st, lambda names, l: names[:4] == [name, "cuLaunchKernel", "launch_a",
                                                          caller] and "main" in names and
                       not any(x.startswith("[truncated") for x in names))
            self.assertEqual((got, ok), (n, n), "%s: %s%s" % (name, st, ctx))
        self.assertEqual(summary("".join(log))["kernels"].get(unnamed), js["early_launches"], ctx)
        self.assertIsNone(late_attach, ctx)


# --- NCCL (test double of libnccl.so.2) ----------------------------------------------

class Nccl(unittest.TestCase):
    def test_collectives(self):
        exe = os.path.join(CUDA_DIR, "nccl_train")
        need(self, exe)
        RAN.append("nccl")
        rec = Recorded("nccl", ["--cuda-rate", EVERY], [exe, "50"])
        js = rec.js[0]
        self.assertEqual(js["err"], 0)
        self.assertEqual(rec.types("nccl"), [("nccl_calls", "count"), ("nccl_bytes", "bytes")])
        st = rec.stacks("nccl")
        cases = [  # key, op label, dtype label, bytes per element, API, chain above train_loop
            ("allreduce", "allreduce_sum", "float32", 4, "AllReduce",
             ["allreduce_grads", "sync_gradients"]),
            ("allgather", "allgather", "bfloat16", 2, "AllGather", ["gather_params"]),
            ("reducescatter", "reducescatter", "float16", 2, "ReduceScatter", ["shard_grads"]),
            ("broadcast", "broadcast", "int64", 8, "Broadcast", ["broadcast_weights"]),
            ("send", "send", "uint8", 1, "Send", ["exchange_activations"]),
            ("recv", "recv", "uint8", 1, "Recv", ["exchange_activations"]),
        ]
        for key, op, dt, size, api, chain in cases:
            pred = (lambda names, l, op=op, dt=dt:
                    l.get("nccl_op") == op and l.get("nccl_dtype") == dt)
            full = (lambda names, l, api=api, chain=chain: chain_ok(
                names, [re.compile("p?nccl" + api)] + chain + ["train_loop", "main"]))
            calls, nbytes = js[key]["calls"], js[key]["calls"] * js[key]["count"] * size
            self.assertEqual((total(st, pred, 0), total(st, pred, 1)), (calls, nbytes),
                             "%s: %s" % (key, [(n, v, l) for n, v, l in st if pred(n, l)]))
            self.assertEqual(total(st, lambda n, l: pred(n, l) and full(n, l)), calls,
                             "%s chains: %s" % (key, [n for n, v, l in st if pred(n, l)]))
        n = sum(js[c[0]]["calls"] for c in cases)
        self.assertEqual(total(st, i=0), n)
        # ncclX is an alias of pncclX: one probe, each call counted once
        self.assertEqual(rec.sum["nccl"], n, rec.ctx())
        self.assertEqual(rec.sum["launches"], 0)


# --- Python through ctypes -----------------------------------------------------------

def interpreters():
    """(label, path) of the Python interpreters to try."""
    out = [("system", "/usr/bin/python3")]
    out += [("pyenv " + os.path.basename(os.path.dirname(os.path.dirname(p))), p)
            for p in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3")))[:1]]
    return out


class PythonCtypes(unittest.TestCase):
    """cudaLaunchKernel called from Python functions through ctypes, by each interpreter in
    turn (one recording): the launch stacks show the kernel, cudaLaunchKernel, the
    libffi/ctypes frames, then the Python frames."""
    KERNEL = "py_kernel_one(float*, int)"
    PY_CHAIN = ["launch_from_python", "training_step", "main", "<module>"]

    def test_python_frames(self):
        lib = os.path.join(CUDA_DIR, "libpykern.so")
        need(self, lib, CUDA13_LIB, why="" if CUDA13_LIB else "no libcudart.so.13 (%s)" % (
            SKIP_NVCC or "see tests/cuda.cmake"))
        script = os.path.join(os.environ.get("TEST_SRC_DIR", "tests"), "cuda",
                              "cudart_ctypes.py")
        pys = [(label, py) for label, py in interpreters() if os.access(py, os.X_OK)]
        if not pys:
            self.skipTest("no Python interpreter")
        RAN.append("python")
        cmd = "; ".join("%s %s %s %s 1500" % (py, script, CUDA13_LIB, lib) for _, py in pys)
        rec = Recorded("py", ["--cuda-rate", EVERY], ["sh", "-c", cmd])
        self.assertEqual(len(rec.js), len(pys), rec.cp.stdout + rec.ctx())
        st = rec.stacks("cuda_launches")

        def ok(names):
            if names[:2] != [self.KERNEL, "cudaLaunchKernel"] or \
                    "launch_from_python" not in names:
                return False
            i = names.index("launch_from_python")
            return i > 2 and names[i:i + len(self.PY_CHAIN)] == self.PY_CHAIN and \
                names[-1] == "_start" and not any(x.startswith("[truncated") for x in names)

        for (label, py), js in zip(pys, rec.js):
            with self.subTest(python=label):
                self.assertEqual(js["errors"], [35])  # cudaErrorInsufficientDriver
                # the workload waited for the uprobe's int3 on cudaLaunchKernel (10 s at most)
                self.assertTrue(js["probed"], "%s: no uprobe on cudaLaunchKernel within 10 s%s"
                                % (label, rec.ctx()))
                n = js["launches"]
                mine = [(names, v, l) for names, v, l in st if l.get("pid") == js["pid"]]
                self.assertEqual(total(mine), n, "%s %s%s" % (label, js["python"], rec.ctx()))
                good = total(mine, lambda names, l: ok(names))
                self.assertGreaterEqual(good / n, 0.99, "%s %s: %d/%d, e.g. %s" % (
                    label, js["python"], good, n,
                    [names for names, v, l in mine if not ok(names)][:2]))
        self.assertEqual(rec.sum["kernels"], {self.KERNEL: sum(j["launches"] for j in rec.js)},
                         rec.ctx())


# --- bad input -----------------------------------------------------------------------

class BadInput(unittest.TestCase):
    """One recording of up to four processes in a row: the two libraries named
    libcudart.so.13 that are no CUDA runtime (dlopen_call), and where nvcc built the
    workloads a stripped copy of the static build and the shared build on a stripped copy of
    libcudart.so.13 (LD_LIBRARY_PATH)."""

    def setUp(self):
        call = os.path.join(CUDA_DIR, "dlopen_call")
        self.libs = {sub: os.path.join(CUDA_DIR, sub, "libcudart.so.13")
                     for sub in ("notcudart", "notcudart_data")}
        need(self, call, *self.libs.values())
        RAN.append("bad input")
        self.rec = once(BadInput, self.record)
        self.js = dict(zip(self.names, self.rec.js))
        self.probed = probing_lines(self.rec.cp.stderr)

    def record(self):
        shared = os.path.join(CUDA_DIR, "cuda_launch_shared")
        static = os.path.join(CUDA_DIR, "cuda_launch_static")
        call = os.path.join(CUDA_DIR, "dlopen_call")
        names, parts = [], []
        BadInput.nvcc = not SKIP_NVCC and all(os.path.exists(p) for p in (
            shared, static, CUDA13_LIB))
        if BadInput.nvcc:
            d = tmpdir()
            lib = os.path.join(d, "libcudart.so.13")
            shutil.copy(CUDA13_LIB, lib)
            subprocess.run(["strip", "--strip-all", lib], check=True)
            exe = os.path.join(d, "cuda_launch_stripped")
            shutil.copy(static, exe)
            subprocess.run(["strip", "--strip-all", exe], check=True)
            BadInput.stripped_lib, BadInput.stripped_exe = lib, exe
            names.append("static")
            parts.append("%s 100" % exe)
        for sub in ("notcudart", "notcudart_data"):
            names.append(sub)
            parts.append("%s %s not_cuda_work 20000" % (call, self.libs[sub]))
        if BadInput.nvcc:
            names.append("shared")
            parts.append("LD_LIBRARY_PATH=%s %s 100" % (os.path.dirname(lib), shared))
        BadInput.names = names
        return Recorded("bad", ["--log-level", "info", "--cuda-rate", EVERY, "-F", "499"],
                        ["sh", "-c", "; ".join(parts)])

    def need_nvcc(self):
        if not self.nvcc:
            self.skipTest(SKIP_NVCC or "CUDA 13 workloads or libcudart.so.13 missing")

    def cuda_pids(self):
        """pids with samples in any CUDA profile."""
        pids = set()
        for p in glob.glob(self.rec.base + ".cuda_*.pb.gz") + glob.glob(
                self.rec.base + ".nccl.pb.gz"):
            pids |= {l.get("pid") for names, v, l in load(p)}
        return pids

    def test_stripped_libcudart(self):
        """libcudart.so.13 after strip --strip-all still works: its .dynsym (the exported
        API) stays, so its entry points are still found and probed; counts and names
        exact."""
        self.need_nvcc()
        self.assertIn(self.stripped_lib, self.probed, self.rec.ctx())
        js = self.js["shared"]
        self.assertEqual(self.rec.sum["kernels"],
                         {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]},
                         self.rec.ctx())
        st = self.rec.stacks("cuda_launches")
        self.assertEqual(total(st, lambda names, l: l.get("pid") == js["pid"]),
                         js["alpha"] + js["beta"] + js["gamma"])
        self.assertEqual(self.cuda_pids(), {js["pid"]})

    def test_stripped_static_binary(self):
        """A static cudart in a stripped executable has no symbols: nothing to probe, no
        CUDA samples; the process ran to its end."""
        self.need_nvcc()
        self.assertNotIn(self.stripped_exe, self.probed, self.rec.ctx())
        self.assertEqual(self.js["static"]["alpha"], 600)
        self.assertNotIn(self.js["static"]["pid"], self.cuda_pids())

    def check_not_cudart(self, sub):
        self.assertEqual(self.js[sub]["calls"], 20000)
        self.assertNotIn(self.libs[sub], self.probed, self.rec.ctx())
        self.assertNotIn(self.js[sub]["pid"], self.cuda_pids())
        # the CPU profile names the library's function
        st = load(self.rec.base + ".pb.gz")
        self.assertGreater(total(st, lambda names, l: l.get("pid") == self.js[sub]["pid"] and
                                 "not_cuda_work" in names), 20, self.rec.ctx())

    def test_not_cudart(self):
        """A library named libcudart.so.13 exporting no CUDA entry point (one name only
        begins like one): no probes, no CUDA samples, no crash."""
        self.check_not_cudart("notcudart")

    def test_not_cudart_data_symbol(self):
        """... also exporting a data object named cudaMalloc: not a function, not probed."""
        self.check_not_cudart("notcudart_data")


class ShortLived(unittest.TestCase):
    def test_short_lived_processes(self):
        """12 CUDA processes that launch at once and exit within milliseconds (probes attach
        while, or after, they run), then (exec'd by the shell) one that waits 300 ms:
        mlprof survives, says what it probed, and counts the last one exactly, by name."""
        shared = os.path.join(CUDA_DIR, "cuda_launch_shared")
        static = os.path.join(CUDA_DIR, "cuda_launch_static")
        need(self, shared, static, why=SKIP_NVCC)
        RAN.append("short-lived")
        script = "for i in 1 2 3 4 5 6; do %s 2 0 >/dev/null; %s 2 0 >/dev/null; done; " \
                 "exec %s 100 300" % (shared, static, shared)
        rec = Recorded("short", ["--log-level", "info", "--cuda-rate", EVERY],
                       ["sh", "-c", script])
        js = rec.js[-1]
        want = {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]}
        last = sum(want.values())
        probed = probing_lines(rec.cp.stderr)
        self.assertTrue(any(p.endswith("/libcudart.so.13") for p in probed), rec.ctx())
        s = rec.sum
        self.assertIsNotNone(s, rec.ctx())
        self.assertGreaterEqual(s["launches"], last, rec.ctx())
        self.assertLessEqual(s["launches"], last + 12 * 2 * 9, rec.ctx())
        st = rec.stacks("cuda_launches")
        mine = [(names, v, l) for names, v, l in st if l.get("pid") == js["pid"]]
        for k, n in want.items():
            self.assertEqual(total(mine, lambda names, l, k=k: names[0] == k), n, rec.ctx())
        self.assertEqual(total(mine), last)
        # ... and its synchronize calls and copies (every entry point of the library probed,
        # though earlier processes exited while the probes were being attached)
        syncs = [v[0] for names, v, l in load(rec.path("cuda_sync")) if l.get("pid") == js["pid"]]
        self.assertEqual(len(syncs), js["sync_calls"], "sync stacks of the last process" +
                         rec.ctx())
        copies = total(load(rec.path("cuda_memcpy")), lambda names, l: l.get("pid") == js["pid"])
        self.assertEqual(copies, js["h2d_calls"] * js["h2d_bytes"] + js["d2h_bytes"] +
                         js["d2d_bytes"] + js["default_bytes"], rec.ctx())
        # the summary names the last process's kernels (it was exec'd by the shell); an
        # earlier one can exit before its maps are read (the static build maps no CUDA
        # library to be held at), its kernels then unnamed: never more than their launches
        for k in want:
            self.assertIn(k, s["kernels"], rec.ctx())
        unnamed = sum(v for k, v in s["kernels"].items() if k.startswith("[cuda kernel"))
        self.assertLessEqual(unnamed, s["launches"] - last, rec.ctx())


def held_line(stderr):
    """(holds, longest ms) from the summary, None without the line."""
    m = re.search(r"^mlprof: cuda: (\d+) holds at a CUDA/NCCL library mmap \(the process "
                  r"stopped until the library's probes were attached; [0-9.]+ ms on average, "
                  r"longest ([0-9.]+) ms", stderr, re.M)
    return (int(m.group(1)), float(m.group(2))) if m else None


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


class Hold(unittest.TestCase):
    """A process that maps libcudart (at start, or with dlopen) is stopped on its way out of
    mmap until the library's probes are attached: calls made at once are all counted.
    Without the hold (--no-cuda-hold) these programs' first calls came before the probes:
    0 of 900 launches were counted on this VM."""

    def test_first_calls_at_start(self):
        """cuda_launch ITER 0: launches as soon as main runs (libcudart is a DT_NEEDED
        library, mapped by ld.so): every launch counted and named, full chains."""
        exe = os.path.join(CUDA_DIR, "cuda_launch_shared")
        need(self, exe, why=SKIP_NVCC)
        RAN.append("hold-start")
        rec = Recorded("hold", ["--cuda-rate", EVERY], [exe, "100", "0"])
        js = rec.js[0]
        want = {K_ALPHA: js["alpha"], K_BETA: js["beta"], K_GAMMA: js["gamma"]}
        self.assertEqual(rec.sum["kernels"], want, rec.ctx())
        held = held_line(rec.cp.stderr)
        self.assertIsNotNone(held, rec.ctx())
        self.assertEqual(held[0], 1, rec.ctx())
        st = rec.stacks("cuda_launches")
        for k, n in want.items():
            stub_name, below = CU13_CHAINS[k]
            chain = [k, "cudaLaunchKernel", stub(stub_name)] + below + ["train_step",
                                                                         "run_steps", "main"]
            self.assertEqual(total(st, lambda names, l, c=chain: chain_ok(names, c)), n,
                             rec.ctx())

    def test_dlopen_mid_run(self):
        """dlopen(libcudart) then 50 cudaDeviceSynchronize calls at once: all 50 counted,
        with their stacks (the process was held at the dlopen's mmap)."""
        call = os.path.join(CUDA_DIR, "dlopen_call")
        need(self, call, CUDA13_LIB)
        RAN.append("hold-dlopen")
        # (debug: a failure shows what mlprof saw of the mmap, the probes and the hold)
        rec = Recorded("holddl", ["--cuda-rate", EVERY, "--log-level", "debug"],
                       [call, CUDA13_LIB, "cudaDeviceSynchronize", "50", "0"])
        self.assertEqual(rec.js[0]["calls"], 50)
        self.assertEqual(rec.sum["syncs"], 50, rec.ctx())
        self.assertIsNotNone(held_line(rec.cp.stderr), rec.ctx())
        st = [(names, v, l) for names, v, l in load(rec.path("cuda_sync"))
              if l.get("pid") == rec.js[0]["pid"]]
        self.assertTrue(st, rec.ctx())
        for names, v, l in st:
            self.assertIn("cudaDeviceSynchronize", names)
            self.assertIn("main", names)

    def test_no_hold(self):
        """--no-cuda-hold: nothing is held (the summary has no such line), the program runs
        as before and mlprof counts what it can (at most every call)."""
        exe = os.path.join(CUDA_DIR, "cuda_launch_shared")
        need(self, exe, why=SKIP_NVCC)
        RAN.append("hold-off")
        rec = Recorded("nohold", ["--cuda-rate", EVERY, "--no-cuda-hold"], [exe, "100", "0"])
        js = rec.js[0]
        self.assertIsNone(held_line(rec.cp.stderr), rec.ctx())
        self.assertLessEqual(rec.sum["launches"] if rec.sum else 0,
                             js["alpha"] + js["beta"] + js["gamma"], rec.ctx())

    def test_job_control_child_not_held(self):
        """A process with a controlling terminal in a process group of its own (what a
        job-control shell makes of a foreground job) is not held: the shell would see it
        stop. The same program in its parent's group on the same terminal is held."""
        exe = os.path.join(CUDA_DIR, "cuda_launch_shared")
        need(self, exe, why=SKIP_NVCC)
        try:
            for fd in os.openpty():
                os.close(fd)
        except OSError as e:
            raise unittest.SkipTest("no pseudo-terminal here: %s" % e)
        RAN.append("hold-jobctl")
        # in a new session on a pty (pty.fork), a child runs the workload, in a group of its
        # own or not; the parent waits for it (the pty's output is read and dropped)
        script = ("import os, pty, sys\n"
                  "pid, fd = pty.fork()\n"
                  "if pid == 0:\n"
                  "    c = os.fork()\n"
                  "    if c == 0:\n"
                  "        if sys.argv[1] == 'own':\n"
                  "            os.setpgid(0, 0)\n"
                  "        os.execv(sys.argv[2], [sys.argv[2], '20', '0'])\n"
                  "    os._exit(os.waitpid(c, 0)[1] >> 8)\n"
                  "while True:\n"
                  "    try:\n"
                  "        if not os.read(fd, 4096): break\n"
                  "    except OSError: break\n"
                  "os.waitpid(pid, 0)\n")
        held = {}
        for mode in ("own", "same"):
            rec = Recorded("jobctl-" + mode, ["--cuda-rate", EVERY],
                           [sys.executable, "-c", script, mode, exe])
            held[mode] = held_line(rec.cp.stderr)
        self.assertIsNone(held["own"], "a job-control child was held")
        self.assertIsNotNone(held["same"], "the same program in its parent's group was not")

    def test_guard_continues_after_kill(self):
        """mlprof killed with SIGKILL while the workload is held (stopped until its CUDA
        library's probes are attached: ~15-20 ms, the programs are loaded at start): the
        guard process continues it, and it finishes. The hold is caught by polling /proc
        (tens of microseconds a round); a run whose hold the poll missed is run again, up
        to five times, and the check is made on the run that caught it."""
        exe = os.path.join(CUDA_DIR, "cuda_launch_shared")
        need(self, exe, why=SKIP_NVCC)
        RAN.append("hold-guard")
        d = tmpdir()
        child = None
        for attempt in range(5):
            with open(os.path.join(d, "wl%d.out" % attempt), "w") as out:
                prof = subprocess.Popen([MLPROF, "record", "-o",
                                         os.path.join(d, "g%d.pb.gz" % attempt), "--",
                                         exe, "20", "0"], stdout=out, stderr=subprocess.STDOUT)
            try:
                child = held_child(prof)
                if child is None:
                    continue
                prof.kill()
                prof.wait()
                deadline = time.time() + 10
                while time.time() < deadline and proc_state(child) not in (None, "Z"):
                    time.sleep(0.05)
                self.assertIn(proc_state(child), (None, "Z"),
                              "workload %d still %s after mlprof was killed" %
                              (child, proc_state(child)))
                return
            finally:
                if prof.poll() is None:
                    prof.kill()
                    prof.wait()
                if child and proc_state(child) not in (None, "Z"):
                    os.kill(child, signal.SIGKILL)
        self.fail("the workload was never seen held in 5 runs")


def held_child(prof):
    """The pid of prof's child once seen stopped (state T), None if prof exits first or
    30 s pass. Reads /proc/PID/task/*/children directly: a pgrep a round is too slow to
    catch a hold of 15 ms on a loaded machine."""
    deadline = time.time() + 30
    tasks = "/proc/%d/task" % prof.pid
    while time.time() < deadline and prof.poll() is None:
        try:
            tids = os.listdir(tasks)
        except OSError:
            return None
        for tid in tids:
            try:
                with open("%s/%s/children" % (tasks, tid)) as f:
                    kids = f.read().split()
            except OSError:
                continue
            for kid in kids:
                if proc_state(int(kid)) == "T":
                    return int(kid)
    return None

if __name__ == "__main__":
    prog = unittest.main(verbosity=2, exit=False)
    if not prog.result.wasSuccessful():
        sys.exit(1)
    if not RAN:
        print("all skipped: nothing ran (see the skip reasons above)", file=sys.stderr)
        sys.exit(77)
    sys.exit(0)
