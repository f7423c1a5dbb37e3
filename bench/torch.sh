#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Side-by-side benchmark of mlprof and its peers on a one-thread PyPI torch CPU training
# loop (bench/torchloop.py: small MLP, AdamW, torch.set_num_threads(1), denormals flushed).
# Run as root on an otherwise idle machine. One profiler at a time, each on a fresh loop:
#   base1   unprofiled (before)
#   record  mlprof record -F 99 -p PID -d DUR (defaults otherwise)
#   agent   mlprof agent with its defaults (whole host, 19 Hz), local --output-dir, no backend
#   otel    OpenTelemetry eBPF profiler (whole host, -samples-per-second 20 -off-cpu-threshold
#           0 -send-error-frames) sending OTLP/gRPC to bench/otlp-sink (a minimal receiver)
#   pyspy   py-spy record --native -r 99 -d DUR -p PID -f raw
#   perf    perf record -e cpu-clock -F 99 --call-graph dwarf -N -p PID -- sleep DUR
#           (then perf script --no-inline: its post-processing CPU is reported apart)
#   base2   unprofiled (after)
# Each run: start the loop, wait until it has warmed up (2 s of steps after import), then
#  - record, pyspy, perf: the window is the DUR seconds from the profiler's start (each
#    should stop by itself after DUR); the loop keeps running until the profiler has exited
#    (mlprof reads Python code objects from the live process as it handles samples), but at
#    most LOOP_GRACE s past the window: today's mlprof stays inside its ring-buffer poll
#    while samples arrive faster than it handles them, so it only stops once the loop does
#    (its samples are then counted against the time it sampled: the pprof's duration, or
#    until the loop stopped);
#  - agent, otel (daemons): start the daemon, let it settle SETTLE s (the OTel profiler loads
#    its BPF and scans every executable for ~15 s), then the window is the next DUR s; the
#    daemon gets SIGINT at the window's end (otel: after its next report, so the window's
#    samples are delivered; the loop again runs at most LOOP_GRACE s more) and only the
#    window's samples are counted (otel: by the samples' timestamps; agent: each 15 s
#    profile weighted by its overlap with the window);
#  - base1/base2: the DUR s right after the warm-up.
# The loop prints its step count 4 times a second, so steps/s is measured over the window.
# A helper polls every 0.5 s the profiler's utime+stime and VmHWM/RssAnon (/proc/PID/stat,
# status), the loop's CPU and the host's busy time (/proc/stat: the CPU of other processes
# during the window is reported, as noise).
# Reports, as a Markdown table with ratios to the unprofiled runs (mean of base1, base2):
# the loop's steps/s (and steps per CPU-second of the loop, which other processes on a
# shared host disturb less, but which does not see py-spy's pauses), the profiler's CPU
# (in the window as % of a core; from the window's start to its exit; per sample kept),
# peak and anonymous RSS, samples kept vs expected
# (frequency x DUR), samples whose stack carries the loop's Python chain (a Python frame
# train_step in torchloop.py; and the whole chain train_step <- main <- <module>), and
# stacks cut short. A profiler that is missing is reported as SKIPPED with why.
# Usage: bench/torch.sh [DUR]   (seconds per window, default 30; about 11 min in all with
#   today's mlprof, which handles its ring buffer for minutes after the window)
# Environment: MLPROF (build/mlprof), TORCH_PY (python of a venv with PyPI torch, default
#   ~/.cache/mlprof/torch-venv/bin/python), OTEL_PROFILER_BIN (default
#   ~/.cache/mlprof/otel/ebpf-profiler; bench/otel-profiler.sh builds it), OTEL_SRC (its
#   source, for the names of its error codes; default ~/.cache/mlprof/otel-src), OTEL_ARGS
#   (extra flags), GO (go binary; builds bench/otlp-sink into ~/.cache/mlprof/otel),
#   PYSPY (default: PATH, then the torch venv, then ~/.cache/mlprof/pyspy-venv), PERF
#   (default perf on PATH), PROFILERS (subset of "record agent otel pyspy perf"), SETTLE
#   (20), PROF_TIMEOUT (s a profiler may take to exit after the window, default 600; then
#   SIGINT, then SIGKILL KILL_GRACE (120) s later, and the run is marked timed out; a
#   profiler killed so writes nothing), LOOP_GRACE (s the loop keeps running after the
#   window, or after a daemon's SIGINT, while the profiler has not exited; default 30),
#   OTLP_PORT (4317), AGENT_PORT (metrics port of the agent, 9751), QUIET_WAIT (s to wait
#   for an idle host before each run, default 30), NICE (niceness of the loop and the
#   profilers, and of this session's autogroup while the script runs; default -20).
# Each profiler's own output, logs and the monitor's readings stay in the printed directory.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
DUR=${1:-30}
MLPROF=${MLPROF:-build/mlprof}
TORCH_PY=${TORCH_PY:-$HOME/.cache/mlprof/torch-venv/bin/python}
OTEL_PROFILER_BIN=${OTEL_PROFILER_BIN:-$HOME/.cache/mlprof/otel/ebpf-profiler}
OTEL_SRC=${OTEL_SRC:-$HOME/.cache/mlprof/otel-src}
OTEL_ARGS=${OTEL_ARGS:-}
PROFILERS=${PROFILERS:-record agent otel pyspy perf}
SETTLE=${SETTLE:-20}
PROF_TIMEOUT=${PROF_TIMEOUT:-600}
LOOP_GRACE=${LOOP_GRACE:-30}
OTLP_PORT=${OTLP_PORT:-4317}
AGENT_PORT=${AGENT_PORT:-9751}
NICE=${NICE:--20}
WARM=2
OUT=$(mktemp -d /tmp/mlprof-torchbench.XXXXXX)
"$TORCH_PY" -c 'import torch' 2>/dev/null ||
	{ echo "bench/torch.sh: $TORCH_PY cannot import torch (set TORCH_PY)"; exit 1; }
