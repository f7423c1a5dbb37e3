# SPDX-License-Identifier: Apache-2.0
"""Files of other processes are untrusted: real processes (on the host and in a container-like
mount namespace with its own root) map libraries the test builds, then truncate, delete,
replace, overmount them or forge their build id; mlprof record must survive, never block,
never leave a process's root, and name frames only from the file that is mapped.

Cases that need the deployed capabilities (README: no CAP_SYS_ADMIN, so no
/proc/PID/map_files) run mlprof under setpriv with exactly that bounding set."""
import os
import shutil
import struct
import subprocess
import sys
import time
import unittest

from itutil import MLPROF, need_root, stacks_of, tmpdir

CC = shutil.which("gcc")
DEPLOYED_CAPS = ["--bounding-set=-all,+bpf,+perfmon,+sys_ptrace,+dac_read_search,+sys_resource",
                 "--inh-caps=-all"]

LIB_SRC = r"""
static volatile unsigned long sink;
#ifndef INNER
#define INNER inner_static
#endif
__attribute__((noinline)) static void INNER(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 7;
}
__attribute__((noinline)) void NAME(unsigned long n)
{
	INNER(n);
	sink++;
}
#ifdef PAD
/* local symbols only (.symtab), to put the section headers pages past the loaded part */
#define P(i) __attribute__((visibility("hidden"), noinline)) void pad_fn_##i(void) { sink += i; }
#include "pad.h"
#endif
"""

# app FUNCS...: prints "ready", waits for SIGUSR1 when asked, then calls each function in turn.
APP_SRC = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
%(decls)s
static volatile sig_atomic_t go;
static void on_usr1(int sig) { (void)sig; go = 1; }
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
__attribute__((noinline)) static void main_spin(unsigned long n)
{
	static volatile unsigned long s;
	for (unsigned long i = 0; i < n; i++)
		s += i;
}
int main(int argc, char **argv)
{
	double secs = atof(argv[1]), t0;
	int wait_usr1 = argc > 2 && !strcmp(argv[2], "usr1");

	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	fflush(stdout);
	/* before the signal: spin in the executable only */
	while (wait_usr1 && !go)
		main_spin(100000);
	t0 = now();
	while (now() - t0 < secs) {
%(calls)s
	}
	return 0;
}
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def build_lib(d, out, name, inner="inner_static", build_id=None, pad=False, extra=()):
    src = os.path.join(d, "lib_%s.c" % name)
    with open(src, "w") as f:
        f.write(LIB_SRC)
    args = [CC, "-O2", "-g", "-shared", "-fPIC", "-fno-inline", "-DNAME=" + name,
            "-DINNER=" + inner, "-I", d, "-o", out, src]
    if pad:
        with open(os.path.join(d, "pad.h"), "w") as f:
            f.write("".join("P(%d)\n" % i for i in range(3000)))
        args.append("-DPAD")
    if build_id:
        args.append("-Wl,--build-id=0x" + build_id)
    sh(args + list(extra))


def build_app(d, out, funcs, libs, rpath):
    src = os.path.join(d, os.path.basename(out) + ".c")
    with open(src, "w") as f:
        f.write(APP_SRC % {
            "decls": "".join("void %s(unsigned long n);\n" % fn for fn in funcs),
            "calls": "".join("\t\t%s(200000);\n" % fn for fn in funcs)})
    sh([CC, "-O2", "-g", "-fno-inline", "-o", out, src] +
       ["-L" + os.path.dirname(l) for l in libs] +
       ["-l:" + os.path.basename(l) for l in libs] + ["-Wl,-rpath," + rpath])


def build_id_of(path):
    out = sh(["readelf", "-n", path]).stdout
    return out.split("Build ID:")[1].split()[0]


