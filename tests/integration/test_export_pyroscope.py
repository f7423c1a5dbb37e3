#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Integration: our pprof through push and ingest into a real Pyroscope, then queried back.
"""Pushes profiles built by our encoder (tests/tools/export_driver) to a real Pyroscope
v2.2.1 started by scripts/pyroscope.sh, and checks what the query API returns:
function names, totals, labels; then faults: the server stopped mid-stream and restarted
(every window delivered once, in order), and multitenancy without a tenant (clear error,
no retry). Exit 77 (skip) when no Pyroscope binary is cached and MLPROF_PYROSCOPE_BUILD is
not set. Python 3 stdlib only."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyroscope_server import PyroscopeServer as Server, free_base, span  # noqa: E402

WINDOW_TOTAL = 40000000  # per window: 3 x 10 ms + 1 x 10 ms, in ns
PTYPE = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
FUNCS = {"main", "train_step", "matmul_kernel", "load_batch"}
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def label_values(srv, name, selector=None, tenant=None):
    s, e = span()
    body = {"name": name, "start": s, "end": e}
    if selector:
        body["matchers"] = [selector]
    return set(srv.query("LabelValues", body, tenant).get("names", []))


def merged(srv, selector, tenant=None):
    s, e = span()
    fg = srv.query("SelectMergeStacktraces", {"profileTypeID": PTYPE, "labelSelector": selector,
                                             "start": s, "end": e}, tenant).get("flamegraph", {})
    return set(fg.get("names", [])), int(fg.get("total", 0) or 0)


def wait_total(srv, selector, want, tenant=None, timeout=60):
    names, total = set(), 0
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            names, total = merged(srv, selector, tenant)
        except OSError as err:
            print("query error: %s" % err)
        if total >= want:
            break
        time.sleep(1)
    return names, total


def driver(args, *extra, check_rc=True):
    cmd = [args.driver] + list(extra)
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=300)
    stats = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
    if check_rc:
        check(out.returncode == 0, "driver %s -> rc %d %s %s" % (
            " ".join(extra[:4]), out.returncode, stats, out.stderr[-500:]))
    return out, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--script", required=True)
    args = ap.parse_args()

    path = subprocess.run([args.script, "path"], stdout=subprocess.PIPE, text=True)
    if path.returncode:
        if not os.environ.get("MLPROF_PYROSCOPE_BUILD"):
            print("SKIP: no cached Pyroscope binary (run scripts/pyroscope.sh build, or set "
                  "MLPROF_PYROSCOPE_BUILD=1)")
            return 77
        subprocess.run([args.script, "build"], check=True, timeout=3600)

    tmp = tempfile.mkdtemp(prefix="mlprof-pyroscope-")
    srv = Server(args.script, os.path.join(tmp, "data"), free_base())
    try:
        srv.start()
        # push and ingest paths
        driver(args, "--kind", "push", "--url", srv.url, "--service", "mlprof-push",
               "--label", "env=ci", "--windows", "2")
        driver(args, "--kind", "ingest", "--url", srv.url, "--service", "mlprof-ingest",
               "--label", "env=ci", "--windows", "1")
        names, total = wait_total(srv, '{service_name="mlprof-push"}', 2 * WINDOW_TOTAL)
        check(FUNCS <= names, "push: function names %s" % sorted(names))
        check(total == 2 * WINDOW_TOTAL, "push: total %d == %d" % (total, 2 * WINDOW_TOTAL))
        names, total = wait_total(srv, '{service_name="mlprof-ingest"}', WINDOW_TOTAL)
        check(FUNCS <= names, "ingest: function names %s" % sorted(names))
        check(total == WINDOW_TOTAL, "ingest: total %d == %d" % (total, WINDOW_TOTAL))
        svcs = label_values(srv, "service_name")
        check({"mlprof-push", "mlprof-ingest"} <= svcs, "service_name values %s" % sorted(svcs))
        env = label_values(srv, "env", '{service_name="mlprof-push"}')
        check("ci" in env, "push: extra label env=ci %s" % sorted(env))
        env = label_values(srv, "env", '{service_name="mlprof-ingest"}')
        check("ci" in env, "ingest: extra label env=ci %s" % sorted(env))
        win = label_values(srv, "window", '{service_name="mlprof-push"}')
        check(win == {"1", "2"}, "push: window label values %s" % sorted(win))

        # fault: the server goes away mid-stream and comes back
        spool = os.path.join(tmp, "spool")
        n = 8
        proc = subprocess.Popen([args.driver, "--kind", "push", "--url", srv.url, "--service",
                                 "mlprof-fault", "--windows", str(n), "--gap-ms", "700",
                                 "--spool", spool, "--drain-s", "120"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.6)
        srv.stop()
        time.sleep(2.5)
        # one spool directory per destination (URL, tenant) under the spool dir
        spooled_while_down = len([f for d in os.listdir(spool)
                                  if os.path.isdir(os.path.join(spool, d))
                                  for f in os.listdir(os.path.join(spool, d))
                                  if f.endswith(".spool")])
        srv.start()
        out, err = proc.communicate(timeout=300)
        stats = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        check(proc.returncode == 0, "fault driver rc %d %s %s" % (proc.returncode, stats,
                                                                   err[-800:]))
        check(stats.get("spooled", 0) >= 1 and spooled_while_down >= 1,
              "fault: items spooled while down (%s, %d files seen)" % (stats,
                                                                      spooled_while_down))
        check(stats.get("pushed") == n, "fault: pushed %s == %d" % (stats.get("pushed"), n))
        names, total = wait_total(srv, '{service_name="mlprof-fault"}', n * WINDOW_TOTAL)
        check(total == n * WINDOW_TOTAL, "fault: total %d == %d (none lost, none twice)" %
              (total, n * WINDOW_TOTAL))
        win = label_values(srv, "window", '{service_name="mlprof-fault"}')
        check(win == {str(i) for i in range(1, n + 1)}, "fault: windows %s" % sorted(win))
        for w in range(1, n + 1):
            _, t = merged(srv, '{service_name="mlprof-fault",window="%d"}' % w)
            check(t == WINDOW_TOTAL, "fault: window %d total %d" % (w, t))
        srv.stop()

        # multitenancy on, no tenant: clear error, not retried, not spooled
        mt = Server(args.script, os.path.join(tmp, "data-mt"), free_base(),
                    "-auth.multitenancy-enabled=true")
        mt.start()
        srv = mt
        out, stats = driver(args, "--kind", "push", "--url", mt.url, "--service", "mlprof-mt",
                            check_rc=False)
        check(out.returncode != 0 and stats.get("rejected_4xx") == 1 and
              stats.get("retries") == 0 and stats.get("pushed") == 0,
              "multitenancy without tenant: rejected once, no retry %s" % stats)
        check("set the tenant" in out.stderr, "clear error: %s" % out.stderr.strip()[-300:])
        driver(args, "--kind", "push", "--url", mt.url, "--service", "mlprof-mt",
               "--tenant", "team-a")
        names, total = wait_total(mt, '{service_name="mlprof-mt"}', WINDOW_TOTAL, "team-a")
        check(total == WINDOW_TOTAL and FUNCS <= names, "tenant team-a: total %d" % total)
    finally:
        srv.stop()
        if failures:
            print("data kept in %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
