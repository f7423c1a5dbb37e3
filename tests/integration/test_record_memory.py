# SPDX-License-Identifier: Apache-2.0
"""Memory-growth profile of mlprof record (on by default; NAME.memory.pb.gz).

tests/workloads/mem_workload (-O2, no frame pointers, transparent huge pages off) brings
in anonymous memory with mmap and a write to every page in two known chains: one keeps it
(main -> run_keep -> keep_chain -> touch_pages, never unmapped) and one churns it
(main -> run_churn -> churn_chain -> touch_pages: 4 MiB blocks mapped, written and
unmapped), interleaved, and prints the exact bytes of each. Checked against those bytes:
the in-use view (what is still mapped) at the end of the recording while the program holds
its memory ('hold', the recording is stopped with SIGINT before the program exits) and at
process exit ('exit', the program exits without unmapping); the brought-in view
(alloc_space) of each chain; full native chains, also with the main thread's stack 0-28 KiB
deep at the fault ('deep'); read faults and shared memory not counted ('other'); the
summary line; --memory-sample; a Python program's growth
under its Python function; --no-memory.

The profile samples by bytes (one stack about every --memory-sample KiB, weighted by it),
so the tolerances are statistical: with 512 KiB and 128 MiB kept (~256 captures) the
relative standard deviation of the in-use estimate measured over 30 runs was 4.1% (the
capture interval was uniform in [1 B, 1 MiB]; it is now uniform in [1, 255] write faults
of a CPU); 15% is more than three and a
half of them.
The interleaving matters: short kept runs between churned ones are noisier than one long
run of the same size (1 MiB kept runs gave 6.7% for 64 MiB).
"""
import glob
import json
import os
import re
import signal
import subprocess
import unittest

import pprof_reader
from itutil import MLPROF, WL_DIR, main_chain_ok, need_root, record, tmpdir

WORKLOAD = os.path.join(WL_DIR, "mem_workload")
PROC = "mem_workload"
KEEP_MIB, CHURN_MIB, SECONDS = 128, 256, "2"
WORKLOAD_ARGS = [str(KEEP_MIB), str(CHURN_MIB), SECONDS]

KEEP = ["touch_pages", "keep_chain", "run_keep", "main"]
CHURN = ["touch_pages", "churn_chain", "run_churn", "main"]
DEEP = ["touch_pages", "deep_chain", "run_deep", "main"]
# deep: 2 MiB kept with each of 0, 2, ... 28 KiB of main-thread stack in use under the chain
# (all within the default 32 KiB stack copy)
DEEP_ARGS = ["2", "28", "2"]

INUSE_TOL = 0.15        # in-use view vs the bytes the program kept
INUSE_KEEP_MIN = 0.90   # share of the in-use view under the keeping chain
INUSE_CHURN_MAX = 0.05  # share of the in-use view under the churning chain
ALLOC_TOL = 0.25        # brought-in bytes of a chain vs the bytes it wrote
PY_INUSE_MIN = 0.80     # share of a Python program's in-use view under its growing function

# A Python program that grows a list of 2 MiB bytearrays (zero-filled by bytearray(n):
# every page written in py_keep_grow's call) and churns 4 MiB ones in py_churn, then exits
# with os._exit while holding the list. The mmap threshold is fixed at 128 KiB so every
# buffer is its own mapping, unmapped when freed (glibc would otherwise raise it on the
# first free and serve later buffers from reused heap memory, first touched elsewhere).
PY_SCRIPT = r"""
import ctypes, json, os, sys, time
libc = ctypes.CDLL(None)
libc.prctl(41, 1, 0, 0, 0)         # PR_SET_THP_DISABLE
libc.mallopt(-3, 128 * 1024)       # M_MMAP_THRESHOLD
CHUNK = 2 << 20

def py_keep_grow(keep):
    b = bytearray(CHUNK)
    keep.append(b)

def py_churn():
    b = bytearray(2 * CHUNK)
    del b

def py_main(steps):
    keep = []
    for _ in range(steps):
        py_keep_grow(keep)
        py_churn()
        time.sleep(0.02)
    return keep

keep = py_main(64)
# a library mapped after the samples (mlprof reads the maps again): the in-use view at exit
# must still name the Python frames read when the samples came
try:
    ctypes.CDLL("libzstd.so.1")
except OSError:
    import _decimal
print(json.dumps({"kept_bytes": len(keep) * CHUNK, "churned_bytes": 64 * 2 * CHUNK}))
sys.stdout.flush()
os._exit(0)
"""

