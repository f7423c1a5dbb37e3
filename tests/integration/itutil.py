# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for mlprof's integration tests (run by ctest as root)."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import pprof_reader  # noqa: E402

MLPROF = os.environ.get("MLPROF", "build/mlprof")
WL_DIR = os.environ.get("WL_DIR", "build/tests/workloads")
# (absolute: tests run tools such as `go tool pprof` from other directories)
TMP_ROOT = os.path.abspath(os.environ.get("TEST_TMP", tempfile.gettempdir()))


def need_root(test):
    if os.geteuid() != 0:
        raise unittest.SkipTest("needs root for BPF")


def run_main():
    """Runs the unittest cases of the calling file (sys.argv picks cases, as with
    unittest.main) and returns its exit status for ctest: 1 when a case failed, 77 (the
    tests' SKIP_RETURN_CODE: SKIPPED) when every case was skipped, else 0. Each skipped case
    or subtest is printed as "SKIPPED: <case>: <reason>" for the summary of scripts/test.sh."""
    prog = unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[1:], exit=False)
    res = prog.result
    whole = 0
    for case, why in res.skipped:
        print("SKIPPED: %s: %s" % (case.id(), why))
        whole += not isinstance(case, unittest.case._SubTest)
    if not res.wasSuccessful():
        return 1
    if res.testsRun == 0 or whole >= res.testsRun:
        print("SKIPPED: all %d cases skipped: nothing was checked" % res.testsRun)
        return 77
    return 0


def free_port():
    """A TCP port free on 127.0.0.1 now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def tmpdir():
    os.makedirs(TMP_ROOT, exist_ok=True)
    return tempfile.mkdtemp(dir=TMP_ROOT)


def record(args, cmd=None, timeout=120, check=True, env=None):
    """Runs mlprof record (env: variables added to the environment); returns
    (CompletedProcess, list of JSON lines the workload printed)."""
    argv = [MLPROF, "record"] + args
    if cmd:
        argv += ["--"] + cmd
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                        env=dict(os.environ, **env) if env else None)
    if check and cp.returncode != 0:
        raise AssertionError("mlprof failed (%d): %s\n%s" % (cp.returncode, " ".join(argv),
                                                              cp.stderr))
    js = []
    for line in cp.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            js.append(json.loads(line))
    return cp, js


def stacks_of(path, process_name=None):
    prof = pprof_reader.load(path)
    out = []
    for names, values, labels in prof.stacks():
        if process_name and labels.get("process_name") != process_name:
            continue
        out.append((names, values[0], labels))
    return prof, out


LIBC_START = {"__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
              "__libc_start_main_alias_2"}


def main_chain_ok(names, chain):
    """names: leaf first. True when chain (leaf first, ends with 'main') appears contiguously
    and the stack continues from main through libc's start code to _start, with nothing
    truncated."""
    if any(n.startswith("[truncated") for n in names):
        return False
    try:
        i = names.index(chain[0])
    except ValueError:
        return False
    if names[i:i + len(chain)] != chain:
        return False
    rest = names[i + len(chain):]
    return len(rest) >= 1 and rest[-1] == "_start" and all(n in LIBC_START for n in rest[:-1])


def thread_chain_ok(names, chain):
    """Like main_chain_ok, for a thread: chain ends at the start routine, then
    start_thread and clone3 (glibc >= 2.34) or clone."""
    if any(n.startswith("[truncated") for n in names):
        return False
    try:
        i = names.index(chain[0])
    except ValueError:
        return False
    return names[i:i + len(chain)] == chain and \
        names[i + len(chain):] in (["start_thread", "clone3"], ["start_thread", "clone"])
