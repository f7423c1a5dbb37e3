#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Test double for a misbehaving Pyroscope: programmable HTTP answers for fault injection.
"""FaultServer: a fake Pyroscope push/ingest endpoint for exporter tests.

Answers every POST with the next entry of a script (status + JSON body), then 200.
Control endpoints (plain HTTP, loopback only):
  POST /_control/script   body: JSON list of [status, message] pairs (appended)
  POST /_control/reset    clears the script and the request log
  GET  /_control/last_profile  raw profile bytes of the last push (or ingest body)
  GET  /_control/log      one line per request received:
      "<status> <path> org=<X-Scope-OrgID|-> auth=<Authorization|-> ua=<User-Agent>
       cpv=<Connect-Protocol-Version|-> labels=<k=v;...> name=<ingest name|->
       t=<the pushed profile's time_nanos|->"
Options: --port N (0 = random), --port-file F (port written there once listening),
         --require-tenant (401 "no org id" without X-Scope-OrgID, like multitenancy on).
Python 3 stdlib only.
"""
import argparse
import gzip
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _varint(buf, i):
    shift = val = 0
    while True:
        b = buf[i]
        i += 1
        val |= (b & 0x7F) << shift
        if b < 0x80:
            return val, i
        shift += 7


def _fields(buf):
    """Yields (field_number, wire_type, value) of a protobuf message (bytes for len-delim)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("bad wire type")
        yield fn, wt, v


def push_labels(body):
    """Labels of the first series of a push.v1.PushRequest, and its raw profile sizes."""
    labels, sizes = [], []
    for fn, _, series in _fields(body):
        if fn != 1:
            continue
        for sfn, _, v in _fields(series):
            if sfn == 1:
                kv = {f: val.decode() for f, _, val in _fields(v)}
                labels.append("%s=%s" % (kv.get(1, ""), kv.get(2, "")))
            elif sfn == 2:
                for rfn, _, raw in _fields(v):
                    if rfn == 1:
                        sizes.append(len(raw))
        break
    return labels, sizes


def last_raw_profile(body):
    """raw_profile bytes of the first sample of the first series of a PushRequest."""
    for fn, _, series in _fields(body):
        if fn == 1:
            for sfn, _, v in _fields(series):
                if sfn == 2:
                    for rfn, _, raw in _fields(v):
                        if rfn == 1:
                            return bytes(raw)
    return b""


def profile_time(raw):
    """time_nanos (field 9) of a (gzipped) pprof, or None."""
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        for fn, wt, v in _fields(raw):
            if fn == 9 and wt == 0:
                return v
    except (OSError, ValueError, IndexError, EOFError):
        pass
    return None


class FaultServer:
    def __init__(self, require_tenant=False):
        self.lock = threading.Lock()
        self.script = []
        self.log = []
        self.last_profile = b""
        self.require_tenant = require_tenant


STATE = FaultServer()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _reply(self, status, body, ctype="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/_control/log":
            with STATE.lock:
                text = "".join(line + "\n" for line in STATE.log)
            self._reply(200, text, "text/plain")
        elif self.path == "/_control/last_profile":
            with STATE.lock:
                data = STATE.last_profile
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif self.path == "/ready":
            self._reply(200, "ready", "text/plain")
        else:
            self._reply(404, '{"code":"not_found","message":"404 page not found"}')

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_control/script":
            with STATE.lock:
                STATE.script.extend(json.loads(body or b"[]"))
            return self._reply(200, "{}")
        if url.path == "/_control/reset":
            with STATE.lock:
                STATE.script.clear()
                STATE.log.clear()
            return self._reply(200, "{}")
        org = self.headers.get("X-Scope-OrgID")
        status, msg = 200, ""
        with STATE.lock:
            if url.path not in ("/push.v1.PusherService/Push", "/ingest"):
                status, msg = 404, "404 page not found"
            elif STATE.require_tenant and not org:
                status, msg = 401, "no org id"
            elif STATE.script:
                status, msg = STATE.script.pop(0)
            labels, name, t = [], "-", None
            try:
                if url.path == "/ingest":
                    name = urllib.parse.parse_qs(url.query).get("name", ["-"])[0]
                elif url.path.startswith("/push."):
                    labels, _ = push_labels(body)
                    STATE.last_profile = last_raw_profile(body)
                    t = profile_time(STATE.last_profile)
                else:
                    STATE.last_profile = body
            except (ValueError, IndexError, UnicodeDecodeError):
                labels = ["<undecodable>"]
            STATE.log.append("%d %s org=%s auth=%s ua=%s cpv=%s labels=%s name=%s t=%s" % (
                status, url.path, org or "-", self.headers.get("Authorization") or "-",
                self.headers.get("User-Agent") or "-",
                self.headers.get("Connect-Protocol-Version") or "-",
                ";".join(labels), name, "-" if t is None else t))
        if status == 200:
            return self._reply(200, "{}")
        self._reply(status, json.dumps({"code": "error", "message": msg}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--require-tenant", action="store_true")
    args = ap.parse_args()
    STATE.require_tenant = args.require_tenant
    ThreadingHTTPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.rename(tmp, args.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
