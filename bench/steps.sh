#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of the training-step probes (mlprof record's step breakdown, on by default):
# bench/stepsloop.py (PyPI torch; WIDTH=256 BATCH=96: ~10^3 steps a second, the issue's
# rate; the default WIDTH=0, a tiny model at 1500-7000 steps a second as this VM drifts) under
# `mlprof record --no-steps` and `mlprof record` (steps on), alternating, REPEATS times each;
# prints steps/s of each and the ratio of the medians, and the probes' cost per step. Then
# the cost of one record_function scope (bench/scopecost.py: enter and exit, the fastest of
# 7 rounds of 10^5) unprofiled, under --no-steps and with steps: the probes' cost per scope,
# precise where the steps/s ratio drowns in the VM's noise; also in the loop thread's CPU
# time, which the time the VM's host takes the CPU away does not disturb.
# Last, the probes' BPF time per hit (bpftool, kernel.bpf_stats_enabled for the run).
# Usage: bench/steps.sh [REPEATS] [SECONDS]   (default 5 10)
#   env: MLPROF (build/mlprof), TORCH_PY (~/.cache/mlprof/torch-venv/bin/python), WIDTH (0),
#   BATCH (96; with WIDTH only)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-5}
SECS=${2:-10}
WIDTH=${WIDTH:-0}
BATCH=${BATCH:-96}
MLPROF=${MLPROF:-build/mlprof}
TORCH_PY=${TORCH_PY:-$HOME/.cache/mlprof/torch-venv/bin/python}
[ -x "$TORCH_PY" ] || { echo "SKIPPED: no PyPI torch at $TORCH_PY" >&2; exit 0; }
OUT=$(mktemp -d /tmp/mlprof-stepsbench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
for r in $(seq "$REPEATS"); do
	for cfg in off on; do
		extra=(--no-steps)
		[ $cfg = on ] && extra=()
		"$MLPROF" record -q --no-memory --cuda none "${extra[@]}" -o "$OUT/s.pb.gz" -- \
			"$TORCH_PY" bench/stepsloop.py "$SECS" 2 "$WIDTH" "$BATCH" |
			awk '/^steps/ {printf "%.1f\n", $2 / $3}' >>"$OUT/$cfg"
	done
done
med() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
off=$(med <"$OUT/off")
on=$(med <"$OUT/on")
echo "steps/s, median of $REPEATS: --no-steps $off | steps on $on"
echo "ratio $(echo "$on / $off" | bc -l | cut -c1-6); cost per step $(echo "(1/$on - 1/$off) * 1000000" | bc -l | cut -c1-6) us"

# scope CMD...: "WALL CPU" ns per scope (scopecost.py's best of 7 rounds of each)
scope() { "$@" "$TORCH_PY" bench/scopecost.py 100000 7 | awk '/^scope_ns/ {w = $2} /^scope_cpu_ns/ {c = $2} END {print w, c}'; }
read -r bare bare_c < <(scope)
read -r off off_c < <(scope "$MLPROF" record -q --no-memory --cuda none --no-steps -o "$OUT/c.pb.gz" --)
read -r on on_c < <(scope "$MLPROF" record -q --no-memory --cuda none -o "$OUT/c.pb.gz" --)
echo "one record_function scope, wall: unprofiled $bare ns | --no-steps $off ns | steps on $on ns"
echo "  the loop thread's CPU: unprofiled $bare_c ns | --no-steps $off_c ns | steps on $on_c ns"
echo "probes' cost per scope $((on - off)) ns wall, $((on_c - off_c)) ns CPU (a training step opens 3: DataLoader next, optimizer step, zero_grad)"

# The scope probes' BPF time per hit (the kernel's own count: kernel.bpf_stats_enabled), read
# while a longer scopecost run is in its loop.
if ! command -v bpftool >/dev/null; then
	echo "BPF time per probe hit: SKIPPED (no bpftool)"
	exit 0
fi
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1
"$MLPROF" record -q --no-memory --cuda none -o "$OUT/b.pb.gz" -- \
	"$TORCH_PY" bench/scopecost.py 100000 12 >/dev/null &
rec=$!
sleep 14
bpftool prog show -j | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name") in ("torch_entry", "torch_return") and p.get("run_cnt"):
        print("BPF time per probe hit: %s %d ns (%d hits)" %
              (p["name"], p["run_time_ns"] // p["run_cnt"], p["run_cnt"]))'
wait "$rec" || true
sysctl -q kernel.bpf_stats_enabled="$old_stats"
