#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# End-to-end acceptance of `mlprof agent` against a real Grafana Pyroscope and a fault server.
"""`mlprof agent` end to end: a CPU workload with known functions (tests/workloads/
agent_workload, started with ML launcher environment variables) is profiled by the agent,
which pushes to a real Pyroscope v2.2.1 (scripts/pyroscope.sh) or to the fault-injection
server (tests/integration/fault_server.py). What Pyroscope stores is queried back and
compared with what the agent says it produced: its log ("window N: K profiles, S samples,
start_ns T" at info, "delivered seq N" / "spooled seq N" at debug) and its /metrics.

Per window, SelectMergeStacktraces over the window's exact time range must return
S x period ns of CPU (and S in the samples type): none lost, none twice.

Cases: push + labels; server stopped and restarted mid-run; 429/500 retried and 400 not;
wrong URL (connection refused, 404 path) spools; multitenancy with and without tenant;
SIGKILL with a non-empty spool then delivery by the next run; SIGTERM with a backend that
never answers is bounded and spools everything.

Exit 77 (skipped) when not root (BPF) or when no Pyroscope binary is available
(`scripts/pyroscope.sh path`). Python 3 stdlib only.
"""
import glob
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyroscope_server  # noqa: E402
from itutil import free_port  # noqa: E402
from pyroscope_server import CleanupCase, Server, agent_test_main, span  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MLPROF = os.environ.get("MLPROF", os.path.join(SRC, "build", "mlprof"))
WORKLOAD = os.environ.get("AGENT_WORKLOAD",
                          os.path.join(SRC, "build", "tests", "workloads", "agent_workload"))
SCRIPT = os.environ.get("PYROSCOPE_SH", os.path.join(SRC, "scripts", "pyroscope.sh"))
FAULT = os.environ.get("FAULT_SERVER", os.path.join(HERE, "fault_server.py"))
TMP_ROOT = os.path.abspath(os.environ.get("TEST_TMP", tempfile.gettempdir()))

PTYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
PTYPE_N = "process_cpu:samples:count:cpu:nanoseconds"
HZ = 19
PERIOD_NS = 1000000000 // HZ
INTERVAL_S = 2
FUNCS = {"agent_wl_hot_alpha", "agent_wl_hot_beta", "agent_wl_outer", "main"}
ML_ENV = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "SLURM_JOB_ID": "4242",
          "TORCHELASTIC_RUN_ID": "abc"}
# Each workload gets a unique token argument and the agent a regex that matches only that
# command line (other processes on the host, even builds naming agent_workload, are out; the
# agent's own command line holds the regex, which does not match itself).
REGEX = "agent_workloa[d] [0-9]+ %s$"
SERVICE = "agent_workload"

DELIVERED_RE = re.compile(r"delivered seq (\d+) start_ns (-?\d+) \(attempt (\d+)\)")
SPOOLED_RE = re.compile(r"spooled seq (\d+) start_ns (-?\d+)")

TMP = None


def wait_for(cond, timeout, step=0.2):
    """pyroscope_server.wait_for, polling every 0.2 s unless told."""
    return pyroscope_server.wait_for(cond, timeout, step)


def spool_files(d):
    """Spooled profiles under spool dir d: one directory per destination (URL, tenant)."""
    return sorted(glob.glob(os.path.join(d, "*", "*.spool")))


class Pyroscope(Server):
    """The server on data dir TMP/NAME (extra: more server flags), started within 180 s."""

    def __init__(self, name, extra=""):
        super().__init__(SCRIPT, os.path.join(TMP, name), extra=extra)

    def start(self, timeout=180):
        super().start(timeout)

    def names_total(self, selector, start=None, end=None, ptype=PTYPE, tenant=None):
        """(function names, total) of the merged flame graph over [start, end] ms."""
        fg = self.merged(ptype, selector, start, end, tenant)
        return set(fg.get("names", [])), int(fg.get("total", 0) or 0)

    def series_points(self, selector, tenant=None):
        """[(timestamp ms, value)] with one step per window (distinct windows with data)."""
        s, e = span()
        out = self.query("SelectSeries", {"profileTypeID": PTYPE, "labelSelector": selector,
                                          "start": s, "end": e, "step": INTERVAL_S}, tenant)
        pts = []
        for ser in out.get("series", []):
            for p in ser.get("points", []):
                pts.append((int(p["timestamp"]), int(p["value"])))
        return sorted(pts)