echo "bench/torch.sh: outputs in $OUT" >&2

# Every process this script starts, for the exit trap (each killed by its own pid).
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	sleep 0.5
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	[ -z "$AG0" ] || echo "$AG0" >/proc/$$/autogroup 2>/dev/null || true
}
trap cleanup EXIT
# With autogroup scheduling every session shares the CPUs equally whatever its processes'
# niceness: give this session's autogroup the niceness NICE too (restored at exit), so that
# builds in other sessions take little from the loop and its profiler.
AG0=
if [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
	AG0=$(awk '{print $NF}' /proc/$$/autogroup 2>/dev/null || true)
	echo "$NICE" >/proc/$$/autogroup 2>/dev/null ||
		{ echo "bench/torch.sh: cannot set this session's autogroup niceness" >&2; AG0=; }
fi

# skip CONFIG WHY: the configuration is not run; the table says why.
skip() {
	mkdir -p "$OUT/$1"
	echo "$2" >"$OUT/$1/skipped"
	echo "bench/torch.sh: $1 SKIPPED: $2" >&2
}

# Which profilers can run here (each missing one is reported, never left out silently).
declare -A WHY=()
if [ ! -x "$MLPROF" ]; then
	WHY[record]="$MLPROF not built (scripts/build.sh; or set MLPROF)"
	WHY[agent]=${WHY[record]}
fi
if [ ! -x "$OTEL_PROFILER_BIN" ]; then
	WHY[otel]="no OpenTelemetry eBPF profiler at $OTEL_PROFILER_BIN"
	WHY[otel]+=" (bench/otel-profiler.sh; or set OTEL_PROFILER_BIN)"
else
	GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
	SINK=$HOME/.cache/mlprof/otel/otlp-sink
	if [ ! -x "$SINK" ] || [ -n "$(find bench/otlp-sink -newer "$SINK" -type f)" ]; then
		mkdir -p "$(dirname "$SINK")"
		if ! (cd bench/otlp-sink && "$GO" build -o "$SINK" .) >"$OUT/otlp-sink-build.log" 2>&1; then
			WHY[otel]="cannot build bench/otlp-sink with $GO (see $OUT/otlp-sink-build.log)"
		fi
	fi
fi
if [ -z "${PYSPY:-}" ]; then
	for p in "$(command -v py-spy || true)" "$(dirname "$TORCH_PY")/py-spy" \
		"$HOME/.cache/mlprof/pyspy-venv/bin/py-spy"; do
		[ -n "$p" ] && [ -x "$p" ] && { PYSPY=$p; break; }
	done
fi
[ -n "${PYSPY:-}" ] && "$PYSPY" --version >/dev/null 2>&1 ||
	WHY[pyspy]="py-spy not found (pip install py-spy into $(dirname "$TORCH_PY")/..; or set PYSPY)"
PERF=${PERF:-$(command -v perf || true)}
[ -n "$PERF" ] && "$PERF" --version >/dev/null 2>&1 ||
	WHY[perf]="perf not found (apt-get install linux-perf; or set PERF)"

# Per-run monitor (at NICE too: at a lower priority the loop and the profiler starve it):
# polls every 0.5 s, until the profiler exits (or MAX_S), one line
#   UNIX_TIME PROFILER_TICKS VMHWM_KB RSSANON_KB LOOP_TICKS HOST_BUSY_TICKS
# (ticks: utime+stime of the process's threads, not its children; host busy: /proc/stat).
cat >"$OUT/monitor.py" <<'PY'
import os, sys, time
prof, loop, out, max_s = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
def ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])
def mem(pid):
    hwm = anon = 0
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmHWM:"):
                hwm = int(l.split()[1])
            elif l.startswith("RssAnon:"):
                anon = int(l.split()[1])
    return hwm, anon
def busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
end = time.time() + max_s
with open(out, "w", buffering=1) as f:
    while time.time() < end:
        try:
            lt = ticks(loop)
        except (OSError, IndexError):
            lt = -1
        try:
            pt, (hwm, anon) = (ticks(prof), mem(prof)) if prof else (0, (0, 0))
        except (OSError, IndexError):
            break  # the profiler has exited: its last reading stays
        f.write("%.3f %d %d %d %d %d\n" % (time.time(), pt, hwm, anon, lt, busy()))
        if lt < 0 and not prof:
            break
        time.sleep(0.5)
PY

# quiet (bench/lib.sh) waits up to QUIET_WAIT (here 30 s by default) for an idle host
QUIET_WAIT=${QUIET_WAIT:-30}

# wait_exit PID LOOP_PID GRACE_S LIMIT_S DIR: waits until profiler PID exits. Past GRACE_S
# the loop is stopped (DIR/t_loop_stop: today's mlprof does not return from its ring-buffer
# poll while samples arrive faster than it handles them, so neither -d nor a signal stops
# it while the loop runs); past LIMIT_S sends SIGINT, KILL_GRACE s later SIGKILL, and marks
# DIR/timed_out. Leaves the exit status in DIR/rc and the time in DIR/t_exit.
wait_exit() {
	local p=$1 end=$((SECONDS + $4)) rc=0 grace=$((SECONDS + $3))
	while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $grace ]; do sleep 0.2; done
	if kill -0 "$p" 2>/dev/null && kill -0 "$2" 2>/dev/null; then
		echo "$EPOCHREALTIME" >"$5/t_loop_stop"
		echo "bench/torch.sh: $(basename "$5") still running: stopping the loop" >&2
		kill -TERM "$2" 2>/dev/null || true
	fi
	while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
	if kill -0 "$p" 2>/dev/null; then
		echo "$4 s" >"$5/timed_out"
		echo "bench/torch.sh: $(basename "$5") still running after $4 s: SIGINT" >&2
		kill -INT "$p" 2>/dev/null || true
		end=$((SECONDS + ${KILL_GRACE:-120}))
		while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
		kill -KILL "$p" 2>/dev/null || true
	fi
	wait "$p" || rc=$?
	echo "$EPOCHREALTIME" >"$5/t_exit"
	echo $rc >"$5/rc"
}

