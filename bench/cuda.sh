#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CUDA launch-probe overhead benchmark (run as root, ideally on an otherwise idle machine).
# A launch loop (bench/cudaloop.c: cudaLaunchKernel of the PyPI wheel's real libcudart.so.12
# from a fixed call chain; without a driver each call fails fast, after its entry uprobe has
# fired) runs a fixed number of calls
#   alone                                   (base),
#   with a bare uprobe on cudaLaunchKernel  (bare: an empty BPF program, bench/bare_uprobe.c),
#   under `mlprof record -p PID --cuda all` (mlprof: its probes on every CUDA entry point,
#                                            CPU and memory profiling off, so only the CUDA
#                                            probes are measured),
# REPS times each (order rotated per rep), for two workloads: back-to-back calls (the cost
# per event: the uprobe dominates) and calls with fixed CPU work between them at about
# 10^4 calls/s (the slowdown a launch-heavy training loop sees).
# Reports per configuration the median loop CPU time, the added CPU per call against base,
# mlprof's added cost as a multiple of the bare uprobe's, the slowdown at 10^4 calls/s,
# mlprof's own CPU per call and per captured stack, and that the profile counted every call.
# Usage: bench/cuda.sh [REPS]      (default 5; about 3 minutes on 2 vCPUs)
# Environment: MLPROF (default build/mlprof), CALLS (back-to-back calls, default 1000000),
# RATE_CALLS (calls of the 10^4/s workload, default 30000), CUDA12_LIB (directory of
# libcudart.so.12; default: the one scripts/cuda-toolchain.sh installs), WLS (workloads, default
# "b2b rate").
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REPS=${1:-5}
MLPROF=${MLPROF:-build/mlprof}
CALLS=${CALLS:-1000000}
RATE_CALLS=${RATE_CALLS:-30000}
WLS=${WLS:-b2b rate}
OUT=$(mktemp -d /tmp/mlprof-cuda.XXXXXX)
[ -x "$MLPROF" ] || { echo "bench/cuda.sh: $MLPROF not built (scripts/build.sh)"; exit 1; }
if [ -z "${CUDA12_LIB:-}" ]; then
	CUDA12_LIB=$(scripts/cuda-toolchain.sh 2>/dev/null | sed -n 's/^CUDA12_LIB=//p' || true)
	CUDA12_LIB=${CUDA12_LIB:-$HOME/.cache/mlprof/cuda-venv/cu12/nvidia/cuda_runtime/lib}
	[ -f "$CUDA12_LIB" ] && CUDA12_LIB=$(dirname "$CUDA12_LIB")
fi
LIB=$CUDA12_LIB/libcudart.so.12
[ -f "$LIB" ] || { echo "bench/cuda.sh: no $LIB (run scripts/cuda-toolchain.sh)"; exit 1; }
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
cc -O2 -o "$OUT/cudaloop" bench/cudaloop.c -L"$CUDA12_LIB" -l:libcudart.so.12 \
	-Wl,-rpath,"$CUDA12_LIB"
clang -O2 -g -target bpf -I/usr/include/"$(uname -m)"-linux-gnu -c bench/bare_uprobe.bpf.c \
	-o "$OUT/bare.bpf.o"
cc -O2 -o "$OUT/bare_uprobe" bench/bare_uprobe.c -lbpf

# bpf_runtime: "run_time_ns run_cnt" summed over the loaded programs named bare or cuda_entry
# (kernel.bpf_stats_enabled is on during the bench)
bpf_runtime() {
	bpftool prog show -j | python3 -c '
import json, sys
ps = [p for p in json.load(sys.stdin) if p.get("name") in ("bare", "cuda_entry")]
print(sum(p.get("run_time_ns", 0) for p in ps), sum(p.get("run_cnt", 0) for p in ps))'
}

