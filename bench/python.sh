#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Python-workload benchmark (run as root on an otherwise idle machine): bench/pywork.py
# (main thread: <module> -> main -> Trainer.epoch -> Trainer.step -> Model.forward -> layer,
# pure-Python arithmetic; "sorter" thread: Sorter.run -> Sorter.sort_batch -> ctypes ->
# libffi -> libc qsort_r -> strcmp, native with the GIL released) runs a fixed amount of
# work alone, under `mlprof record -F 99 --no-python`, `mlprof record -F 99`,
# `py-spy record -r 99 --native` and `py-spy record -r 99 --nonblocking`, REPS times each
# (order rotated per rep), for each interpreter in $PYTHONS. Reports, as Markdown tables:
#  - median wall time of the fixed work and slowdown vs baseline; also a contention-
#    corrected wall time (per thread: elapsed less its run-queue wait from schedstat, plus
#    the profiler's CPU during the run spread over the cores), for shared hosts;
#  - full-chain correctness of every profile against the known chains (Python frames with
#    call-site lines; for native-capable modes also libc/libffi frames and the stack bottom);
#  - mlprof's CPU per sample with and without Python frames (its summary line), the BPF
#    program's run time per sample (one extra run of each mlprof mode with BPF run-time
#    statistics enabled), and each profiler's process CPU.
# Usage: bench/python.sh [REPS]   (default 3; about 3 min per interpreter on an idle host)
# Environment: MLPROF (default build/mlprof), PYTHONS (interpreters, default Debian's
# /usr/bin/python3 and pyenv's 3.12.1 where present), TARGET_S (CPU seconds of work per
# thread, default 8), PYSPY (py-spy binary; default: PATH, else a venv under ~/.cache/mlprof),
# NICE (niceness of the workload and the profilers, default -20; with autogroup scheduling
# it only counts against processes of the same session), QUIET_WAIT (seconds to wait for
# an idle host before each run, default 10; the CPU other processes used during each run
# is reported).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REPS=${1:-3}
MLPROF=${MLPROF:-build/mlprof}
TARGET_S=${TARGET_S:-8}
PYTHONS=${PYTHONS:-/usr/bin/python3 /root/.pyenv/versions/3.12.1/bin/python3}
NICE=${NICE:--20}
OUT=$(mktemp -d /tmp/mlprof-pybench.XXXXXX)
[ -x "$MLPROF" ] || { echo "bench/python.sh: $MLPROF not built (scripts/build.sh)"; exit 1; }

# py-spy from PyPI, in its own venv unless one is on PATH.
if [ -z "${PYSPY:-}" ]; then
	PYSPY=$(command -v py-spy || true)
	VENV=$HOME/.cache/mlprof/pyspy-venv
	if [ -z "$PYSPY" ]; then
		if [ ! -x "$VENV/bin/py-spy" ]; then
			mkdir -p "$(dirname "$VENV")"
			if /usr/bin/python3 -m venv "$VENV" 2>/dev/null; then
				"$VENV/bin/pip" install -q py-spy
			else
				python3 -m pip install -q --break-system-packages py-spy
			fi
		fi
		PYSPY=$(command -v py-spy || echo "$VENV/bin/py-spy")
	fi
fi
"$PYSPY" --version >/dev/null

# BPF run-time statistics of mlprof's sampling program: enables them (BPF_ENABLE_STATS, held
# by an fd: off again when this helper exits), waits for mlprof's pid in PIDFILE, takes an
# fd on the program that process loaded (so its counters outlive mlprof), and prints
# "name run_time_ns run_cnt" after mlprof has exited. Writes READYFILE once stats are on.
{
	bpfstats_py
	cat <<'PY'
pidfile, ready = sys.argv[1], sys.argv[2]
open(ready, "w").close()
end = time.time() + 60
while not os.path.exists(pidfile) and time.time() < end:  # written whole (mv)
    time.sleep(0.01)
pid = int(open(pidfile).read())
fd = prog_fd(pid, "on_cpu_sample", end, 0.01)
wait_gone(pid)
print(*info(fd))
PY
} >"$OUT/bpfstats.py"

