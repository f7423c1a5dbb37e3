#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of the training-step probes (mlprof record's step breakdown, on by default):
# bench/stepsloop.py (PyPI torch; WIDTH=256 BATCH=96: ~10^3 steps a second, the issue's
# rate; the default WIDTH=0, a tiny model at 1500-7000 steps a second as this VM drifts) under
# `mlprof record --no-steps`, `mlprof record` (steps on at the default --steps-max-scopes:
# above 1500 scope events a second the probes run in random slots) and `mlprof record
# --steps-max-scopes 0` (probes always attached), alternating, REPEATS times each; the loop
# pinned to CPU 0 and mlprof to CPU 1 (where there are two), so that the loop's CPU time per
# step, which the VM's host taking the CPU away does not disturb, is the cost. Prints the
# medians of steps/s and of CPU per step of each, and the cost per step of the last two.
# Then the cost of one record_function scope (bench/scopecost.py: enter and exit, the fastest of
# 7 rounds of 10^5) unprofiled, under --no-steps and with the probes always attached: the
# probes' cost per scope, precise where the steps/s ratio drowns in the VM's noise; also in
# the loop thread's CPU time.
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
PIN_LOOP=() PIN_PROF=()
if [ "$(nproc)" -ge 2 ]; then
	PIN_LOOP=(taskset -c 0) PIN_PROF=(taskset -c 1)
fi
for r in $(seq "$REPEATS"); do
	for cfg in off on full; do
		case $cfg in
		off) extra=(--no-steps) ;;
		on) extra=() ;;
		full) extra=(--steps-max-scopes 0) ;;
		esac
		"${PIN_PROF[@]}" "$MLPROF" record -q --no-memory --cuda none "${extra[@]}" \
			-o "$OUT/s.pb.gz" -- "${PIN_LOOP[@]}" "$TORCH_PY" bench/stepsloop.py "$SECS" 2 \
			"$WIDTH" "$BATCH" |
			awk '/^steps/ {printf "%.1f %.2f\n", $2 / $3, $4 * 1e6 / $2}' >>"$OUT/$cfg"
	done
done
# med COLUMN FILE: the median of a column
med() { awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for cfg in off on full; do
	read -r "rate_$cfg" < <(med 1 "$OUT/$cfg")
	read -r "cpu_$cfg" < <(med 2 "$OUT/$cfg")
done
for cfg in off on full; do
	echo "runs, $cfg (steps/s, us CPU a step): $(tr '\n' ' ' <"$OUT/$cfg")"
done
echo "medians of $REPEATS: --no-steps $rate_off steps/s, $cpu_off us CPU a step"
echo "  steps (default --steps-max-scopes) $rate_on steps/s, $cpu_on us CPU a step"
echo "  --steps-max-scopes 0 (always attached) $rate_full steps/s, $cpu_full us CPU a step"
for cfg in on full; do
	r=rate_$cfg c=cpu_$cfg
	echo "cost a step, $cfg: $(echo "(1/${!r} - 1/$rate_off) * 1000000" | bc -l | cut -c1-6) us wall," \
		"$(echo "${!c} - $cpu_off" | bc -l | cut -c1-6) us CPU" \
		"($(echo "(${!c} - $cpu_off) * 100 / $cpu_off" | bc -l | cut -c1-5)% of the step's CPU)"
done

# scope CMD...: "WALL CPU" ns per scope (scopecost.py's best of 7 rounds of each)
scope() { "$@" "$TORCH_PY" bench/scopecost.py 100000 7 | awk '/^scope_ns/ {w = $2} /^scope_cpu_ns/ {c = $2} END {print w, c}'; }
read -r bare bare_c < <(scope)
read -r off off_c < <(scope "$MLPROF" record -q --no-memory --cuda none --no-steps -o "$OUT/c.pb.gz" --)
read -r on on_c < <(scope "$MLPROF" record -q --no-memory --cuda none --steps-max-scopes 0 \
	-o "$OUT/c.pb.gz" --)
echo "one record_function scope, wall: unprofiled $bare ns | --no-steps $off ns | probes always attached $on ns"
echo "  the loop thread's CPU: unprofiled $bare_c ns | --no-steps $off_c ns | probes always attached $on_c ns"
echo "probes' cost per scope $((on - off)) ns wall, $((on_c - off_c)) ns CPU (a training step opens 3: DataLoader next, optimizer step, zero_grad)"

# The scope probes' BPF time per hit (the kernel's own count: kernel.bpf_stats_enabled), read
# while a longer scopecost run is in its loop.
if ! command -v bpftool >/dev/null; then
	echo "BPF time per probe hit: SKIPPED (no bpftool)"
	exit 0
fi
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1
"$MLPROF" record -q --no-memory --cuda none --steps-max-scopes 0 -o "$OUT/b.pb.gz" -- \
	"$TORCH_PY" bench/scopecost.py 100000 40 >/dev/null &
rec=$!
sleep 10
bpftool prog show -j | python3 -c '
import json, sys
found = False
for p in json.load(sys.stdin):
    if p.get("name") in ("torch_entry", "torch_return") and p.get("run_cnt"):
        print("BPF time per probe hit: %s %d ns (%d hits)" %
              (p["name"], p["run_time_ns"] // p["run_cnt"], p["run_cnt"]))
        found = True
if not found:
    print("BPF time per probe hit: not read (no probe program had run)")'
wait "$rec" || true
sysctl -q kernel.bpf_stats_enabled="$old_stats"