# run CONFIG: one run of the loop under CONFIG; leaves everything in $OUT/CONFIG.
run() {
	local c=$1 d="$OUT/$1" lp pp=0 mp sp t0 t1 i
	mkdir -p "$d"
	quiet bench/torch.sh
	nice -n "$NICE" "$TORCH_PY" bench/torchloop.py $((SETTLE + DUR + PROF_TIMEOUT + 300)) $WARM \
		>"$d/loop.out" 2>"$d/loop.err" &
	lp=$!
	PIDS+=("$lp")
	for i in $(seq 900); do
		grep -q '^ready' "$d/loop.out" 2>/dev/null && break
		kill -0 $lp 2>/dev/null || break
		sleep 0.2
	done
	if ! grep -q '^ready' "$d/loop.out"; then
		echo "bench/torch.sh: $c: the loop did not start (see $d/loop.err)" >&2
		kill $lp 2>/dev/null || true
		echo "the loop did not start" >"$d/failed"
		return
	fi
	echo $lp >"$d/loop_pid"
	echo "bench/torch.sh: $c (loop pid $lp)" >&2
	t0=$EPOCHREALTIME
	case $c in
	base*)
		nice -n "$NICE" python3 "$OUT/monitor.py" 0 $lp "$d/mon.txt" $((DUR + 2)) &
		mp=$!
		PIDS+=("$mp")
		sleep "$DUR"
		;;
	record)
		nice -n "$NICE" "$MLPROF" record -F 99 -p $lp -d "$DUR" -o "$d/ml.pb.gz" >"$d/prof.log" 2>&1 &
		pp=$!
		;;
	pyspy)
		nice -n "$NICE" "$PYSPY" record --native -r 99 -d "$DUR" -p $lp -f raw -o "$d/pyspy.txt" \
			>"$d/prof.log" 2>&1 &
		pp=$!
		;;
	perf)
		nice -n "$NICE" "$PERF" record -e cpu-clock -F 99 --call-graph dwarf -N -p $lp -o "$d/perf.data" \
			-- sleep "$DUR" >"$d/prof.log" 2>&1 &
		pp=$!
		;;
	agent)
		nice -n "$NICE" "$MLPROF" agent --output-dir "$d/out" --spool-dir "$d/spool" \
			--metrics-addr 127.0.0.1:$AGENT_PORT >"$d/prof.log" 2>&1 &
		pp=$!
		;;
	otel)
		nice -n "$NICE" "$SINK" -listen 127.0.0.1:$OTLP_PORT -out "$d/events.tsv" -pid $lp \
			2>"$d/sink.log" &
		sp=$!
		PIDS+=("$sp")
		sleep 0.5
		if ! kill -0 $sp 2>/dev/null; then
			echo "otlp-sink did not start: $(tail -1 "$d/sink.log")" >"$d/failed"
			kill $lp 2>/dev/null || true
			return
		fi
		# shellcheck disable=SC2086 # OTEL_ARGS: extra flags, split on purpose
		nice -n "$NICE" "$OTEL_PROFILER_BIN" -collection-agent 127.0.0.1:$OTLP_PORT -disable-tls \
			-samples-per-second 20 -off-cpu-threshold 0 -send-error-frames $OTEL_ARGS \
			>"$d/prof.log" 2>&1 &
		pp=$!
		;;
	esac
	if [ "$pp" != 0 ]; then
		PIDS+=("$pp")
		echo $pp >"$d/prof_pid"
		nice -n "$NICE" python3 "$OUT/monitor.py" $pp $lp "$d/mon.txt" \
			$((SETTLE + DUR + PROF_TIMEOUT + 120)) &
		mp=$!
		PIDS+=("$mp")
	fi
	case $c in
	agent | otel)
		sleep "$SETTLE"
		[ $c = agent ] && curl -s -m 5 http://127.0.0.1:$AGENT_PORT/metrics >"$d/metrics0.txt" || true
		t0=$EPOCHREALTIME
		sleep "$DUR"
		t1=$EPOCHREALTIME
		if [ $c = agent ]; then
			curl -s -m 5 http://127.0.0.1:$AGENT_PORT/metrics >"$d/metrics1.txt" || true
		else
			# its next report (every 5 s +-20%) carries the window's last samples
			for i in $(seq 75); do
				awk -F'\t' -v t="$t1" '$1 / 1e9 > t { f = 1 } END { exit !f }' \
					"$d/events.tsv" 2>/dev/null && break
				sleep 0.2
			done
		fi
		kill -INT $pp 2>/dev/null || true
		echo "$EPOCHREALTIME" >"$d/t_stop"
		wait_exit $pp $lp "$LOOP_GRACE" "$PROF_TIMEOUT" "$d"
		;;
	base*) t1=$EPOCHREALTIME ;;
	*)
		t1=$(python3 -c "print('%.6f' % ($t0 + $DUR))")
		wait_exit $pp $lp $((DUR + LOOP_GRACE)) $((DUR + PROF_TIMEOUT)) "$d"
		;;
	esac
	echo "$t0 $t1" >"$d/window"
	[ -n "${sp:-}" ] && { kill -TERM $sp 2>/dev/null || true; wait $sp 2>/dev/null || true; }
	kill -TERM $lp 2>/dev/null || true
	wait $lp 2>/dev/null || true
	kill -TERM $mp 2>/dev/null || true
	wait $mp 2>/dev/null || true
	if [ $c = perf ] && [ -s "$d/perf.data" ]; then
		# DWARF unwinding and symbols happen here; --no-inline: addr2line on libtorch_cpu.so
		# would take tens of minutes
		/usr/bin/time -f '%e %U %S' -o "$d/script.time" timeout 600 "$PERF" script --no-inline \
			-F comm,pid,tid,time,ip,sym,dso -i "$d/perf.data" >"$d/perf.txt" 2>"$d/script.err" ||
			echo "bench/torch.sh: perf script failed (see $d/script.err)" >&2
	fi
}

CONFIGS=(base1)
for p in $PROFILERS; do
	case $p in
	record | agent | otel | pyspy | perf) ;;
	*) echo "bench/torch.sh: unknown profiler $p in PROFILERS"; exit 1 ;;
	esac
	if [ -n "${WHY[$p]:-}" ]; then skip "$p" "${WHY[$p]}"; else CONFIGS+=("$p"); fi
done
CONFIGS+=(base2)
for c in "${CONFIGS[@]}"; do run "$c"; done

