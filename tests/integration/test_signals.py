# SPDX-License-Identifier: Apache-2.0
"""SIGPIPE: it never kills the agent, and `record -- COMMAND` leaves it as COMMAND expects.

One agent run pushes to an HTTPS backend that resets its
connections (before the TLS handshake, while the request is being sent, mid-response),
while /metrics clients reset their connections mid-response and the reader of the agent's
stderr goes away (its next log line writes into a broken pipe: without SIGPIPE ignored
that kills the process). The agent must stay up, count the failed pushes, answer
/metrics, and exit 0 on SIGTERM. Needs root (BPF) and openssl (test certificate); exit 77 =
skipped."""
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time
import unittest
import urllib.request

from itutil import MLPROF, free_port, need_root, run_main, tmpdir

MODES = ("reset before the TLS handshake", "reset while the request is sent",
         "reset mid-response")


def reset(sock):
    """Closes with an RST (SO_LINGER 0): the peer's next write gets EPIPE/ECONNRESET."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class ResettingTLSBackend(threading.Thread):
    """HTTPS server answering every connection with the next of MODES."""

    def __init__(self, cert, key):
        super().__init__(daemon=True)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.seen = []
        self.stop = False

    def serve(self, conn, mode):
        if mode == 0:
            reset(conn)
            return
        tls = self.ctx.wrap_socket(conn, server_side=True)
        tls.settimeout(5)
        if mode == 1:
            tls.recv(64)
            reset(tls)
            return
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = tls.recv(4096)
            if not chunk:
                break
            data += chunk
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n{\"par")
        time.sleep(0.05)
        reset(tls)

    def run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            mode = len(self.seen) % len(MODES)
            try:
                self.serve(conn, mode)
            except (OSError, ssl.SSLError):
                pass
            self.seen.append(mode)
        self.sock.close()


def metrics_reset(port):
    """Asks for /metrics and resets the connection without reading the answer."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:  # the agent is gone: the caller's check says how
        return
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    reset(s)


def get_metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        return r.status, r.read().decode()


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


class AgentSigpipe(unittest.TestCase):
    def setUp(self):
        need_root(self)
        if not shutil.which("openssl"):
            self.skipTest("openssl missing (test certificate)")
        self.dir = tmpdir()

    def test_survives_broken_pipes(self):
        cert, key = os.path.join(self.dir, "cert.pem"), os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                        "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        backend = ResettingTLSBackend(cert, key)
        backend.start()
        mport = free_port()
        agent = subprocess.Popen(
            [MLPROF, "agent", "--url", "https://127.0.0.1:%d" % backend.port, "--ca-file", cert,
             "--upload-interval", "1", "--timeout", "2", "--connect-timeout", "1",
             "--spool-dir", os.path.join(self.dir, "spool"), "--metrics-addr",
             "127.0.0.1:%d" % mport, "--k8s", "off", "--log-level", "info"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # something to profile in every window, so that every window is pushed
        busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        try:
            deadline = time.time() + 30
            while time.time() < deadline and agent.poll() is None:
                try:
                    if get_metrics(mport)[0] == 200:
                        break
                except OSError:
                    time.sleep(0.2)
            self.assertIsNone(agent.poll(), "agent did not start")
            # the reader of stderr goes away: every later log line hits a broken pipe
            agent.stderr.close()
            deadline = time.time() + 45
            while time.time() < deadline and agent.poll() is None and (
                    len(backend.seen) < 2 * len(MODES)):
                metrics_reset(mport)
                time.sleep(0.5)
            rc = agent.poll()
            self.assertIsNone(rc, "agent died (%s) after %d backend connections" % (
                "SIGPIPE" if rc == -signal.SIGPIPE else rc, len(backend.seen)))
            self.assertGreaterEqual(len(backend.seen), 2 * len(MODES),
                                    "the agent stopped connecting: %s" % backend.seen)
            st, text = get_metrics(mport)
            self.assertEqual(st, 200)
            self.assertGreater(metric(text, "mlprof_push_retries_total"), 0, text)
            self.assertEqual(metric(text, "mlprof_profiles_pushed_total"), 0)
            agent.send_signal(signal.SIGTERM)
            self.assertEqual(agent.wait(timeout=20), 0)
        finally:
            busy.kill()
            busy.wait()
            backend.stop = True
            if agent.poll() is None:
                agent.kill()
                agent.wait()
            backend.join(5)


class RecordCommandSignals(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def test_command_keeps_default_sigpipe(self):
        """mlprof ignores SIGPIPE for itself; the command it launches must not inherit that
        (a `yes | head -1` in it would print write errors instead of ending quietly)."""
        cp = subprocess.run([MLPROF, "record", "-q", "--no-memory", "--cuda", "none", "-o",
                             os.path.join(self.dir, "p.pb.gz"), "--", "sh", "-c",
                             "grep '^SigIgn:' /proc/self/status; yes | head -1"],
                            capture_output=True, text=True, timeout=60)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        ign = int(cp.stdout.split()[1], 16)
        self.assertFalse(ign >> (signal.SIGPIPE - 1) & 1,
                         "the command runs with SIGPIPE ignored: %s" % cp.stdout)
        self.assertEqual(cp.stdout.splitlines()[-1], "y")
        self.assertNotIn("Broken pipe", cp.stderr)


if __name__ == "__main__":
    raise SystemExit(run_main())
