# SPDX-License-Identifier: Apache-2.0
# Shell helpers shared by the bench scripts (sourced, not run).

# cpu_ns PID: CPU time (ns, from schedstat) of the process's live threads (0 when no PID,
# nan when it is gone)
cpu_ns() {
	local sum=0 t ns rest
	[ -n "$1" ] || { echo 0; return; }
	[ -d /proc/"$1"/task ] || { echo nan; return; }
	for t in /proc/"$1"/task/*/schedstat; do
		read -r ns rest 2>/dev/null <"$t" || continue
		sum=$((sum + ns))
	done
	echo $sum
}

# bpfstats_py: prints the common start of a bench's bpfstats.py, a Python helper on BPF
# run-time statistics, which goes on with its own part (which pid, when to read): defines
#   bpf(cmd, attr): the bpf(2) syscall;
#   info(fd): (name, run_time_ns, run_cnt) of a program;
#   prog_fd(pid, name, end, step): an fd on the program NAME that process PID loaded (so its
#     counters outlive PID), looked for every STEP s until time END or until PID exits (then
#     the helper exits: "bpfstats: no NAME program in pid PID");
#   wait_gone(pid): returns once process PID has exited;
# and enables the statistics (BPF_ENABLE_STATS, held by an fd: off again when the helper
# exits).
bpfstats_py() {
	cat <<'PY'
import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(321, cmd, buf, len(attr))  # __NR_bpf on x86-64
    if r < 0:
        raise OSError(ctypes.get_errno(), "bpf cmd %d" % cmd)
    return r
def info(fd):  # BPF_OBJ_GET_INFO_BY_FD; struct bpf_prog_info: name @64, run_time_ns @192
    ib = ctypes.create_string_buffer(256)
    bpf(15, struct.pack("IIQ", fd, 256, ctypes.addressof(ib)))
    return (ib.raw[64:80].split(b"\0")[0].decode(),) + struct.unpack_from("QQ", ib.raw, 192)
def prog_fd(pid, name, end, step):
    fd = None
    while fd is None and time.time() < end and os.path.exists("/proc/%d" % pid):
        try:
            for f in os.listdir("/proc/%d/fdinfo" % pid):
                try:
                    txt = open("/proc/%d/fdinfo/%s" % (pid, f)).read()
                except OSError:
                    continue
                for l in txt.splitlines():
                    if l.startswith("prog_id:"):
                        pfd = bpf(13, struct.pack("III", int(l.split()[1]), 0, 0))
                        if info(pfd)[0] == name:
                            fd = pfd
                        else:
                            os.close(pfd)
        except OSError:
            pass
        time.sleep(step)
    if fd is None:
        sys.exit("bpfstats: no %s program in pid %d" % (name, pid))
    return fd
def wait_gone(pid):
    while os.path.exists("/proc/%d" % pid):
        time.sleep(0.1)
stats = bpf(32, struct.pack("I", 0))  # BPF_ENABLE_STATS(BPF_STATS_RUN_TIME)
PY
}

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
# quiet [NAME]: waits (up to QUIET_WAIT s, default 10) until the host used < 0.1 CPU over
# 1 s, so that runs do not overlap with other work; the CPU of other processes during each
# run is reported anyway.
quiet() {
	local t0=$SECONDS b0 b1
	while [ $((SECONDS - t0)) -lt "${QUIET_WAIT:-10}" ]; do
		b0=$(busy); sleep 1; b1=$(busy)
		[ $((b1 - b0)) -lt $(($(getconf CLK_TCK) / 10)) ] && return 0
	done
	echo "${1:-bench}: host still busy after ${QUIET_WAIT:-10} s; running anyway" >&2
}
