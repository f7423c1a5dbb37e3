#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`mlprof agent` end to end without a backend: windows written as local pprof files.

Runs `mlprof agent --upload-interval 2 --output-dir DIR` (filtered to a CPU workload with
known function names) for ~7 s, exercises /healthz, /readyz, /metrics and a SIGHUP reload,
sends SIGTERM, then checks: the agent exits 0 within a few seconds; one file per window
(single service); windows contiguous (time + duration == next time, no gaps, no overlaps);
the workload's functions present (decoded with `go tool pprof -raw -symbolize=none`, and
with a stdlib protobuf reader as well). Needs root (BPF); exit 77 = skipped.
Python 3 stdlib only.
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itutil import free_port  # noqa: E402
import pprof_reader  # noqa: E402

MLPROF = os.environ.get("MLPROF", "build/mlprof")
WORKLOAD = os.environ.get("AGENT_WORKLOAD", "build/tests/workloads/agent_workload")
TMP_ROOT = os.path.abspath(os.environ.get("TEST_TMP", tempfile.gettempdir()))
INTERVAL_NS = 2_000_000_000
FUNCS = ("agent_wl_hot_alpha", "agent_wl_hot_beta")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read_pprof(path):
    """Window metadata of one profile, read with the shared stdlib pprof reader."""
    prof = pprof_reader.load(path)
    return {"time": prof.time_nanos, "duration": prof.duration_nanos,
            "strings": prof.strings, "samples": len(prof.samples)}