{
	echo "torch $("$TORCH_PY" -c 'import torch, sys
print(torch.__version__, "python", sys.version.split()[0])')"
	[ -x "$MLPROF" ] && echo "mlprof $("$MLPROF" version 2>&1 | head -1) ($MLPROF)"
	[ -x "$OTEL_PROFILER_BIN" ] &&
		echo "otel $("$OTEL_PROFILER_BIN" -version 2>&1 | head -1) ($OTEL_PROFILER_BIN)"
	[ -n "${PYSPY:-}" ] && echo "py-spy $("$PYSPY" --version 2>&1) ($PYSPY)"
	[ -n "$PERF" ] && echo "perf $("$PERF" --version 2>&1) ($PERF)"
} >"$OUT/versions.txt" 2>/dev/null || true

python3 - "$OUT" "$DUR" "$SETTLE" "$OTEL_SRC" "$(getconf CLK_TCK)" "$(nproc)" "$NICE" \
	"$LOOP_GRACE" <<'PY'
import glob, gzip, json, os, re, sys
sys.path.insert(0, "tests/integration")
sys.path.insert(0, "bench")
from pyspy_raw import load_pyspy as load_pyspy_raw  # noqa: E402
import pprof_reader

out, dur, settle, otel_src, clk, ncpu, nice, grace = sys.argv[1], float(sys.argv[2]), \
    float(sys.argv[3]), sys.argv[4], float(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8]
CFG = ["base1", "record", "agent", "otel", "pyspy", "perf", "base2"]
HDR = {"base1": "unprofiled (before)", "record": "mlprof record -F 99",
       "agent": "mlprof agent (19 Hz)", "otel": "OTel eBPF profiler (20 Hz)",
       "pyspy": "py-spy --native -r 99", "perf": "perf --call-graph dwarf -F 99",
       "base2": "unprofiled (after)"}
FREQ = {"record": 99, "agent": 19, "otel": 20, "pyspy": 99, "perf": 99}
ERRS = {}
try:
    ERRS = {e["id"]: e["name"] for e in
            json.load(open(os.path.join(otel_src, "tools/errors-codegen/errors.json")))}
except (OSError, ValueError):
    pass


def read(d, name, default=None):
    try:
        return open(os.path.join(d, name)).read().strip()
    except OSError:
        return default


def interp(pts, t):
    """Linear interpolation of [(t, v)] at t (clamped at the ends)."""
    if not pts:
        return float("nan")
    if t <= pts[0][0]:
        return pts[0][1]
    for (a, x), (b, y) in zip(pts, pts[1:]):
        if a <= t <= b:
            return x + (y - x) * (t - a) / (b - a) if b > a else y
    return pts[-1][1]


# Stacks as [(frames leaf first as (name, file basename, is_python), count)] per reader;
# cut(frames) says whether a stack was cut short, in that profiler's own terms.
def load_pprof(paths, pid, t0, t1):
    """mlprof pprof files; for windowed files (the agent's) each file's samples are weighted
    by the share of its time span inside [t0, t1]. Returns (loop stacks, samples of every
    process in the window)."""
    res, every = [], 0.0
    for path in paths:
        p = pprof_reader.load(path)
        if p.type_names()[:1] != [("samples", "count")]:
            continue  # memory, off-CPU, CUDA profiles
        w = 1.0
        if t0 is not None and p.duration_nanos > 0:
            a, b = p.time_nanos / 1e9, (p.time_nanos + p.duration_nanos) / 1e9
            w = max(0.0, min(b, t1) - max(a, t0)) / (b - a)
        if w <= 0:
            continue
        for fr, vals, lab in p.detailed_stacks():
            every += vals[0] * w
            if lab.get("pid") == pid:
                res.append(([(f["name"], os.path.basename(f["file"]), f["file"].endswith(".py"))
                             for f in fr], vals[0] * w))
    return res, every


def load_otel(path, pid, t0, t1):
    res, every, errs = [], 0, {}
    for l in open(path):
        ts, p, _, stack = l.rstrip("\n").split("\t", 3)
        if not t0 <= int(ts) / 1e9 <= t1:
            continue
        every += 1
        if int(p) != pid:
            continue
        frames = []
        for f in stack.split(";") if stack else []:
            kind, _, rest = f.partition(":")
            if kind == "python":
                name, _, loc = rest.rpartition("@")
                frames.append((name, os.path.basename(loc.rsplit(":", 1)[0]), True))
            else:
                frames.append((f, kind, False))
        if frames and frames[-1][1] in ("error", "abort-marker"):
            code = int(frames[-1][0].split(":")[1])
            errs[code] = errs.get(code, 0) + 1
        res.append((frames, 1))
    return res, every, errs


