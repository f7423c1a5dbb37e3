# SPDX-License-Identifier: Apache-2.0
"""mlprof record's error handling: one clear line on stderr and a non-zero exit."""
import gzip
import os
import re
import shutil
import subprocess
import time
import unittest

from itutil import MLPROF, WL_DIR, need_root, tmpdir


def run(args, **kw):
    return subprocess.run([MLPROF] + args, capture_output=True, text=True, timeout=60, **kw)


class RecordErrors(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def one_line_error(self, cp, needle, rc=None):
        self.assertNotEqual(cp.returncode, 0, cp.stderr)
        if rc is not None:
            self.assertEqual(cp.returncode, rc, cp.stderr)
        self.assertLess(cp.returncode, 128, "crashed: %d" % cp.returncode)
        lines = [l for l in cp.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, "expected one line, got: %r" % cp.stderr)
        self.assertIn(needle, lines[0])

    def test_help_documents_every_option(self):
        cp = run(["record", "--help"])
        self.assertEqual(cp.returncode, 0)
        for opt in ("--pid", "--all", "--freq", "--duration", "--output", "--format",
                    "--stack-size", "--no-kernel", "--quiet", "--log-level", "-- COMMAND"):
            self.assertIn(opt, cp.stdout)

    def test_no_such_pid(self):
        self.one_line_error(run(["record", "-p", "12ab"]), "invalid PID")
        self.one_line_error(run(["record", "-p", "4194000", "-d", "1"]), "no such process: 4194000")

    def test_bad_flags(self):
        self.one_line_error(run(["record", "-F", "abc", "-a"]), "invalid frequency", rc=2)
        self.one_line_error(run(["record", "-F", "0", "-a"]), "invalid frequency", rc=2)
        # digits only, as the agent's options: no sign, no space before them
        self.one_line_error(run(["record", "-F", "+99", "-a"]), "invalid frequency", rc=2)
        self.one_line_error(run(["record", "-F", " 99", "-a"]), "invalid frequency", rc=2)
        self.one_line_error(run(["record", "-a", "--cuda-rate", "1e5"]), "invalid --cuda-rate",
                            rc=2)
        self.one_line_error(run(["record", "--bogus", "-a"]), "invalid option", rc=2)
        self.one_line_error(run(["record"]), "exactly one target", rc=2)
        self.one_line_error(run(["record", "-a", "-p", "1"]), "exactly one target", rc=2)
        self.one_line_error(run(["record", "-a", "-d", "-5"]), "invalid duration", rc=2)
        self.one_line_error(run(["record", "-a", "-f", "png"]), "unknown format", rc=2)
        self.one_line_error(run(["record", "-a", "-o", "out.xyz"]), "cannot tell the format", rc=2)
        self.one_line_error(run(["record", "-a", "--stack-size", "99999999"]), "invalid --stack-size", rc=2)
        self.one_line_error(run(["nonsense"]), "unknown command", rc=2)

    def test_unwritable_output(self):
        self.one_line_error(run(["record", "-d", "1", "-a", "-o", "/nonexistent-dir/p.pb.gz"]),
                            "cannot write output '/nonexistent-dir/p.pb.gz'")
        self.one_line_error(run(["record", "-d", "1", "-a", "-o", self.dir, "-f", "pprof"]),
                            "is a directory")

    def test_unwritable_output_checked_before_recording(self):
        # root may write into any directory, but not create files in /proc: found out at
        # once, not after recording 30 s
        ok = os.path.join(self.dir, "ok.pb.gz")
        t0 = time.monotonic()
        cp = run(["record", "-a", "-d", "30", "-o", ok, "-o", "/proc/x.html"])
        self.assertLess(time.monotonic() - t0, 10, "recorded before checking the outputs")
        self.assertEqual(cp.returncode, 2, cp.stderr)
        self.assertEqual(cp.stderr, "mlprof: record: cannot write output '/proc/x.html': "
                         "No such file or directory\n")
        self.assertFalse(os.path.exists(ok))
        self.assertEqual(os.listdir(self.dir), [], "the check left files behind")

    def test_write_fails_at_end_saves_a_copy(self):
        gone = os.path.join(self.dir, "gone")
        keep = os.path.join(self.dir, "tmp")
        os.mkdir(gone)
        os.mkdir(keep)
        out = os.path.join(gone, "x.pb.gz")
        # the command removes the output directory while it is profiled
        cp = run(["record", "-o", out, "--no-memory", "--", "sh", "-c",
                  "rm -rf \"$0\"; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done", gone],
                 env=dict(os.environ, TMPDIR=keep))
        self.assertEqual(cp.returncode, 1, cp.stderr)
        m = re.search(r"^mlprof: record: cannot write '%s': No such file or directory; saved "
                      r"the profile to (%s/mlprof-\w{6}-x\.pb\.gz) instead$"
                      % (re.escape(out), re.escape(keep)), cp.stderr, re.M)
        self.assertTrue(m, cp.stderr)
        with gzip.open(m.group(1), "rb") as f:
            data = f.read()
        self.assertGreater(len(data), 0)
        self.assertIn(b"cpu", data)  # a pprof with its sample type, not an empty file

    def test_not_root(self):
        setpriv = shutil.which("setpriv")
        if not setpriv:
            self.skipTest("setpriv missing")
        out = os.path.join(self.dir, "x.pb.gz")
        os.chmod(self.dir, 0o777)
        cp = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                             MLPROF, "record", "-d", "1", "-a", "-o", out],
                            capture_output=True, text=True, timeout=60)
        self.one_line_error(cp, "need root")
        self.assertFalse(os.path.exists(out))

    def test_btf_unavailable(self):
        unshare = shutil.which("unshare")
        if not unshare:
            self.skipTest("unshare missing")
        out = os.path.join(self.dir, "x.pb.gz")
        cp = subprocess.run([unshare, "-m", "sh", "-c",
                             "mount -t tmpfs none /sys/kernel/btf && exec \"$0\" record -d 1 -a -o \"$1\"",
                             MLPROF, out], capture_output=True, text=True, timeout=60)
        self.one_line_error(cp, "BTF")

    def test_command_not_found(self):
        # the previous profile stays as it was: nothing is recorded, nothing written
        out = os.path.join(self.dir, "x.pb.gz")
        noexec = os.path.join(self.dir, "not-executable")
        with open(out, "wb") as f:
            f.write(b"previous profile")
        with open(noexec, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(noexec, 0o644)
        for cmd, rc, why in ((["/nonexistent/program"], 127, "No such file or directory"),
                             (["no-such-command-mlprof"], 127, "No such file or directory"),
                             ([noexec], 126, "Permission denied")):
            cp = run(["record", "-o", out, "--"] + cmd)
            self.assertEqual(cp.returncode, rc, cp.stderr)
            self.assertEqual(cp.stderr, "mlprof: record: cannot run '%s': %s\n" % (cmd[0], why))
            with open(out, "rb") as f:
                self.assertEqual(f.read(), b"previous profile")

    def test_summary_says_what_a_cut_stack_costs(self):
        out = os.path.join(self.dir, "x.pb.gz")
        prog = "def f(n):\n return f(n-1) if n else sum(range(4000000))\nf(60)\n"
        cp = run(["record", "-o", out, "--stack-size", "512", "--", "python3", "-c", prog])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertNotIn("cut at", cp.stderr)
        self.assertRegex(cp.stderr, r"(?m)^mlprof: \d+ stacks \(\d+\.\d% of all captured\) "
                         r"miss their outermost frames: the stack was deeper than the 512 "
                         r"bytes copied \(raise --stack-size, max 131072\)$")

    def test_exit_status_propagates(self):
        out = os.path.join(self.dir, "x.pb.gz")
        cp = run(["record", "-q", "-o", out, "--", "sh", "-c", "exit 3"])
        self.assertEqual(cp.returncode, 3, cp.stderr)
        cp = run(["record", "-q", "-o", out, "--", "sh", "-c", "kill -TERM $$"])
        self.assertEqual(cp.returncode, 128 + 15, cp.stderr)

    def test_pid_mode_stops_when_target_exits(self):
        # 4 s of work: mlprof's start (loading and verifying its BPF programs) takes 1-2.5 s
        # on a loaded 2-vCPU CI machine, and a 1.5 s workload was sometimes gone before
        wl = subprocess.Popen([os.path.join(WL_DIR, "wl_pie"), "split", "4", "50"],
                              stdout=subprocess.DEVNULL)
        out = os.path.join(self.dir, "p.pb.gz")
        cp = run(["record", "-p", str(wl.pid), "-d", "30", "-o", out])
        wl.wait()
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("top functions", cp.stderr)
        self.assertTrue(os.path.getsize(out) > 0)


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