def go_raw(path):
    go = shutil.which("go")
    if not go:
        return None
    cp = subprocess.run([go, "tool", "pprof", "-raw", "-symbolize=none", path],
                        capture_output=True, text=True, timeout=120)
    if cp.returncode != 0:
        fail("go tool pprof cannot read %s: %s" % (path, cp.stderr))
    return cp.stdout


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root for BPF")
        return 77
    for p in (MLPROF, WORKLOAD):
        if not os.access(p, os.X_OK):
            fail("missing executable %s" % p)
    os.makedirs(TMP_ROOT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="agent_local.", dir=TMP_ROOT)
    out_dir = os.path.join(tmp, "profiles")
    conf = os.path.join(tmp, "agent.conf")
    with open(conf, "w") as f:
        f.write("# test config\nlabel = reload_check=one\n")
    port = free_port()

    # A unique token on the workload's command line, matched by an anchored regex, keeps
    # other processes (a concurrent build naming agent_workload, say) out of the profile;
    # the regex does not match the agent's own command line.
    token = "tok%d" % os.getpid()
    wl = subprocess.Popen([WORKLOAD, "30", token], stdout=subprocess.DEVNULL)
    env = dict(os.environ, MLPROF_LOG_LEVEL="debug")
    argv = [MLPROF, "agent", "--upload-interval", "2", "--output-dir", out_dir,
            "--config", conf, "--process-regex", "agent_workloa[d] [0-9]+ %s$" % token,
            "--metrics-addr", "127.0.0.1:%d" % port, "--k8s", "off"]
    log_path = os.path.join(tmp, "agent.log")
    log = open(log_path, "w")
    agent = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        # ready once BPF is attached and the first window is open
        deadline = time.time() + 30
        ready = False
        while time.time() < deadline and agent.poll() is None:
            try:
                st, body = get("http://127.0.0.1:%d/readyz" % port)
                if st == 200:
                    ready = True
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not ready:
            fail("agent never became ready; log:\n" + open(log_path).read())
        st, body = get("http://127.0.0.1:%d/healthz" % port)
        if st != 200 or "ok" not in body:
            fail("/healthz: %d %s" % (st, body))
        st, body = get("http://127.0.0.1:%d/nope" % port)
        if st != 404:
            fail("unknown path answered %d" % st)

        time.sleep(3)
        with open(conf, "w") as f:
            f.write("label = reload_check=two\n")
        agent.send_signal(signal.SIGHUP)
        time.sleep(2.5)
        st, metrics = get("http://127.0.0.1:%d/metrics" % port)
        if st != 200:
            fail("/metrics: %d" % st)
        for name in ("mlprof_samples_total", "mlprof_samples_dropped_total{reason=\"filtered\"}",
                     "mlprof_unwind_total", "mlprof_symcache_bytes",
                     "mlprof_profiles_pushed_total", "mlprof_push_latency_seconds_count",
                     "mlprof_spool_bytes", "mlprof_config_reloads_total{result=\"ok\"} 1",
                     # the page-fault programs stay attached below --memory-max-faults
                     "mlprof_memory_fault_watch_ratio 1\n"):
            if name not in metrics:
                fail("metric %s missing:\n%s" % (name, metrics))
        samples = [l for l in metrics.splitlines() if l.startswith("mlprof_samples_total ")]
        if not samples or int(float(samples[0].split()[1])) <= 0:
            fail("no samples counted: %s" % samples)

        t0 = time.time()
        agent.send_signal(signal.SIGTERM)
        try:
            rc = agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fail("agent did not exit within 10 s of SIGTERM")
        took = time.time() - t0
        if rc != 0:
            fail("agent exited %d; log:\n%s" % (rc, open(log_path).read()))
        if took > 5:
            fail("agent took %.1f s to exit" % took)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        wl.kill()
        wl.wait()
        log.close()

    agent_log = open(log_path).read()
    if "reload: label: 'reload_check=one' -> 'reload_check=two'" not in agent_log:
        fail("SIGHUP reload not logged:\n" + agent_log)

    files = sorted(p for p in glob.glob(os.path.join(out_dir, "**", "*"), recursive=True)
                   if os.path.isfile(p) and not os.path.basename(p).startswith("."))
    files = [p for p in files if not p.endswith((".tmp", ".json"))]
    if len(files) < 3:
        fail("expected >= 3 window files in %s, got %s; log:\n%s" % (out_dir, files, agent_log))
    profs = []
    for p in files:
        pr = read_pprof(p)
        if not pr["samples"]:
            fail("empty profile written: %s" % p)
        profs.append((pr["time"], pr["duration"], p, pr))
    profs.sort()
    times = [t for t, _, _, _ in profs]
    if len(set(times)) != len(times):
        fail("more than one file for one window (single service): %s" %
             [(t, p) for t, _, p, _ in profs])
    for (t, d, p, _), (t2, _, p2, _) in zip(profs, profs[1:]):
        if d != INTERVAL_NS:
            fail("%s: duration %d, expected %d" % (p, d, INTERVAL_NS))
        if t + d != t2:
            fail("gap or overlap between %s (%d + %d) and %s (%d): %+d ns" %
                 (p, t, d, p2, t2, t2 - (t + d)))
    last_t, last_d, last_p, _ = profs[-1]
    if not 0 < last_d <= INTERVAL_NS:
        fail("last window %s has duration %d" % (last_p, last_d))
    wall_now = time.time_ns()
    if not (wall_now - 120 * 10**9 < profs[0][0] < wall_now):
        fail("window time %d is not recent wall clock time" % profs[0][0])

    found = set()
    for _, _, p, pr in profs:
        for fn in FUNCS:
            if fn in pr["strings"]:
                found.add(fn)
    if found != set(FUNCS):
        fail("workload functions missing from the profiles' strings: %s" % (set(FUNCS) - found))
    raw_found = set()
    go_checked = False
    for _, _, p, _ in profs:
        raw = go_raw(p)
        if raw is None:
            break
        go_checked = True
        for fn in FUNCS:
            if fn in raw:
                raw_found.add(fn)
    if go_checked and raw_found != set(FUNCS):
        fail("go tool pprof -raw does not show %s" % (set(FUNCS) - raw_found))
    print("PASS: %d windows, contiguous, functions %s%s" %
          (len(profs), sorted(found), "" if go_checked else " (go not found: stdlib check only)"))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
