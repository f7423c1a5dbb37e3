# SPDX-License-Identifier: Apache-2.0
"""Churn soak of `mlprof agent` (199 Hz, 5 s windows, local files, process and label
caches bounded to 64 so they evict, following only the storm's pid and its children)
while tests/workloads/churn.c runs a fork/exec storm (short-lived churn_a/churn_b processes),
creates and joins threads, and reuses pids: churn_a runs at pid P, exits, and churn_b is
started at the same P (clone3 set_tid).

Checks: the agent never dies and exits 0 on SIGTERM; every cache stays within its bound
(and the process and label caches did evict); the agent's anonymous RSS stops growing;
no wrong names after pid reuse: the sampled thread's own name (the kernel's comm at sample
time, label thread_name) decides which binary ran, so a churn_b sample must carry
churn_b_work and never churn_a_work (same code layout in both binaries, so a stale
mapping or symbol table would name it churn_a_work), process_name churn_b and a
churn_b series, and the same the other way round; samples of reused pids are seen from
both binaries.

CHURN_SECONDS (default 45) sets the storm's length; bench/churn.sh runs this file for
minutes with CHURN_REPORT=1, which prints the RSS trend and cache sizes per interval.
Needs root (BPF, clone3 set_tid); exit 77 = skipped."""
import glob
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest
import urllib.request

from itutil import MLPROF, free_port, need_root, run_main, stacks_of, tmpdir

WL = os.environ.get("WL_DIR", "build/tests/workloads")
CHURN = os.environ.get("CHURN", os.path.join(WL, "churn"))
CHURN_A = os.environ.get("CHURN_A", os.path.join(WL, "churn_a"))
CHURN_B = os.environ.get("CHURN_B", os.path.join(WL, "churn_b"))
SECONDS = float(os.environ.get("CHURN_SECONDS", "45"))
REPORT = os.environ.get("CHURN_REPORT") == "1"
# bounds handed to the agent, and the metric each one caps
BOUNDS = {"mlprof_procs_cached": 64, "mlprof_label_cache_entries": 64,
          "mlprof_symcache_bytes": 8 << 20, "mlprof_python_code_cache_bytes": 8 << 20,
          "mlprof_elf_files": 1024}
MAX_SERVICES = 32
# after warm-up (the first third), anonymous RSS may grow this much besides what the
# symbol cache grew by (it fills up to its bound); and it never exceeds the agent's budget
ANON_GROWTH_KB = 4096
ANON_MAX_KB = 64 << 10


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out