SUMMARY_RE = re.compile(r"^mlprof: memory: ([0-9.]+) MiB of anonymous memory brought in "
                        r"\(sampled every (\d+) KiB\), ([0-9.]+) MiB still in use", re.M)


def summary(stderr):
    m = SUMMARY_RE.search(stderr)
    if not m:
        raise AssertionError("no 'mlprof: memory:' summary line in:\n" + stderr)
    return {"alloc_mib": float(m.group(1)), "sample_kib": int(m.group(2)),
            "inuse_mib": float(m.group(3))}


def mem_stacks(path, process_name=None):
    """[(names leaf first, alloc bytes, in-use bytes, labels)] of a memory profile."""
    prof = pprof_reader.load(path)
    types = prof.type_names()
    if types != [("alloc_space", "bytes"), ("inuse_space", "bytes")]:
        raise AssertionError("memory profile sample types: %s" % types)
    out = []
    for names, vals, labels in prof.stacks():
        if process_name and labels.get("process_name") != process_name:
            continue
        out.append((names, vals[0], vals[1], labels))
    return out


def has_chain(names, chain):
    """chain (leaf first) appears contiguously in names."""
    for i, n in enumerate(names):
        if n == chain[0] and names[i:i + len(chain)] == chain:
            return True
    return False


def mib(x):
    return x / 1048576.0


def top(stacks, col, n=5):
    agg = {}
    for s in stacks:
        k = ";".join(s[0])
        agg[k] = agg.get(k, 0) + s[col]
    return "\n".join("  %8.2f MiB  %s" % (mib(v), k[:240])
                     for k, v in sorted(agg.items(), key=lambda kv: -kv[1])[:n] if v)


def python3_exe():
    exes = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3"))
    if exes:
        return exes[-1]
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else None


