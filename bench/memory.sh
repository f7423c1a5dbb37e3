#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Memory-profiling overhead benchmark (run as root on an otherwise idle machine).
#   bench/memalloc.c (-O2, no frame pointers, THP off): one thread per core, each round
#   2048 small mallocs/frees plus one 4 MiB malloc written page by page and freed (a fresh
#   mmap: 1024 write faults, then munmap): >= 10^6 small allocations/s and >= 1 GiB/s of
#   page faults on an idle 2-core VM. Run alone, under `mlprof record --no-memory`, under
#   `mlprof record` (memory-growth profile on, default --memory-sample 512 and
#   --memory-max-faults: above that fault rate the page-fault programs are attached in
#   random slots only), `mlprof record --memory-max-faults 0` (always attached), and under
#   `perf record -e exceptions:page_fault_user -g` (the peer: a stack for every fault),
#   plus `mlprof record --memory-sample N --memory-max-faults 0` for each N in SWEEP (what
#   the cost is made of: 1048576 KiB captures almost nothing, so it leaves the per-fault BPF
#   cost alone).
# Each repetition runs every configuration once, in a rotated order; medians over the
# repetitions. The budget row (memory on vs --no-memory) is the median of per-repetition
# ratios: on a shared VM the machine's speed drifts between repetitions by more than the
# effect, so many short repetitions (40+, 100 for a 2% effect) beat a few long ones. When
# neighbours on the host make even that too noisy (its bootstrap SE says so), the row on the
# first quartile of per-round thread CPU time (memalloc times every round) is the steadier
# one: every round pays the profiler's per-fault cost, a neighbour slows only some rounds.
# SMALL=40960 ROUNDS=50 gives the issue's workload: >= 10^6 small allocations/s and about
# 1 GiB/s of page faults, most CPU time in malloc/free; the default SMALL (2048) faults as
# fast as the machine can (~4 GiB/s on 2 vCPUs: nearly all time in the fault path). Slowdown = median workload wall time / median baseline wall time; on a
# shared machine the workload's own CPU time (user+sys: the BPF programs run in the
# faulting thread, so their cost is in it) is the steadier measure of the same cost.
# MLPROF_OLD=another mlprof binary adds its `record` (memory on) as configuration "memold"
# (before/after side by side in one run). BPF_STATS=1 ends with one more run of each mlprof
# binary with kernel.bpf_stats_enabled=1 and prints every memory program's run count and
# mean run time (bpftool prog show): how often BPF runs per page fault and what one run
# costs (the stats' own clock reads add ~20 ns per run, so they are not used for timing).
# Usage: bench/memory.sh [REPEATS] [ROUNDS]      (default 40 200)
#   env: MLPROF (build/mlprof), MLPROF_OLD (none), THREADS (nproc), SMALL (2048),
#        BLOCK_KIB (4096), SWEEP ("1048576"; "" for none), BPF_STATS (0),
#        MAX_S (1200: no new repetition starts after this many seconds),
#        COMPONENTS (20: repetitions of the per-event cost runs, bench/memcost.c; 0 for none)
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS=${1:-40}
ROUNDS=${2:-200}
MLPROF=${MLPROF:-build/mlprof}
THREADS=${THREADS:-$(nproc)}
SMALL=${SMALL:-2048}
BLOCK_KIB=${BLOCK_KIB:-4096}
SWEEP=${SWEEP-1048576}
MAX_S=${MAX_S:-1200}
COMPONENTS=${COMPONENTS:-20}
MLPROF_OLD=${MLPROF_OLD:-}
BPF_STATS=${BPF_STATS:-0}
OUT=$(mktemp -d /tmp/mlprof-membench.XXXXXX)
command -v perf >/dev/null ||
	{ echo "bench: perf not installed (apt-get install linux-perf)"; exit 1; }
[ -x "$MLPROF" ] || { echo "bench: $MLPROF not built (scripts/build.sh)"; exit 1; }
cc -O2 -fomit-frame-pointer -pthread -o "$OUT/memalloc" bench/memalloc.c
WL=("$OUT/memalloc" "$THREADS" "$ROUNDS" "$SMALL" "$BLOCK_KIB")

