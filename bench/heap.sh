#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Heap profile (mlprof record --heap) cost benchmark, side by side with no profiling and
# with the peers that install from the registries: heaptrack (Debian; LD_PRELOAD, records
# every call) and memray (PyPI; Python). Run as root on an otherwise idle machine.
#   storm:   bench/heapcost.c, malloc(64)+free pairs, ns per pair from the fastest round
#            (a neighbour slows some rounds, a profiler's per-call cost is in every round):
#            alone, record --heap (uprobe sessions where the kernel has them), record --heap
#            with entry+return probes on every call (MLPROF_TEST_NO_UPROBE_SESSION=1, the
#            fallback before Linux 6.13), heaptrack. The cost of a *sampled* allocation
#            (stack captured, tracked to its free) comes from --heap-sample 1 (one in ~16
#            64-byte allocations sampled) against the default, per sampled allocation.
#   python:  bench/pyalloc.py (a data-loader-like loop: dicts, strings, 2 KiB bytes; about
#            1 M malloc calls a second), wall time alone, under record --heap, under
#            memray run.
#   torch:   bench/torchloop.py (PyPI torch, one-thread MLP training loop), steps/s under
#            record (defaults) with and without --heap.
# Every configuration runs once per repetition, in the same order; medians.
# Usage: bench/heap.sh [REPEATS]     (default 3)
#   env: MLPROF (build/mlprof), TORCH_PY (~/.cache/mlprof/torch-venv/bin/python),
#        MEMRAY (~/.cache/mlprof/memray-venv/bin/memray), PY_STEPS (20000)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-3}
MLPROF=${MLPROF:-build/mlprof}
TORCH_PY=${TORCH_PY:-$HOME/.cache/mlprof/torch-venv/bin/python}
MEMRAY=${MEMRAY:-$HOME/.cache/mlprof/memray-venv/bin/memray}
PY_STEPS=${PY_STEPS:-20000}
OUT=$(mktemp -d /tmp/mlprof-heapbench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
cc -O2 -o "$OUT/heapcost" bench/heapcost.c
REC=("$MLPROF" record --no-memory --cuda none -q -o "$OUT/r.pb.gz")

med() { sort -g | awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : "nan"}'; }
ns() { sed -n 's/.*"ns_per_pair": \([0-9.]*\).*/\1/p'; }
wall() { sed -n 's/.*"wall_s": \([0-9.]*\).*/\1/p' | tail -1; }

for r in $(seq "$REPEATS"); do
	"$OUT/heapcost" 100 20000 64 | ns >>"$OUT/storm.alone"
	"${REC[@]}" --heap -- "$OUT/heapcost" 100 20000 64 | ns >>"$OUT/storm.heap"
	MLPROF_TEST_NO_UPROBE_SESSION=1 "${REC[@]}" --heap -- "$OUT/heapcost" 100 20000 64 |
		ns >>"$OUT/storm.uret"
	# sampled: every ~16th allocation captured; its extra cost per sampled allocation
	"$MLPROF" record --no-memory --cuda none -o "$OUT/s.pb.gz" --heap --heap-sample 1 -- \
		"$OUT/heapcost" 20 20000 64 >"$OUT/s.out" 2>"$OUT/s.err"
	n=$(sed -n 's/^mlprof: heap: \([0-9]*\) allocations sampled.*/\1/p' "$OUT/s.err")
	echo "$(ns <"$OUT/s.out") $n" >>"$OUT/storm.sampled"
	if command -v heaptrack >/dev/null; then
		heaptrack -o "$OUT/ht" "$OUT/heapcost" 100 20000 64 2>/dev/null | ns >>"$OUT/storm.heaptrack"
		rm -f "$OUT"/ht*
	fi
	python3 bench/pyalloc.py "$PY_STEPS" | wall >>"$OUT/py.alone"
	"${REC[@]}" --heap -- python3 bench/pyalloc.py "$PY_STEPS" | wall >>"$OUT/py.heap"
	if [ -x "$MEMRAY" ]; then
		"$MEMRAY" run -q -f -o "$OUT/m.bin" bench/pyalloc.py "$PY_STEPS" | wall >>"$OUT/py.memray"
		rm -f "$OUT/m.bin"
	fi
	if [ -x "$TORCH_PY" ]; then
		for cfg in base heap; do
			extra=()
			[ $cfg = heap ] && extra=(--heap)
			"$MLPROF" record -q -o "$OUT/t.pb.gz" "${extra[@]}" -- "$TORCH_PY" bench/torchloop.py 10 3 |
				awk '/^steps/ {printf "%.2f\n", $2 / $3}' >>"$OUT/torch.$cfg"
		done
		"$TORCH_PY" bench/torchloop.py 10 3 | awk '/^steps/ {printf "%.2f\n", $2 / $3}' >>"$OUT/torch.alone"
	fi
	echo "repetition $r done" >&2
done

a=$(med <"$OUT/storm.alone")
h=$(med <"$OUT/storm.heap")
u=$(med <"$OUT/storm.uret")
echo "storm (malloc(64)+free pairs), ns per pair, median of $REPEATS:"
printf "  alone %s | record --heap %s (+%.0f ns) | entry+return fallback %s (+%.0f ns)" \
	"$a" "$h" "$(echo "$h - $a" | bc -l)" "$u" "$(echo "$u - $a" | bc -l)"
if [ -s "$OUT/storm.heaptrack" ]; then
	t=$(med <"$OUT/storm.heaptrack")
	printf " | heaptrack %s (+%.0f ns)" "$t" "$(echo "$t - $a" | bc -l)"
fi
echo
awk -v h="$h" '{ if ($2 > 0) print ($1 - h) * 20 * 20000 / $2 }' "$OUT/storm.sampled" | med |
	xargs printf "  a sampled allocation (stack captured, tracked to its free): +%.0f ns\n"
pa=$(med <"$OUT/py.alone")
ph=$(med <"$OUT/py.heap")
printf "python (pyalloc.py %s steps), wall s: alone %s | record --heap %s (%.2fx)" "$PY_STEPS" \
	"$pa" "$ph" "$(echo "$ph / $pa" | bc -l)"
if [ -s "$OUT/py.memray" ]; then
	pm=$(med <"$OUT/py.memray")
	printf " | memray run %s (%.2fx)" "$pm" "$(echo "$pm / $pa" | bc -l)"
fi
echo
if [ -s "$OUT/torch.alone" ]; then
	ta=$(med <"$OUT/torch.alone")
	tb=$(med <"$OUT/torch.base")
	th=$(med <"$OUT/torch.heap")
	printf "torch loop, steps/s: alone %s | record %s (%.3fx) | record --heap %s (%.3fx)\n" \
		"$ta" "$tb" "$(echo "$tb / $ta" | bc -l)" "$th" "$(echo "$th / $ta" | bc -l)"
fi
