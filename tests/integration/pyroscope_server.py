# SPDX-License-Identifier: Apache-2.0
"""A real Grafana Pyroscope server on loopback for mlprof's tests (scripts/pyroscope.sh),
and its query API. Python 3 stdlib only."""
import json
import os
import socket
import subprocess
import time
import urllib.request


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
