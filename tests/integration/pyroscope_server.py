# SPDX-License-Identifier: Apache-2.0
"""A real Grafana Pyroscope server on loopback for mlprof's tests (scripts/pyroscope.sh),
its query API and flame graphs, an `mlprof agent` pushing to it, and the per-case clean-up
of the tests that run them. Python 3 stdlib only (and itutil)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from itutil import free_port


def free_base():
    """Four consecutive free loopback ports (Pyroscope: http, grpc, memberlist, raft)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + 4 > 65535:
            continue
        socks = []
        try:
            for p in range(base, base + 4):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no four consecutive free ports")


def span():
    """[start, end] in ms covering the last hour (and a minute ahead)."""
    end = int(time.time() * 1000) + 60000
    return end - 3600000, end


class PyroscopeServer:
    """One server on data dir `data` and ports base..base+3; extra = more server flags."""

    def __init__(self, script, data, base=None, extra=""):
        self.script, self.data, self.extra = script, data, extra
        self.base = base if base is not None else free_base()
        self.url = "http://127.0.0.1:%d" % self.base

    def start(self, timeout=300):
        """Starts the server and waits for /ready; returns its pid."""
        env = dict(os.environ, PYROSCOPE_ARGS=self.extra)
        out = subprocess.run([self.script, "start", self.data, str(self.base)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=timeout)
        if out.returncode:
            log = os.path.join(self.data, "pyroscope.log")
            tail = open(log).read()[-3000:] if os.path.exists(log) else ""
            raise RuntimeError("pyroscope start failed: %s\n%s" % (out.stderr, tail))
        return int(out.stdout.strip() or 0)

    def stop(self):
        subprocess.run([self.script, "stop", self.data], timeout=60)

    def query(self, method, body, tenant=None):
        """POSTs a JSON body to /querier.v1.QuerierService/<method>; returns the JSON."""
        req = urllib.request.Request(
            "%s/querier.v1.QuerierService/%s" % (self.url, method),
            data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"})
        if tenant:
            req.add_header("X-Scope-OrgID", tenant)
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")


def skip_reason(script):
    """Why a test against a real Pyroscope cannot run here (not root: no BPF; no server
    binary: `scripts/pyroscope.sh path` fails), or None."""
    if os.geteuid() != 0:
        return "needs root for BPF"
    path = subprocess.run([script, "path"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True)
    if path.returncode or not path.stdout.strip():
        return "no Pyroscope binary (run scripts/pyroscope.sh build, or set PYROSCOPE_BIN)"
    return None


def agent_test_main(script, executables, tmp_root, prefix, set_tmp):
    """main() of an agent test against Pyroscope: exit 77 (SKIP, saying why) when it cannot
    run here, 1 when one of executables is missing; else runs the __main__ module's cases
    with a fresh directory under tmp_root handed to set_tmp (removed when all pass, kept
    and named otherwise) and returns 0 or 1."""
    why = skip_reason(script)
    if why:
        print("SKIP: " + why)
        return 77
    for p in executables:
        if not os.access(p, os.X_OK):
            print("FAIL: missing executable %s" % p)
            return 1
    os.makedirs(tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=tmp_root)
    set_tmp(tmp)
    prog = unittest.main(module="__main__", argv=[sys.argv[0], "-v"] + sys.argv[1:],
                         exit=False)
    ok = prog.result.wasSuccessful()
    if ok:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print("data kept in %s" % tmp)
    return 0 if ok else 1


def wait_for(cond, timeout, step=0.5):
    """cond()'s first true value within timeout seconds (polled every step), else its last."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def _flame_nodes(fg):
    """Yields (level, start, end, name, total, self) of a Pyroscope flame graph (levels of
    [x delta, total, self, name index] quadruples), root level first."""
    names = fg.get("names", [])
    for depth, lvl in enumerate(fg.get("levels", [])):
        vals = [int(x) for x in lvl.get("values", [])]
        x = 0
        for i in range(0, len(vals) - 3, 4):
            x += vals[i]
            yield depth, x, x + vals[i + 1], names[vals[i + 3]], vals[i + 1], vals[i + 2]
            x += vals[i + 1]


def flame_totals(fg):
    """{function: total} of a Pyroscope flame graph, and the set of (parent, child) name
    pairs (root side first)."""
    totals, edges = {}, set()
    prev, cur, depth = [], [], 0  # (start, end, name) of the level above, of this level
    for d, start, end, name, total, _ in _flame_nodes(fg):
        if d != depth:
            prev, cur, depth = cur, [], d
        totals[name] = totals.get(name, 0) + total
        for s, e, pn in prev:
            if s <= start < e:
                edges.add((pn, name))
                break
        cur.append((start, end, name))
    return totals, edges


def flame_paths(fg):
    """{stack: self value} of a Pyroscope flame graph; a stack is a tuple of names, leaf
    first, without the flame graph's root node ("total"). Only stacks with self weight."""
    out = {}
    prev, cur, depth = [], [], 0  # (start, end, stack root first) of the level above, this
    for d, start, end, name, _, self_ in _flame_nodes(fg):
        if d != depth:
            prev, cur, depth = cur, [], d
        path = ()
        if d:  # level 0 is the root node
            path = next((p for s, e, p in prev if s <= start < e), ("?",)) + (name,)
        cur.append((start, end, path))
        if self_ and path:
            out[path[::-1]] = out.get(path[::-1], 0) + self_
    return out


class Server(PyroscopeServer):
    """The queries the tests make, over the last hour unless told; tenant: the
    X-Scope-OrgID of a multitenant server."""

    def merged(self, ptype, selector, start=None, end=None, tenant=None):
        """The flame graph of SelectMergeStacktraces over [start, end] ms."""
        if start is None:
            start, end = span()
        return self.query("SelectMergeStacktraces",
                          {"profileTypeID": ptype, "labelSelector": selector, "start": start,
                           "end": end}, tenant).get("flamegraph", {})

    def label_values(self, name, selector, tenant=None):
        s, e = span()
        return set(self.query("LabelValues", {"name": name, "start": s, "end": e,
                                              "matchers": [selector]}, tenant).get("names", []))

    def profile_types(self):
        s, e = span()
        out = self.query("ProfileTypes", {"start": s, "end": e})
        return {t.get("ID") for t in out.get("profileTypes", [])}


class Agent:
    """`mlprof agent --url URL ARGS` at debug log level (log in DIR/NAME.log unless
    log_path), with its /metrics and /readyz on a free loopback port, no Kubernetes labels
    and its spool in DIR/NAME.spool unless spool. MLPROF_* variables of the environment are
    not passed on (they would configure it). what: what its errors call it. Call stop()
    (SIGTERM, returns the exit status) or kill()."""

    WINDOW_RE = re.compile(r"window (\d+): (\d+) profiles, (\d+) samples, start_ns (-?\d+)")

    def __init__(self, mlprof, url, args, workdir, name="agent", spool=None, log_path=None,
                 what="agent"):
        self.port = free_port()
        self.what = what
        self.log_path = log_path or os.path.join(workdir, name + ".log")
        argv = [mlprof, "agent", "--url", url] + list(args) + [
            "--metrics-addr", "127.0.0.1:%d" % self.port, "--k8s", "off",
            "--spool-dir", spool or os.path.join(workdir, name + ".spool")]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLPROF_")}
        env["MLPROF_LOG_LEVEL"] = "debug"
        self.logf = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.logf, stderr=subprocess.STDOUT, env=env)

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def get(self, path, http_errors=False):
        """(status, body) of GET path; an HTTP error status raises unless http_errors."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path),
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            if not http_errors:
                raise
            return e.code, e.read().decode()

    def wait_ready(self, timeout=30):
        """Until /readyz says 200; AssertionError with the log if it exits or never does."""
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError("%s exited %s:\n%s" % (self.what, self.proc.returncode,
                                                            self.log()))
            try:
                return self.get("/readyz")[0] == 200
            except OSError:
                return False
        if not wait_for(ready, timeout, 0.2):
            raise AssertionError("%s never ready:\n%s" % (self.what, self.log()))

    def drops(self):
        """mlprof_samples_dropped_total{reason=...} (and any other *drop* metric) != 0."""
        out = {}
        for line in self.get("/metrics")[1].splitlines():
            if "drop" in line and not line.startswith("#"):
                key, _, val = line.rpartition(" ")
                if float(val):
                    out[key] = float(val)
        return out

    def windows(self):
        """{seq: (profiles, samples, start_ns)} of the windows the agent has sent."""
        return {int(m.group(1)): (int(m.group(2)), int(m.group(3)), int(m.group(4)))
                for m in self.WINDOW_RE.finditer(self.log())}

    def stop(self, timeout=30):
        """SIGTERM (the agent sends its open windows and exits); its exit status."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.kill()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()


class CleanupCase(unittest.TestCase):
    """A case with self.cleanup, callables run last first after it (one that raises is
    printed and the rest still run), and self.token, TOKEN followed by digits unique to
    this run (for command lines and service names no other process has)."""

    TOKEN = "t"

    def setUp(self):
        self.cleanup = []
        self.token = "%s%d%d" % (self.TOKEN, os.getpid(), int(time.time() * 1000) % 100000000)

    def tearDown(self):
        for fn in reversed(self.cleanup):
            try:
                fn()
            except Exception as err:  # keep tearing down
                print("teardown: %s" % err)