# run CONFIG FILE-PREFIX LOOP-ARGS...: one run; leaves PREFIX.{json,log,cpu}
run() {
	local c=$1 f=$2 w t= m= k c0
	shift 2
	"$OUT/cudaloop" -s "$@" >"$f.json" 2>"$f.err" &
	w=$!
	for k in $(seq 200); do grep -qs ready "$f.err" && break; sleep 0.05; done
	case $c in
	base) ;;
	bare) "$OUT/bare_uprobe" "$OUT/bare.bpf.o" "$LIB" cudaLaunchKernel $w >"$f.log" 2>&1 &
		t=$!; m=$t
		for k in $(seq 200); do grep -qs attached "$f.log" && break; sleep 0.05; done ;;
	mlprof) /usr/bin/time -f "%U %S %M" -o "$f.time" "$MLPROF" record -p $w --cuda all \
		--no-memory -F 1 --log-level info -o "$f.pb.gz" >"$f.log" 2>&1 &
		t=$!
		for k in $(seq 100); do
			m=$(cat /proc/$t/task/$t/children 2>/dev/null || true); m=${m%% *}
			[ -n "$m" ] && break; sleep 0.02
		done
		for k in $(seq 600); do grep -qs 'CUDA/NCCL entry points in' "$f.log" && break; sleep 0.05; done ;;
	esac
	sleep 0.5
	c0=0; [ -n "$m" ] && c0=$(cpu_ns "$m")
	kill -USR1 $w
	if [ "$c" != base ]; then
		# the entry program's own run time per call, in the middle of the loop
		sleep 0.2; bpf_runtime >"$f.bpf0"; sleep 0.4; bpf_runtime >"$f.bpf1"
	fi
	wait $w
	if [ -n "$m" ]; then
		[ "$c" = mlprof ] && sleep 0.3 # let it drain the ring buffer before measuring
		echo "$c0 $(cpu_ns "$m")" >"$f.cpu"
	fi
	if [ -n "$t" ]; then
		[ "$c" = bare ] && kill -INT $t
		for k in $(seq 300); do kill -0 $t 2>/dev/null || break; sleep 0.1; done
		kill -0 $t 2>/dev/null && kill -INT "$m" 2>/dev/null || true
		wait $t || echo "bench/cuda.sh: $c exited with $? ($f.log)" >&2
	fi
}

stats_was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=$stats_was' EXIT

