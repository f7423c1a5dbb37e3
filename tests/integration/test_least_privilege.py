# SPDX-License-Identifier: Apache-2.0
"""Least privilege: `mlprof record` and `mlprof agent` run as the unprivileged user nobody
holding exactly the capabilities README lists (setpriv: ambient, inheritable and bounding
set), profile a process of another user (root's workload, so CAP_SYS_PTRACE is exercised)
and produce named frames with full chains; without any one of the required capabilities
they stop at once with one line naming it, and write nothing.

Needs root (to hand out the capabilities), setpriv (util-linux) and a user nobody that can
execute the build; exit 77 = skipped."""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import time
import unittest
import urllib.request

from itutil import MLPROF, free_port, WL_DIR, main_chain_ok, need_root, run_main, stacks_of, tmpdir

AGENT_WORKLOAD = os.environ.get("AGENT_WORKLOAD",
                                os.path.join(WL_DIR, "agent_workload"))
# README "Least privilege": required, then recommended (kernel symbol names).
REQUIRED = ["bpf", "perfmon", "sys_ptrace", "dac_read_search"]
LISTED = REQUIRED + ["syslog"]
CAP_BITS = {"dac_read_search": 2, "sys_ptrace": 19, "syslog": 34, "perfmon": 38, "bpf": 39}
NEED = ("need root or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH; "
        "missing %s")


def as_nobody(caps, argv):
    """argv run by nobody holding exactly caps (ambient, so they survive execve)."""
    pw = pwd.getpwnam("nobody")
    cl = ",".join(["-all"] + ["+" + c for c in caps])
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid, "--clear-groups",
            "--inh-caps=" + cl, "--ambient-caps=" + cl, "--bounding-set=" + cl] + argv