def load_perf(path):
    res, cur = [], None
    for l in open(path, errors="replace"):
        if not l.strip():
            continue
        if not l[0].isspace():
            cur = []
            res.append((cur, 1))
            continue
        parts = l.strip().split(" ", 1)
        if cur is not None and len(parts) == 2:
            m = re.match(r"^(.*) \(([^()]*)\)$", parts[1])
            name, dso = (m.group(1), m.group(2)) if m else (parts[1], "")
            cur.append((name, os.path.basename(dso), False))
    return res


def classify(stacks, cut):
    """(kept, with train_step, with the whole chain, cut short)"""
    kept = ts = chain = short = 0
    for fr, n in stacks:
        kept += n
        py = [(f[0], f[1]) for f in fr if f[2]]
        if any(x == ("train_step", "torchloop.py") for x in py):
            ts += n
            if py[-3:] == [("train_step", "torchloop.py"), ("main", "torchloop.py"),
                           ("<module>", "torchloop.py")]:
                chain += n
        if cut(fr):
            short += n
    return kept, ts, chain, short


CUT = {
    "record": lambda fr: any(f[0].startswith("[truncated") for f in fr),
    "agent": lambda fr: any(f[0].startswith("[truncated") for f in fr),
    "otel": lambda fr: bool(fr) and fr[-1][1] in ("error", "abort-marker"),
    "perf": lambda fr: not fr or fr[-1][0] != "_start",
    "pyspy": lambda fr: False,
}
CUTDEF = {
    "record": "a `[truncated: ...]` frame", "agent": "a `[truncated: ...]` frame",
    "otel": "an error frame at the root end (-send-error-frames)",
    "perf": "not ending in `_start`", "pyspy": "(py-spy reports errors instead: see notes)",
}

