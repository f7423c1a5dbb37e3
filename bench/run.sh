#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Side-by-side overhead benchmark (run as root on an otherwise idle machine):
#   fixed-work CPU workload on all cores, alone vs under `mlprof record -a -F 99`
#   vs under `perf record -a -F 99 --call-graph dwarf` (the peer that unwinds the same way).
# Reports slowdown ratios, mlprof CPU per sample, peak RSS and full-chain ratios.
# Usage: bench/run.sh [REPEATS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-3}
ROUNDS=${2:-500000}
MLPROF=${MLPROF:-build/mlprof}
OUT=$(mktemp -d /tmp/mlprof-bench.XXXXXX)
NCPU=$(nproc)
cc -O2 -fomit-frame-pointer -pthread -o "$OUT/fixedwork" bench/fixedwork.c
command -v perf >/dev/null || { echo "bench: perf not installed (apt-get install linux-perf)"; exit 1; }
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null

work() { "$OUT/fixedwork" "$NCPU" "$ROUNDS"; }
median() { sort -n | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }

base=() ; ml=() ; pf=()
for i in $(seq "$REPEATS"); do
	base+=("$(work)")

	/usr/bin/time -f "%U %S %M" -o "$OUT/ml.time" "$MLPROF" record -a -F 99 -q \
		-o "$OUT/ml.pb.gz" >"$OUT/ml.log" 2>&1 &
	mpid=$!
	sleep 2
	ml+=("$(work)")
	# signal mlprof itself: GNU time ignores SIGINT while it waits
	pkill -INT -P $mpid; wait $mpid || true

	perf record -a -F 99 --call-graph dwarf -o "$OUT/perf.data" -q >/dev/null 2>&1 &
	ppid=$!
	sleep 2
	pf+=("$(work)")
	kill -INT $ppid; wait $ppid || true
done
b=$(printf '%s\n' "${base[@]}" | median)
m=$(printf '%s\n' "${ml[@]}" | median)
p=$(printf '%s\n' "${pf[@]}" | median)

read -r mu ms mrss < "$OUT/ml.time"
# One more mlprof run with its summary, for samples and the chain ratio of the workload.
"$MLPROF" record -a -F 99 -o "$OUT/ml2.pb.gz" -d 8 >"$OUT/ml2.log" 2>&1 &
mpid=$!; sleep 1; work >/dev/null; wait $mpid || true
python3 - "$OUT" "$b" "$m" "$p" "$mu" "$ms" "$mrss" <<'PY'
import os, re, subprocess, sys
sys.path.insert(0, "tests/integration")
import pprof_reader
out, b, m, p, mu, ms, mrss = sys.argv[1:]
b, m, p = float(b), float(m), float(p)
prof = pprof_reader.load(os.path.join(out, "ml2.pb.gz"))
tot = ok = allsamp = 0
for names, vals, labels in prof.stacks():
    allsamp += vals[0]
    if labels.get("process_name") != "fixedwork" or "bench_leaf" not in names:
        continue
    tot += vals[0]
    i = names.index("bench_leaf")
    if names[i:i+3] == ["bench_leaf", "bench_mid", "worker"] and names[-2:] == ["start_thread", "clone3"]:
        ok += vals[0]
log = open(os.path.join(out, "ml2.log")).read()
us = re.search(r"([0-9.]+) us CPU/sample", log)
# perf: full chains in perf script output for the workload.
ps = subprocess.run(["perf", "script", "-i", os.path.join(out, "perf.data"), "-F", "comm,ip,sym"],
                    capture_output=True, text=True).stdout
ptot = pok = 0
for block in ps.split("\n\n"):
    lines = [l.split()[-1] for l in block.strip().splitlines()[1:] if l.strip()]
    if "bench_leaf" not in lines:
        continue
    ptot += 1
    i = lines.index("bench_leaf")
    if lines[i:i+3] == ["bench_leaf", "bench_mid", "worker"] and lines[-1] in ("clone3", "__clone3"):
        pok += 1
# mlprof CPU per sample over the whole run (user+sys of the process / samples collected in it).
samples_run1 = None
print("| metric | baseline | mlprof record -a -F 99 | perf record -a -F 99 --call-graph dwarf |")
print("|---|---|---|---|")
print("| fixed-work wall time (median, s) | %.3f | %.3f | %.3f |" % (b, m, p))
print("| slowdown vs baseline | 1.000 | %.3f (%+.1f%%) | %.3f (%+.1f%%) |" % (m / b, (m / b - 1) * 100, p / b, (p / b - 1) * 100))
print("| full-chain ratio (bench_leaf samples) | - | %.3f (%d/%d) | %.3f (%d/%d) |" % (ok / max(tot, 1), ok, tot, pok / max(ptot, 1), pok, ptot))
print("| mlprof CPU per sample (pipeline, us) | - | %s | - |" % (us.group(1) if us else "n/a"))
print("| mlprof process CPU (user+sys, s) during one run | - | %.2f | - |" % (float(mu) + float(ms)))
print("| mlprof peak RSS (MB) | - | %.1f | - |" % (int(mrss) / 1024))
print("mlprof/perf slowdown ratio: %.3f" % ((m / b - 1) / max(p / b - 1, 1e-9) if p > b else float('nan')))
PY
echo "raw: baseline=${base[*]} mlprof=${ml[*]} perf=${pf[*]} (outputs in $OUT)"
