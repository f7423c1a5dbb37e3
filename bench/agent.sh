#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Steady-state cost of `mlprof agent` on a busy host (run as root on an otherwise idle
# machine): every core runs a CPU-bound workload; the agent profiles the whole host at its
# default frequency and pushes every 15 s to a real Pyroscope (scripts/pyroscope.sh) for
# UP minutes, then the backend is stopped for DOWN minutes (profiles go to the spool), then
# it comes back and the spool drains. Samples the agent's CPU time and RSS every 5 s and
# reports CPU % of one core, RSS range and the RSS trend (least-squares slope) per phase.
# Usage: bench/agent.sh [UP_MINUTES] [DOWN_MINUTES]     (defaults 4 and 2)
set -euo pipefail
cd "$(dirname "$0")/.."
UP=${1:-4}
DOWN=${2:-2}
MLPROF=${MLPROF:-build/mlprof}
OUT=$(mktemp -d /tmp/mlprof-agent-bench.XXXXXX)
PORT=4340
PYRO=$(scripts/pyroscope.sh path) || { echo "bench/agent.sh: no Pyroscope binary (scripts/pyroscope.sh build)"; exit 1; }
cc -O2 -fomit-frame-pointer -pthread -o "$OUT/fixedwork" bench/fixedwork.c

cleanup() {
	kill "$WL" "$AG" 2>/dev/null || true
	wait "$AG" 2>/dev/null || true
	scripts/pyroscope.sh stop "$OUT/pyro" >/dev/null 2>&1 || true
}
trap cleanup EXIT

scripts/pyroscope.sh start "$OUT/pyro" $PORT >/dev/null
"$OUT/fixedwork" "$(nproc)" 100000000000 >/dev/null &
WL=$!
"$MLPROF" agent --url http://127.0.0.1:$PORT --upload-interval 15 \
	--spool-dir "$OUT/spool" --metrics-addr 127.0.0.1:9749 --log-level warn \
	>"$OUT/agent.log" 2>&1 &
AG=$!
CLK=$(getconf CLK_TCK)

sample() { # phase elapsed_s cpu_ticks rss_kb anon_kb
	local st rss anon
	st=$(awk '{print $14+$15}' /proc/$AG/stat)
	rss=$(awk '/VmRSS/{print $2}' /proc/$AG/status)
	anon=$(awk '/RssAnon/{print $2}' /proc/$AG/status)
	echo "$1 $2 $st $rss $anon" >>"$OUT/samples.txt"
}
run_phase() { # name seconds
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		sample "$1" $SECONDS
		sleep 5
	done
}
SECONDS=0
run_phase up $((UP * 60))
scripts/pyroscope.sh stop "$OUT/pyro" >/dev/null
run_phase down $((DOWN * 60))
scripts/pyroscope.sh start "$OUT/pyro" $PORT >/dev/null
run_phase recovered 45
curl -s http://127.0.0.1:9749/metrics | grep -E '^mlprof_(profiles|spool|samples_total|push)' >"$OUT/metrics.txt" || true

python3 - "$OUT/samples.txt" "$CLK" "$OUT/metrics.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
clk = float(sys.argv[2])
print("| phase (after 30 s warm-up) | duration (s) | agent CPU (% of one core) | RSS min / max / last (MB) | RSS trend (KB/min) | anonymous RSS min / max (MB) | anonymous trend (KB/min) |")
print("|---|---|---|---|---|---|---|")


def slope(r, k):
    n = len(r); mt = sum(x[0] for x in r) / n; mm = sum(x[k] for x in r) / n
    return sum((x[0] - mt) * (x[k] - mm) for x in r) / max(sum((x[0] - mt) ** 2 for x in r), 1e-9)


for phase in ("up", "down", "recovered"):
    # the first 30 s are start-up (BPF load, first symbol tables): not part of the trend
    r = [(float(x[1]), float(x[2]), float(x[3]), float(x[4]) if len(x) > 4 else 0.0)
         for x in rows if x[0] == phase and float(x[1]) >= 30]
    if len(r) < 2:
        continue
    dt = r[-1][0] - r[0][0]
    cpu = (r[-1][1] - r[0][1]) / clk / dt * 100
    rss = [x[2] / 1024 for x in r]
    anon = [x[3] / 1024 for x in r]
    print("| %s | %.0f | %.2f | %.1f / %.1f / %.1f | %+.1f | %.1f / %.1f | %+.1f |" % (
        phase, dt, cpu, min(rss), max(rss), rss[-1], slope(r, 2) * 60, min(anon), max(anon),
        slope(r, 3) * 60))
print()
print(open(sys.argv[3]).read())
PY
echo "raw samples and agent log in $OUT"
