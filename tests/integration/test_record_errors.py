# SPDX-License-Identifier: Apache-2.0
"""mlprof record's error handling: one clear line on stderr and a non-zero exit."""
import os
import shutil
import subprocess
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
        out = os.path.join(self.dir, "x.pb.gz")
        cp = run(["record", "-q", "-o", out, "--", "/nonexistent/program"])
        self.assertEqual(cp.returncode, 127)
        self.assertIn("cannot run '/nonexistent/program'", cp.stderr)

    def test_exit_status_propagates(self):
        out = os.path.join(self.dir, "x.pb.gz")
        cp = run(["record", "-q", "-o", out, "--", "sh", "-c", "exit 3"])
        self.assertEqual(cp.returncode, 3, cp.stderr)
        cp = run(["record", "-q", "-o", out, "--", "sh", "-c", "kill -TERM $$"])
        self.assertEqual(cp.returncode, 128 + 15, cp.stderr)

    def test_pid_mode_stops_when_target_exits(self):
        wl = subprocess.Popen([os.path.join(WL_DIR, "wl_pie"), "split", "1.5", "50"],
                              stdout=subprocess.DEVNULL)
        out = os.path.join(self.dir, "p.pb.gz")
        cp = run(["record", "-p", str(wl.pid), "-d", "30", "-o", out])
        wl.wait()
        self.assertEqual(cp.returncode, 0, cp.stderr)
        self.assertIn("top functions", cp.stderr)
        self.assertTrue(os.path.getsize(out) > 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