class Agent(pyroscope_server.Agent):
    """The agent on the workload with token TOKEN (--process-regex), every INTERVAL_S at
    HZ, with label run=RUN_LABEL (default NAME), pushing to URL; its spool in TMP/NAME.spool
    unless told, its log in TMP/NAME.<ms>.log."""

    def __init__(self, name, *args, url, spool=None, run_label=None, token=None):
        self.name = name
        self.spool = spool or os.path.join(TMP, name + ".spool")
        super().__init__(
            MLPROF, url, ["--upload-interval", str(INTERVAL_S), "--frequency", str(HZ),
                          "--process-regex", REGEX % token,
                          "--label", "run=%s" % (run_label or name)] + list(args),
            TMP, name, spool=self.spool,
            log_path=os.path.join(TMP, "%s.%d.log" % (name, int(time.time() * 1000))),
            what="agent " + name)

    def metrics(self):
        st, body = self.get("/metrics", http_errors=True)
        assert st == 200, "/metrics: %d" % st
        out = {}
        for line in body.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            key, _, val = line.rpartition(" ")
            try:
                out[key] = float(val)
            except ValueError:
                pass
        return out

    def metric(self, key):
        return self.metrics().get(key, 0.0)

    def windows(self):
        """{seq: (samples, start_ns)} of windows that produced at least one profile."""
        out = {}
        for m in self.WINDOW_RE.finditer(self.log()):
            if int(m.group(2)) > 0:
                out[int(m.group(1))] = (int(m.group(3)), int(m.group(4)))
        return out

    def delivered(self):
        return [(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                for m in DELIVERED_RE.finditer(self.log())]

    def spooled(self):
        return [(int(m.group(1)), int(m.group(2))) for m in SPOOLED_RE.finditer(self.log())]

    def term(self, timeout=15):
        """SIGTERM; returns (exit status, seconds taken)."""
        t0 = time.time()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        return rc, time.time() - t0


class Workload:
    def __init__(self, token, seconds=60):
        env = dict(os.environ, **ML_ENV)
        self.proc = subprocess.Popen([WORKLOAD, str(seconds), token],
                                     stdout=subprocess.DEVNULL, env=env)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class FaultServer:
    def __init__(self, *extra):
        pf = os.path.join(TMP, "fault.%d.port" % free_port())
        self.proc = subprocess.Popen([sys.executable, FAULT, "--port", "0", "--port-file", pf]
                                     + list(extra))
        if not wait_for(lambda: os.path.exists(pf), 10):
            raise RuntimeError("fault server did not start")
        with open(pf) as f:
            self.port = int(f.read())
        self.url = "http://127.0.0.1:%d" % self.port

    def control(self, path, body=None):
        req = urllib.request.Request(self.url + path, data=None if body is None else
                                     json.dumps(body).encode(),
                                     method="GET" if body is None else "POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.read().decode()

    def log(self):
        return [l for l in self.control("/_control/log").splitlines() if l]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Blackhole:
    """Accepts TCP connections (kernel backlog) and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]

    def stop(self):
        self.sock.close()


def sel(run):
    return '{service_name="%s",run="%s"}' % (SERVICE, run)


class AgentPyroscope(CleanupCase):
    srv = None
    TOKEN = "e2e"

    @classmethod
    def setUpClass(cls):
        cls.srv = Pyroscope("pyro-main")
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        if cls.srv:
            cls.srv.stop()

    def start_agent(self, name, *args, **kw):
        a = Agent(name, *args, token=self.token, **kw)
        self.cleanup.append(a.kill)
        a.wait_ready()
        return a

    def start_workload(self, seconds=60):
        w = Workload(self.token, seconds)
        self.cleanup.append(w.stop)
        return w

    def wait_windows(self, agent, n, timeout=30):
        ok = wait_for(lambda: len(agent.windows()) >= n, timeout)
        self.assertTrue(ok, "fewer than %d windows:\n%s" % (n, agent.log()[-3000:]))

    def stop_agent(self, agent, limit=5.0):
        rc, took = agent.term()
        self.assertEqual(rc, 0, "agent exit status %s:\n%s" % (rc, agent.log()[-3000:]))
        self.assertLess(took, limit, "agent took %.1f s to exit after SIGTERM" % took)
        return took

    def check_windows_stored(self, srv, windows, selector, tenant=None, timeout=30):
        """Every window's exact time range holds exactly its samples: none lost, none twice."""
        self.assertTrue(windows, "no windows")
        want_total = sum(s for s, _ in windows.values()) * PERIOD_NS
        wait_for(lambda: srv.names_total(selector, tenant=tenant)[1] >= want_total, timeout, 1)
        for seq, (samples, start_ns) in sorted(windows.items()):
            s_ms = start_ns // 1000000
            e_ms = s_ms + INTERVAL_S * 1000 - 1
            _, cpu = srv.names_total(selector, s_ms, e_ms, tenant=tenant)
            _, n = srv.names_total(selector, s_ms, e_ms, ptype=PTYPE_N, tenant=tenant)
            self.assertEqual(n, samples, "window %d: %d samples stored, agent built %d" %
                             (seq, n, samples))
            self.assertEqual(cpu, samples * PERIOD_NS, "window %d: cpu %d ns, want %d" %
                             (seq, cpu, samples * PERIOD_NS))
        names, total = srv.names_total(selector, tenant=tenant)
        self.assertEqual(total, want_total, "total over all windows")
        if tenant is None:
            pts = srv.series_points(selector)
            self.assertEqual(len(pts), len(windows),
                             "distinct windows with data %s vs agent windows %s" %
                             (pts, sorted(windows)))
        return names, total

    # 1 -------------------------------------------------------------------------
    def test_1_push_functions_values_labels(self):
        self.start_workload()
        a = self.start_agent("push", url=self.srv.url)
        t0 = time.time()
        self.wait_windows(a, 3)
        m = a.metrics()
        took = self.stop_agent(a)
        run_s = time.time() - t0 - took
        wins = a.windows()
        built = sum(s for s, _ in wins.values())
        self.assertGreaterEqual(built, m.get("mlprof_samples_profiled_total", 0),
                                "log samples vs /metrics profiled samples")
        self.assertGreater(m.get("mlprof_profiles_pushed_total", 0), 0, "pushed metric")
        self.assertEqual(sorted(s for s, _, _ in a.delivered()), sorted(wins),
                         "every window delivered exactly once")
        names, total = self.check_windows_stored(self.srv, wins, sel("push"))
        self.assertTrue(FUNCS <= names, "functions %s not in flame graph %s" %
                        (FUNCS - names, sorted(names)))
        # one busy thread: about 1 CPU second per second of profiling
        self.assertGreater(total, 0.5 * run_s * 1e9, "total %d ns over %.1f s" % (total, run_s))
        self.assertLess(total, 1.3 * (run_s + 2 * INTERVAL_S) * 1e9, "total %d ns" % total)
        host = os.uname().nodename
        want = {"service_name": SERVICE, "hostname": host, "rank": "3", "local_rank": "1",
                "world_size": "8", "slurm_job_id": "4242", "torchelastic_run_id": "abc",
                "run": "push"}
        for name, value in want.items():
            vals = self.srv.label_values(name, sel("push"))
            self.assertEqual(vals, {value}, "LabelValues(%s) = %s" % (name, vals))
        for name in ("pid", "tid"):
            self.assertEqual(self.srv.label_values(name, sel("push")), set(),
                             "high-cardinality label %s promoted to a series label" % name)

    # 2 -------------------------------------------------------------------------
    def test_2_server_restart_every_window_once_in_order(self):
        self.start_workload()
        a = self.start_agent("restart", url=self.srv.url)
        self.wait_windows(a, 1)
        wait_for(lambda: a.delivered(), 10)
        self.srv.stop()
        try:
            time.sleep(2 * INTERVAL_S + 1.5)
            spooled_down = len(spool_files(a.spool))
        finally:
            self.srv.start()
        self.assertGreaterEqual(spooled_down, 1, "nothing spooled while the server was down")
        n_before = len(a.windows())
        # a few more windows after the restart, and the spool drained
        self.wait_windows(a, n_before + 2, 40)
        ok = wait_for(lambda: a.metric("mlprof_spool_files") == 0 and
                      a.metric("mlprof_queue_bytes") == 0, 60, 0.5)
        self.assertTrue(ok, "spool did not drain:\n%s" % a.log()[-3000:])
        m = a.metrics()
        self.stop_agent(a)
        self.assertGreaterEqual(m.get("mlprof_profiles_spooled_total", 0), 1, "spooled metric")
        wins = a.windows()
        dl = a.delivered()
        seqs = [s for s, _, _ in dl]
        self.assertEqual(sorted(seqs), sorted(wins), "windows produced vs delivered")
        self.assertEqual(len(seqs), len(set(seqs)), "a window delivered twice: %s" % seqs)
        self.assertEqual(seqs, sorted(seqs), "delivered out of order: %s" % seqs)
        for s, start, _ in dl:
            self.assertEqual(start, wins[s][1], "window %d start" % s)
        self.assertTrue(set(s for s, _ in a.spooled()) & set(seqs), "spooled windows")
        names, _ = self.check_windows_stored(self.srv, wins, sel("restart"), timeout=60)
        self.assertTrue(FUNCS <= names, "functions after restart %s" % sorted(names))

    # 3 -------------------------------------------------------------------------
    def test_3_fault_server_429_500_retried_400_not(self):
        fs = FaultServer()
        self.cleanup.append(fs.stop)
        fs.control("/_control/script", [[429, "slow down"], [500, "boom"], [200, ""],
                                        [400, "bad profile"]])
        self.start_workload()
        a = self.start_agent("fault", url=fs.url)
        ok = wait_for(lambda: len(fs.log()) >= 6, 30)
        self.assertTrue(ok, "fault server got %s\n%s" % (fs.log(), a.log()[-3000:]))
        m = a.metrics()
        self.stop_agent(a)
        log = fs.log()
        status = [int(l.split()[0]) for l in log]
        self.assertEqual(status[:4], [429, 500, 200, 400], "request statuses %s" % status)
        self.assertTrue(all(s == 200 for s in status[4:]), "after the script: %s" % status)
        self.assertTrue(all(" /push.v1.PusherService/Push " in l for l in log), log)
        self.assertIn("service_name=%s" % SERVICE, log[0])
        self.assertIn("rank=3", log[0])
        self.assertIn("cpv=1", log[0])
        self.assertEqual(m.get("mlprof_push_retries_total"), 2, "retries metric")
        self.assertEqual(m.get("mlprof_profiles_rejected_total"), 1, "rejected metric")
        self.assertEqual(m.get("mlprof_profiles_failed_total"), 2, "failed attempts metric")
        dl = a.delivered()
        self.assertEqual(dl[0][2], 3, "first window delivered at attempt 3: %s" % dl)
        agent_log = a.log()
        rej = re.search(r"rejected profile seq (\d+) \(HTTP 400\): bad profile; not retried",
                        agent_log)
        self.assertTrue(rej, "no rejection line:\n" + agent_log[-3000:])
        self.assertEqual(int(rej.group(1)), dl[0][0] + 1, "the second window is the one rejected")
        self.assertNotIn(int(rej.group(1)), [s for s, _, _ in dl], "rejected one delivered")
        self.assertEqual(status.count(200), len(dl), "200 answers vs delivered windows")

    # 4 -------------------------------------------------------------------------
    def test_4_wrong_url_refused_and_404_spool(self):
        self.start_workload()
        # connection refused; the spool's parent directories do not exist yet
        dead = "http://127.0.0.1:%d" % free_port()
        spool = os.path.join(TMP, "no", "such", "parent", "spool")
        a = self.start_agent("refused", url=dead, spool=spool)
        self.wait_windows(a, 2)
        wait_for(lambda: len(spool_files(spool)) >= 2, 10)
        self.assertIsNone(a.proc.poll(), "agent died")
        m = a.metrics()
        self.assertGreaterEqual(m.get("mlprof_profiles_spooled_total", 0), 2)
        self.assertEqual(m.get("mlprof_profiles_pushed_total", 0), 0)
        self.stop_agent(a)
        log = a.log()
        self.assertRegex(log, r"cannot deliver \(%s/push\.v1\.PusherService/Push: "
                              r"Couldn't connect to server\); spooling" % re.escape(dead))
        self.assertEqual(len(spool_files(spool)), len(a.windows()),
                         "every window spooled:\n" + log[-3000:])
        self.assertEqual(sorted(s for s, _ in a.spooled()), sorted(a.windows()))

        # 404: wrong path prefix; clear error, not retried, kept in the spool
        fs = FaultServer()
        self.cleanup.append(fs.stop)
        spool2 = os.path.join(TMP, "spool-404")
        b = self.start_agent("wrong404", url=fs.url + "/wrong/prefix", spool=spool2)
        self.wait_windows(b, 2)
        wait_for(lambda: len(spool_files(spool2)) >= 2, 10)
        self.assertIsNone(b.proc.poll(), "agent died")
        mb = b.metrics()
        self.stop_agent(b)
        log = b.log()
        self.assertIn("HTTP 404 \"404 page not found\": wrong URL?", log)
        self.assertIn("kept in the spool directory", log)
        self.assertEqual(log.count("wrong URL?"), 1, "error logged once")
        self.assertEqual(mb.get("mlprof_profiles_pushed_total", 0), 0)
        self.assertEqual(mb.get("mlprof_push_retries_total", 0), 0, "404 is not retried")
        self.assertEqual(len(spool_files(spool2)), len(b.windows()), "every window spooled")
        reqs = fs.log()
        self.assertTrue(reqs and all(l.startswith("404 /wrong/prefix/push.v1.PusherService/Push")
                                     for l in reqs), reqs)
        # restarted with the right URL: profiles spooled for the wrong one are never sent to
        # another destination by themselves ...
        fs.control("/_control/reset", {})
        c = self.start_agent("right404", url=fs.url, spool=spool2)
        self.wait_windows(c, 1)
        self.stop_agent(c)
        old = sorted(b.windows())
        self.assertFalse(set(s for s, _, _ in c.delivered()) & set(old),
                         "profiles of the wrong URL sent to another one")
        wrong_dir = os.path.dirname(spool_files(spool2)[0])
        with open(os.path.join(wrong_dir, "DESTINATION")) as f:
            self.assertEqual(f.read(), "push %s/wrong/prefix tenant=\n" % fs.url)
        # ... moving them into the right destination's directory sends them there, first
        right_dir = [d for d in glob.glob(os.path.join(spool2, "*")) if d != wrong_dir][0]
        for f in glob.glob(os.path.join(wrong_dir, "*.spool")):
            os.rename(f, os.path.join(right_dir, os.path.basename(f)))
        fs.control("/_control/reset", {})
        d = self.start_agent("right404b", url=fs.url, spool=spool2)
        ok = wait_for(lambda: d.metric("mlprof_spool_files") == 0 and
                      d.metric("mlprof_profiles_pushed_total") >= len(old), 30)
        self.assertTrue(ok, "spool not delivered:\n" + d.log()[-3000:])
        self.stop_agent(d)
        got = [s for s, _, _ in d.delivered()][:len(old)]
        self.assertEqual(got, old, "old windows delivered first, in order")

    # 5 -------------------------------------------------------------------------
    def test_5_multitenancy(self):
        mt = Pyroscope("pyro-mt", "-auth.multitenancy-enabled=true")
        mt.start()
        self.cleanup.append(mt.stop)
        self.start_workload()
        a = self.start_agent("notenant", url=mt.url)
        ok = wait_for(lambda: "requires a tenant" in a.log(), 20)
        m = a.metrics()
        self.stop_agent(a)
        log = a.log()
        self.assertTrue(ok, "no tenant error:\n" + log[-3000:])
        self.assertRegex(log, r"server requires a tenant \(HTTP 401 \"no org id\"\).*X-Scope-OrgID")
        self.assertGreaterEqual(m.get("mlprof_profiles_rejected_total", 0), 1)
        self.assertEqual(m.get("mlprof_push_retries_total", 0), 0, "401 not retried")
        self.assertEqual(m.get("mlprof_profiles_pushed_total", 0), 0)

        b = self.start_agent("tenant", "--tenant-id", "team-a", url=mt.url)
        self.wait_windows(b, 2)
        self.stop_agent(b)
        wins = b.windows()
        self.assertEqual(sorted(s for s, _, _ in b.delivered()), sorted(wins))
        names, _ = self.check_windows_stored(mt, wins, sel("tenant"), tenant="team-a")
        self.assertTrue(FUNCS <= names, "tenant team-a functions %s" % sorted(names))
        self.assertEqual(mt.label_values("rank", sel("tenant"), "team-a"), {"3"})
        self.assertEqual(mt.names_total(sel("tenant"), tenant="team-b")[1], 0,
                         "other tenant sees it")
        with self.assertRaises(urllib.error.HTTPError) as cm:
            mt.names_total(sel("tenant"))
        self.assertEqual(cm.exception.code, 401)

    # 6 -------------------------------------------------------------------------
    def test_6_sigkill_with_spool_then_delivered(self):
        later = Pyroscope("pyro-kill")
        spool = os.path.join(TMP, "spool-kill")
        self.start_workload()
        a = self.start_agent("kill", url=later.url, spool=spool)
        ok = wait_for(lambda: len(spool_files(spool)) >= 2, 30)
        self.assertTrue(ok, "spool stays empty:\n" + a.log()[-3000:])
        a.proc.send_signal(signal.SIGKILL)
        a.proc.wait()
        spooled = dict(a.spooled())
        files = spool_files(spool)
        self.assertEqual(len(files), len(spooled), "spool files vs spooled log lines")
        wins = {s: v for s, v in a.windows().items() if s in spooled}
        self.assertEqual(sorted(wins), sorted(spooled))
        for s, start in spooled.items():
            self.assertEqual(start, wins[s][1])

        later.start()
        self.cleanup.append(later.stop)
        b = self.start_agent("kill2", url=later.url, spool=spool, run_label="kill")
        ok = wait_for(lambda: b.metric("mlprof_spool_files") == 0 and
                      b.metric("mlprof_profiles_pushed_total") >= len(spooled), 30)
        self.assertTrue(ok, "old spool not delivered:\n" + b.log()[-3000:])
        self.stop_agent(b)
        self.assertIn("spooled profiles (", b.log())
        self.assertIn("from a previous run", b.log())
        dl = b.delivered()
        old = [(s, st) for s, st, _ in dl if s in spooled]
        self.assertEqual(old, sorted(spooled.items()), "old windows, in order, once")
        self.assertEqual(dl[:len(old)], [(s, st, 1) for s, st in old], "old ones first")
        # their original time ranges hold exactly their samples; plus the new run's windows
        allw = dict(wins)
        allw.update(b.windows())
        self.check_windows_stored(later, allw, sel("kill"))
        self.assertFalse(spool_files(spool))

    # 7 -------------------------------------------------------------------------
    def test_7_sigterm_bounded_with_unresponsive_backend(self):
        bh = Blackhole()
        self.cleanup.append(bh.stop)
        spool = os.path.join(TMP, "spool-term")
        self.start_workload()
        a = self.start_agent("term", "--timeout", "30", url=bh.url, spool=spool)
        self.wait_windows(a, 2)
        # the signal is seen at once, then one 2.5 s deadline (README: the agent)
        took = self.stop_agent(a, limit=4.0)
        wins = a.windows()
        log = a.log()
        self.assertIn("sending the current window and exiting", log)
        self.assertEqual(len(spool_files(spool)), len(wins),
                         "every window spooled (%.1f s):\n%s" % (took, log[-3000:]))
        self.assertEqual(sorted(s for s, _ in a.spooled()), sorted(wins))
        self.assertEqual(a.delivered(), [])
        print("SIGTERM with an unresponsive backend: exit in %.1f s, %d windows spooled" %
              (took, len(wins)))


def set_tmp(path):
    global TMP
    TMP = path


def main():
    return agent_test_main(SCRIPT, (MLPROF, WORKLOAD), TMP_ROOT, "agent_pyroscope.", set_tmp)

if __name__ == "__main__":
    sys.exit(main())