def loaded_end(path):
    """End of the file bytes PT_LOAD segments map (ELF64 LE)."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    end = 0
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                 phoff + i * phentsize)
        if p_type == 1:
            end = max(end, p_offset + p_filesz)
    return end, len(data)


def make_root(d):
    """A container-like root: the host's libraries, loader and tools bound in read-only, its
    own /app, /usr/lib/debug, /run and /proc."""
    r = os.path.join(d, "root")
    for sub in ("app", "proc", ".old", "run", "usr/bin", "usr/lib/x86_64-linux-gnu", "usr/lib64",
                "usr/lib/debug"):
        os.makedirs(os.path.join(r, sub), exist_ok=True)
    os.symlink("usr/lib", os.path.join(r, "lib"))
    os.symlink("usr/lib64", os.path.join(r, "lib64"))
    os.symlink("usr/bin", os.path.join(r, "bin"))
    return r


ENTER = r"""
set -e
R=$1; shift
mount --make-rprivate /
mount --bind "$R" "$R"
mount --rbind -o ro /usr/lib/x86_64-linux-gnu "$R/usr/lib/x86_64-linux-gnu"
mount --rbind -o ro /usr/lib64 "$R/usr/lib64"
mount --rbind -o ro /usr/bin "$R/usr/bin"
mount -t proc proc "$R/proc"
cd "$R"
pivot_root . .old
cd /
umount -l /.old
exec "$@"
"""


class Proc:
    """A workload process; in_root: started in a new mount namespace whose root is that dir."""

    def __init__(self, argv, in_root=None):
        if in_root:
            argv = ["unshare", "-m", "sh", "-c", ENTER, "enter", in_root] + argv
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            self.p.kill()
            raise AssertionError("workload did not start: %r %s" % (line, self.p.stderr.read()))
        self.pid = self.p.pid  # unshare and sh exec: the same process

    def wait(self, timeout=60):
        return self.p.wait(timeout=timeout)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.p.stdout.close()
        self.p.stderr.close()


def record(out, pids=None, cmd=None, secs=4, caps=None, timeout=90):
    argv = [MLPROF, "record", "-q", "--no-memory", "--cuda", "none", "-o", out]
    if pids:
        argv += ["-p", ",".join(str(p) for p in pids), "-d", str(secs)]
    if cmd:
        argv += ["--"] + cmd
    if caps:
        argv = ["setpriv"] + caps + argv
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError("mlprof record blocked: no exit within %d s" % timeout)
    if cp.returncode != 0:
        raise AssertionError("mlprof record failed (rc %d): %s" % (cp.returncode, cp.stderr))
    return cp


def profile(path):
    """[(frame names, samples, labels)] of a pprof file."""
    return stacks_of(path)[1]


def names_of(stacks, comm=None):
    """{frame name: samples}, optionally of comm's stacks only."""
    out = {}
    for frames, n, labels in stacks:
        if comm and labels.get("process_name") != comm:
            continue
        for fr in set(frames):
            out[fr] = out.get(fr, 0) + n
    return out


def deployed_caps_work(test):
    if not shutil.which("setpriv"):
        test.skipTest("setpriv missing")


