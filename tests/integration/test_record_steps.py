# SPDX-License-Identifier: Apache-2.0
"""PyTorch training steps found without code changes (mlprof record's step breakdown).

tests/workloads/py_steps.py trains 200 steps with a dataset that sleeps a known time per
item, a fixed compute load and AdamW, and measures its own phases (perf_counter, and the
thread's CPU time for the compute). mlprof probes the record_function scopes PyTorch 2.x
opens in libtorch_cpu whether or not a profiler runs (Optimizer.step#AdamW.step,
enumerate(DataLoader)#...__next__) and prints per process: steps, step time, and the share
of gpu_wait, data_wait, optimizer, cpu_compute and other. Checked: steps within 1; the steps' wall
time within 1% of the loop's own; data_wait within 2 points, optimizer within 3,
cpu_compute within 5; the verdict on data loading; with num_workers 0 and 2 (the workers
are processes of their own, without steps); a 5 ms wait per step in a synchronize call of
tests/cuda's test double of libcuda (no GPU here) as gpu_wait within 2 points; steps of a
millisecond; the exported fallback probes; the steps profile (wall time by stack and phase)
and its flame graph; two gloo ranks waiting for each other's collectives (comm: an explicit
all_reduce and DDP); the agent's step metrics and ml_steps series, and that series pushed
to a real Pyroscope v2.2.1 and queried back by ml_phase (SKIPPED without a server binary:
scripts/pyroscope.sh path).

Needs PyPI torch (TORCH_PYTHON, default ~/.cache/mlprof/torch-venv/bin/python: a few GB,
not installed by CI, SKIPPED without it). Debian's python3-torch 1.13 opens the same scopes
through a function it does not export (_record_function_enter, tensor-based): mlprof finds
no steps there, and says nothing wrong (checked when it is installed).
"""
import glob
import json
import os
import time
import urllib.error
import urllib.request

import pprof_reader
import re
import unittest

import subprocess
import sys

from itutil import free_port, need_root, record, run_main, tmpdir
import pyroscope_server

MLPROF = os.environ.get("MLPROF", "build/mlprof")

SRC = os.environ.get("TEST_SRC_DIR", "tests")
LOOP = os.path.join(SRC, "workloads", "py_steps.py")
TORCH_PY = os.environ.get("TORCH_PYTHON",
                          os.path.expanduser("~/.cache/mlprof/torch-venv/bin/python"))
DEBIAN_PY = "/usr/bin/python3"
PYRO_SH = os.environ.get("PYROSCOPE_SH", os.path.join(os.path.dirname(os.path.abspath(SRC)),
                                                      "scripts", "pyroscope.sh"))
ML_STEPS = "ml_steps:wall:nanoseconds:wall:nanoseconds"
STEPS = 200

LINE_RE = re.compile(
    r"^mlprof: steps: pid (\d+) \((.*?)\): (\d+) steps, ([0-9.]+) ms each on average "
    r"\(p50 ([0-9.]+), p99 ([0-9.]+)\); gpu_wait ([0-9.]+)%, data_wait ([0-9.]+)%, "
    r"comm ([0-9.]+)%, optimizer ([0-9.]+)%, cpu_compute ([0-9.]+)%, other ([0-9.]+)%(.*)$",
    re.M)
PHASES = ("gpu_wait", "data_wait", "comm", "optimizer", "cpu_compute", "other")


def uprobe_multi():
    """Whether the kernel has uprobe_multi links (as mlprof decides: its BTF names them)."""
    try:
        with open("/sys/kernel/btf/vmlinux", "rb") as f:
            return b"bpf_uprobe_multi_link" in f.read()
    except OSError:
        return False


def steps_lines(stderr):
    return [m.groups() for m in LINE_RE.finditer(stderr)]


