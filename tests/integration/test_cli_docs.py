#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""README against the binary: the option lists of `record` and `agent` are complete (names,
defaults, value ranges), the quick start names its interpreter, and the systemd steps work
as written on a fresh machine (the config directory is created before it is written to;
the unit passes `systemd-analyze verify`). No root needed."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

MLPROF = os.environ.get("MLPROF", "build/mlprof")
SRC = os.environ.get("TEST_SRC_DIR", os.path.join(os.path.dirname(__file__), ".."))
ROOT = os.path.abspath(os.path.join(SRC, ".."))


def readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def helptext(cmd):
    cp = subprocess.run([MLPROF, cmd, "--help"], capture_output=True, text=True, timeout=30)
    if cp.returncode != 0:
        raise AssertionError("%s --help exited %d: %s" % (cmd, cp.returncode, cp.stderr))
    return cp.stdout


def agent_rows(text):
    """(option, env, default, values) of each option in `mlprof agent --help`."""
    lines = text.split("\n")
    i = lines.index("Options:") + 1
    rows = []
    while i + 1 < len(lines) and lines[i].startswith("  ") and not lines[i].startswith("  -h"):
        opt, txt = lines[i].strip(), lines[i + 1].strip()
        i += 2
        env = re.search(r" \(env (MLPROF_\w+)\)$", txt)
        d = re.search(r" \[default: ([^\]]*)\]", txt)
        r = re.search(r" \[(?:range|minimum): ([^\]]*)\]", txt)
        rows.append((opt, env.group(1) if env else "", d.group(1) if d else "",
                     r.group(1) if r else ""))
    return rows


class Docs(unittest.TestCase):
    def test_record_options_match_help(self):
        text = readme()
        block = re.search(r"```\nmlprof record \[options\].*?```", text, re.S).group(0)
        helpopts = set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z0-9-]+|-\w)\b", helptext("record")))
        docopts = set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z0-9-]+|-\w)\b", block))
        self.assertEqual(helpopts - docopts, set(), "in --help, missing from README")
        self.assertEqual(docopts - helpopts, set(), "in README, unknown to --help")
        for opt, rng in (("--freq", "1..10000"), ("--stack-size", "512..131072"),
                         ("--memory-sample", "4..1048576"), ("--memory-rate", "10..1000000"), ("--off-cpu-rate", "10..100000"),
                         ("--cuda-rate", "10..10000000"), ("--off-cpu-min-us", "0..60000000")):
            self.assertRegex(block, r"%s [^\n]*\n?[^\n]*%s" % (re.escape(opt), re.escape(rng)))
        for opt in ("--title TEXT", "-q, --quiet", "--log-level LEVEL", "-h, --help"):
            self.assertIn(opt, block)

    def test_agent_options_match_help(self):
        text = readme()
        rows = agent_rows(helptext("agent"))
        self.assertGreater(len(rows), 40)
        for opt, env, default, values in rows:
            want = "| `%s` | %s | %s | %s |" % (
                opt.replace("|", "\\|"), "`%s`" % env if env else "",
                "`%s`" % default if default else "", values)
            self.assertIn(want, text, "README lacks the agent option row %r" % want)
        documented = re.findall(r"(?m)^\| `(--[a-z0-9-]+)", text)
        known = {o.split()[0].split("[")[0] for o, _, _, _ in rows}
        self.assertEqual(set(documented) - known, set(), "README rows unknown to --help")
        self.assertIn("--service-min-age", known)

    def test_quick_start_names_its_interpreter(self):
        text = readme()
        self.assertIn("mlprof record -- /usr/bin/python3 examples/train.py", text)
        with open(os.path.join(ROOT, "scripts", "quickstart.sh")) as f:
            self.assertIn("-- /usr/bin/python3 examples/train.py", f.read())

    def test_systemd_steps_work_as_written(self):
        text = readme()
        block = re.search(r"- \*\*systemd\*\*.*?```sh\n(.*?)```", text, re.S).group(1)
        cmds = [l.strip() for l in block.splitlines() if l.strip()]
        mk = [i for i, c in enumerate(cmds) if re.match(r"(install -d|mkdir -p)\b.*/etc/mlprof\b", c)]
        wr = [i for i, c in enumerate(cmds) if re.search(r">\s*/etc/mlprof/", c)]
        self.assertTrue(mk and wr and mk[0] < wr[0],
                        "/etc/mlprof is written before it is created: %r" % cmds)
        self.assertTrue(any("daemon-reload" in c for c in cmds), cmds)
        # The steps themselves, under a scratch root: each must succeed on a fresh tree.
        tmp = tempfile.mkdtemp(prefix="mlprof-docs-")
        try:
            script = "\n".join(c for c in cmds if not c.startswith(("systemctl", "journalctl")))
            script = script.replace("/usr/local/bin/", tmp + "/usr/local/bin/")
            script = script.replace("/etc/", tmp + "/etc/").replace("build/mlprof", MLPROF)
            os.makedirs(tmp + "/usr/local/bin")
            os.makedirs(tmp + "/etc/systemd/system")
            cp = subprocess.run(["sh", "-ec", script], cwd=ROOT, capture_output=True, text=True)
            self.assertEqual(cp.returncode, 0, "steps failed: %s\n%s" % (script, cp.stderr))
            with open(tmp + "/etc/mlprof/agent.conf") as f:
                self.assertIn("url = http://", f.read())
            analyze = shutil.which("systemd-analyze")
            if not analyze:
                self.skipTest("systemd-analyze missing: unit not verified")
            unit = os.path.join(tmp, "mlprof.service")
            with open(os.path.join(ROOT, "deploy", "systemd", "mlprof.service")) as f:
                body = f.read().replace("/usr/local/bin/mlprof", os.path.abspath(MLPROF))
            with open(unit, "w") as f:
                f.write(body)
            cp = subprocess.run([analyze, "verify", unit], capture_output=True, text=True)
            self.assertEqual(cp.returncode, 0, cp.stderr)
            self.assertEqual(cp.stderr.strip(), "", cp.stderr)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from itutil import run_main

    raise SystemExit(run_main())