CONFIGS=(base nomem mem memall perf)
[ -n "$MLPROF_OLD" ] && CONFIGS+=(memold)
for s in $SWEEP; do CONFIGS+=("mem$s"); done

# BPF programs (anyone's) attached to exceptions:page_fault_user right now: each one runs on
# every page fault of the machine, so another profiler's slows the baseline down too.
fault_progs() { bpftool perf list 2>/dev/null | grep -c page_fault_user || true; }

# The mlprof command line of configuration $1 (nomem, mem, memall: the page-fault programs
# always attached, memold, mem<KiB>: --memory-sample, always attached), writing its profile
# to $2, into the array PROF.
profiler_argv() {
	PROF=("$MLPROF" record -o "$2")
	case $1 in
	nomem) PROF+=(--no-memory) ;;
	memall) PROF+=(--memory-max-faults 0) ;;
	memold) PROF[0]=$MLPROF_OLD ;;
	mem?*) PROF+=(--memory-sample "${1#mem}" --memory-max-faults 0) ;;
	esac
}

# One run of configuration $1, repetition $2: appends
#   cfg wall_s cpu_s allocs bytes minflt tool_cpu_s round_p25_us round_med_us captures lost
#   other_fault_progs watched_pct
# to $OUT/runs.txt (tool_cpu_s: the profiler's CPU while the workload ran, as the workload
# read it from /proc/PPID/stat; the BPF programs run in the faulting thread and count in
# the workload's own CPU).
run_one() {
	local cfg=$1 rep=$2 log="$OUT/$1.$2.log" wl cap=0 lost=0 others watched=100
	others=$(fault_progs)
	case $cfg in
	base)
		wl=$("${WL[@]}")
		;;
	nomem | mem*)
		profiler_argv "$cfg" "$OUT/$cfg.pb.gz"
		wl=$("${PROF[@]}" --log-level debug -- "${WL[@]}" 2>"$log")
		# captured stacks: the BPF counter (the rate cap can take fewer than MiB / KiB)
		cap=$(sed -n 's/.*BPF counter memory_samples: \([0-9]*\).*/\1/p' "$log")
		# (a binary without that counter: MiB brought in / KiB per capture)
		[ -n "$cap" ] || cap=$(sed -n \
			's/^mlprof: memory: \([0-9.]*\) MiB .*sampled every \([0-9]*\) KiB.*/\1 \2/p' \
			"$log" | awk '{printf "%d", $1 * 1024 / $2 + 0.5}')
		cap=${cap:-0}
		# the share of the time the page-fault programs were attached (--memory-max-faults)
		watched=$(sed -n 's/.*page faults watched \([0-9]*\)% of the time.*/\1/p' "$log")
		watched=${watched:-100}
		rm -f "$OUT/$cfg".*pb.gz "$OUT/$cfg".*html
		;;
	perf)
		wl=$(perf record -e exceptions:page_fault_user -g -o "$OUT/perf.data" -- "${WL[@]}" \
			2>"$log")
		cap=$(sed -n 's/.*perf record: Captured and wrote .* (\([0-9]*\) samples).*/\1/p' "$log")
		cap=${cap:-0}
		lost=$(sed -n 's/.*[Ll]ost \([0-9]*\) .*/\1/p' "$log" | awk '{n += $1} END {print n + 0}')
		rm -f "$OUT/perf.data" "$OUT/perf.data.old"
		;;
	esac
	echo "$cfg $wl $cap $lost $others $watched" >>"$OUT/runs.txt"
}