R = {}
notes = []
for c in CFG:
    d = os.path.join(out, c)
    r = R[c] = {}
    if not os.path.isdir(d):
        continue
    if read(d, "skipped"):
        r["skipped"] = read(d, "skipped")
        continue
    if read(d, "failed") or not read(d, "window"):
        r["skipped"] = "FAILED: " + (read(d, "failed") or "no window (see %s)" % d)
        continue
    t0, t1 = map(float, read(d, "window").split())
    r["win"] = t1 - t0
    pid = int(read(d, "loop_pid"))
    prog = [(float(a), int(b)) for k, a, b in
            (l.split() for l in open(os.path.join(d, "loop.out")) if l.startswith("progress"))]
    r["sps"] = (interp(prog, t1) - interp(prog, t0)) / (t1 - t0)
    mon = [list(map(float, l.split())) for l in open(os.path.join(d, "mon.txt")) if l.strip()]
    col = lambda k: [(m[0], m[k] / clk) for m in mon if k != 4 or m[4] >= 0]
    if not mon or mon[0][0] > t0 + 1.5 or mon[-1][0] < t1 - 1.5:
        notes.append("%s: the monitor's readings do not cover the window: CPU figures are "
                     "off (see %s/mon.txt)" % (c, d))
    loop_cpu = interp(col(4), t1) - interp(col(4), t0)
    host = interp(col(5), t1) - interp(col(5), t0)
    r["loop_cpu"] = loop_cpu / (t1 - t0)
    r["spc"] = (interp(prog, t1) - interp(prog, t0)) / loop_cpu if loop_cpu > 0 else float("nan")
    if c.startswith("base"):
        r["foreign"] = (host - loop_cpu) / (t1 - t0)
        continue
    texit = float(read(d, "t_exit"))
    pc = col(1)
    if c not in ("agent", "otel"):
        pc = [(t0, 0.0)] + pc  # started at the window's start
    cpu_end = pc[-1][1] if pc else float("nan")
    r["cpu_win"] = (interp(pc, t1) - interp(pc, t0)) / (t1 - t0)
    r["cpu_tail"] = cpu_end - interp(pc, t0)  # window start to exit
    r["cpu_start"] = interp(pc, t0) if c in ("agent", "otel") else None
    r["cpu_total"] = cpu_end
    r["wall"] = texit - t0
    r["hwm"] = max((m[2] for m in mon), default=0) / 1024
    r["anon"] = max((m[3] for m in mon), default=0) / 1024
    prof_cpu = interp(pc, t1) - interp(pc, t0)
    r["foreign"] = (host - loop_cpu - prof_cpu) / (t1 - t0)
    r["timed_out"] = read(d, "timed_out")
    r["rc"] = read(d, "rc")
    stop = read(d, "t_stop")  # daemons: when SIGINT was sent
    r["t_stop"] = float(stop) - t1 if stop else None
    lstop = read(d, "t_loop_stop")
    r["loop_stop"] = float(lstop) - t1 if lstop else None
    r["exit_after"] = texit - (float(stop) if stop else t1)
    expect_s = t1 - t0
    log = read(d, "prof.log", "")
    every = None
    try:
        if c == "record":
            st, _ = load_pprof([os.path.join(d, "ml.pb.gz")], pid, None, None)
            # mlprof samples until -d ends or, today, until its poll returns (the loop
            # stopped): expect what the loop ran for in that span
            prof_s = pprof_reader.load(os.path.join(d, "ml.pb.gz")).duration_nanos / 1e9
            expect_s = min(prof_s, float(lstop) - t0) if lstop else prof_s
            r["sampled_s"] = expect_s
            m = re.search(r"mlprof: (\d+) samples in ([0-9.]+) s.*?(\d+) dropped.*?"
                          r"([0-9.]+) us CPU/sample", log)
            if m:
                r["ml_us"] = float(m.group(4))
                notes.append("record: summary line: " + m.group(0))
            for l in log.splitlines():
                if l.startswith("mlprof: python:") or l.startswith("mlprof: code without"):
                    notes.append("record: " + l[:400])
        elif c == "agent":
            st, every = load_pprof(sorted(glob.glob(os.path.join(d, "out", "*.pb.gz"))),
                                   pid, t0, t1)

            def metrics(f):
                m = {}
                for l in (read(d, f, "") or "").splitlines():
                    if l and not l.startswith("#"):
                        k, _, v = l.rpartition(" ")
                        try:
                            m[k] = float(v)
                        except ValueError:
                            pass
                return m
            m0, m1 = metrics("metrics0.txt"), metrics("metrics1.txt")
            keys = [k for k in m1 if re.match(
                r'mlprof_(samples_total|samples_profiled_total|samples_dropped_total|'
                r'bpf_events_total\{event="(samples|ringbuf_full|python_samples)"\})', k)]
            notes.append("agent: /metrics at the window's end (host-wide, since its start; "
                         "change over the window): " + (", ".join(
                             "%s %d (%+d)" % (k, m1[k], m1[k] - m0.get(k, 0)) for k in keys)
                             or "(none scraped)"))
        elif c == "otel":
            st, every, errs = load_otel(os.path.join(d, "events.tsv"), pid, t0, t1)
            tot = sum(errs.values())
            if tot:
                notes.append("otel: loop stacks ending in an error frame: " + ", ".join(
                    "%s %d" % (ERRS.get(k, "error %d" % k), v)
                    for k, v in sorted(errs.items(), key=lambda x: -x[1])))
            notes.append("otel: sink: " + (read(d, "sink.log", "") or "").splitlines()[-1])
        elif c == "pyspy":
            # (name, file, is_python) as the other readers give
            st = [([(name, fl, py) for name, fl, _, py in fr], n)
                  for fr, n in load_pyspy_raw(os.path.join(d, "pyspy.txt"))]
            m = re.search(r"Samples: (\d+) Errors: (\d+)", log)
            if m:
                notes.append("pyspy: " + m.group(0))
        elif c == "perf":
            st = load_perf(os.path.join(d, "perf.txt"))
            st = [(fr, n) for fr, n in st]
            tm = read(d, "script.time")
            if tm:
                e, u, s = map(float, tm.split()[-3:])
                r["post"] = u + s
                r["post_wall"] = e
            m = re.search(r"Captured and wrote .*", log)
            if m:
                notes.append("perf: " + m.group(0))
            lost = re.findall(r".*[Ll]ost.*", log)
            notes += ["perf: " + x for x in lost[:3]]
    except (OSError, ValueError, IndexError) as e:
        r["skipped"] = "FAILED: cannot read its output (%s; see %s)" % (e, d)
        continue
    r["kept"], r["ts"], r["chain"], r["short"] = classify(st, CUT[c])
    r["every"] = every
    r["expected"] = FREQ[c] * expect_s
    n = every if every is not None else r["kept"]
    r["us_per"] = r["cpu_tail"] / n * 1e6 if n else float("nan")

base = [R[c]["sps"] for c in ("base1", "base2") if "sps" in R.get(c, {})]
bsps = sum(base) / len(base) if base else float("nan")
bspc = [R[c]["spc"] for c in ("base1", "base2") if "spc" in R.get(c, {})]
bspc = sum(bspc) / len(bspc) if bspc else float("nan")
cols = [c for c in CFG if os.path.isdir(os.path.join(out, c))]


def cell(c, f):
    r = R[c]
    if "skipped" in r:
        return "SKIPPED" if f is first else "-"
    try:
        return f(r)
    except (KeyError, TypeError, ZeroDivisionError):
        return "-"