# cpu_watch PID FILE: the process's own user+sys CPU ticks (its threads, not its children),
# polled every 0.1 s until it exits; the last reading stays in FILE.
cpu_watch() {
	local st rest
	while read -r st 2>/dev/null </proc/"$1"/stat; do
		rest=${st##*) }
		set -- "$1" "$2" $rest
		echo $((${14} + ${15})) >"$2"
		set -- "$1" "$2"
		sleep 0.1
	done
}

# run CONFIG REP: one fixed-work run; leaves $D/CONFIG.REP.{out,json,log,cpu,stat,pb.gz|txt}
run() {
	local c=$1 i=$2 f="$D/$1.$2" b0 b1 p w
	local wl=("$PY" bench/pywork.py "$EPOCHS" "$SORTS") nc=(nice -n "$NICE")
	echo 0 >"$f.cpu"
	quiet bench/python.sh
	b0=$(busy)
	case $c in
	base) "${nc[@]}" "${wl[@]}" >"$f.out" 2>"$f.log" & ;;
	mlnp) "${nc[@]}" "$MLPROF" record -F 99 --no-python -o "$f.pb.gz" -- "${wl[@]}" \
		>"$f.out" 2>"$f.log" & ;;
	ml) "${nc[@]}" "$MLPROF" record -F 99 -o "$f.pb.gz" -- "${wl[@]}" >"$f.out" 2>"$f.log" & ;;
	psn) "${nc[@]}" "$PYSPY" record -r 99 --native --format raw -o "$f.txt" -- "${wl[@]}" \
		>"$f.out" 2>"$f.log" & ;;
	psnb) "${nc[@]}" "$PYSPY" record -r 99 --nonblocking --format raw -o "$f.txt" -- "${wl[@]}" \
		>"$f.out" 2>"$f.log" & ;;
	esac
	p=$!
	[ "$c" = base ] || { cpu_watch $p "$f.cpu" & }
	w=$!
	wait $p || echo "bench/python.sh: $c run $i exited with $? (see $f.log)" >&2
	wait $w 2>/dev/null || true
	b1=$(busy)
	echo "$b0 $b1 $(getconf CLK_TCK) $(cut -d' ' -f1 /proc/loadavg)" >"$f.stat"
	grep -h '^{"wall_s"' "$f.out" >"$f.json" || true
}

