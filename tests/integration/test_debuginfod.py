# SPDX-License-Identifier: Apache-2.0
"""Debug files by build id from a real debuginfod server (Debian's `debuginfod`) on
loopback, serving a directory that holds only the debug file of tests/dwarf/lines_prog.c.
mlprof record on the stripped binary (lines_stripped: no .symtab, no local debug file) with
DEBUGINFOD_URLS set names its frames, with source lines, once the background fetch arrives;
the fetched file lands in DEBUGINFOD_CACHE_PATH, whose size bound (MLPROF_DEBUGINFOD_CACHE_MB)
evicts an older entry; MLPROF_DEBUGINFOD=0 turns it off. Exit 77 (skipped) when not root or
when the debuginfod server is not installed."""
import http.server
import os
import shutil
import socket
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request

import pprof_reader
from itutil import MLPROF, need_root, tmpdir

DW_DIR = os.environ.get("DW_DIR", "build/tests/dwarf")
SERVER = os.environ.get("DEBUGINFOD_EXE", "")
if not os.path.exists(SERVER):
    SERVER = shutil.which("debuginfod") or ""
SRC = os.path.join(os.environ.get("TEST_SRC_DIR", "tests"), "dwarf", "lines_prog.c")
PROC = "lines_stripped"


def marker(what):
    with open(SRC, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if "MARK %s */" % what in line:
                return n
    raise AssertionError("no marker %r" % what)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The fetch ends this long after mlprof asks: after the index of lines_stripped was built
# and its first frames were shown, so the test covers the index rebuilt when a fetch lands
# (on a fast machine the real server answers before the index is first used).
FETCH_DELAY_S = 1.0


class SlowProxy(http.server.BaseHTTPRequestHandler):
    """Forwards GETs to the debuginfod server, answering FETCH_DELAY_S late."""
    upstream = ""

    def do_GET(self):
        time.sleep(FETCH_DELAY_S)
        try:
            with urllib.request.urlopen(self.upstream + self.path, timeout=30) as r:
                body, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            body, status = b"", e.code
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Debuginfod(unittest.TestCase):
    server = None
    proxy = None

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root for BPF")
        if not SERVER:
            raise unittest.SkipTest("no debuginfod server binary (Debian package debuginfod)")
        cls.dir = tmpdir()
        with open(os.path.join(DW_DIR, "lines_prog.buildid")) as f:
            cls.bid = f.read().strip()
        cls.port = free_port()
        cls.log = open(os.path.join(cls.dir, "server.log"), "w")
        cls.server = subprocess.Popen(
            [SERVER, "-F", os.path.join(DW_DIR, "debugsrv"), "-p", str(cls.port),
             "-d", os.path.join(cls.dir, "db.sqlite"), "-v"],
            stdout=cls.log, stderr=subprocess.STDOUT)
        url = "http://127.0.0.1:%d/buildid/%s/debuginfo" % (cls.port, cls.bid)
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline or cls.server.poll() is not None:
                cls.tearDownClass()
                raise AssertionError("debuginfod did not serve %s within 60 s" % url)
            time.sleep(0.3)
        SlowProxy.upstream = "http://127.0.0.1:%d" % cls.port
        cls.proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowProxy)
        cls.proxy_port = cls.proxy.server_address[1]
        threading.Thread(target=cls.proxy.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        if cls.proxy:
            cls.proxy.shutdown()
            cls.proxy.server_close()
            cls.proxy = None
        if cls.server:
            cls.server.terminate()
            try:
                cls.server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                cls.server.kill()
                cls.server.wait()
            cls.server = None
            cls.log.close()

    def record(self, name, extra_env):
        env = dict(os.environ)
        for k in ("DEBUGINFOD_URLS", "DEBUGINFOD_CACHE_PATH", "MLPROF_DEBUGINFOD",
                  "MLPROF_DEBUGINFOD_CACHE_MB"):
            env.pop(k, None)
        env.update(extra_env)
        pb = os.path.join(self.dir, name + ".pb.gz")
        cp = subprocess.run([MLPROF, "record", "-F", "499", "--log-level", "info", "-o", pb, "--",
                             os.path.join(DW_DIR, "lines_stripped"), "4"],
                            env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        rows = []
        for frames, values, labels in pprof_reader.load(pb).detailed_stacks():
            if labels.get("process_name") == PROC:
                rows.append((frames, values[0]))
        return rows, cp.stderr

    def test_fetch_names_and_lines(self):
        need_root(self)
        cache = os.path.join(self.dir, "cache")
        # An older cached build id of 2 MiB: the 1 MiB bound must evict it, not the new one.
        old = os.path.join(cache, "ab" * 20)
        os.makedirs(old)
        with open(os.path.join(old, "debuginfo"), "wb") as f:
            f.write(os.urandom(2 << 20))
        os.utime(os.path.join(old, "debuginfo"), (time.time() - 86400, time.time() - 86400))
        rows, err = self.record("fetch", {
            "DEBUGINFOD_URLS": "http://127.0.0.1:%d" % self.proxy_port,
            "DEBUGINFOD_CACHE_PATH": cache, "MLPROF_DEBUGINFOD_CACHE_MB": "1"})
        total = sum(v for _, v in rows)
        self.assertGreater(total, 300, "too few samples")
        lb, le = marker("leaf_lines begin"), marker("leaf_lines end")
        named = sum(v for fr, v in rows if fr[0]["name"] == "leaf_lines")
        with_line = sum(v for fr, v in rows if fr[0]["name"] == "leaf_lines"
                        and fr[0]["file"].endswith("dwarf/lines_prog.c")
                        and lb < fr[0]["line"] < le)
        # the first samples come before the fetch ends (it never blocks sampling); their
        # addresses are named too once it has arrived and they recur
        self.assertGreaterEqual(named / total, 0.95, "leaf_lines named in %d/%d samples;\n%s"
                                % (named, total, err))
        self.assertEqual(with_line, named)
        self.assertTrue(os.path.exists(os.path.join(cache, self.bid, "debuginfo")),
                        os.listdir(cache))
        self.assertFalse(os.path.exists(old), "the size bound kept the older entry")
        self.assertIn("debug file for build id %s" % self.bid, err)

    def test_off(self):
        need_root(self)
        cache = os.path.join(self.dir, "cache-off")
        rows, err = self.record("off", {
            "DEBUGINFOD_URLS": "http://127.0.0.1:%d" % self.port,
            "DEBUGINFOD_CACHE_PATH": cache, "MLPROF_DEBUGINFOD": "0"})
        self.assertGreater(sum(v for _, v in rows), 300, "too few samples")
        self.assertEqual(sum(v for fr, v in rows if fr[0]["name"] == "leaf_lines"), 0)
        self.assertFalse(os.path.exists(os.path.join(cache, self.bid)))


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