def nobody_dir():
    d = tmpdir()
    pw = pwd.getpwnam("nobody")
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def http_get(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status, r.read().decode()


class LeastPrivilege(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root to hand out capabilities")
        if not shutil.which("setpriv"):
            raise unittest.SkipTest("setpriv (util-linux) missing")
        try:
            pwd.getpwnam("nobody")
        except KeyError:
            raise unittest.SkipTest("no user nobody")
        bnd = 0
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapBnd:"):
                    bnd = int(line.split()[1], 16)
        lacking = [c for c in LISTED if not bnd >> CAP_BITS[c] & 1]
        if lacking:
            raise unittest.SkipTest("this test's own bounding set lacks %s" % lacking)
        # Without CAP_SYS_ADMIN mlprof cannot mount tracefs itself (README: it must be
        # mounted beforehand); as root, mount it here when the host has not.
        if not os.path.exists("/sys/kernel/tracing/events") and \
                not os.path.exists("/sys/kernel/debug/tracing/events"):
            subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
        cp = subprocess.run(as_nobody([], [MLPROF, "version"]), capture_output=True, text=True)
        if cp.returncode != 0:
            raise unittest.SkipTest("nobody cannot run %s: %s" % (MLPROF, cp.stderr.strip()))

    def setUp(self):
        need_root(self)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
            if p.stdout:
                p.stdout.close()

    def spawn(self, argv):
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        self.procs.append(p)
        return p

    def record(self, caps, pid, out, secs=3):
        argv = [MLPROF, "record", "-q", "--no-memory", "--cuda", "none", "-F", "199",
                "-d", str(secs), "-p", str(pid), "-o", out]
        return subprocess.run(as_nobody(caps, argv), capture_output=True, text=True,
                              timeout=90)

    def test_record_with_listed_caps(self):
        # root's workload, profiled by nobody: only CAP_SYS_PTRACE opens its /proc files
        wl = self.spawn([os.path.join(WL_DIR, "wl_pie"), "split", "20", "50"])
        time.sleep(0.3)
        out = os.path.join(nobody_dir(), "lp.pb.gz")
        cp = self.record(LISTED, wl.pid, out)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertEqual(cp.stderr, "")
        self.assertEqual(os.stat(out).st_uid, pwd.getpwnam("nobody").pw_uid)
        _, stacks = stacks_of(out, "wl_pie")
        chains = (["leaf_a", "phase_a", "run_split", "main"],
                  ["leaf_b", "phase_b", "run_split", "main"])
        leaves = {"leaf_a": 0, "leaf_b": 0}
        full = in_leaves = 0
        for names, n, _ in stacks:
            for leaf in leaves:
                if leaf in names:
                    leaves[leaf] += n
                    in_leaves += n
            if any(main_chain_ok(names, c) for c in chains):
                full += n
        total = sum(n for _, n, _ in stacks)
        self.assertGreater(total, 200, "too few samples: %d" % total)
        self.assertGreater(min(leaves.values()), total // 5, leaves)
        self.assertGreaterEqual(full / in_leaves, 0.99,
                                "full chains %d of %d samples in the leaves" % (full, in_leaves))
        names = {fr for names, _, _ in stacks for fr in names}
        self.assertNotIn("[unknown kernel]", names, "CAP_SYSLOG given: kernel frames named")

    def test_record_without_each_required_cap(self):
        wl = self.spawn([os.path.join(WL_DIR, "wl_pie"), "split", "20", "50"])
        d = nobody_dir()
        for cap in REQUIRED:
            with self.subTest(missing=cap):
                out = os.path.join(d, "no_%s.pb.gz" % cap)
                cp = self.record([c for c in LISTED if c != cap], wl.pid, out)
                self.assertEqual(cp.returncode, 1, cp.stderr)
                self.assertEqual(cp.stderr, "mlprof: record: %s\n"
                                 % (NEED % ("CAP_" + cap.upper())))
                self.assertFalse(os.path.exists(out))
        cp = self.record([], wl.pid, os.path.join(d, "none.pb.gz"))
        self.assertEqual(cp.returncode, 1, cp.stderr)
        self.assertEqual(cp.stderr, "mlprof: record: %s\n" % (
            NEED % "CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH"))
        # help needs no privilege
        cp = subprocess.run(as_nobody([], [MLPROF, "record", "--help"]), capture_output=True,
                            text=True, timeout=30)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("--pid", cp.stdout)

    def test_record_command_gets_no_capabilities(self):
        """`record -- COMMAND` run by a user holding the capabilities as ambient ones must
        not hand them to COMMAND (which would get CAP_BPF, CAP_SYS_PTRACE, ...)."""
        d = nobody_dir()
        caps = os.path.join(d, "caps.txt")
        argv = [MLPROF, "record", "-q", "--no-memory", "--cuda", "none",
                "-o", os.path.join(d, "cmd.pb.gz"), "--", "sh", "-c",
                "grep -E '^Cap(Eff|Prm|Amb|Inh):' /proc/self/status > \"$0\"", caps]
        cp = subprocess.run(as_nobody(LISTED, argv), capture_output=True, text=True,
                            timeout=60)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        with open(caps) as f:
            got = dict(line.split() for line in f.read().replace(":", "").splitlines())
        # (the inheritable set grants nothing by itself: only with a file's capabilities)
        got.pop("CapInh", None)
        self.assertEqual(got, {k: "0000000000000000" for k in ("CapPrm", "CapEff", "CapAmb")},
                         "the profiled command inherited mlprof's capabilities")

    def test_record_without_syslog(self):
        """CAP_SYSLOG is only for kernel symbol names: without it (where kallsyms hides
        addresses from this user) the capture still works and says so in one line."""
        hidden = subprocess.run(as_nobody([], ["head", "-1", "/proc/kallsyms"]),
                                capture_output=True, text=True).stdout.startswith("0000000000000000")
        if not hidden:
            self.skipTest("kallsyms shows addresses to everyone here (kptr_restrict=0, "
                          "perf_event_paranoid<=1): CAP_SYSLOG changes nothing")
        wl = self.spawn([os.path.join(WL_DIR, "wl_pie"), "split", "20", "50"])
        time.sleep(0.3)
        out = os.path.join(nobody_dir(), "nosyslog.pb.gz")
        cp = self.record(REQUIRED, wl.pid, out)
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("kernel frames stay unnamed", cp.stderr)
        _, stacks = stacks_of(out, "wl_pie")
        self.assertGreater(sum(n for names, n, _ in stacks if "leaf_a" in names), 0)

    def agent(self, caps, out_dir, port, token):
        argv = [MLPROF, "agent", "--upload-interval", "2", "--output-dir", out_dir,
                "--spool-dir", os.path.join(os.path.dirname(out_dir), "spool"),
                "--process-regex", "agent_workloa[d] [0-9]+ %s$" % token,
                "--metrics-addr", "127.0.0.1:%d" % port, "--k8s", "off",
                "--log-level", "warn"]
        return subprocess.Popen(as_nobody(caps, argv), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def test_agent_with_listed_caps(self):
        token = "lp%d" % os.getpid()
        self.spawn([AGENT_WORKLOAD, "60", token])
        d = nobody_dir()
        out_dir = os.path.join(d, "profiles")
        port = free_port()
        agent = self.agent(LISTED, out_dir, port, token)
        self.procs.append(agent)
        deadline = time.time() + 30
        while time.time() < deadline and agent.poll() is None:
            try:
                if http_get("http://127.0.0.1:%d/readyz" % port)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if agent.poll() is not None:
            self.fail("agent exited %d: %s" % (agent.returncode, agent.stdout.read()))
        time.sleep(5)
        st, metrics = http_get("http://127.0.0.1:%d/metrics" % port)
        self.assertEqual(st, 200)
        vals = {}
        for line in metrics.splitlines():
            if line.startswith("mlprof_unwind_total{"):
                vals[line.split("\"")[1]] = float(line.split()[-1])
        agent.send_signal(signal.SIGTERM)
        self.assertEqual(agent.wait(timeout=15), 0)
        log = agent.stdout.read()
        self.assertEqual(log, "", "warnings or errors logged")
        self.assertGreater(vals.get("complete", 0), 0, metrics)
        files = [p for p in glob.glob(os.path.join(out_dir, "**", "*.pb.gz"), recursive=True)]
        self.assertGreaterEqual(len(files), 2, files)
        # agent_wl_outer tail-calls agent_wl_hot_beta: only alpha keeps its caller's frame
        chain = ["agent_wl_hot_alpha", "agent_wl_outer", "main"]
        alpha = full = beta = 0
        for p in files:
            for names, n, _ in stacks_of(p)[1]:
                alpha += n if "agent_wl_hot_alpha" in names else 0
                beta += n if "agent_wl_hot_beta" in names else 0
                full += n if main_chain_ok(names, chain) else 0
        self.assertGreater(beta, 0, "agent_wl_hot_beta never named")
        self.assertGreater(alpha, 20, "too few samples in agent_wl_hot_alpha")
        self.assertGreaterEqual(full / alpha, 0.95, "full chains %d of %d" % (full, alpha))

    def test_agent_without_each_required_cap(self):
        d = nobody_dir()
        for cap in REQUIRED:
            with self.subTest(missing=cap):
                agent = self.agent([c for c in LISTED if c != cap],
                                   os.path.join(d, "profiles"), free_port(), "x")
                self.procs.append(agent)
                rc = agent.wait(timeout=30)
                self.assertEqual(rc, 1)
                self.assertEqual(agent.stdout.read(), "mlprof: agent: %s\n"
                                 % (NEED % ("CAP_" + cap.upper())))
        self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    raise SystemExit(run_main())