CONFIGS=(base mlnp ml psn psnb)
for PY in $PYTHONS; do
	[ -x "$PY" ] || { echo "bench/python.sh: skipping $PY (not found)"; continue; }
	v=$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	D="$OUT/py$v-$(echo "$PY" | tr / _)"
	mkdir -p "$D"
	echo "$PY" >"$D/python"
	# Calibrate: per-epoch and per-sort CPU seconds (best of two short runs).
	quiet bench/python.sh
	read -r EPOCHS SORTS < <(for k in 1 2; do nice -n "$NICE" "$PY" bench/pywork.py 6 3; done |
		"$PY" -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
e = min(x["main_cpu_s"] for x in r) / 6; s = min(x["sorter_cpu_s"] for x in r) / 3
t = float(sys.argv[1]); print(max(1, round(t / e)), max(1, round(t / s)))' "$TARGET_S")
	echo "$PY: $EPOCHS epochs, $SORTS sorts; outputs in $D" >&2
	echo "$EPOCHS $SORTS" >"$D/work"
	for i in $(seq "$REPS"); do
		for k in "${!CONFIGS[@]}"; do
			run "${CONFIGS[$(((k + i - 1) % ${#CONFIGS[@]}))]}" "$i"
		done
	done
	# BPF program run time per sample: one more run of each mlprof mode with stats enabled.
	for c in mlnp ml; do
		opt=(); [ $c = mlnp ] && opt=(--no-python)
		rm -f "$D/$c.pid" "$D/$c.ready"
		nice -n "$NICE" python3 "$OUT/bpfstats.py" "$D/$c.pid" "$D/$c.ready" >"$D/$c.bpf" &
		s=$!
		while [ ! -e "$D/$c.ready" ] && kill -0 $s 2>/dev/null; do sleep 0.05; done
		quiet bench/python.sh
		nice -n "$NICE" "$MLPROF" record -F 99 "${opt[@]}" -o "$D/$c.bpf.pb.gz" -- \
			"$PY" bench/pywork.py "$EPOCHS" "$SORTS" >"$D/$c.bpf.out" 2>"$D/$c.bpf.log" &
		m=$!
		echo $m >"$D/$c.pid.tmp" && mv "$D/$c.pid.tmp" "$D/$c.pid"
		wait $m || true
		wait $s || true
	done
done

python3 - "$OUT" "$REPS" "$MLPROF" "$PYSPY" <<'PY'
import ast, glob, json, os, re, statistics, sys
sys.path.insert(0, "tests/integration")
sys.path.insert(0, "bench")
from pyspy_raw import load_pyspy  # noqa: E402
import pprof_reader
out, reps, mlprof, pyspy = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
CFG = ["base", "mlnp", "ml", "psn", "psnb"]
NCPU = os.cpu_count()
HDR = {"base": "baseline", "mlnp": "mlprof record -F 99 --no-python", "ml": "mlprof record -F 99",
       "psn": "py-spy record -r 99 --native", "psnb": "py-spy record -r 99 --nonblocking"}

# Expected chains from bench/pywork.py: call-site lines are the "# CALL:<callee>" markers.
src = open("bench/pywork.py").read()
call = {}
for n, l in enumerate(src.splitlines(), 1):
    m = re.search(r"# CALL:(\S+)", l)
    if m:
        call[m.group(1)] = n
fn = [x for x in ast.walk(ast.parse(src))
      if isinstance(x, ast.FunctionDef) and x.name == "layer"][0]
LAYER = range(fn.lineno, fn.end_lineno + 1)  # the def line too: RESUME at entry
MAIN = [("layer", "pywork.py", LAYER), ("Model.forward", "pywork.py", [call["layer"]]),
        ("Trainer.step", "pywork.py", [call["Model.forward"]]),
        ("Trainer.epoch", "pywork.py", [call["Trainer.step"]]),
        ("main", "pywork.py", [call["Trainer.epoch"]]), ("<module>", "pywork.py", [call["main"]])]
SORT_TAIL = [("Sorter.run", "pywork.py", [call["Sorter.sort_batch"]]),
             ("Thread._bootstrap_inner", "threading.py", None),
             ("Thread._bootstrap", "threading.py", None)]
SORT_PY = [("Sorter.sort_batch", "pywork.py", [call["qsort"] - 1, call["qsort"]])] + SORT_TAIL
SORT_Q = [("Sorter.sort_batch", "pywork.py", [call["qsort"]])] + SORT_TAIL


def py_match(frames, exp):
    py = [f for f in frames if f[3]]
    return len(py) == len(exp) and all(
        f[0] == n and f[1] == fl and (ls is None or f[2] in ls) for f, (n, fl, ls) in zip(py, exp))


def load_mlprof(path):
    """[(frames leaf first as (name, file basename, line, is_python), count)]"""
    res = []
    for fr, vals, lab in pprof_reader.load(path).detailed_stacks():
        res.append(([(f["name"], os.path.basename(f["file"]), f["line"], f["file"].endswith(".py"))
                     for f in fr], vals[0]))
    return res


def chains(stacks, native, python):
    """Counters (ok, total) for each correctness criterion; None where not applicable."""
    r = {k: [0, 0] for k in ("main", "main_bottom", "sort", "native", "native_bottom")}
    for fr, n in stacks:
        names = [f[0] for f in fr]
        if python and any(f[0] == "layer" and f[3] for f in fr):
            ok = py_match(fr, MAIN)
            r["main"][1] += n; r["main"][0] += n * ok
            if native:
                r["main_bottom"][1] += n; r["main_bottom"][0] += n * (ok and names[-1] == "_start")
        if python and any(f[0] == "Sorter.sort_batch" and f[3] for f in fr):
            r["sort"][1] += n; r["sort"][0] += n * py_match(fr, SORT_PY)
        q = [k for k, x in enumerate(names) if "qsort" in x]
        if native and q:
            # qsort_r, then libffi's ffi_call further from the leaf, then the Python chain
            # (or, without Python frames, the eval loop), down to start_thread;clone3
            ffi = [k for k, x in enumerate(names) if x == "ffi_call" and k > q[-1]]
            if python:
                first_py = next((k for k, f in enumerate(fr) if f[3]), -1)
                ok = bool(ffi) and py_match(fr, SORT_Q) and first_py > ffi[0]
            else:
                ok = bool(ffi) and any(x.startswith("_PyEval_EvalFrame") for x in names[ffi[0]:])
            r["native"][1] += n; r["native"][0] += n * ok
            r["native_bottom"][1] += n
            r["native_bottom"][0] += n * (ok and names[-2:] == ["start_thread", "clone3"])
    return r


def med(xs):
    return statistics.median(xs) if xs else float("nan")


for d in sorted(glob.glob(os.path.join(out, "py*"))):
    if not os.path.isdir(d):
        continue
    epochs, sorts = open(os.path.join(d, "work")).read().split()
    interp = open(os.path.join(d, "python")).read().strip()
    wall, cpu_pp, prof_cpu, foreign, nstacks, chk, extra = {}, {}, {}, {}, {}, {}, {}
    corr, wcpu, wwait = {}, {}, {}
    for c in CFG:
        wall[c], cpu_pp[c], prof_cpu[c], foreign[c], nstacks[c] = [], [], [], [], []
        corr[c], wcpu[c], wwait[c] = [], [], []
        chk[c] = None
        for i in range(1, reps + 1):
            f = os.path.join(d, "%s.%d" % (c, i))
            try:
                j = json.loads(open(f + ".json").read())
            except (OSError, ValueError):
                print("%s: no result (see %s.log/.out)" % (f, f))
                continue
            pyver = j["python"]
            wall[c].append(j["wall_s"])
            b0, b1, hz, load = open(f + ".stat").read().split()
            busy = (float(b1) - float(b0)) / float(hz)
            pc = int(open(f + ".cpu").read()) / float(hz)  # the profiler's own CPU
            foreign[c].append(busy - j["cpu_s"] - pc)
            wcpu[c].append(j["main_cpu_s"] + j["sorter_cpu_s"])
            wwait[c].append(j["main_wait_s"] + j["sorter_wait_s"])
            # each thread's time less its run-queue wait, plus the profiler's CPU during the
            # run spread over the cores (what it would take from the workload on a host of
            # its own)
            during = 0.0
            if c != "base":
                prof_cpu[c].append(pc)
                during = pc
            if c.startswith("ml"):
                log = open(f + ".log").read()
                m = re.search(r"mlprof: (\d+) samples in .* ([0-9.]+) us CPU/sample", log)
                if m:
                    cpu_pp[c].append(float(m.group(2)))
                    during = int(m.group(1)) * float(m.group(2)) / 1e6  # pipeline CPU only
            corr[c].append(max(j["main_s"] - j["main_wait_s"], j["sorter_s"] - j["sorter_wait_s"])
                           + during / NCPU)
            if c == "base":
                continue
            if c.startswith("ml"):
                st = load_mlprof(f + ".pb.gz")
                extra.setdefault(c, re.findall(r"^mlprof: .*Python.*$", log, re.M))
            else:
                st = load_pyspy(f + ".txt")
                m = re.search(r"Samples: (\d+) Errors: (\d+)", open(f + ".out").read())
                extra.setdefault(c, []).append(
                    "py-spy samples %s errors %s" % m.groups() if m else "?")
            nstacks[c].append(sum(n for _, n in st))
            r = chains(st, native=c != "psnb", python=c != "mlnp")
            if chk[c] is None:
                chk[c] = r
            else:
                for k in r:
                    chk[c][k][0] += r[k][0]; chk[c][k][1] += r[k][1]
    bpf = {}
    for c in ("mlnp", "ml"):
        try:
            name, ns, cnt = open(os.path.join(d, c + ".bpf")).read().split()
            st = load_mlprof(os.path.join(d, c + ".bpf.pb.gz"))
            bpf[c] = (int(ns), int(cnt), sum(n for _, n in st))
        except (OSError, ValueError):
            pass
    b = med(wall["base"])
    print()
    print("#### %s (Python %s): %s epochs x %s sorts per run, %d reps, medians" % (
        interp, pyver, epochs, sorts, reps))
    print()
    print("| metric | " + " | ".join(HDR[c] for c in CFG) + " |")
    print("|---|" + "---|" * len(CFG))

    def row(label, fmt):
        print("| %s | %s |" % (label, " | ".join(fmt(c) for c in CFG)))

    row("fixed-work wall time (median, s)", lambda c: "%.3f" % med(wall[c]))
    row("slowdown vs baseline", lambda c: "1.000" if c == "base" else
        "%.3f (%+.1f%%)" % (med(wall[c]) / b, (med(wall[c]) / b - 1) * 100))
    bc = med(corr["base"])
    row("contention-corrected wall time (median, s): max over the 2 threads of (elapsed - "
        "run-queue wait) + profiler CPU during the run / %d cores" % NCPU,
        lambda c: "%.3f" % med(corr[c]))
    row("contention-corrected slowdown", lambda c: "1.000" if c == "base" else
        "%.3f (%+.1f%%)" % (med(corr[c]) / bc, (med(corr[c]) / bc - 1) * 100))
    row("workload threads' CPU time (median, s)", lambda c: "%.3f" % med(wcpu[c]))

    def ratio(c, k):
        if c == "base" or chk[c] is None or not chk[c][k][1]:
            return "-"
        ok, tot = chk[c][k]
        return "%.3f (%d/%d)" % (ok / tot, ok, tot)

    row("main thread: samples in `layer` with the exact Python chain `layer;Model.forward;"
        "Trainer.step;Trainer.epoch;main;<module>` (call-site lines checked)",
        lambda c: ratio(c, "main"))
    row("... and the native stack named down to `_start`", lambda c: ratio(c, "main_bottom"))
    row("sorter thread: samples in `Sorter.sort_batch` with the exact Python chain "
        "`Sorter.sort_batch;Sorter.run;Thread._bootstrap_inner;Thread._bootstrap`",
        lambda c: ratio(c, "sort"))
    row("sorter thread: samples in `qsort_r` with `qsort_r … ffi_call …` then that Python "
        "chain (--no-python: then the eval loop)", lambda c: ratio(c, "native"))
    row("... and named down to `start_thread;clone3`", lambda c: ratio(c, "native_bottom"))
    row("stacks collected per run (median)",
        lambda c: "-" if c == "base" else "%d" % med(nstacks[c]))
    row("mlprof CPU per sample, sample processing (summary line, median, us)",
        lambda c: "%.1f" % med(cpu_pp[c]) if c.startswith("ml") else "-")
    row("BPF program `on_cpu_sample` run time per sample (ns/sample kept; ns/run)",
        lambda c: "%d; %d" % (bpf[c][0] / max(bpf[c][2], 1), bpf[c][0] / max(bpf[c][1], 1))
        if c in bpf else "-")
    row("profiler process CPU per run (user+sys, s; median)",
        lambda c: "-" if c == "base" else "%.3f" % med(prof_cpu[c]))
    row("profiler process CPU per collected stack (us)", lambda c: "-" if c == "base" else
        "%.1f" % (med(prof_cpu[c]) / max(med(nstacks[c]), 1) * 1e6))
    row("noise: CPU of other processes during the run; workload threads' run-queue wait "
        "(s, medians)", lambda c: "%.2f; %.2f" % (med(foreign[c]), med(wwait[c])))
    print()
    if cpu_pp["mlnp"] and cpu_pp["ml"]:
        print("mlprof CPU/sample with Python frames / without: %.2f (%.1f / %.1f us)" % (
            med(cpu_pp["ml"]) / med(cpu_pp["mlnp"]), med(cpu_pp["ml"]), med(cpu_pp["mlnp"])))
    if "ml" in bpf and "mlnp" in bpf:
        a, z = bpf["ml"][0] / max(bpf["ml"][2], 1), bpf["mlnp"][0] / max(bpf["mlnp"][2], 1)
        print("BPF time per sample with Python frames / without: %.2f (%d / %d ns)" % (a / z, a, z))
        print("mlprof total (sample processing + BPF) per sample with / without Python: %.2f" % (
            (med(cpu_pp["ml"]) * 1000 + a) / (med(cpu_pp["mlnp"]) * 1000 + z)))
    for c in CFG:
        print("raw %s: wall %s; corrected %s" % (c, " ".join("%.3f" % x for x in wall[c]),
                                                 " ".join("%.3f" % x for x in corr[c])))
    for c in ("ml", "psn", "psnb"):
        for l in extra.get(c, [])[:3]:
            print("%s: %s" % (c, l[:300]))
print()
print("command: bench/python.sh %d  (MLPROF=%s, py-spy %s; outputs in %s)" % (
    reps, mlprof, os.popen(pyspy + " --version").read().strip(), out))
PY
