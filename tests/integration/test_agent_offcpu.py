#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`mlprof agent --off-cpu` against a real Grafana Pyroscope v2.2.1 (scripts/pyroscope.sh).

The agent profiles tests/workloads/offcpu_workload (threads blocking in known chains:
nanosleep, a pipe read, a contended mutex; it times each blocking call itself), selected
with --pid, at a capture rate where nothing is sampled, and pushes every window. Queried
back from Pyroscope by service_name (set with --service-rule):
- ProfileTypes lists offcpu:offcpu:nanoseconds:offcpu:nanoseconds next to process_cpu;
- SelectMergeStacktraces of the offcpu type holds the chain functions, each with about the
  off-CPU time the workload measured for it, the kernel frames under them, and the
  offcpu_reason label (blocked for the waits);
- the CPU profile of the same service_name holds the CPU-burning chain.

Exit 77 (skipped) when not root (BPF) or when no Pyroscope binary is available
(`scripts/pyroscope.sh path`). Python 3 stdlib only.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyroscope_server import Agent, CleanupCase, Server, agent_test_main, flame_totals, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
MLPROF = os.environ.get("MLPROF", os.path.join(SRC, "build", "mlprof"))
WL_DIR = os.environ.get("WL_DIR", os.path.join(SRC, "build", "tests", "workloads"))
WORKLOAD = os.path.join(WL_DIR, "offcpu_workload")
SCRIPT = os.environ.get("PYROSCOPE_SH", os.path.join(SRC, "scripts", "pyroscope.sh"))
TMP_ROOT = os.path.abspath(os.environ.get("TEST_TMP", tempfile.gettempdir()))

OFFCPU = "offcpu:offcpu:nanoseconds:offcpu:nanoseconds"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
INTERVAL_S = 2
WORKLOAD_S = 8
# High enough that nothing is sampled (the workload switches out ~1000 times a second in
# all), so what Pyroscope holds per chain must be what the workload measured.
RATE = "20000"
CHAINS = {
    "sleep_chain_a": ["sleep_chain_a", "run_sleeper", "run_chains", "main"],
    "read_chain_b": ["read_chain_b", "reader_main", "start_thread"],
    "lock_chain_c": ["lock_chain_c", "waiter_main", "start_thread"],
}
KERNEL = {"__schedule", "schedule", "entry_SYSCALL_64_after_hwframe"}
TOTAL_TOL = 0.10  # per-chain total in Pyroscope vs the workload's measurement

TMP = None


