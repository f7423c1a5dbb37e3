#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The sampling path never waits on the spool's disk.

`mlprof agent` pushes to a backend that is down (nothing listens), so every window goes
to the disk spool. The spool lives on its own small ext4 file system (a loop image), which
the test freezes (`fsfreeze -f`): from then on every write and fsync to it blocks, as on a
disk that stalls. For 8 s, while it is frozen:
  - /metrics answers every request within 1 s;
  - the agent keeps sampling and closing windows (mlprof_samples_total and
    mlprof_windows_total keep growing: the main loop is not stuck behind the spool);
  - the ring buffer drops nothing (ring_buffer_full unchanged).
Then the file system thaws and the backend comes up (tests/integration/fault_server.py,
the named test double for Pyroscope that logs each push's window time): every window the
agent built is delivered, none dropped, and the CPU windows arrive in order without a gap.
Needs root (BPF, mount, fsfreeze); exit 77 = skipped, with the reason.
Python 3 stdlib only.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from itutil import free_port  # noqa: E402

MLPROF = os.environ.get("MLPROF", "build/mlprof")
WORKLOAD = os.environ.get("AGENT_WORKLOAD", "build/tests/workloads/agent_workload")
TMP_ROOT = os.path.abspath(os.environ.get("TEST_TMP", tempfile.gettempdir()))
FAULT = os.path.join(HERE, "fault_server.py")
FREEZE_S = 8.0
INTERVAL_S = 1
METRICS_MAX_S = 1.0


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def metric(text, name):
    """Value of one metric line (name with its labels, exactly), 0 when absent."""
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else 0.0


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


class Fs:
    """A small ext4 file system on a loop image, for freezing."""

    def __init__(self, tmp):
        self.img = os.path.join(tmp, "spool.img")
        self.mnt = os.path.join(tmp, "spoolfs")
        self.mounted = self.frozen = False

    def setup(self):
        for tool in ("mkfs.ext4", "mount", "umount", "fsfreeze"):
            if not shutil.which(tool):
                skip("%s not installed" % tool)
        os.makedirs(self.mnt)
        with open(self.img, "wb") as f:
            f.truncate(64 << 20)
        cp = run(["mkfs.ext4", "-q", "-F", self.img])
        if cp.returncode:
            skip("mkfs.ext4 failed: %s" % cp.stderr.strip())
        cp = run(["mount", "-o", "loop", self.img, self.mnt])
        if cp.returncode:
            skip("cannot mount a loop image here: %s" % cp.stderr.strip())
        self.mounted = True

    def freeze(self, on):
        cp = run(["fsfreeze", "-f" if on else "-u", self.mnt])
        if cp.returncode:
            fail("fsfreeze %s: %s" % ("-f" if on else "-u", cp.stderr.strip()))
        self.frozen = on

    def cleanup(self):
        if self.frozen:
            run(["fsfreeze", "-u", self.mnt])
        if self.mounted:
            run(["umount", self.mnt])


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    fail("timed out waiting for " + what)


def main():
    if os.geteuid() != 0:
        skip("needs root (BPF, mount, fsfreeze)")
    for p in (MLPROF, WORKLOAD):
        if not os.access(p, os.X_OK):
            fail("missing executable %s" % p)
    os.makedirs(TMP_ROOT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="spool_stall.", dir=TMP_ROOT)
    fs = Fs(tmp)
    procs = []
    try:
        fs.setup()
        return check(tmp, fs, procs)
    finally:
        if fs.frozen:  # thaw first: a process blocked on the file system cannot die
            fs.freeze(False)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        fs.cleanup()


def check(tmp, fs, procs):
    mport, bport = free_port(), free_port()
    murl = "http://127.0.0.1:%d/metrics" % mport
    token = "tok%d" % os.getpid()
    procs.append(subprocess.Popen([WORKLOAD, "120", token], stdout=subprocess.DEVNULL))
    log_path = os.path.join(tmp, "agent.log")
    agent = subprocess.Popen(
        [MLPROF, "agent", "--url", "http://127.0.0.1:%d" % bport,
         "--spool-dir", os.path.join(fs.mnt, "spool"), "--upload-interval", str(INTERVAL_S),
         "--frequency", "99", "--process-regex", "agent_workloa[d] [0-9]+ %s$" % token,
         "--metrics-addr", "127.0.0.1:%d" % mport, "--k8s", "off",
         "--connect-timeout", "1", "--timeout", "2"],
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    procs.append(agent)

    def metrics():
        try:
            return get(murl)[1]
        except OSError:
            return None

    # the backend is down: windows go to the spool
    wait_for(lambda: (m := metrics()) and metric(m, "mlprof_profiles_spooled_total") >= 2,
             60, "two spooled profiles; log:\n" + open(log_path).read())
    m0 = metrics()
    fs.freeze(True)
    worst, t_end = 0.0, time.time() + FREEZE_S
    while time.time() < t_end:
        t = time.time()
        try:
            st, m1 = get(murl, timeout=10)
        except OSError as e:
            fail("/metrics failed while the spool is frozen: %s" % e)
        worst = max(worst, time.time() - t)
        time.sleep(0.5)
    fs.freeze(False)

    def delta(name):
        return metric(m1, name) - metric(m0, name)

    rb = 'mlprof_samples_dropped_total{reason="ring_buffer_full"}'
    print("while frozen for %.0f s: /metrics at most %.3f s; +%d samples, +%d windows, "
          "+%d ring-buffer drops, queue %d bytes" %
          (FREEZE_S, worst, delta("mlprof_samples_total"), delta("mlprof_windows_total"),
           delta(rb), metric(m1, "mlprof_queue_bytes")))
    if worst > METRICS_MAX_S:
        fail("/metrics took %.3f s while the spool was frozen" % worst)
    # 99 Hz on a busy thread for 8 s is ~800 samples; half of that proves the loop ran
    if delta("mlprof_samples_total") < 400:
        fail("sampling stalled while the spool was frozen: +%d samples"
             % delta("mlprof_samples_total"))
    if delta("mlprof_windows_total") < FREEZE_S / INTERVAL_S - 2:
        fail("windows stopped closing: +%d in %.0f s" % (delta("mlprof_windows_total"),
                                                           FREEZE_S))
    if delta(rb) != 0:
        fail("the ring buffer dropped %d samples while the spool was frozen" % delta(rb))

    # the backend comes up: everything built gets there, in order
    srv = subprocess.Popen([sys.executable, FAULT, "--port", str(bport)],
                           stdout=subprocess.DEVNULL)
    procs.append(srv)
    def drained():
        m = metrics()
        pushed = m and metric(m, "mlprof_profiles_pushed_total")
        if (pushed and metric(m, "mlprof_spool_files") == 0 and
                metric(m, "mlprof_queue_bytes") == 0 and
                pushed == metric(m, "mlprof_profiles_built_total")):
            return m
        return None

    m2 = wait_for(drained, 90, "every built profile to be pushed; log:\n" +
                  open(log_path).read())
    for name in ("mlprof_profiles_dropped_total", "mlprof_profiles_rejected_total"):
        if metric(m2, name):
            fail("%s = %d" % (name, metric(m2, name)))
    agent.send_signal(signal.SIGTERM)
    try:
        rc = agent.wait(timeout=15)
    except subprocess.TimeoutExpired:
        fail("agent did not exit within 15 s of SIGTERM")
    if rc != 0:
        fail("agent exited %d; log:\n%s" % (rc, open(log_path).read()))
    with urllib.request.urlopen("http://127.0.0.1:%d/_control/log" % bport, timeout=5) as r:
        log = [l for l in r.read().decode().splitlines() if l]
    ok = [l for l in log if l.startswith("200 ")]
    if len(ok) < metric(m2, "mlprof_profiles_pushed_total"):
        fail("the agent counted %d pushed, the backend logged %d" %
             (metric(m2, "mlprof_profiles_pushed_total"), len(ok)))
    cpu = []
    for l in log:
        if not l.startswith("200 ") or "__name__=process_cpu" not in l:
            continue
        t = re.search(r" t=(\d+)$", l)
        if not t:
            fail("push without a window time: %s" % l)
        cpu.append(int(t.group(1)))
    if len(cpu) < FREEZE_S / INTERVAL_S:
        fail("only %d CPU windows delivered; log:\n%s" % (len(cpu), "\n".join(log)))
    gaps = [(a, b) for a, b in zip(cpu, cpu[1:]) if b - a != INTERVAL_S * 10**9]
    if gaps:
        fail("CPU windows out of order or missing (%d of %d steps): %s" %
             (len(gaps), len(cpu) - 1, gaps[:5]))
    print("delivered after the thaw: %d pushes, %d built when drained, none dropped; %d CPU "
          "windows, contiguous and in order" % (len(ok), metric(m2, "mlprof_profiles_built_total"),
                                               len(cpu)))
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