# calibrate the spin for ~100 us per call (10^4 calls/s): least of 3 short runs
spin=$(for k in 1 2 3; do "$OUT/cudaloop" -w 100000 2000; done | python3 -c '
import json, sys
t = min(json.loads(l)["cpu_s"] / json.loads(l)["calls"] for l in sys.stdin)
print(max(1, round(100000 * 100e-6 / t)))')
CONFIGS=(base bare mlprof)
for wl in $WLS; do
	mkdir -p "$OUT/$wl"
	for r in $(seq "$REPS"); do
		for i in 0 1 2; do
			c=${CONFIGS[$(((i + r) % 3))]}
			if [ $wl = b2b ]; then run $c "$OUT/$wl/$c-$r" "$CALLS"
			else run $c "$OUT/$wl/$c-$r" -w "$spin" "$RATE_CALLS"; fi
		done
	done
done
echo "bench/cuda.sh: outputs in $OUT (spin $spin per call for 10^4 calls/s)" >&2

python3 - "$OUT" "$REPS" <<'PY'
import json, os, re, statistics as st, sys
sys.path.insert(0, "tests/integration")
import pprof_reader
out, reps = sys.argv[1], int(sys.argv[2])
def load(wl, c):
    rows = []
    for r in range(1, reps + 1):
        f = "%s/%s/%s-%d" % (out, wl, c, r)
        j = json.load(open(f + ".json"))
        if os.path.exists(f + ".cpu"):
            a, b = open(f + ".cpu").read().split()
            j["prof_cpu_s"] = (int(b) - int(a)) / 1e9
        if os.path.exists(f + ".bpf1"):
            t0, n0 = map(int, open(f + ".bpf0").read().split())
            t1, n1 = map(int, open(f + ".bpf1").read().split())
            j["bpf_ns"] = (t1 - t0) / max(1, n1 - n0)
        if os.path.exists(f + ".time"):
            j["rss_mb"] = int(open(f + ".time").read().split()[-1]) / 1024
        pb = f + ".cuda_launches.pb.gz"
        if c == "mlprof" and os.path.exists(pb):
            # launches counted in the loop's chain, and of those how many have the full chain
            tot = chain = 0
            for names, vals, _ in pprof_reader.load(pb).stacks():
                if names and names[0] == "bench_kernel":
                    tot += vals[0]
                    if names[1] == "cudaLaunchKernel" and names[2].startswith("launch_one") \
                       and names[3] == "launch_loop" and names[4] == "main":
                        chain += vals[0]
            j["counted"], j["chain"] = tot, chain
            m = re.search(r"cuda: ([0-9]+) kernel launches", open(f + ".log").read())
            j["exact"] = int(m.group(1)) if m else -1
        rows.append(j)
    return rows
def med(rows, k):
    return st.median(r[k] for r in rows)
print("| workload | metric | alone | bare uprobe | mlprof --cuda all |")
print("|---|---|---|---|---|")
for wl, name in (("b2b", "back-to-back calls"), ("rate", "~10^4 calls/s")):
    if not os.path.isdir(os.path.join(out, wl)):
        continue
    rows = {c: load(wl, c) for c in ("base", "bare", "mlprof")}
    calls = rows["base"][0]["calls"]
    cpu = {c: med(rows[c], "cpu_s") for c in rows}
    wall = {c: med(rows[c], "wall_s") for c in rows}
    print("| %s | calls/s (median) | %.0f | %.0f | %.0f |" % (
        name, *(med(rows[c], "calls_per_s") for c in ("base", "bare", "mlprof"))))
    print("| | loop CPU per call | %.0f ns | %.0f ns | %.0f ns |" % tuple(
        cpu[c] / calls * 1e9 for c in ("base", "bare", "mlprof")))
    add = {c: (cpu[c] - cpu["base"]) / calls * 1e9 for c in ("bare", "mlprof")}
    per = sorted((rows["mlprof"][i]["cpu_s"] - rows["base"][i]["cpu_s"]) /
                 max(1e-12, rows["bare"][i]["cpu_s"] - rows["base"][i]["cpu_s"]) for i in range(reps))
    if wl == "b2b":
        print("| | added CPU per call | – | %.0f ns | %.0f ns (**%.2f×** bare; per rep %s) |" % (
            add["bare"], add["mlprof"], add["mlprof"] / add["bare"],
            " ".join("%.2f" % x for x in per)))
    else:
        print("| | slowdown: wall / loop CPU | – | %+.2f%% / %+.2f%% | **%+.2f%%** / %+.2f%% |" % (
            100 * (wall["bare"] / wall["base"] - 1), 100 * (cpu["bare"] / cpu["base"] - 1),
            100 * (wall["mlprof"] / wall["base"] - 1), 100 * (cpu["mlprof"] / cpu["base"] - 1)))
    bpf = {c: st.median(r["bpf_ns"] for r in rows[c]) for c in ("bare", "mlprof")
           if all("bpf_ns" in r for r in rows[c])}
    if len(bpf) == 2:
        print("| | BPF program run time per call (BPF stats on) | – | %.0f ns | %.0f ns (+%.0f ns) |" % (
            bpf["bare"], bpf["mlprof"], bpf["mlprof"] - bpf["bare"]))
    ml = rows["mlprof"]
    print("| | mlprof process CPU per call | – | – | %.0f ns |" % (
        st.median(r["prof_cpu_s"] for r in ml) / calls * 1e9))
    print("| | mlprof peak RSS | – | – | %.1f MB |" % st.median(r["rss_mb"] for r in ml))
    print("| | launches counted exactly (summary), of %d per run | – | – | %s |" % (
        calls, ", ".join(str(r.get("exact", -1)) for r in ml)))
    print("| | launches in the profile (sampled, weighted) / with the full chain | – | – | %s |" % (
        ", ".join("%d/%d" % (r.get("counted", 0), r.get("chain", 0)) for r in ml)))
PY