start=$(date +%s)
: >"$OUT/runs.txt"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
done_reps=0
for rep in $(seq "$REPEATS"); do
	if [ $(($(date +%s) - start)) -ge "$MAX_S" ]; then
		echo "bench: time bound (${MAX_S}s) reached after $done_reps repetitions" >&2
		break
	fi
	n=${#CONFIGS[@]}
	for i in $(seq 0 $((n - 1))); do
		run_one "${CONFIGS[$(((i + rep - 1) % n))]}" "$rep"
	done
	done_reps=$rep
	echo "bench: repetition $rep done ($(($(date +%s) - start)) s)" >&2
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$OUT/runs.txt" "$done_reps" "$THREADS" "$ROUNDS" "$SMALL" "$BLOCK_KIB" \
	"$load0" "$load1" "${CONFIGS[@]}" <<'PY'
import random, statistics, sys
path, reps, threads, rounds, small, block_kib, load0, load1 = sys.argv[1:9]
configs = sys.argv[9:]
runs = {}
for line in open(path):
    f = line.split()
    runs.setdefault(f[0], []).append([float(x) for x in f[1:]])
med = lambda xs: statistics.median(xs)
def se_med(xs):
    """Bootstrap standard error of the median of xs."""
    rng = random.Random(1)
    return statistics.stdev([med(rng.choices(xs, k=len(xs))) for _ in range(1000)])
col = lambda cfg, i: [r[i] for r in runs[cfg]]
names = {"base": "baseline", "nomem": "mlprof record --no-memory",
         "mem": "mlprof record (memory on, 512 KiB)",
         "memall": "mlprof record --memory-max-faults 0 (page-fault programs always attached)",
         "memold": "MLPROF_OLD record (memory on, 512 KiB)",
         "perf": "perf record -e exceptions:page_fault_user -g"}
for c in configs:
    if c.startswith("mem") and c not in ("mem", "memold", "memall"):
        names[c] = "mlprof record --memory-sample %s --memory-max-faults 0" % c[3:]
b = med(col("base", 0))
print("| metric | " + " | ".join(names[c] for c in configs) + " |")
print("|---" * (len(configs) + 1) + "|")
def row(label, fn):
    print("| %s | %s |" % (label, " | ".join(fn(c) for c in configs)))
row("workload wall time (median, s)", lambda c: "%.3f" % med(col(c, 0)))
row("slowdown vs baseline", lambda c: "%.3f (%+.1f%%)" % (med(col(c, 0)) / b,
                                                          (med(col(c, 0)) / b - 1) * 100))
row("slowdown, median of per-repetition ratios", lambda c: "%.3f" % med(
    [x / y for x, y in zip(col(c, 0), col("base", 0))]))
row("wall time min-max (s)", lambda c: "%.2f-%.2f" % (min(col(c, 0)), max(col(c, 0))))
bc = med(col("base", 1))
if "nomem" in configs:
    n = med(col("nomem", 0))
    nc = med(col("nomem", 1))
    # paired: each repetition's ratio to the --no-memory run of the same repetition (the
    # machine's speed drifts between repetitions more than the effect being measured)
    pair = lambda c, i: [x / y for x, y in zip(col(c, i), col("nomem", i))]
    row("**workload CPU vs --no-memory** (memory on vs off: the budget; median of "
        "per-repetition ratios, ± its bootstrap SE)", lambda c: "-" if c in (
            "base", "nomem", "perf") else "%+.1f%% ± %.1f" % (
                (med(pair(c, 1)) - 1) * 100, se_med(pair(c, 1)) * 100))
    row("**round CPU, first quartile, vs --no-memory** (the same, on each run's first "
        "quartile of per-round thread CPU time: sheds the rounds a host neighbour slowed)",
        lambda c: "-" if c in ("base", "nomem", "perf") else "%+.1f%% ± %.1f" % (
            (med(pair(c, 6)) - 1) * 100, se_med(pair(c, 6)) * 100))
    row("wall time vs --no-memory (median of per-repetition ratios)", lambda c: "-" if c in (
        "base", "nomem", "perf") else "%+.1f%%" % ((med(pair(c, 0)) - 1) * 100))
row("workload CPU, user+sys (median, s)", lambda c: "%.3f" % med(col(c, 1)))
row("round CPU, first quartile / median of rounds (median over runs, µs)",
    lambda c: "%.0f / %.0f" % (med(col(c, 6)), med(col(c, 7))))
row("workload CPU vs baseline", lambda c: "%.3f (%+.1f%%)" % (med(col(c, 1)) / bc,
                                                              (med(col(c, 1)) / bc - 1) * 100))
row("added workload CPU per page fault (ns)", lambda c: "-" if c == "base" else "%+.0f" % (
    (med(col(c, 1)) - bc) / med(col(c, 4)) * 1e9))
row("small allocations/s (M)", lambda c: "%.2f" % (med([r[2] / r[0] for r in runs[c]]) / 1e6))
row("page faults/s (k), GiB/s", lambda c: "%.0f, %.2f" % (
    med([r[4] / r[0] for r in runs[c]]) / 1e3, med([r[3] / r[0] for r in runs[c]]) / 2**30))
row("profiler CPU while the workload ran (median, s)",
    lambda c: "-" if c == "base" else "%.2f" % med(col(c, 5)))
row("page-fault programs attached (% of the time, median)",
    lambda c: "%d%%" % med(col(c, 11)) if c.startswith("mem") else "-")
row("stacks captured (median)", lambda c: "-" if c in ("base", "nomem") else
    "%d" % med(col(c, 8)) + (" (lost %d)" % med(col(c, 9)) if c == "perf" else ""))
print()
print("workload: %s threads x %s rounds x (%s small allocations + one %s KiB block); "
      "%s repetitions; load average before %s, after %s" % (
          threads, rounds, small, block_kib, reps, load0, load1))
print("BPF programs of others on exceptions:page_fault_user at the start of a run: "
      "min %d, max %d" % (min(r[10] for v in runs.values() for r in v),
                         max(r[10] for v in runs.values() for r in v)))
print("raw wall times: " + "; ".join("%s=%s" % (c, ",".join("%.3f" % x for x in col(c, 0)))
                                     for c in configs))
PY

# Per-event costs (bench/memcost.c: fastest of many short rounds, under each configuration,
# COMPONENTS repetitions in a rotated order) and the overhead they add up to at memalloc's
# event rates (counted once with perf stat, no profiler): a model that a host neighbour
# cannot blur, next to the measured rows above.
components() {
	local ev rates rep cfg i
	local cfgs=(nomem memall mem1048576)
	[ -n "$MLPROF_OLD" ] && cfgs+=(memold)
	ev=$(perf stat -x, -e syscalls:sys_enter_mprotect -e page-faults -- "${WL[@]}" 2>&1 >/dev/null)
	rates="$(awk -F, '/sys_enter_mprotect/ {m = $1} /page-faults/ {f = $1} END {print m, f}' <<<"$ev")"
	: >"$OUT/cost.txt"
	for rep in $(seq "$COMPONENTS"); do
		for i in "${!cfgs[@]}"; do
			cfg=${cfgs[$(((i + rep) % ${#cfgs[@]}))]}
			profiler_argv "$cfg" "$OUT/cost.pb.gz"
			echo "$cfg $("${PROF[@]}" -- "$OUT/memcost" 30 2>/dev/null)" >>"$OUT/cost.txt"
			rm -f "$OUT"/cost.*pb.gz
		done
	done
	python3 - "$OUT/cost.txt" "$OUT/runs.txt" $rates "${cfgs[@]}" <<'PY'
import statistics, sys
path, runs, mprot, faults = sys.argv[1:5]
cfgs = sys.argv[5:]
# the workload's CPU time alone (the counts are the same in every run: fixed work)
cpu = statistics.median(float(l.split()[2]) for l in open(runs) if l.startswith("base "))
mprot, faults = float(mprot), float(faults)
cost = {}
for line in open(path):
    f = line.split()
    if len(f) == 3:
        cost.setdefault(f[0], []).append((float(f[1]), float(f[2])))
med = lambda c, i: statistics.median(x[i] for x in cost[c])
print()
print("Per-event costs (bench/memcost.c, fastest of 30 rounds, median over %d runs) and the "
      "overhead they imply for memalloc (per run: %.0f page faults, %.0f mprotect calls, "
      "%.3f s of CPU alone):" % (len(cost["nomem"]), faults, mprot, cpu))
print()
print("| configuration | write fault (ns) | added | mprotect (ns) | added | implied workload CPU vs --no-memory |")
print("|---|---|---|---|---|---|")
f0, m0 = med("nomem", 0), med("nomem", 1)
for c in cfgs:
    f, m = med(c, 0), med(c, 1)
    implied = ((f - f0) * faults + (m - m0) * mprot) / 1e9 / cpu
    print("| %s | %.0f | %+.0f | %.0f | %+.0f | %s |" % (
        c, f, f - f0, m, m - m0, "-" if c == "nomem" else "%+.1f%%" % (implied * 100)))
# the default configuration: memall's costs, its faults seen only while attached
watched = [float(l.split()[12]) / 100 for l in open(runs) if l.startswith("mem ")]
if watched and "memall" in cost:
    w = statistics.median(watched)
    f, m = med("memall", 0), med("memall", 1)
    print("| mem (memall's costs, faults seen %.0f%% of the time as in the runs above) | "
          "- | %+.0f | - | %+.0f | %+.1f%% |" % (
              w * 100, (f - f0) * w, m - m0,
              ((f - f0) * w * faults + (m - m0) * mprot) / 1e9 / cpu * 100))
PY
}
if [ "$COMPONENTS" -gt 0 ]; then
	cc -O2 -o "$OUT/memcost" bench/memcost.c
	components
fi

# BPF run-time statistics of the memory programs: one run per mlprof binary.
bpf_stats() {
	local bin=$1 name=$2 prev
	prev=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	local t0
	t0=$(date +%s)
	"$bin" record -o "$OUT/stats.pb.gz" -- "${WL[@]}" 2>"$OUT/stats.log" >"$OUT/stats.wl" &
	local pid=$! progs
	# read while the programs are loaded: the workload's last seconds
	while kill -0 "$pid" 2>/dev/null && ! grep -q . "$OUT/stats.wl"; do
		progs=$(bpftool prog show -j 2>/dev/null || true)
		sleep 0.5
	done
	wait "$pid" || true
	sysctl -qw kernel.bpf_stats_enabled="$prev"
	python3 -c '
import json, sys
name, wl, t0 = sys.argv[1], open(sys.argv[2]).read().split(), int(sys.argv[4])
faults = float(wl[4]) if len(wl) > 4 else 0
progs = json.loads(sys.argv[3] or "[]")
for p in progs:
    n = p.get("name", "")
    mine = p.get("loaded_at", 0) >= t0  # loaded by this run (bpftool 7.1 shows no pids)
    if mine and n.startswith(("on_fault", "on_munmap", "on_madvise", "on_brk", "on_mremap", "on_exit_mmap", "on_mmap_unlock")) and p.get("run_cnt"):
        print("%s %s: %d runs (%.4f per page fault of the workload, %d faults), %.0f ns per run, %.1f ns per fault" % (
            name, n, p["run_cnt"], p["run_cnt"] / faults if faults else 0, faults,
            p["run_time_ns"] / p["run_cnt"], p["run_time_ns"] / faults if faults else 0))
' "$name" "$OUT/stats.wl" "$progs" "$t0"
	rm -f "$OUT"/stats.*pb.gz
}
if [ "$BPF_STATS" = 1 ]; then
	echo
	echo "BPF run-time statistics (kernel.bpf_stats_enabled=1, one run each, programs loaded"
	echo "since the run started; read up to 0.5 s before the workload ends, so runs per fault are a"
	echo "slight underestimate):"
	bpf_stats "$MLPROF" "$MLPROF"
	[ -n "$MLPROF_OLD" ] && bpf_stats "$MLPROF_OLD" "$MLPROF_OLD"
fi
echo "outputs in $OUT"