def first(r):
    t = ["ran"]
    if r.get("exit_after") is not None:
        t.append("exited %.0f s after %s" % (r["exit_after"], "its SIGINT" if r.get("t_stop")
                                              is not None else "the window"))
    if r.get("loop_stop") is not None:
        t.append("loop stopped %.0f s after the window (profiler still running)" %
                 r["loop_stop"])
    if r.get("timed_out"):
        t.append("timed out after %s: SIGINT, then SIGKILL if needed" % r["timed_out"])
    if r.get("rc") not in (None, "0"):
        t.append("exit status %s" % r["rc"])
    return "; ".join(t)


def pct(a, b):
    return "%.1f%%" % (100.0 * a / b) if b else "-"


ROWS = [
    ("run", first),
    ("window (s)", lambda r: "%.1f" % r["win"]),
    ("loop steps/s in the window (ratio to unprofiled)",
     lambda r: "%.1f (%.3f)" % (r["sps"], r["sps"] / bsps)),
    ("loop steps per CPU-second of the loop (ratio; steadier on a shared host, blind to "
     "pauses)", lambda r: "%.1f (%.3f)" % (r["spc"], r["spc"] / bspc)),
    ("loop's own CPU in the window (% of a core)", lambda r: "%.1f" % (100 * r["loop_cpu"])),
    ("profiler CPU in the window (% of a core)", lambda r: "%.1f" % (100 * r["cpu_win"])),
    ("profiler CPU from the window's start to its exit (s)", lambda r: "%.2f" % r["cpu_tail"]),
    ("... of which after the window (s; draining, flushing)",
     lambda r: "%.2f" % (r["cpu_tail"] - r["cpu_win"] * r["win"])),
    ("profiler CPU before the window (s; daemons: start-up and SETTLE)",
     lambda r: "%.2f" % r["cpu_start"] if r["cpu_start"] is not None else "-"),
    ("profiler wall time from the window's start to its exit (s)", lambda r: "%.1f" % r["wall"]),
    ("samples kept / expected (frequency x window; record: x the time it sampled the loop)",
     lambda r: "%d / %d (%s)%s" % (round(r["kept"]), round(r["expected"]),
                                   pct(r["kept"], r["expected"]),
                                   " (sampled %.0f s)" % r["sampled_s"]
                                   if "sampled_s" in r else "")),
    ("... all processes' samples in the window (daemons: whole host)",
     lambda r: "%d" % round(r["every"]) if r["every"] is not None else "-"),
    ("profiler CPU per sample (us): window start to exit / samples kept (daemons: all processes')",
     lambda r: "%.0f" % r["us_per"]),
    ("mlprof's own summary: us CPU/sample", lambda r: "%.0f" % r["ml_us"]),
    ("samples with a Python frame `train_step` (torchloop.py), % of kept",
     lambda r: "%d (%s)" % (round(r["ts"]), pct(r["ts"], r["kept"]))),
    ("... with the whole chain `train_step` <- `main` <- `<module>`, % of kept",
     lambda r: "%d (%s)" % (round(r["chain"]), pct(r["chain"], r["kept"]))),
    ("stacks cut short (see notes), % of kept",
     lambda r: "%d (%s)" % (round(r["short"]), pct(r["short"], r["kept"]))),
    ("peak RSS, VmHWM (MB)", lambda r: "%.0f" % r["hwm"]),
    ("peak anonymous RSS, RssAnon (MB)", lambda r: "%.0f" % r["anon"]),
    ("post-processing CPU (s; perf script)",
     lambda r: "%.1f (%.1f s wall)" % (r["post"], r["post_wall"])),
    ("other processes' CPU in the window (% of a core; noise)",
     lambda r: "%.1f" % (100 * r["foreign"])),
]
print()
print("#### bench/torch.sh %g: %g s windows, SETTLE %g s, LOOP_GRACE %s s, NICE %s, %d CPUs" % (
    dur, dur, settle, grace, nice, ncpu))
print()
print("| metric | " + " | ".join(HDR[c] for c in cols) + " |")
print("|---|" + "---|" * len(cols))
for label, f in ROWS:
    print("| %s | %s |" % (label, " | ".join(cell(c, f) for c in cols)))
print()
for c in cols:
    if "skipped" in R[c]:
        print("- %s: SKIPPED: %s" % (c, R[c]["skipped"]))
print("- unprofiled steps/s: %s (mean %.1f)" % (", ".join("%.1f" % x for x in base), bsps))
print("- stacks cut short: " + "; ".join("%s: %s" % (c, CUTDEF[c]) for c in cols if c in CUTDEF))
for n in notes:
    print("- " + n)
print()
print(open(os.path.join(out, "versions.txt")).read().strip())
PY
echo "bench/torch.sh: outputs in $OUT" >&2
