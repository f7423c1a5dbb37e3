#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of the training-step probes (mlprof record's step breakdown, on by default):
# bench/stepsloop.py (PyPI torch, ~10^3 steps a second: the issue's worst case) under
# `mlprof record --no-steps` and `mlprof record` (steps on), alternating, REPEATS times each;
# prints steps/s of each and the ratio of the medians, and the probes' cost per step. Then
# the cost of one record_function scope (bench/scopecost.py: enter and exit, the fastest of
# 7 rounds of 10^5) unprofiled, under --no-steps and with steps: the probes' cost per scope,
# precise where the steps/s ratio drowns in the VM's noise.
# Usage: bench/steps.sh [REPEATS] [SECONDS]   (default 5 10)
#   env: MLPROF (build/mlprof), TORCH_PY (~/.cache/mlprof/torch-venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-5}
SECS=${2:-10}
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
			"$TORCH_PY" bench/stepsloop.py "$SECS" 2 |
			awk '/^steps/ {printf "%.1f\n", $2 / $3}' >>"$OUT/$cfg"
	done
done
med() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
off=$(med <"$OUT/off")
on=$(med <"$OUT/on")
echo "steps/s, median of $REPEATS: --no-steps $off | steps on $on"
echo "ratio $(echo "$on / $off" | bc -l | cut -c1-6); cost per step $(echo "(1/$on - 1/$off) * 1000000" | bc -l | cut -c1-6) us"

scope() { "$@" "$TORCH_PY" bench/scopecost.py 100000 7 | awk '/^scope_ns/ {print $2}'; }
bare=$(scope)
off=$(scope "$MLPROF" record -q --no-memory --cuda none --no-steps -o "$OUT/c.pb.gz" --)
on=$(scope "$MLPROF" record -q --no-memory --cuda none -o "$OUT/c.pb.gz" --)
echo "one record_function scope: unprofiled $bare ns | --no-steps $off ns | steps on $on ns"
echo "probes' cost per scope $((on - off)) ns (a training step opens 3: DataLoader next, optimizer step, zero_grad)"