class AgentOffcpu(CleanupCase):
    TOKEN = "off"

    def setUp(self):
        super().setUp()
        self.service = "offcpu-it-" + self.token
        self.srv = Server(SCRIPT, os.path.join(TMP, "pyro"))
        self.srv.start(timeout=180)
        self.cleanup.append(self.srv.stop)

    def start_agent(self, pid):
        agent = Agent(MLPROF, self.srv.url, [
            "--off-cpu", "--off-cpu-rate", RATE, "--upload-interval", str(INTERVAL_S),
            "--frequency", "49", "--pid", str(pid),
            "--service-rule", "process:offcpu_workloa[d] chains .*%s$=%s" %
            (self.token, self.service)], TMP)
        self.cleanup.append(agent.kill)
        agent.wait_ready()
        return agent

    def test_offcpu_pushed_and_queryable(self):
        # The workload waits at its gate until the agent, filtering on its pid in the
        # kernel, is ready: everything it measures is profiled, and only its switch-outs
        # count against the capture rate (host-wide at --off-cpu-rate 20000 a busy host
        # floods the ring buffer).
        wl = subprocess.Popen([WORKLOAD, "chains", str(WORKLOAD_S), self.token],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, OFFCPU_GATE="1"))
        self.cleanup.append(lambda: wl.poll() is None and wl.kill())
        agent = self.start_agent(wl.pid)
        t_start = time.time()
        out, err = wl.communicate("go\n", timeout=120)
        self.assertEqual(wl.returncode, 0, err)
        measured = json.loads(out.strip().splitlines()[-1])
        # the window holding the workload's end is sent at the next rotation or on SIGTERM
        time.sleep(INTERVAL_S + 0.5)
        dropped = agent.drops()
        rc = agent.stop()
        self.assertEqual(rc, 0, "agent exit status:\n" + agent.log()[-3000:])
        sel = '{service_name="%s"}' % self.service

        want = {fn: measured[fn]["off_ns"] for fn in CHAINS}

        def stored():
            t, _ = flame_totals(self.srv.merged(OFFCPU, sel))
            return all(t.get(fn, 0) >= 0.9 * want[fn] for fn in CHAINS)
        wait_for(stored, 30, 1)

        # the offcpu profile type is listed next to the CPU one
        types = self.srv.profile_types()
        self.assertIn(OFFCPU, types)
        self.assertIn(CPU, types)

        fg = self.srv.merged(OFFCPU, sel)
        totals, edges = flame_totals(fg)
        report = ["%s: Pyroscope %.3f s, measured %.3f s (%+.1f%%), %d calls" %
                  (fn, totals.get(fn, 0) / 1e9, want[fn] / 1e9,
                   100.0 * (totals.get(fn, 0) - want[fn]) / want[fn], measured[fn]["calls"])
                  for fn in CHAINS]
        report.append("workload ran %.2f s from %.3f; offcpu total %.3f s; agent drops %s" %
                      (measured["seconds"], t_start, int(fg.get("total", 0) or 0) / 1e9,
                       dropped))
        report += [l for l in agent.log().splitlines() if " window " in l]
        print("\n" + "\n".join(report))
        for fn, chain in CHAINS.items():
            self.assertIn(fn, totals, "%s not in %s" % (fn, sorted(totals)))
            self.assertLess(abs(totals[fn] - want[fn]) / want[fn], TOTAL_TOL,
                            "\n".join(report))
            # root side first in the flame graph: caller -> callee along the chain
            for callee, caller in zip(chain, chain[1:]):
                self.assertIn((caller, callee), edges, "%s -> %s" % (caller, callee))
        self.assertTrue(KERNEL <= set(totals), "kernel frames %s" % (KERNEL - set(totals)))
        self.assertIn("do_nanosleep", totals)
        self.assertTrue(any("futex_wait" in n for n in totals), sorted(totals))
        self.assertTrue(any("pipe_read" in n for n in totals), sorted(totals))
        # only this process: at most its 5 threads off the CPU for the whole run
        self.assertLessEqual(int(fg.get("total", 0)),
                             1.1 * 5 * measured["seconds"] * 1e9 + 4 * INTERVAL_S * 1e9)

        # offcpu_reason is a series label: the waits are under blocked
        # memory growth is on by default: its series may be there too
        names = self.srv.label_values("__name__", sel)
        self.assertTrue({"process_cpu", "offcpu"} <= names <= {"process_cpu", "offcpu", "memory"},
                        names)
        reasons = self.srv.label_values("offcpu_reason", sel)
        self.assertIn("blocked", reasons)
        self.assertTrue(reasons <= {"blocked", "preempted"}, reasons)
        bt, _ = flame_totals(self.srv.merged(
            OFFCPU, '{service_name="%s",offcpu_reason="blocked"}' % self.service))
        for fn in CHAINS:
            self.assertGreaterEqual(bt.get(fn, 0), 0.95 * totals[fn],
                                    "%s blocked %d of %d" % (fn, bt.get(fn, 0), totals[fn]))
        for name in ("pid", "tid"):
            self.assertEqual(self.srv.label_values(name, sel), set(),
                             "%s promoted to a series label" % name)

        # the CPU profile of the same service holds the CPU-burning chain
        ct, cedges = flame_totals(self.srv.merged(CPU, sel))
        self.assertIn("burn_spin", ct, sorted(ct))
        self.assertIn(("hold_chain", "burn_spin"), cedges)
        self.assertIn(("holder_main", "hold_chain"), cedges)
        # (the CPU profile has CPU samples in do_nanosleep too, around the switch: a few ms
        # of CPU, not the seconds of sleep)
        self.assertLess(ct.get("do_nanosleep", 0), 0.1 * want["sleep_chain_a"],
                        "off-CPU weight in the CPU profile")
        self.assertGreater(ct["burn_spin"], 0.5 * measured["burn_spin_cpu_ns"],
                           "burn_spin CPU %d ns in Pyroscope vs %d measured" %
                           (ct["burn_spin"], measured["burn_spin_cpu_ns"]))


def set_tmp(path):
    global TMP
    TMP = path


def main():
    return agent_test_main(SCRIPT, (MLPROF, WORKLOAD), TMP_ROOT, "agent_offcpu.", set_tmp)

if __name__ == "__main__":
    sys.exit(main())
