#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent's cost on a host running a PyPI torch training loop plus many small processes:
# `mlprof agent` with its defaults (whole host, 19 Hz, CUDA probes and memory growth on,
# files to a local --output-dir, no backend) for DUR seconds while bench/torchloop.py trains
# and SMALL small Python processes (a tiny computation every 50 ms each) run beside it.
# Reports the agent's CPU after the first minute (utime+stime from /proc, as % of a core),
# its peak RSS (VmHWM) and its largest anonymous RSS (RssAnon, polled every second), its
# symbol-index and sample counters from /metrics, and what the loop's own profile holds.
# Usage: bench/torch_agent.sh [DUR [SMALL]]   (defaults 300 and 100; run as root, idle host)
# Environment: MLPROF (build/mlprof), TORCH_PY (~/.cache/mlprof/torch-venv/bin/python),
#   PORT (metrics port, 9761).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-300}
SMALL=${2:-100}
MLPROF=${MLPROF:-build/mlprof}
PY=${TORCH_PY:-$HOME/.cache/mlprof/torch-venv/bin/python}
PORT=${PORT:-9761}
WARM=60
[ "$(id -u)" = 0 ] || { echo "bench/torch_agent.sh: run as root" >&2; exit 1; }
[ -x "$MLPROF" ] || { echo "bench/torch_agent.sh: no $MLPROF (build first)" >&2; exit 1; }
"$PY" -c "import torch" 2>/dev/null || {
	echo "bench/torch_agent.sh: SKIPPED: $PY cannot import torch (pip install torch into a venv)"
	exit 0
}
dir=$(mktemp -d /tmp/mlprof-torchagent.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

for _ in $(seq "$SMALL"); do
	python3 -c 'import time
while True:
    sum(range(2000)); time.sleep(0.05)' &
	pids+=($!)
done
"$PY" bench/torchloop.py "$((DUR + 30))" 2 >"$dir/loop.out" 2>&1 &
pids+=($!)
"$MLPROF" agent --output-dir "$dir/out" --metrics-addr "127.0.0.1:$PORT" \
	--log-level warn >"$dir/agent.log" 2>&1 &
agent=$!
pids+=($agent)

cpu() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
tick=$(getconf CLK_TCK)
anon_max=0
c0=""
for s in $(seq "$DUR"); do
	sleep 1
	kill -0 "$agent" 2>/dev/null || { echo "bench/torch_agent.sh: the agent exited" >&2; exit 1; }
	a=$(awk '/^RssAnon/ {print $2}' "/proc/$agent/status")
	[ "$a" -gt "$anon_max" ] && anon_max=$a
	[ "$s" = "$WARM" ] && c0=$(cpu)
done
c1=$(cpu)
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$agent/status")
curl -s "127.0.0.1:$PORT/metrics" >"$dir/metrics.txt" || true
kill -TERM "$agent"
wait "$agent" || true
metric() { awk -v m="$1" '$1 == m {print $2}' "$dir/metrics.txt"; }
python3 - "$c0" "$c1" "$tick" "$DUR" "$WARM" "$hwm" "$anon_max" "$SMALL" <<'PY'
import sys
c0, c1, tick, dur, warm, hwm, anon, small = sys.argv[1:]
cpu = (float(c1) - float(c0)) / float(tick)
span = float(dur) - float(warm)
print("| agent, %s s, torch loop + %s small processes | value |" % (dur, small))
print("|---|---|")
print("| CPU after the first minute | %.2f%% of a core (%.2f s in %.0f s) |" %
      (100 * cpu / span, cpu, span))
print("| peak RSS (VmHWM) | %.0f MB |" % (int(hwm) / 1024))
print("| largest anonymous RSS (RssAnon) | %.0f MB |" % (int(anon) / 1024))
PY
for m in mlprof_samples_total mlprof_symcache_builds_total mlprof_symcache_rebuilds_total \
	mlprof_symcache_bytes mlprof_symcache_build_cpu_seconds_total; do
	echo "| $m | $(metric $m) |"
done
grep '^mlprof_samples_dropped_total' "$dir/metrics.txt" | sed 's/^\(.*\) \([^ ]*\)$/| \1 | \2 |/' || true
grep '^mlprof_symbol_wait_samples_total' "$dir/metrics.txt" | sed 's/^\(.*\) \([^ ]*\)$/| \1 | \2 |/' || true
echo "bench/torch_agent.sh: outputs in $dir"