def record_holding(args, cmd, timeout=120):
    """mlprof record ARGS -- CMD where CMD prints one JSON line and then waits for stdin to
    close: the recording is stopped (SIGINT to mlprof) while CMD still holds its memory,
    then CMD's stdin is closed so that it exits. Returns (returncode, stderr, JSON)."""
    p = subprocess.Popen([MLPROF, "record"] + args + ["--"] + cmd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith("{"):
            p.kill()
            _, err = p.communicate()
            raise AssertionError("workload printed %r; mlprof stderr:\n%s" % (line, err))
        os.kill(p.pid, signal.SIGINT)
        # mlprof leaves its loop within a poll (100 ms) and then waits for the command;
        # the memory is still mapped when its last events are read.
        try:
            p.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        p.stdin.close()
        p.stdin = None  # closed: communicate() has nothing to send
        out, err = p.communicate(timeout=timeout)
    except BaseException:
        p.kill()
        p.wait()
        raise
    return p.returncode, err, json.loads(line)


class RecordMemory(unittest.TestCase):
    runs = {}  # variant -> (stderr, measured JSON, memory profile path)

    def setUp(self):
        need_root(self)
        if not os.access(WORKLOAD, os.X_OK):
            self.fail("missing workload %s" % WORKLOAD)

    @classmethod
    def run_variant(cls, variant):
        """One recording of the workload per variant, shared by the checks."""
        if variant not in cls.runs:
            d = tmpdir()
            pb = os.path.join(d, variant + ".pb.gz")
            cmd = [WORKLOAD, variant] + WORKLOAD_ARGS
            if variant == "hold":
                rc, err, js = record_holding(["-o", pb], cmd)
                if rc != 0:
                    raise AssertionError("mlprof exited %d:\n%s" % (rc, err))
            else:
                cp, out = record(["-o", pb], cmd)
                err, js = cp.stderr, out[0]
            cls.runs[variant] = (err, js, os.path.join(d, variant + ".memory.pb.gz"))
        return cls.runs[variant]

    def check_views(self, variant):
        err, js, path = self.run_variant(variant)
        self.assertEqual(js["kept_bytes"], KEEP_MIB << 20)
        self.assertEqual(js["churned_bytes"], CHURN_MIB << 20)
        # the premise: one minor fault per page written (no huge pages), little else
        self.assertGreaterEqual(js["minor_faults"], js["pages_written"])
        self.assertLess(js["minor_faults"], js["pages_written"] * 1.02 + 64, js)
        st = mem_stacks(path, PROC)
        inuse = sum(s[2] for s in st)
        inuse_keep = sum(s[2] for s in st if has_chain(s[0], KEEP))
        inuse_churn = sum(s[2] for s in st if "churn_chain" in s[0])
        alloc_keep = sum(s[1] for s in st if has_chain(s[0], KEEP))
        alloc_churn = sum(s[1] for s in st if has_chain(s[0], CHURN))
        report = ("%s: kept %.1f MiB, churned %.1f MiB; in-use view %.2f MiB (keep chain "
                  "%.2f, churn chain %.2f); brought in: keep chain %.2f MiB, churn chain "
                  "%.2f MiB\nin-use by stack:\n%s\nbrought in by stack:\n%s\n%s" % (
                      variant, mib(js["kept_bytes"]), mib(js["churned_bytes"]), mib(inuse),
                      mib(inuse_keep), mib(inuse_churn), mib(alloc_keep), mib(alloc_churn),
                      top(st, 2), top(st, 1),
                      "\n".join(ln for ln in err.splitlines() if "memory" in ln)))
        print("\n" + report)
        self.assertLess(abs(inuse - js["kept_bytes"]) / js["kept_bytes"], INUSE_TOL, report)
        self.assertGreaterEqual(inuse_keep / inuse, INUSE_KEEP_MIN, report)
        self.assertLessEqual(inuse_churn / inuse, INUSE_CHURN_MAX, report)
        self.assertLess(abs(alloc_churn - js["churned_bytes"]) / js["churned_bytes"],
                        ALLOC_TOL, report)
        self.assertLess(abs(alloc_keep - js["kept_bytes"]) / js["kept_bytes"], ALLOC_TOL,
                        report)
        # in use never exceeds what was brought in, for any stack
        for names, a, u, _ in st:
            self.assertLessEqual(u, a, names)
            self.assertGreaterEqual(u, 0, names)
        # the summary line is the profile's totals (this process is the only target)
        s = summary(err)
        self.assertEqual(s["sample_kib"], 512)
        self.assertAlmostEqual(s["alloc_mib"], mib(sum(x[1] for x in mem_stacks(path))),
                               delta=0.051)
        self.assertAlmostEqual(s["inuse_mib"], mib(sum(x[2] for x in mem_stacks(path))),
                               delta=0.051)

    def test_1_inuse_at_end_while_held(self):
        self.check_views("hold")

    def test_2_inuse_at_process_exit(self):
        self.check_views("exit")

    def test_3_full_chains_and_labels(self):
        for variant in ("hold", "exit"):
            _, _, path = self.run_variant(variant)
            st = mem_stacks(path, PROC)
            touched = [s for s in st if "touch_pages" in s[0]]
            self.assertTrue(touched, variant)
            alloc = sum(s[1] for s in touched)
            for names, a, u, labels in st:
                if "touch_pages" in names:
                    # leaf first: the faulting store in touch_pages, then its callers to
                    # _start, nothing truncated (main_chain_ok). The dynamic loader's and
                    # stdio's first pages (a few captures) are not checked here: their
                    # depth varies from run to run; test_3b covers every depth.
                    self.assertEqual(names[0], "touch_pages", names)
                    self.assertTrue(main_chain_ok(names, KEEP) or main_chain_ok(names, CHURN),
                                    "%s: %.2f MiB under a broken chain %s" % (
                                        variant, mib(a), names))
                self.assertEqual(labels.get("process_name"), PROC)
                self.assertIsInstance(labels.get("pid"), int)
                self.assertIsInstance(labels.get("tid"), int)
            # every captured stack is weighted by the mean interval
            self.assertEqual(alloc % (512 << 10), 0, alloc)

    def test_3b_full_chains_at_every_stack_depth(self):
        """Main-thread stacks 0-28 KiB deep at the fault: every captured stack is unwound
        from touch_pages to _start (the user stack copy must reach the frames of main and
        libc's start code whatever the depth, as for CPU samples)."""
        d = tmpdir()
        pb = os.path.join(d, "deep.pb.gz")
        cp, out = record(["--memory-sample", "64", "-o", pb], [WORKLOAD, "deep"] + DEEP_ARGS)
        st = mem_stacks(os.path.join(d, "deep.memory.pb.gz"), PROC)
        deep = [s for s in st if "deep_chain" in s[0]]
        alloc = sum(s[1] for s in deep)
        bad = {}
        for names, a, _, _ in deep:
            # a fault on deep_chain's own stack growth is captured with deep_chain as
            # the leaf (sp's page is the one being brought in): also a full chain
            if not (main_chain_ok(names, DEEP) or
                    (names[0] == "deep_chain" and main_chain_ok(names, DEEP[1:]))):
                k = ";".join(names)
                bad[k] = bad.get(k, 0) + a
        report = "%.2f MiB of %.2f MiB under deep_chain with a broken chain:\n%s\n%s" % (
            mib(sum(bad.values())), mib(alloc),
            "\n".join("  %8.2f MiB  %s" % (mib(v), k) for k, v in
                      sorted(bad.items(), key=lambda kv: -kv[1])),
            "\n".join(ln for ln in cp.stderr.splitlines() if "stack" in ln))
        print("\n" + report)
        self.assertLess(abs(alloc - out[0]["kept_bytes"]) / out[0]["kept_bytes"], ALLOC_TOL,
                        report)
        self.assertEqual(bad, {}, report)

    def test_3c_faults_that_bring_no_memory(self):
        """Read faults on fresh private anonymous memory (the zero page) and write faults
        on shared anonymous memory (shmem) are not counted, also when the shared memory
        is mapped where private memory written just before was, after a munmap
        (reuse_chain) or over it with MAP_FIXED (fixed_chain): a mapping classified before
        the change must not be trusted after it. The 32 MiB kept and the 2 x 64 MiB of
        private memory written before those changes are counted, and so are the 64 MiB
        that a SIGSEGV handler makes writable page by page with mprotect (protect_chain:
        each page's refused first write brings nothing in, its retry does). One thread's
        private memory that another thread maps shared memory over half of while the first
        thread writes it (cross_chain) counts for the half written before only. Mapping
        changes are seen by the mmap_lock_released tracepoint, and by syscall tracepoints
        on kernels where that one cannot be used (MLPROF_TEST_VMA_SYSCALLS=1): both."""
        for env in ({}, {"MLPROF_TEST_VMA_SYSCALLS": "1"}):
            with self.subTest(env=env):
                self.check_other(env)

    def check_other(self, env):
        d = tmpdir()
        pb = os.path.join(d, "other.pb.gz")
        # (the capture rate cap lifted: the whole run takes 0.5 s, over the default cap;
        # the programs always attached: it faults faster than --memory-max-faults, and this
        # checks which faults count, not the sampling)
        cp, out = record(["--memory-rate", "1000000", "--memory-max-faults", "0",
                          "--log-level", "debug", "-o", pb],
                         [WORKLOAD, "other", "64", "32"], env=env)
        self.assertIn("mapping changes seen by " + (
            "syscall tracepoints" if env else "mmap_lock_released"), cp.stderr)
        js = out[0]
        # the premise: every region did fault, page by page (the refused faults of
        # protect_chain are not minor faults)
        self.assertGreaterEqual(js["minor_faults"], (js["other_bytes"] + js["kept_bytes"] +
                                                     js["reused_private_bytes"] +
                                                     js["fixed_private_bytes"] +
                                                     js["protected_bytes"] +
                                                     js["cross_private_bytes"]) // 4096)
        st = mem_stacks(os.path.join(d, "other.memory.pb.gz"), PROC)
        other = sum(s[1] for s in st if {"read_chain", "shared_chain", "reuse_shared",
                                          "fixed_shared", "cross_shared"} & set(s[0]))
        keep = sum(s[1] for s in st if has_chain(s[0], KEEP))
        priv = sum(s[1] for s in st if "reuse_private" in s[0])
        fixed = sum(s[1] for s in st if "fixed_private" in s[0])
        prot = sum(s[1] for s in st if "protect_chain" in s[0])
        cross = sum(s[1] for s in st if "cross_private" in s[0])
        report = ("read/shared chains %.2f MiB, keep chain %.2f MiB of 32, private memory "
                  "before the munmap %.2f MiB of 64, before the MAP_FIXED mmap %.2f MiB of "
                  "64, made writable by mprotect %.2f MiB of 64, written by one thread before "
                  "another's MAP_FIXED %.2f MiB of 32\n%s" %
                  (mib(other), mib(keep), mib(priv), mib(fixed), mib(prot), mib(cross),
                   top(st, 1)))
        # what BPF counted (memory_samples against the chains' sum tells extra captures
        # from extra emissions): for the rare outlier past ALLOC_TOL not explained yet
        report += "\nall chains %.2f MiB; mlprof said:\n%s" % (
            mib(sum(s[1] for s in st)),
            "\n".join(line for line in cp.stderr.splitlines()
                      if "BPF counter" in line or line.startswith(("mlprof: memory:",
                                                                   "mlprof: sampler: memory"))))
        print("\n" + report)
        self.assertLessEqual(other, 1 << 20, report)  # 256 MiB faulted: 0 expected
        # (32 MiB kept: ~64 captures, the count's spread about 10%; with 16 a clean CI run
        # once measured 23 MiB, beside 13 to 19 in 32 runs here)
        self.assertLess(abs(keep - js["kept_bytes"]) / js["kept_bytes"], ALLOC_TOL + 0.1,
                        report)
        for got, want in ((priv, js["reused_private_bytes"]),
                          (fixed, js["fixed_private_bytes"]),
                          (prot, js["protected_bytes"]),
                          (cross, js["cross_private_bytes"])):
            self.assertLess(abs(got - want) / want, ALLOC_TOL, report)

    def test_4_memory_sample_option(self):
        """--memory-sample 64: eight times the captures, weights of 64 KiB, tighter (the
        per-CPU capture rate cap lifted: 3072 captures/s here)."""
        d = tmpdir()
        pb = os.path.join(d, "s64.pb.gz")
        cp, out = record(["--memory-sample", "64", "--memory-rate", "1000000", "-o", pb],
                         [WORKLOAD, "exit", "64", "128", "1"])
        js = out[0]
        s = summary(cp.stderr)
        self.assertEqual(s["sample_kib"], 64)
        st = mem_stacks(os.path.join(d, "s64.memory.pb.gz"), PROC)
        inuse = sum(s[2] for s in st)
        alloc_churn = sum(s[1] for s in st if has_chain(s[0], CHURN))
        report = "in use %.2f MiB of %.1f kept; churn brought in %.2f MiB of %.1f\n%s" % (
            mib(inuse), mib(js["kept_bytes"]), mib(alloc_churn), mib(js["churned_bytes"]),
            top(st, 2))
        print("\n" + report)
        # ~1024 captures for the kept memory: relative standard deviation ~2%
        self.assertLess(abs(inuse - js["kept_bytes"]) / js["kept_bytes"], 0.08, report)
        self.assertLess(abs(alloc_churn - js["churned_bytes"]) / js["churned_bytes"], 0.08,
                        report)
        self.assertEqual(sum(s[1] for s in st) % (64 << 10), 0)
        bad = record(["--memory-sample", "0", "-o", os.path.join(d, "bad.pb.gz")],
                     ["true"], check=False)[0]
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--memory-sample", bad.stderr)

    def test_4b_memory_rate_cap(self):
        """--memory-rate 50: about 384 picks/s come down to at most 50 captures per CPU per
        second (bursts: a little more), weighted so that the bytes stay unbiased."""
        d = tmpdir()
        pb = os.path.join(d, "r50.pb.gz")
        cp, out = record(["--memory-rate", "50", "--log-level", "debug", "-o", pb],
                         [WORKLOAD, "exit", "128", "256", "2"])
        js = out[0]
        m = re.search(r"BPF counter memory_samples: (\d+)", cp.stderr)
        self.assertIsNotNone(m, cp.stderr)
        captures = int(m.group(1))
        st = mem_stacks(os.path.join(d, "r50.memory.pb.gz"), PROC)
        alloc = sum(s[1] for s in st)
        inuse = sum(s[2] for s in st)
        want = js["kept_bytes"] + js["churned_bytes"]
        report = "%d captures; brought in %.1f MiB of %.1f, in use %.1f of %.1f\n%s" % (
            captures, mib(alloc), mib(want), mib(inuse), mib(js["kept_bytes"]), top(st, 1))
        print("\n" + report)
        # uncapped: 768 captures; capped: ~50/s on the workload's CPU over ~2.5 s
        self.assertLess(captures, 300, report)
        self.assertGreater(captures, 40, report)
        # ~100-150 weighted captures: relative standard deviation ~10%
        self.assertLess(abs(alloc - want) / want, 0.35, report)
        self.assertLess(abs(inuse - js["kept_bytes"]) / js["kept_bytes"], 0.5, report)

    def test_4c_fault_duty_cycle(self):
        """--memory-max-faults 10000, under the ~100000 faults/s per busy CPU of this
        workload: the page-fault programs are attached in random 20 ms slots only, a quarter
        of them (the floor), and their captures weighted by 4, so that the bytes stay
        unbiased (unweighted they would be a quarter) and attributed as before. 3 s of
        steady growth: ~37 slots watched, relative standard deviation ~15%."""
        d = tmpdir()
        pb = os.path.join(d, "duty.pb.gz")
        cp, out = record(["--memory-max-faults", "10000", "--memory-rate", "1000000",
                          "--log-level", "debug", "-o", pb],
                         [WORKLOAD, "exit", "128", "512", "3"])
        js = out[0]
        self.assertIn("page-fault programs attached in random slots", cp.stderr)
        m = re.search(r"page faults watched (\d+)% of the time \(random 20 ms slots, "
                      r"weighted: the fault rate was over --memory-max-faults, (\d+)/s",
                      cp.stderr)
        self.assertIsNotNone(m, cp.stderr)
        watched = int(m.group(1))
        st = mem_stacks(os.path.join(d, "duty.memory.pb.gz"), PROC)
        alloc = sum(s[1] for s in st)
        alloc_keep = sum(s[1] for s in st if has_chain(s[0], KEEP))
        inuse = sum(s[2] for s in st)
        inuse_keep = sum(s[2] for s in st if has_chain(s[0], KEEP))
        want = js["kept_bytes"] + js["churned_bytes"]
        report = ("watched %d%% of the time; brought in %.1f MiB of %.1f (keep chain %.1f of "
                  "%.1f), in use %.1f MiB (keep chain %.1f)\n%s" % (
                      watched, mib(alloc), mib(want), mib(alloc_keep), mib(js["kept_bytes"]),
                      mib(inuse), mib(inuse_keep), top(st, 1)))
        print("\n" + report)
        # a quarter of the slots after the first 100 ms (always watched); more when other
        # work keeps more CPUs busy (the rate is per busy CPU)
        self.assertGreater(watched, 12, report)
        self.assertLess(watched, 80, report)
        # weighted by 4: unbiased (unweighted: ~25% of the bytes)
        self.assertLess(abs(alloc - want) / want, 0.45, report)
        self.assertGreaterEqual(inuse_keep / inuse, INUSE_KEEP_MIN, report)
        bad = record(["--memory-max-faults", "-1", "-o", os.path.join(d, "bad.pb.gz")],
                     ["true"], check=False)[0]
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("--memory-max-faults", bad.stderr)

    def test_5_no_memory(self):
        d = tmpdir()
        pb = os.path.join(d, "off.pb.gz")
        cp, out = record(["--no-memory", "-o", pb], [WORKLOAD, "exit", "16", "32", "0.5"])
        self.assertEqual(out[0]["kept_bytes"], 16 << 20)
        self.assertTrue(os.path.exists(pb))
        self.assertFalse(os.path.exists(os.path.join(d, "off.memory.pb.gz")),
                         os.listdir(d))
        self.assertEqual(sorted(os.listdir(d)), ["off.pb.gz"])
        self.assertNotIn("mlprof: memory:", cp.stderr)

    def test_5b_exec_releases_memory(self):
        """A process that faults in 64 MiB and then execs another program: the exec freed
        that memory, so the in-use view holds none of it (the exec'd program holds under
        2 MiB), while the brought-in view keeps the 64 MiB under the old image."""
        exe = python3_exe()
        if not exe:
            self.skipTest("no python3 to run")
        d = tmpdir()
        pb = os.path.join(d, "ex.pb.gz")
        script = ("import os\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096):\n"
                  "    b[i] = 1\nos.execv('/bin/sleep', ['sleep', '1'])\n")
        cp, _ = record(["-o", pb], [exe, "-c", script])
        stacks = mem_stacks(os.path.join(d, "ex.memory.pb.gz"))
        alloc = sum(s[1] for s in stacks)
        inuse = sum(s[2] for s in stacks)
        report = "brought in %.1f MiB, in use %.2f MiB\n%s\n%s" % (
            mib(alloc), mib(inuse), top(stacks, 2), "\n".join(
                ln for ln in cp.stderr.splitlines() if "memory" in ln))
        self.assertGreaterEqual(alloc, 56 << 20, report)
        self.assertLess(inuse, 2 << 20, report)

    def test_6_python_growth(self):
        exe = python3_exe()
        if not exe:
            self.skipTest("no python3 to run")
        d = tmpdir()
        script = os.path.join(d, "mem_grow.py")
        with open(script, "w") as f:
            f.write(PY_SCRIPT)
        pb = os.path.join(d, "py.pb.gz")
        cp, out = record(["-o", pb], [exe, script])
        js = out[0]
        prof = pprof_reader.load(os.path.join(d, "py.memory.pb.gz"))
        rows = []  # (python frames leaf first as (name, file), names, alloc, inuse)
        for frames, vals, labels in prof.detailed_stacks():
            py = [(f["name"], f["file"]) for f in frames if f["file"].endswith("mem_grow.py")]
            rows.append((py, [f["name"] for f in frames], vals[0], vals[1]))
        inuse = sum(r[3] for r in rows)
        grow = sum(r[3] for r in rows if r[0] and r[0][0][0] == "py_keep_grow")
        churn_in = sum(r[3] for r in rows if any(n == "py_churn" for n, _ in r[0]))
        churn_alloc = sum(r[2] for r in rows if r[0] and r[0][0][0] == "py_churn")
        agg = {}
        for r in rows:
            k = ";".join(r[1])
            agg[k] = agg.get(k, [0, 0])
            agg[k][0] += r[2]
            agg[k][1] += r[3]
        report = ("%s: kept %.1f MiB; in use %.2f MiB, %.2f under py_keep_grow, %.2f under "
                  "py_churn; py_churn brought in %.2f MiB of %.1f\n%s\n%s" % (
                      exe, mib(js["kept_bytes"]), mib(inuse), mib(grow), mib(churn_in),
                      mib(churn_alloc), mib(js["churned_bytes"]),
                      "\n".join("  %8.2f %8.2f MiB  %s" % (mib(a), mib(u), k[:240])
                                for k, (a, u) in sorted(agg.items(),
                                                        key=lambda kv: -kv[1][1])[:6]),
                      "\n".join(ln for ln in cp.stderr.splitlines() if "memory" in ln)))
        print("\n" + report)
        self.assertGreater(inuse, 0, report)
        # the growing function is the innermost Python frame of most of what is in use,
        # called from py_main and the module
        self.assertGreaterEqual(grow / inuse, PY_INUSE_MIN, report)
        self.assertLess(abs(grow - js["kept_bytes"]) / js["kept_bytes"], INUSE_TOL, report)
        chains = [r[0] for r in rows if r[3] and r[0] and r[0][0][0] == "py_keep_grow"]
        for py in chains:
            self.assertEqual([n for n, _ in py[:3]], ["py_keep_grow", "py_main", "<module>"],
                             py)
        self.assertLessEqual(churn_in / inuse, INUSE_CHURN_MAX, report)
        self.assertLess(abs(churn_alloc - js["churned_bytes"]) / js["churned_bytes"],
                        ALLOC_TOL, report)
        # the in-use view at exit names its stacks again: the code objects read when the
        # samples came are not read a second time from the dead process (it mapped a library
        # since, and such a read found nothing: 100+ frames unnamed)
        m = re.search(r"(\d+) in unreadable memory", cp.stderr)
        self.assertLessEqual(int(m.group(1)) if m else 0, 5, report + "\n" + cp.stderr[-3000:])


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