def status_kb(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile"):
                out[k] = int(v.split()[0])
    return out


def slope_kb_per_min(rows, key):
    """Least-squares slope of rows[key] over rows["t"] (seconds), in KB per minute."""
    n = len(rows)
    mt = sum(r["t"] for r in rows) / n
    mv = sum(r[key] for r in rows) / n
    den = sum((r["t"] - mt) ** 2 for r in rows) or 1e-9
    return 60 * sum((r["t"] - mt) * (r[key] - mv) for r in rows) / den


class Sampler(threading.Thread):
    """Every second: the agent's RSS and cache metrics (scraped while it runs)."""

    def __init__(self, pid, port):
        super().__init__(daemon=True)
        self.pid, self.port, self.rows, self.stop, self.errors = pid, port, [], False, []
        self.t0 = time.time()

    def run(self):
        while not self.stop:
            try:
                row = dict(status_kb(self.pid), **scrape(self.port))
                row["t"] = time.time() - self.t0
                self.rows.append(row)
            except (OSError, ValueError) as e:
                self.errors.append("%.0f s: %s" % (time.time() - self.t0, e))
            time.sleep(1)


class Churn(unittest.TestCase):
    def setUp(self):
        need_root(self)
        for p in (CHURN, CHURN_A, CHURN_B):
            if not os.access(p, os.X_OK):
                self.fail("missing workload %s" % p)
        self.dir = tmpdir()

    def start_agent(self, out_dir, port, storm_pid):
        argv = [MLPROF, "agent", "--frequency", "199", "--upload-interval", "5",
                "--output-dir", out_dir, "--spool-dir", os.path.join(self.dir, "spool"),
                "--metrics-addr", "127.0.0.1:%d" % port, "--k8s", "off",
                "--service-min-age", "0", "--max-services", str(MAX_SERVICES),
                # only the storm and what it forks (kernel-side): every one of its ~10^5
                # processes goes through the caches, other work on the host does not
                "--pid", str(storm_pid),
                "--max-procs", str(BOUNDS["mlprof_procs_cached"]),
                "--label-cache-size", str(BOUNDS["mlprof_label_cache_entries"]),
                "--symcache-bytes", str(BOUNDS["mlprof_symcache_bytes"]),
                "--log-level", "warn"]
        log = open(os.path.join(self.dir, "agent.log"), "w")
        agent = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.time() + 30
        while time.time() < deadline and agent.poll() is None:
            try:
                scrape(port)
                return agent
            except OSError:
                time.sleep(0.2)
        agent.kill()
        agent.wait()
        self.fail("agent did not start: %s" % self.log())

    def log(self):
        with open(os.path.join(self.dir, "agent.log")) as f:
            return f.read()

    def test_churn(self):
        out_dir = os.path.join(self.dir, "profiles")
        port = free_port()
        # the storm starts first so the agent can follow it (and only it) from its pid
        storm = subprocess.Popen([CHURN, str(SECONDS + 3), CHURN_A, CHURN_B],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        agent = self.start_agent(out_dir, port, storm.pid)
        sampler = Sampler(agent.pid, port)
        sampler.start()
        try:
            out, err = storm.communicate(timeout=SECONDS + 120)
            self.assertEqual(storm.returncode, 0, err)
            res = json.loads(out.strip().splitlines()[-1])
            if res["pairs"] == 0 and res["reuse_failed"] > 0:
                self.skipTest("clone3 set_tid refused here: no pid reuse to check")
            time.sleep(6)  # the last window is written
            sampler.stop = True
            sampler.join(10)
            self.assertIsNone(agent.poll(), "agent died (%s): %s" % (agent.returncode,
                                                                   self.log()[-2000:]))
            agent.send_signal(signal.SIGTERM)
            self.assertEqual(agent.wait(timeout=20), 0, self.log()[-2000:])
        finally:
            sampler.stop = True
            if storm.poll() is None:
                storm.kill()
                storm.communicate()
            if agent.poll() is None:
                agent.kill()
                agent.wait()
        rows = sampler.rows
        self.assertGreater(len(rows), SECONDS / 2, "metrics scraped %d times: %s"
                           % (len(rows), sampler.errors[:5]))
        with open(os.path.join(self.dir, "metrics.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        names, wrong = self.check_names(out_dir, set(res["reused"]))
        report = self.resources(rows)
        if REPORT:
            self.print_report(res, rows, names, report)
            print("every scrape: %s" % os.path.join(self.dir, "metrics.jsonl"))
        self.check_resources(rows, report)
        self.assertGreaterEqual(res["spawned"], 1000 if SECONDS < 100 else 10000, res)
        self.assertGreater(res["threads"], 1000, res)
        for why, examples in wrong.items():
            if why == "in the other binary's series":
                # Known limit: the labeler tells a late sample of an exited process from the
                # pid's new holder by start time, which /proc gives in clock ticks (10 ms):
                # a pid reused within the same tick (this storm reuses pids at once) can
                # still put a sample in the new holder's series. Bounded here (3%: on
                # 2026-11-26 the unchanged agent of 4569e2b put 54 of 2580 there, 2.1%, on
                # the development VM); frames and process names (the other checks) must
                # never be wrong.
                self.assertLessEqual(len(examples), max(3, names["reused_pid_samples"] * 3 // 100),
                                     "%d samples %s after pid reuse (of %d), e.g. %s" % (
                                         len(examples), why, names["reused_pid_samples"],
                                         examples[:3]))
                continue
            self.assertEqual(examples, [], "%d samples %s after pid reuse, e.g. %s" % (
                len(examples), why, examples[:3]))
        self.assertGreater(names["reused_pid_samples"], 50, names)
        # A reused pid's samples name its work function (40 ms of CPU), or are the
        # process's start (exec, ld.so: CPUID in init_cpu_features alone takes 2-8 ms on
        # a VM, so that share varies by host: 8-15% on the development VM); few are lost
        # (the process gone before its maps were read, or a binary's raw addresses).
        self.assertGreaterEqual(names["reused_pid_named"] / names["reused_pid_samples"], 0.70,
                                names)
        self.assertLessEqual(names["reused_pid_lost"] / names["reused_pid_samples"], 0.03,
                             names)
        self.assertGreaterEqual(names["reused_pids_seen_both"], 3,
                                "reused pids sampled in both binaries: %s" % names)

    def resources(self, rows):
        """Growth of anonymous RSS after warm-up (the first third), of the symbol cache
        (which fills up to its bound) meanwhile, and the trends."""
        steady = [r for r in rows if r["t"] >= rows[-1]["t"] / 3]
        first, end = steady[0], steady[-1]
        return {"anon_growth_kb": end["RssAnon"] - first["RssAnon"],
                "symcache_growth_kb": (end["mlprof_symcache_bytes"] -
                                       first["mlprof_symcache_bytes"]) / 1024,
                "anon_slope": slope_kb_per_min(steady, "RssAnon"),
                "rss_slope": slope_kb_per_min(steady, "VmRSS"),
                "steady": [(round(r["t"]), r["RssAnon"]) for r in steady[::5]]}

    def check_resources(self, rows, rep):
        for key, bound in BOUNDS.items():
            seen = [r[key] for r in rows if key in r]
            self.assertTrue(seen, "metric %s missing" % key)
            self.assertLessEqual(max(seen), bound, "%s exceeded its bound" % key)
        last = rows[-1]
        self.assertGreater(last["mlprof_proc_evictions_total"], 0, "process cache never full")
        self.assertGreater(last["mlprof_label_cache_evictions_total"], 0,
                           "label cache never full")
        self.assertLess(rep["anon_growth_kb"] - rep["symcache_growth_kb"], ANON_GROWTH_KB,
                        "anonymous RSS grew %d KB after warm-up, the symbol cache %d KB (%s)"
                        % (rep["anon_growth_kb"], rep["symcache_growth_kb"], rep["steady"]))
        self.assertLess(max(r["RssAnon"] for r in rows), ANON_MAX_KB)

    def check_names(self, out_dir, reused):
        """CPU sample counts of churn_a/churn_b, and the samples (of every profile type)
        not named after the binary that really ran (the sampled thread's comm), by what
        was wrong."""
        files = glob.glob(os.path.join(out_dir, "**", "*.pb.gz"), recursive=True)
        self.assertTrue(files, "no profiles written: %s" % self.log())
        wrong = {"with the other binary's frames": [], "in the other binary's series": [],
                 "with the other binary's process_name": []}
        n = {"samples": 0, "reused_pid_samples": 0, "reused_pid_named": 0,
             "reused_pid_startup": 0, "reused_pid_lost": 0}
        by_pid = {}
        for path in files:
            # SERVICE[.KIND]-TIME-WINDOW.pb.gz
            m = re.match(r"(.*?)(\.[a-z_]+)?-\d{8}T\d{6}Z-\d+\.pb\.gz$",
                         os.path.basename(path))
            service, cpu = m.group(1), not m.group(2)
            for frames, v, labels in stacks_of(path)[1]:
                comm = labels.get("thread_name")
                if comm not in ("churn_a", "churn_b"):
                    continue
                other = "churn_b" if comm == "churn_a" else "churn_a"
                pid = labels.get("pid")
                if cpu:
                    n["samples"] += v
                if cpu and pid in reused:  # 40 ms in churn_X_work: nearly all samples there
                    n["reused_pid_samples"] += v
                    if comm + "_work" in frames:
                        n["reused_pid_named"] += v
                    elif any(f.startswith("[process exited") or
                             re.match(r"churn_[ab]\+0x", f) for f in frames):
                        n["reused_pid_lost"] += v
                    elif "_dl_start" in frames or "_dl_init" in frames or \
                            "do_execveat_common.isra.0" in frames:
                        n["reused_pid_startup"] += v
                    by_pid.setdefault(pid, set()).add(comm)
                seen = (service, pid, comm, frames[:3])
                if other + "_work" in frames:
                    wrong["with the other binary's frames"].append(seen)
                if service == other:
                    wrong["in the other binary's series"].append(seen)
                if labels.get("process_name", comm) != comm:
                    wrong["with the other binary's process_name"].append(seen)
        n["reused_pids_seen_both"] = sum(1 for s in by_pid.values() if len(s) == 2)
        n.update({why: len(ex) for why, ex in wrong.items()})
        return n, wrong

    def print_report(self, res, rows, names, rep):
        print("churn: %.0f s: %d processes, %d threads, %d pid-reuse pairs (%d refused)" % (
            SECONDS, res["spawned"], res["threads"], res["pairs"], res["reuse_failed"]))
        print("names: %s" % names)
        print("| t (s) | RSS (MB) | anon RSS (MB) | procs cached | label cache | symcache (MB) "
              "| ELF files | samples | proc evictions |")
        print("|---|---|---|---|---|---|---|---|---|")
        step = max(1, len(rows) // 12)
        for r in rows[::step] + ([rows[-1]] if (len(rows) - 1) % step else []):
            print("| %.0f | %.1f | %.1f | %d | %d | %.1f | %d | %d | %d |" % (
                r["t"], r["VmRSS"] / 1024, r["RssAnon"] / 1024, r["mlprof_procs_cached"],
                r["mlprof_label_cache_entries"], r["mlprof_symcache_bytes"] / 2**20,
                r["mlprof_elf_files"], r["mlprof_samples_total"],
                r["mlprof_proc_evictions_total"]))
        print("after the first third: RSS trend %+.1f KB/min, anonymous %+.1f KB/min; "
              "anonymous growth %+d KB, of which the symbol cache %+d KB" % (
                  rep["rss_slope"], rep["anon_slope"], rep["anon_growth_kb"],
                  rep["symcache_growth_kb"]))


if __name__ == "__main__":
    raise SystemExit(run_main())
