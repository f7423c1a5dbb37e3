#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mlprof's steady-state CPU per sample on the PyPI torch CPU loop (issue 18's "once every
# library has been seen once" budget): `record -F 99` (defaults) of bench/torchloop.py for
# 30 s; the CPU of every mlprof thread from 12 s to 27 s (/proc/PID/task/*/schedstat) over
# the 99 samples a second of that window, by thread; plus record's own summary (dropped
# samples, complete stacks, CPU per sample over the whole run). With MLPROF_BASE the runs
# alternate between two builds: this VM's speed drifts by tens of percent within an hour,
# so only runs made back to back compare.
# Usage: bench/steady.sh [RUNS]   (default 3; ~37 s a run)
# Environment: MLPROF (build/mlprof), MLPROF_BASE (a second build, optional), TORCH_PY
#   (~/.cache/mlprof/torch-venv/bin/python), FREQ (99).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
MLPROF=${MLPROF:-build/mlprof}
MLPROF_BASE=${MLPROF_BASE:-}
TORCH_PY=${TORCH_PY:-$HOME/.cache/mlprof/torch-venv/bin/python}
FREQ=${FREQ:-99}
"$TORCH_PY" -c 'import torch' 2>/dev/null ||
	{ echo "bench/steady.sh: $TORCH_PY cannot import torch (set TORCH_PY)"; exit 1; }
OUT=$(mktemp -d /tmp/mlprof-steady.XXXXXX)
echo "bench/steady.sh: outputs in $OUT" >&2

# every thread's name and CPU ns so far
snap() { for t in /proc/"$1"/task/*; do echo "$(cat "$t/comm") $(cut -d' ' -f1 "$t/schedstat")"; done 2>/dev/null; }

one() { # LABEL RUN BINARY
	local d="$OUT/$1.$2" rp
	mkdir -p "$d"
	"$3" record -F "$FREQ" -o "$d/p.pb.gz" -- "$TORCH_PY" bench/torchloop.py 30 2 \
		>"$d/out" 2>"$d/err" &
	rp=$!
	sleep 12
	snap "$rp" >"$d/a"
	sleep 15
	snap "$rp" >"$d/b"
	wait "$rp" || { echo "bench/steady.sh: record failed, see $d/err"; return 1; }
	python3 - "$d" "$FREQ" "$1" <<'PY'
import collections, re, sys
d, freq, label = sys.argv[1], float(sys.argv[2]), sys.argv[3]
def rd(f):
    r = collections.defaultdict(int)
    for l in open(f):
        n, v = l.rsplit(" ", 1)
        r[n] += int(v)
    return r
a, b = rd(d + "/a"), rd(d + "/b")
n = freq * 15
by = {k: (b[k] - a.get(k, 0)) / 1e3 / n for k in b}
err = open(d + "/err").read()
summ = re.search(r"(\d+) dropped.*?([0-9.]+)% user stacks complete, ([0-9.]+) us CPU/sample", err)
print("%-5s %6.1f us/sample in steady state (%s)%s" % (
    label, sum(by.values()), ", ".join("%s %.1f" % (k, v) for k, v in sorted(by.items()) if v >= 0.1),
    "; whole run: %s dropped, %s%% complete stacks, %s us/sample" % summ.groups() if summ else
    "; no summary line"))
PY
}

for i in $(seq "$RUNS"); do
	[ -z "$MLPROF_BASE" ] || one base "$i" "$MLPROF_BASE"
	one new "$i" "$MLPROF"
done