class UntrustedFiles(unittest.TestCase):
    def setUp(self):
        need_root(self)
        if not CC or not shutil.which("unshare") or not shutil.which("readelf"):
            self.skipTest("needs gcc, unshare and readelf")
        self.dir = tmpdir()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()

    def start(self, argv, in_root=None):
        p = Proc(argv, in_root)
        self.procs.append(p)
        return p

    def test_truncated_while_mapped(self):
        """A library mlprof has mapped is cut short (its .symtab, section names and section
        headers gone); then the process runs into it and a new process maps the truncated
        file. mlprof reads the cut part (SIGBUS before the fix), survives and names the
        exported function from what is left (.dynsym)."""
        d = self.dir
        lib = os.path.join(d, "libtrunc.so")
        build_lib(d, lib, "trunc_spin", pad=True)
        app = os.path.join(d, "trapp")
        build_app(d, app, ["trunc_spin"], [lib], d)
        end, size = loaded_end(lib)
        cut = (end + 4095) // 4096 * 4096
        self.assertGreater(size - cut, 3 * 4096, "symbol tables must lie pages past the cut")
        out = os.path.join(d, "t.pb.gz")
        # A spins in its executable (mlprof opens the library for CUDA detection then),
        # the library is truncated, then A and a new process B run in it.
        script = ('"$0" 3 usr1 & a=$!; sleep 1.5; truncate -s %d "$1"; sync; '
                  'kill -USR1 $a; "$0" 2.5; wait $a' % cut)
        argv = [MLPROF, "record", "-q", "--no-memory", "--cuda", "launches", "-o", out,
                "--", "sh", "-c", script, app, lib]
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=90)
        self.assertEqual(os.path.getsize(lib), cut)
        self.assertEqual(cp.returncode, 0, "mlprof died (rc %d): %s" % (cp.returncode,
                                                                        cp.stderr))
        names = names_of(profile(out))
        self.assertGreater(names.get("trunc_spin", 0), 20, names)
        self.assertIn("main", names)
        self.assertTrue(any(n.startswith("main_spin") for n in names), names)

    def test_container_fifo_and_symlink_escape(self):
        """In a container-like root, one library path is overmounted by a FIFO and another by
        a symlink leading out of the root to a host library with other names. With the
        deployed capabilities (no map_files) mlprof neither blocks nor names frames from the
        host file; an untouched library in the same root is still named."""
        deployed_caps_work(self)
        d = self.dir
        r = make_root(d)
        for name, fn in (("libok.so", "ok_spin"), ("libfifo.so", "fifo_spin"),
                         ("libesc.so", "esc_spin")):
            build_lib(d, os.path.join(r, "app", name), fn)
        # the host file the symlink escapes to: same layout, other names
        host_lib = os.path.join(d, "host_secret.so")
        build_lib(d, host_lib, "host_escaped", inner="host_escaped_inner")
        app = os.path.join(r, "app", "ctrapp")
        build_app(d, app, ["ok_spin", "fifo_spin", "esc_spin"],
                  [os.path.join(r, "app", n) for n in ("libok.so", "libfifo.so", "libesc.so")],
                  "/app")
        p = self.start(["/app/ctrapp", "30"], in_root=r)
        # Inside the process's mount namespace, cover /app with a tmpfs where the library
        # paths are now a FIFO and an absolute symlink to the host file (escaping the root
        # when resolved from the host); libok.so and ctrapp are binds of the real files.
        escape = "/.." * 8 + host_lib
        sh(["nsenter", "-t", str(p.pid), "-m", "sh", "-c",
            'mkdir -p /run/keep && mount --bind /app /run/keep && '
            'mount -t tmpfs none /app && touch /app/libok.so /app/ctrapp && '
            'mount --bind /run/keep/libok.so /app/libok.so && '
            'mount --bind /run/keep/ctrapp /app/ctrapp && '
            'mkfifo /app/libfifo.so && ln -s "$0" /app/libesc.so', escape])
        self.assertTrue(os.path.islink("/proc/%d/root/app/libesc.so" % p.pid))
        out = os.path.join(d, "c.pb.gz")
        record(out, pids=[p.pid], secs=3, caps=DEPLOYED_CAPS, timeout=60)
        stacks = profile(out)
        names = names_of(stacks)
        self.assertGreater(names.get("ok_spin", 0), 10, names)
        # the untouched files unwind and name through the root: ok_spin's stacks reach main
        self.assertTrue(any(f[:3] == ["inner_static", "ok_spin", "main"] for f, _, _ in stacks),
                        stacks)
        # the FIFO and the escaping symlink are not opened: those frames keep only an address
        self.assertTrue(any(n.startswith("libfifo.so+0x") for n in names), names)
        self.assertTrue(any(n.startswith("libesc.so+0x") for n in names), names)
        for bad in ("host_escaped", "host_escaped_inner", "fifo_spin", "esc_spin"):
            self.assertNotIn(bad, names)

    def _deleted_replaced(self, caps):
        d = self.dir
        lib = os.path.join(d, "libdel.so")
        build_lib(d, lib, "orig_spin", inner="orig_inner")
        app = os.path.join(d, "delapp")
        build_app(d, app, ["orig_spin"], [lib], d)
        p = self.start([app, "30"])
        # delete the mapped library and put a different one (same layout) at its path
        os.unlink(lib)
        build_lib(d, lib, "repl_spin", inner="repl_inner")
        with open("/proc/%d/maps" % p.pid) as f:
            self.assertIn(lib + " (deleted)", f.read())
        out = os.path.join(d, "d.pb.gz")
        record(out, pids=[p.pid], secs=3, caps=caps)
        names = names_of(profile(out))
        self.assertNotIn("repl_spin", names)
        self.assertNotIn("repl_inner", names)
        return names

    def test_deleted_replaced_root(self):
        """Full root: the deleted mapping is read through map_files, names come from it."""
        names = self._deleted_replaced(None)
        self.assertIn("main", names)
        self.assertGreater(names.get("orig_spin", 0), 10, names)
        self.assertGreater(names.get("orig_inner", 0), 10, names)

    def test_deleted_replaced_deployed_caps(self):
        """Deployed capabilities (no map_files): the deleted mapping is skipped, never named
        from the file that now sits at its path."""
        deployed_caps_work(self)
        names = self._deleted_replaced(DEPLOYED_CAPS)
        self.assertNotIn("orig_spin", names)
        self.assertTrue(any(n.startswith(self.dir + "/libdel.so (deleted)+0x") or
                            n.startswith("libdel.so (deleted)+0x") for n in names), names)

    def test_no_poisoning_across_roots(self):
        """A container's library forges the build id of a host library (same layout, other
        names), and plants a debug file for a second host library's build id in its root.
        The container's process runs first, so its tables would be built first; the host
        process's frames keep their own names."""
        d = self.dir
        r = make_root(d)
        bid = "5eed" * 10
        host_lib = os.path.join(d, "libpoison.so")
        ctr_lib = os.path.join(r, "app", "libpoison.so")
        build_lib(d, host_lib, "host_fn_aaaa", inner="host_in_aaaa", build_id=bid)
        build_lib(d, ctr_lib, "evil_fn_bbbb", inner="evil_in_bbbb", build_id=bid)
        self.assertEqual(build_id_of(host_lib), build_id_of(ctr_lib))
        # second library: stripped (its static function has no name), identical in both
        # roots; the container plants a debug file naming that function
        dbid = "d0d0" * 10
        host_dbg = os.path.join(d, "libdbg.so")
        build_lib(d, host_dbg, "dbg_spin", inner="quiet_inner", build_id=dbid)
        full = os.path.join(d, "libdbg_evil_full.so")
        build_lib(d, full, "dbg_spin", inner="evil_planted", build_id=dbid)
        sh(["strip", "--strip-all", host_dbg])
        shutil.copy(host_dbg, os.path.join(r, "app", "libdbg.so"))
        ddir = os.path.join(r, "usr/lib/debug/.build-id", dbid[:2])
        os.makedirs(ddir)
        sh(["objcopy", "--only-keep-debug", full, os.path.join(ddir, dbid[2:] + ".debug")])

        ctr_app = os.path.join(r, "app", "ctrpois")
        build_app(d, ctr_app, ["evil_fn_bbbb", "dbg_spin"],
                  [ctr_lib, os.path.join(r, "app", "libdbg.so")], "/app")
        host_app = os.path.join(d, "hostpois")
        build_app(d, host_app, ["host_fn_aaaa", "dbg_spin"], [host_lib, host_dbg], d)
        ctr = self.start(["/app/ctrpois", "30"], in_root=r)
        host = self.start([host_app, "30", "usr1"])
        out = os.path.join(d, "p.pb.gz")
        # the host process enters the libraries 1.5 s into the recording
        timer = subprocess.Popen(["sh", "-c", "sleep 1.5; kill -USR1 %d" % host.pid])
        record(out, pids=[ctr.pid, host.pid], secs=4)
        timer.wait()
        stacks = profile(out)
        host_names = names_of(stacks, "hostpois")
        ctr_names = names_of(stacks, "ctrpois")
        self.assertGreater(ctr_names.get("evil_fn_bbbb", 0), 10, ctr_names)
        self.assertGreater(host_names.get("host_fn_aaaa", 0), 10, host_names)
        self.assertGreater(host_names.get("dbg_spin", 0), 10, host_names)
        for bad in ("evil_fn_bbbb", "evil_in_bbbb", "evil_planted"):
            self.assertNotIn(bad, host_names)
        self.assertNotIn("host_fn_aaaa", ctr_names)
        # the planted debug file is not trusted for the container's own frames either
        self.assertNotIn("evil_planted", ctr_names)


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    if not r.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if r.testsRun and len(r.skipped) == r.testsRun else 0)