class RecordSteps(unittest.TestCase):
    def setUp(self):
        need_root(self)

    def run_loop(self, sleep, workers, env=None, steps=STEPS, out=None, flags=()):
        if not os.access(TORCH_PY, os.X_OK):
            self.skipTest("no PyPI torch at %s (set TORCH_PYTHON)" % TORCH_PY)
        cp, js = record(["-o", out or os.path.join(tmpdir(), "s.pb.gz"), "--no-memory",
                         "--log-level", "info"] + list(flags),
                        [TORCH_PY, LOOP, str(steps), str(sleep), str(workers)], timeout=300,
                        env=env)
        self.assertTrue(js, cp.stderr)
        lines = steps_lines(cp.stderr)
        self.assertEqual(len(lines), 1, "one training process expected:\n" + cp.stderr)
        return js[0], lines[0], cp.stderr

    def check(self, truth, line, err, opt_tol=3.0, cpu_tol=5.0, wall_tol=0.01):
        ctx = "\ntruth %s\n%s" % (truth, err)
        steps, mean_ms = int(line[2]), float(line[3])
        gpu, data, comm, opt, cpu, other = (float(x) for x in line[6:12])
        self.assertLessEqual(abs(steps - truth["steps"]), 1, ctx)
        total = truth["total"]
        # the steps' wall time, and the phases adding up to it
        self.assertLess(abs(mean_ms * steps / 1e3 - total) / total, wall_tol, ctx)
        self.assertAlmostEqual(gpu + data + comm + opt + cpu + other, 100.0, delta=0.3)
        self.assertEqual(comm, 0.0, ctx)
        self.assertLess(abs(gpu - 100 * truth["gpu"] / total), 2.0, ctx)
        self.assertLess(abs(data - 100 * truth["data"] / total), 2.0, ctx)
        self.assertLess(abs(opt - 100 * truth["opt"] / total), opt_tol, ctx)
        self.assertLess(abs(cpu - 100 * truth["compute_cpu"] / total), cpu_tol, ctx)
        return data

    def test_data_bound_no_workers(self):
        truth, line, err = self.run_loop(0.012, 0)
        data = self.check(truth, line, err)
        self.assertGreater(data, 20.0)
        self.assertIn("waiting for data is a high share of each step", line[12], err)
        # a PyPI wheel's .symtab names the static scope functions: entry probes only
        self.assertIn("record_function_enter, entry probes only", err)

    def test_exported_fallback(self):
        """Without .symtab's static functions (as a stripped build): the exported
        record_function_enter_new with its return, and RecordFunction::end."""
        truth, line, err = self.run_loop(0.012, 0, env={"MLPROF_TEST_TORCH_DYNSYM": "1"})
        self.check(truth, line, err)
        self.assertIn("record_function_enter_new and its return", err)

    def test_fast_steps(self):
        """Steps of about a millisecond, all on CPU, in a loop that reads no CPU clock of
        its own: the CPU time at each scope boundary must be exact between the scheduler's
        updates of the thread's runtime (read as the kernel keeps it, 33-37% of these steps
        came out off CPU)."""
        # every step timed: the probes always attached (by default they run in random
        # slots above 1500 scope events a second: test_fast_steps_duty_cycled)
        truth, line, err = self.run_loop(0, 0, env={"COMPUTE_ITERS": "0", "NO_CPU_CLOCK": "1"},
                                         steps=1500, flags=["--steps-max-scopes", "0"])
        # at a millisecond a step, the optimizer's Python wrapper outside its scopes (tens
        # of us, timed by the loop as optimizer) is several points, and goes to cpu_compute
        # (the loop's compute is the rest of its step): 7 and 9 allowed here (a clean CI
        # run measured cpu_compute 7.5 points over; opt 4.7 under, data 1.4 under)
        # the steps' wall time: from one step's first scope to the next one's, the loop's
        # own bookkeeping between its timers included: a few us of a 0.3 ms step (1.2-1.4%
        # over in 2 of 8 runs on a busy VM), 2% allowed
        self.check(truth, line, err, opt_tol=7.0, cpu_tol=9.0, wall_tol=0.02)
        self.assertLess(float(line[3]), 3.0, err)
        # the VM's steal time (the vCPU not running) counts as off CPU: up to ~6% here
        self.assertLess(float(line[11]), 10.0, err)

    def test_fast_steps_duty_cycled(self):
        """The same fast steps for longer (thousands of steps a second, six scope events
        each), at the default --steps-max-scopes: the probes are attached in random slots
        (each hit costs the loop ~2 us): the summary says for what part of the time; the
        steps timed are that part of the loop's, and their mean time and phases agree with
        the loop's own."""
        if os.environ.get("MLPROF_TEST_NO_UPROBE_MULTI") == "1" or not uprobe_multi():
            self.skipTest("no uprobe_multi links: the step probes are never cycled "
                          "(test_fast_steps_no_uprobe_multi)")
        base = os.path.join(tmpdir(), "d")
        truth, line, err = self.run_loop(0, 0, env={"COMPUTE_ITERS": "0", "NO_CPU_CLOCK": "1"},
                                         steps=25000, out=base + ".pb.gz")
        ctx = "\ntruth %s\n%s" % (truth, err)
        m = re.search(r"^mlprof: steps: probes attached (\d+)% of the time \(random 0.5 s "
                      r"slots: the busiest process sent up to (\d+) scope events a second, over "
                      r"--steps-max-scopes 1500", err, re.M)
        self.assertIsNotNone(m, "no duty-cycle line" + ctx)
        attached, rate = int(m.group(1)), int(m.group(2))
        self.assertGreater(rate, 3000, ctx)
        self.assertLess(attached, 75, ctx)
        steps, mean_ms = int(line[2]), float(line[3])
        # the steps timed: about the attached part of the loop's (the first second is
        # attached whole, before the first rate; steps across a slot's edge are not timed)
        self.assertLess(steps, truth["steps"] * 0.8, ctx)
        self.assertGreater(steps, truth["steps"] * 0.03, ctx)
        # their times and phases stand for all of the loop's steps (tolerances of
        # test_fast_steps). The mean time: within 5% below; above, 5% plus the probes' own
        # cost, which only the timed steps pay (six scope events of ~2-3 us each, up to
        # 18 us of a 0.3 ms step, while the loop's mean is mostly of steps run without
        # them: a clean CI run measured 6.0% over, 0.320 ms against 0.302)
        mean = 1e3 * truth["total"] / truth["steps"]
        print("\n  attached %d%%, %d of %d steps timed, mean %.3f ms (the loop's %.3f)"
              % (attached, steps, truth["steps"], mean_ms, mean), file=sys.stderr)
        self.assertGreater(mean_ms, mean * 0.95, ctx)
        self.assertLess(mean_ms, mean * 1.05 + 0.018, ctx)
        total = truth["total"]
        opt, cpu = float(line[9]), float(line[10])
        self.assertLess(abs(float(line[7]) - 100 * truth["data"] / total), 2.0, ctx)
        self.assertLess(abs(opt - 100 * truth["opt"] / total), 7.0, ctx)
        self.assertLess(abs(cpu - 100 * truth["compute_cpu"] / total), 9.0, ctx)
        # the steps profile holds the attached time only: samples while the probes were
        # away, or before a thread's first step after they came back, have no phase (the
        # whole loop's would be 1 / attached times as much)
        wall = sum(vals[-1] for _, vals, _ in
                   pprof_reader.load(base + ".steps.pb.gz").stacks())
        timed = steps * mean_ms / 1e3
        self.assertLess(abs(wall / 1e9 - timed) / timed, 0.3,
                        "steps profile %.2f s, timed steps %.2f s%s" % (wall / 1e9, timed, ctx))

    def test_fast_steps_no_uprobe_multi(self):
        """Without uprobe_multi links (kernels before 6.6, as MLPROF_TEST_NO_UPROBE_MULTI=1
        makes it), a release waits a grace period per site: the probes stay attached at any
        rate, and every step is timed."""
        truth, line, err = self.run_loop(0, 0, env={"COMPUTE_ITERS": "0", "NO_CPU_CLOCK": "1",
                                                    "MLPROF_TEST_NO_UPROBE_MULTI": "1"},
                                         steps=6000)
        ctx = "\ntruth %s\n%s" % (truth, err)
        self.assertNotIn("probes attached", err, ctx)
        self.assertLessEqual(abs(int(line[2]) - truth["steps"]), 1, ctx)

    def test_bad_steps_max_scopes(self):
        for bad in ("-1", "abc", "100000001"):
            cp = subprocess.run([MLPROF, "record", "--steps-max-scopes", bad, "-o",
                                 os.path.join(tmpdir(), "b.pb.gz"), "--", "true"],
                                capture_output=True, text=True, timeout=60)
            self.assertEqual(cp.returncode, 2, cp.stderr)
            self.assertIn("invalid --steps-max-scopes '%s'" % bad, cp.stderr)
            self.assertEqual(len(cp.stderr.strip().splitlines()), 1, cp.stderr)

    def test_gpu_wait(self):
        """Each step waits 5 ms in a synchronize call (tests/cuda's test double of the
        driver: no GPU here), seen by the CUDA probes: the gpu_wait phase."""
        fake = os.path.join(os.environ.get("CUDA_TEST_DIR", ""), "fakedrv", "libcuda.so.1")
        if not os.path.exists(fake):
            self.skipTest("no CUDA test double at %s (tests/cuda.cmake)" % fake)
        base = os.path.join(tmpdir(), "g")
        truth, line, err = self.run_loop(0.005, 0, env={"FAKE_CUDA": fake, "GPU_WAIT_MS": "5"},
                                         out=base + ".pb.gz", flags=["--off-cpu"])
        self.check(truth, line, err)
        self.assertGreater(float(line[6]), 5.0, err)
        # the steps profile: the wait's time (off CPU here, spinning on a GPU host) is
        # gpu_wait, under the line that synchronizes (a wait is marked at its start)
        wall, under = {}, 0
        for fr, vals, labels in pprof_reader.load(base + ".steps.pb.gz").detailed_stacks():
            ph = labels.get("ml_phase")
            wall[ph] = wall.get(ph, 0) + vals[-1]
            if ph == "gpu_wait" and any(f["file"].endswith("py_steps.py") and
                                        f["line"] == truth["sync_line"] for f in fr):
                under += vals[-1]
        ctx = "\nsteps profile wall (ns) by phase: %s\n%s" % (wall, err)
        self.assertGreater(wall.get("gpu_wait", 0), 0, ctx)
        share = 100.0 * wall["gpu_wait"] / sum(wall.values())
        self.assertLess(abs(share - float(line[6])), 5.0, ctx)
        self.assertGreaterEqual(under / wall["gpu_wait"], 0.90, ctx)

    def test_two_workers(self):
        truth, line, err = self.run_loop(0.04, 2)
        self.check(truth, line, err)

    def test_phase_labels(self):
        """Samples of the training thread carry ml_phase; with --off-cpu, the data wait's
        time (CPU and off-CPU together) is under the dataset's __getitem__ line. The steps
        profile (wall time by stack and phase) agrees with the summary line."""
        if not os.access(TORCH_PY, os.X_OK):
            self.skipTest("no PyPI torch at %s (set TORCH_PYTHON)" % TORCH_PY)
        d = tmpdir()
        base = os.path.join(d, "p")
        cp, js = record(["-o", base + ".pb.gz", "-o", base + ".html", "--no-memory",
                         "--off-cpu"],
                        [TORCH_PY, LOOP, "150", "0.012", "0"], timeout=300)
        phases, under = {}, 0
        for path in (base + ".pb.gz", base + ".offcpu.pb.gz"):
            for names, vals, labels in pprof_reader.load(path).stacks():
                ph = labels.get("ml_phase")
                phases[ph] = phases.get(ph, 0) + vals[-1]
                if ph == "data_wait" and any(n.endswith("__getitem__") for n in names):
                    under += vals[-1]
        ctx = "\nweight (ns) by ml_phase: %s\n%s" % (phases, cp.stderr)
        for ph in ("data_wait", "optimizer", "cpu_compute"):
            self.assertGreater(phases.get(ph, 0), 0, ph + ctx)
        self.assertGreaterEqual(under / phases["data_wait"], 0.90, ctx)

        # the steps profile: one sample type, wall ns, every sample with a phase
        prof = pprof_reader.load(base + ".steps.pb.gz")
        wall, under = {}, 0
        for names, vals, labels in prof.stacks():
            ph = labels.get("ml_phase")
            self.assertIsNotNone(ph, names)
            wall[ph] = wall.get(ph, 0) + vals[-1]
            if ph == "data_wait" and any(n.endswith("__getitem__") for n in names):
                under += vals[-1]
        line = steps_lines(cp.stderr)[0]
        steps_s = int(line[2]) * float(line[3]) / 1e3
        total = sum(wall.values())
        ctx = "\nsteps profile (ns) by ml_phase: %s\n%s" % (wall, cp.stderr)
        self.assertLess(abs(total / 1e9 - steps_s) / steps_s, 0.15, ctx)
        for i, ph in enumerate(PHASES):
            self.assertLess(abs(100.0 * wall.get(ph, 0) / total - float(line[6 + i])), 5.0,
                            ph + ctx)
        self.assertGreaterEqual(under / wall["data_wait"], 0.90, ctx)

        # its flame graph: one node per phase under the root, each with the phase's time
        with open(base + ".steps.html") as f:
            page = re.search(r'<script[^>]*id="fg-data"[^>]*>(.*?)</script>', f.read(), re.S)
        root = json.loads(page.group(1))
        kids = {c["name"]: c["value"] for c in root.get("children", [])}
        self.assertEqual(set(kids), {"ml_phase=" + ph for ph in wall}, ctx)
        for ph, v in wall.items():
            self.assertEqual(kids["ml_phase=" + ph], v, ctx)
        # the CPU profile's page is not grouped (samples outside steps have no phase)
        with open(base + ".html") as f:
            self.assertNotIn('"ml_phase=', f.read())

    def test_debian_torch_by_frames(self):
        """Debian's python3-torch 1.13 opens its scopes through functions mlprof does not
        probe: no steps are counted, and the phases come from the main thread's Python
        frames (CPU and off-CPU time), said so in the summary line, against the loop's own
        measure (data within 6 points, optimizer within 6: samples at 99 Hz)."""
        if not os.access(DEBIAN_PY, os.X_OK):
            self.skipTest("no %s" % DEBIAN_PY)
        probe = subprocess.run([DEBIAN_PY, "-c", "import torch"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("Debian's python3-torch is not installed")
        base = os.path.join(tmpdir(), "d")
        # Debian's torch computes slowly (its BLAS): 4 matmuls a step, 60 steps, 50 ms items
        cp, js = record(["-o", base + ".pb.gz", "--no-memory", "--off-cpu"],
                        [DEBIAN_PY, LOOP, "60", "0.05", "0"], timeout=300,
                        env={"COMPUTE_ITERS": "4"})
        self.assertTrue(js, cp.stderr)
        self.assertEqual(steps_lines(cp.stderr), [], cp.stderr)
        m = re.search(r"^mlprof: steps: pid \d+ \(\S+\): no step boundaries .*?, ([0-9.]+) s "
                      r"of CPU and off-CPU time; gpu_wait ([0-9.]+)%, data_wait ([0-9.]+)%, "
                      r"comm ([0-9.]+)%, optimizer ([0-9.]+)%, cpu_compute ([0-9.]+)%, "
                      r"other ([0-9.]+)%", cp.stderr, re.M)
        self.assertIsNotNone(m, cp.stderr)
        truth, total = js[0], js[0]["total"]
        ctx = "\ntruth %s\n%s" % (truth, cp.stderr)
        secs, data, opt = float(m.group(1)), float(m.group(3)), float(m.group(5))
        self.assertLess(abs(secs / total - 1), 0.25, ctx)
        self.assertLess(abs(data - 100 * truth["data"] / total), 6.0, ctx)
        self.assertLess(abs(opt - 100 * truth["opt"] / total), 6.0, ctx)
        # the steps profile holds them, by phase, with the dataset's line under data_wait
        wall, under = {}, 0
        for names, vals, labels in pprof_reader.load(base + ".steps.pb.gz").stacks():
            ph = labels.get("ml_phase")
            wall[ph] = wall.get(ph, 0) + vals[-1]
            if ph == "data_wait" and any(n.endswith("__getitem__") for n in names):
                under += vals[-1]
        self.assertGreater(wall.get("data_wait", 0), 0, ctx)
        self.assertGreaterEqual(under / wall["data_wait"], 0.90, "%s%s" % (wall, ctx))


COMM_LOOP = os.path.join(SRC, "workloads", "py_comm_steps.py")


class CommSteps(unittest.TestCase):
    """Two ranks on CPU (gloo): the time a rank waits for the other's collective is comm."""

    def setUp(self):
        need_root(self)
        if not os.access(TORCH_PY, os.X_OK):
            self.skipTest("no PyPI torch at %s (set TORCH_PYTHON)" % TORCH_PY)

    def run_ranks(self, mode):
        cp, js = record(["-o", os.path.join(tmpdir(), "c.pb.gz"), "--no-memory"],
                        [TORCH_PY, COMM_LOOP, mode, "100", "0.01", str(free_port())],
                        timeout=300)
        truth = {j["pid"]: j for j in js}
        lines = {int(m[0]): m for m in steps_lines(cp.stderr)}
        self.assertEqual(set(lines), set(truth), cp.stderr)  # the ranks, not the launcher
        by_rank = {truth[pid]["rank"]: (truth[pid], lines[pid]) for pid in truth}
        for t, line in by_rank.values():
            self.assertLessEqual(abs(int(line[2]) - t["steps"]), 1, cp.stderr)
            self.assertLess(abs(int(line[2]) * float(line[3]) / 1e3 - t["total"]) / t["total"],
                            0.02, cp.stderr)
        return by_rank, cp.stderr

    def test_allreduce(self):
        """dist.all_reduce (c10d::Work::wait): each rank's comm within 4 points of the time
        it measured in the call."""
        by_rank, err = self.run_ranks("allreduce")
        for rank, (t, line) in by_rank.items():
            self.assertLess(abs(float(line[8]) - 100 * t["wait"] / t["total"]), 4.0,
                            "rank %d: %s\n%s" % (rank, t, err))
        self.assertGreater(float(by_rank[0][1][8]), 60.0, err)
        # rank 1 sleeps before it: off CPU, not comm
        self.assertGreater(float(by_rank[1][1][11]), 50.0, err)

    def test_ddp(self):
        """DistributedDataParallel: rank 0 waits for rank 1's all-reduces at the end of its
        backward (c10d::Reducer::finalize_backward): comm is most of its backward."""
        by_rank, err = self.run_ranks("ddp")
        t, line = by_rank[0]
        backward = 100 * t["wait"] / t["total"]
        self.assertGreater(float(line[8]), backward - 10.0, "%s\n%s" % (t, err))
        self.assertLess(float(line[8]), backward + 1.0, "%s\n%s" % (t, err))


class AgentSteps(unittest.TestCase):
    """The agent: per service, training steps and their times as metrics, and the wall
    time by stack and phase as its own series (ml_steps), one pprof per window."""

    def setUp(self):
        need_root(self)
        if not os.access(TORCH_PY, os.X_OK):
            self.skipTest("no PyPI torch at %s (set TORCH_PYTHON)" % TORCH_PY)

    def get(self, port, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
                return r.status, r.read().decode()
        except (urllib.error.URLError, OSError):
            return 0, ""

    def test_agent_steps(self):
        d = tmpdir()
        out = os.path.join(d, "out")
        # 300 steps: the time after the last step (interpreter shutdown) still counts as a
        # step's until it is long past (steps.c: STALE_STEPS), a share of a short loop
        loop = subprocess.Popen([TORCH_PY, LOOP, "300", "0.012", "0"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, WAIT_GO="1"))
        self.addCleanup(loop.kill)
        port = free_port()
        logf = open(os.path.join(d, "agent.log"), "w+")
        self.addCleanup(logf.close)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLPROF_")}
        agent = subprocess.Popen([MLPROF, "agent", "--pid", str(loop.pid), "--off-cpu",
                                  "--upload-interval", "2", "--output-dir", out, "--k8s", "off",
                                  "--metrics-addr", "127.0.0.1:%d" % port],
                                 stdout=logf, stderr=subprocess.STDOUT, env=env)
        self.addCleanup(agent.kill)
        deadline = time.time() + 60
        while self.get(port, "/readyz")[0] != 200:
            self.assertIsNone(agent.poll(), "agent exited")
            self.assertLess(time.time(), deadline, "agent never ready")
            time.sleep(0.2)
        time.sleep(1)  # the loop's libtorch_cpu probed (at its first samples)
        loop.stdin.write("go\n")
        loop.stdin.flush()
        truth = json.loads(loop.communicate(timeout=300)[0].strip().splitlines()[-1])
        time.sleep(5)  # the last window sent
        metrics = self.get(port, "/metrics")[1]
        agent.terminate()
        agent.wait(timeout=30)
        logf.seek(0)
        ctx = "\ntruth %s\n%s\n%s" % (truth, "\n".join(
            m for m in metrics.splitlines() if "training" in m), logf.read()[-3000:])

        def metric(name):
            m = re.search(r"^%s\{service_name=\"py_steps\"\} ([0-9.e+-]+)$" % name, metrics,
                          re.M)
            self.assertIsNotNone(m, name + ctx)
            return float(m.group(1))

        steps = metric("mlprof_training_steps_total")
        # steps before the probes were attached (the first samples after "go") are missed
        self.assertLessEqual(steps, truth["steps"] + 1, ctx)
        self.assertGreaterEqual(steps, truth["steps"] - 5, ctx)
        mean = truth["total"] / truth["steps"]
        self.assertLess(abs(metric("mlprof_training_step_seconds_sum") /
                            metric("mlprof_training_step_seconds_count") - mean) / mean, 0.05,
                        ctx)
        self.assertLess(abs(metric("mlprof_training_step_p50_seconds") - mean) / mean, 0.25, ctx)
        self.assertGreaterEqual(metric("mlprof_training_step_p99_seconds"),
                                metric("mlprof_training_step_p50_seconds"), ctx)
        share = truth["data"] / truth["total"]
        self.assertLess(abs(metric("mlprof_training_data_wait_ratio") - share), 0.07, ctx)
        # steps of ~15 ms: far under --steps-max-scopes, the probes attached all the time
        m = re.search(r"^mlprof_training_step_probe_ratio ([0-9.e+-]+)$", metrics, re.M)
        self.assertIsNotNone(m, ctx)
        self.assertEqual(float(m.group(1)), 1.0, ctx)

        files = glob.glob(os.path.join(out, "py_steps.ml_steps-*.pb.gz"))
        self.assertGreaterEqual(len(files), 2, ctx)
        wall, under = {}, 0
        for f in files:
            for names, vals, labels in pprof_reader.load(f).stacks():
                ph = labels.get("ml_phase")
                wall[ph] = wall.get(ph, 0) + vals[-1]
                if ph == "data_wait" and any(n.endswith("__getitem__") for n in names):
                    under += vals[-1]
        # the CPU part of ml_steps is the CPU series' samples that have a phase (added at
        # each window's flush): every phase's CPU time is in it (its off-CPU time on top)
        cpu = {}
        for f in glob.glob(os.path.join(out, "py_steps-*.pb.gz")):
            for names, vals, labels in pprof_reader.load(f).stacks():
                ph = labels.get("ml_phase")
                if ph:
                    cpu[ph] = cpu.get(ph, 0) + vals[-1]
        ctx = "\nml_steps (ns) by ml_phase: %s\nprocess_cpu (ns) by ml_phase: %s%s" % (
            wall, cpu, ctx)
        self.assertGreater(sum(cpu.values()), 0, ctx)
        for ph, ns in cpu.items():
            self.assertGreaterEqual(wall.get(ph, 0), ns, ctx)
        self.assertNotIn(None, wall, ctx)
        self.assertLess(abs(wall.get("data_wait", 0) / sum(wall.values()) - share), 0.07, ctx)
        self.assertGreaterEqual(under / wall["data_wait"], 0.90, ctx)

    def test_agent_steps_pyroscope(self):
        """Against a real Pyroscope v2.2.1 (only where a server binary is at hand): the agent's
        ml_steps series is a profile type of its own, ml_phase a label it can be selected
        by: {ml_phase="data_wait"} holds the dataset's __getitem__ (>= 90%), and the phases'
        totals give the loop's own data-wait share within 7 points."""
        why = pyroscope_server.skip_reason(PYRO_SH)
        if why:
            self.skipTest(why)
        d = tmpdir()
        srv = pyroscope_server.Server(PYRO_SH, os.path.join(d, "pyro"))
        srv.start(timeout=180)
        self.addCleanup(srv.stop)
        service = "steps-it-%d" % os.getpid()
        loop = subprocess.Popen([TORCH_PY, LOOP, "300", "0.012", "0"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, WAIT_GO="1"))
        self.addCleanup(loop.kill)
        agent = pyroscope_server.Agent(MLPROF, srv.url, [
            "--pid", str(loop.pid), "--off-cpu", "--upload-interval", "2",
            "--service-rule", "process:%s=%s" % (re.escape(os.path.basename(LOOP)), service)],
            d)
        self.addCleanup(agent.kill)
        agent.wait_ready(timeout=60)
        time.sleep(1)  # the loop's libtorch_cpu probed (at its first samples)
        loop.stdin.write("go\n")
        loop.stdin.flush()
        truth = json.loads(loop.communicate(timeout=300)[0].strip().splitlines()[-1])
        time.sleep(3)  # the last window sent
        self.assertEqual(agent.stop(), 0, agent.log()[-3000:])
        sel = '{service_name="%s"}' % service
        phases = pyroscope_server.wait_for(
            lambda: srv.label_values("ml_phase", sel) >= {"data_wait", "cpu_compute"}
            and srv.label_values("ml_phase", sel), 30, 1) or set()
        totals = {ph: int(srv.merged(ML_STEPS, '{service_name="%s",ml_phase="%s"}' %
                                     (service, ph)).get("total", 0) or 0) for ph in phases}
        fg = srv.merged(ML_STEPS, '{service_name="%s",ml_phase="data_wait"}' % service)
        names, _ = pyroscope_server.flame_totals(fg)
        under = max([v for n, v in names.items() if n.endswith("__getitem__")] or [0])
        share = truth["data"] / truth["total"]
        ctx = ("\ntruth %s\nml_steps by ml_phase (ns): %s\n__getitem__ under data_wait: "
               "%d of %s\nprofile types %s\n%s" %
               (truth, totals, under, fg.get("total"), sorted(srv.profile_types()),
                agent.log()[-2000:]))
        print(ctx[:700])
        self.assertIn(ML_STEPS, srv.profile_types(), ctx)
        self.assertTrue({"data_wait", "cpu_compute", "optimizer"} <= set(totals), ctx)
        wall = sum(totals.values())
        self.assertLess(abs(totals["data_wait"] / wall - share), 0.07, ctx)
        self.assertLess(abs(totals["optimizer"] / wall - truth["opt"] / truth["total"]), 0.03,
                        ctx)
        self.assertLess(abs(totals["cpu_compute"] / wall - truth["compute_cpu"] /
                            truth["total"]), 0.05, ctx)
        self.assertGreaterEqual(under / int(fg["total"]), 0.90, ctx)


if __name__ == "__main__":
    raise SystemExit(run_main())
