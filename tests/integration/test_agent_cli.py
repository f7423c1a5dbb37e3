#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`mlprof agent` facing an SRE: a URL without a host fails at startup; with the backend
down, `mlprof_push_retries_total` counts the retries and the exit message says where the
undelivered profiles are (one spool directory per destination, named by its DESTINATION
file); `--ml-only` says what it filters; samples carry the thread name; credentials never
reach the log. Root (BPF) for all
but the URL case; exit 77 = skipped."""
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_reader  # noqa: E402
from itutil import free_port, need_root, tmpdir  # noqa: E402

MLPROF = os.environ.get("MLPROF", "build/mlprof")
WORKLOAD = os.environ.get("AGENT_WORKLOAD", "build/tests/workloads/agent_workload")


def metric(text, name):
    m = re.search(r"(?m)^%s(?:\{[^}]*\})? ([0-9.e+]+)$" % re.escape(name), text)
    return float(m.group(1)) if m else None


class AgentCli(unittest.TestCase):
    def run_agent(self, args, seconds, workload=True, metrics_port=None):
        """Runs the agent on a fresh workload for `seconds`, then SIGTERM; returns
        (exit status, log, last /metrics text or None)."""
        wl = subprocess.Popen([WORKLOAD, "60"], stdout=subprocess.DEVNULL) if workload else None
        argv = [MLPROF, "agent", "--k8s", "off", "--upload-interval", "1",
                "--metrics-addr", "127.0.0.1:%d" % metrics_port if metrics_port else "off"]
        if wl:
            argv += ["--pid", str(wl.pid)]
        log = os.path.join(self.dir, "agent.log")
        with open(log, "w") as f:
            agent = subprocess.Popen(argv + args, stdout=f, stderr=subprocess.STDOUT)
            mtext = None
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and agent.poll() is None:
                time.sleep(0.5)
                if metrics_port:
                    try:
                        with urllib.request.urlopen("http://127.0.0.1:%d/metrics"
                                                    % metrics_port, timeout=2) as r:
                            mtext = r.read().decode()
                    except OSError:
                        pass
            agent.send_signal(signal.SIGTERM)
            rc = agent.wait(timeout=30)
        if wl:
            wl.kill()
            wl.wait()
        with open(log) as f:
            return rc, f.read(), mtext

    def setUp(self):
        self.dir = tmpdir()

    def bad_url(self, url):
        """mlprof agent --url URL: refused at start (exit 2); returns its stderr."""
        cp = subprocess.run([MLPROF, "agent", "--url", url], capture_output=True, text=True,
                            timeout=30)
        self.assertEqual(cp.returncode, 2, cp.stderr)
        return cp.stderr

    def test_url_without_host(self):
        for url, why in (("http://", "no host (expected http[s]://HOST[:PORT][/PATH])"),
                         ("https://:4040/x", "no host (expected http[s]://HOST[:PORT][/PATH])"),
                         ("http://pyroscope:0", "port must be 1..65535")):
            self.assertEqual(self.bad_url(url),
                             "mlprof agent: invalid --url '%s': %s\n" % (url, why))

    def test_invalid_url_hides_credentials(self):
        """Issue 19, finding 7: an invalid --url was echoed raw, password included."""
        for url, why in (("http://user:s3cret@pyroscope:0", "port must be 1..65535"),
                         ("ftp://user:s3cret@pyroscope", "expected http:// or https://"),
                         ("http://user:s3/cret@", "port must be 1..65535")):
            err = self.bad_url(url)
            self.assertNotIn("s3", err)
            self.assertIn("<redacted>", err)
            self.assertIn(why, err)

    def test_backend_down_retries_and_exit_message(self):
        need_root(self)
        dead = free_port()  # nothing listens here
        spool = os.path.join(self.dir, "spool")
        mport = free_port()
        url = "http://127.0.0.1:%d" % dead
        rc, log, mtext = self.run_agent(["--url", url, "--spool-dir", spool,
                                         "--tenant-id", "team-a"], 7, metrics_port=mport)
        self.assertEqual(rc, 0, log)
        self.assertTrue(mtext, "no /metrics read:\n" + log)
        failed = metric(mtext, "mlprof_profiles_failed_total")
        retries = metric(mtext, "mlprof_push_retries_total")
        self.assertGreaterEqual(failed, 2, mtext)
        # every failed attempt but the last one seen was followed by another: a retry
        self.assertEqual(retries, failed - 1, "retries %s, failed %s" % (retries, failed))
        m = re.search(r"(?m)^mlprof: agent: (\d+) undelivered profiles kept in (\S+); they go "
                      r"to %s \(tenant team-a\) when the agent next starts with the same "
                      r"--url and --tenant-id$" % re.escape(url), log)
        self.assertTrue(m, log)
        where = m.group(2)
        self.assertRegex(where, r"^%s/[0-9a-f]{16}$" % re.escape(spool))
        with open(os.path.join(where, "DESTINATION")) as f:
            self.assertEqual(f.read(), "push %s tenant=team-a\n" % url)
        files = glob.glob(os.path.join(where, "*.spool"))
        self.assertEqual(len(files), int(m.group(1)), log)
        self.assertEqual(glob.glob(os.path.join(spool, "*.spool")), [], "flat spool files")

    def test_output_dir_made_or_refused_at_start(self):
        """Issue 19, finding 11: --output-dir A/B with A missing is created (it used to say
        "writing profiles to A/B" and then lose every profile); a directory that cannot
        be made is one error line at start and exit 1."""
        need_root(self)
        out = os.path.join(self.dir, "missing", "parent", "out")
        rc, log, _ = self.run_agent(["--output-dir", out, "--memory=false"], 4)
        self.assertEqual(rc, 0, log)
        self.assertNotIn("cannot write", log)
        self.assertTrue(glob.glob(os.path.join(out, "*.pb.gz")), "no profiles in %s:\n%s"
                        % (out, log))
        blocker = os.path.join(self.dir, "a-file")
        open(blocker, "w").close()
        cp = subprocess.run([MLPROF, "agent", "--output-dir", os.path.join(blocker, "x"),
                             "--metrics-addr", "off", "--k8s", "off"], capture_output=True,
                            text=True, timeout=30)
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertIn("mlprof: exporter: cannot use output directory %s/x: Not a directory\n"
                      % blocker, cp.stderr)

    def test_ml_only_says_what_it_filters(self):
        need_root(self)
        out = os.path.join(self.dir, "out")
        rc, log, _ = self.run_agent(["--ml-only", "--output-dir", out], 4)
        self.assertEqual(rc, 0, log)
        self.assertIn("mlprof: labels: --ml-only: only processes running Python with torch, "
                      "tensorflow, jax or CUDA libraries mapped are profiled; samples of other "
                      "processes are dropped", log)
        self.assertRegex(log, r"(?m)^mlprof: labels: --ml-only: not profiling pid \d+ "
                              r"\(agent_workload\): no Python$")
        self.assertEqual(glob.glob(os.path.join(out, "**", "*.pb.gz"), recursive=True), [])

    def test_samples_carry_the_thread_name(self):
        need_root(self)
        out = os.path.join(self.dir, "out")
        rc, log, _ = self.run_agent(["--output-dir", out, "--memory=false"], 4)
        self.assertEqual(rc, 0, log)
        files = [p for p in glob.glob(os.path.join(out, "**", "*"), recursive=True)
                 if os.path.isfile(p) and "agent_workload" in os.path.basename(p)]
        self.assertTrue(files, "no profile of agent_workload in %s:\n%s" % (out, log))
        names = set()
        for p in files:
            for _, _, labels in pprof_reader.load(p).stacks():
                names.add(labels.get("thread_name"))
        self.assertEqual(names, {"agent_workload"})

    def test_credentials_never_logged(self):
        """Credentials in the URL (userinfo, query), in headers, in the environment and in
        the config file, changed by a SIGHUP reload and then made invalid by another: at
        debug level, with the backend down (every push fails and is logged), no secret
        appears in the log or in the spool's DESTINATION file."""
        need_root(self)
        dead = free_port()
        spool = os.path.join(self.dir, "spool")
        conf = os.path.join(self.dir, "agent.conf")
        with open(conf, "w") as f:
            f.write("header = X-Api-Key: FILESECRET1\nheader = Authorization: Bearer HDRSECRET\n")
        secrets = ["URLSECRET", "QUERYSECRET", "HDRSECRET", "ENVSECRET", "FILESECRET1",
                   "FILESECRET2", "BADSECRET"]
        url = "http://user:URLSECRET@127.0.0.1:%d/?token=QUERYSECRET" % dead
        env = dict(os.environ, MLPROF_LOG_LEVEL="debug", MLPROF_BASIC_AUTH_PASSWORD="ENVSECRET")
        wl = subprocess.Popen([WORKLOAD, "60"], stdout=subprocess.DEVNULL)
        log = os.path.join(self.dir, "agent.log")
        try:
            with open(log, "w") as f:
                agent = subprocess.Popen(
                    [MLPROF, "agent", "--k8s", "off", "--upload-interval", "1",
                     "--metrics-addr", "off", "--pid", str(wl.pid), "--url", url,
                     "--spool-dir", spool, "--config", conf, "--basic-auth-user", "bob"],
                    stdout=f, stderr=subprocess.STDOUT, env=env)
                time.sleep(3)
                with open(conf, "w") as c:
                    c.write("header = X-Api-Key: FILESECRET2\n"
                            "header = Authorization: Bearer HDRSECRET\n")
                agent.send_signal(signal.SIGHUP)
                time.sleep(2)
                with open(conf, "w") as c:
                    c.write("header = BADSECRET\n")
                agent.send_signal(signal.SIGHUP)
                time.sleep(2)
                agent.send_signal(signal.SIGTERM)
                rc = agent.wait(timeout=30)
        finally:
            wl.kill()
            wl.wait()
        with open(log) as f:
            text = f.read()
        self.assertEqual(rc, 0, text)
        # the log did say what happened, with the credentials redacted
        self.assertIn("reload: header changed (value not shown); needs a restart", text)
        self.assertIn("reload: invalid configuration, keeping the current one: invalid "
                      "--header '<redacted>'", text)
        self.assertIn("http://<redacted>@127.0.0.1:%d/?<redacted>" % dead, text)
        self.assertRegex(text, r"cannot deliver|HTTP")
        dest = glob.glob(os.path.join(spool, "*", "DESTINATION"))
        self.assertTrue(dest, text)
        with open(dest[0]) as f:
            dtext = f.read()
        for sec in secrets:
            self.assertNotIn(sec, text, "secret %s in the log:\n%s" % (sec, text))
            self.assertNotIn(sec, dtext, "secret %s in %s" % (sec, dest[0]))

    def test_memory_bounds_must_fit_the_cgroup(self):
        """Run in a memory cgroup (v1 or v2, whichever this host has): under a limit that
        its bounds cannot fit, the agent refuses to start with one line and status 2; under
        a roomy one it starts and logs its bounds against the limit."""
        need_root(self)
        v2 = "/sys/fs/cgroup/cgroup.controllers"
        if os.path.exists(v2) and "memory" in open(v2).read():
            base, limit_file = "/sys/fs/cgroup", "memory.max"
        elif os.path.isdir("/sys/fs/cgroup/memory"):
            base, limit_file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
        else:
            self.skipTest("no memory cgroup controller here")
        cg = os.path.join(base, "mlprof-test-%d" % os.getpid())
        try:
            os.mkdir(cg)
        except OSError as e:
            self.skipTest("cannot create a memory cgroup: %s" % e)
        try:
            for limit, ok in ((100 << 20, False), (1 << 30, True)):
                with open(os.path.join(cg, limit_file), "w") as f:
                    f.write(str(limit))
                out = os.path.join(self.dir, "out")
                cp = subprocess.run(
                    ["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % cg, "sh",
                     "timeout", "-s", "TERM", "4", MLPROF, "agent", "--k8s", "off",
                     "--metrics-addr", "off", "--output-dir", out, "--pid", "1"],
                    capture_output=True, text=True, timeout=60)
                if ok:
                    # ran until timeout's SIGTERM (timeout then exits 124)
                    self.assertEqual(cp.returncode, 124, cp.stderr)
                    self.assertIn("Terminated: sending the current window and exiting",
                                  cp.stderr)
                    self.assertRegex(cp.stderr, r"memory bounds: \d+ MiB in all .*; cgroup "
                                                r"memory limit: 1024 MiB")
                else:
                    self.assertEqual(cp.returncode, 2, cp.stderr)
                    self.assertEqual(len(cp.stderr.splitlines()), 1, cp.stderr)
                    self.assertRegex(cp.stderr, r"^mlprof agent: the memory bounds add up to "
                                                r"\d+ MiB .* but this cgroup's memory limit "
                                                r"is 100 MiB: lower --symcache-bytes")
        finally:
            os.rmdir(cg)


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
