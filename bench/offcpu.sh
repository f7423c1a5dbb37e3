#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Off-CPU overhead benchmark (run as root on an otherwise idle machine): a context-switch-
# heavy workload (bench/pingpong.c: PAIRS pairs of threads ping-ponging one byte over two
# pipes, each pair pinned to one CPU by default) runs a fixed number of round trips
#   alone,
#   under `mlprof record -F 99 -p PID` (CPU sampling only),
#   under `mlprof record -F 99 --off-cpu -p PID`,
#   under `perf record -e sched:sched_switch -g -p PID` (the peer: one event with a
#     frame-pointer call chain per switch-out, all written to disk),
# REPS times each (order rotated per rep), for two workloads: no work between hand-offs
# (the worst case, several 10^5 switches/s) and enough CPU work per hand-off for about
# 10^5 switches/s in all. The threads exist before the profiler attaches (pingpong -s waits
# for SIGUSR1), so -p sees all of them and start-up is not timed.
# Reports wall time and slowdown, and the slowdown in the workload's CPU time per switch
# (a sched_switch program runs in, and is charged to, the switching threads; a loaded
# machine disturbs it less than wall time): medians, per-rep ratios and the best run of
# each configuration (other load only ever adds time). Also switches/s, the profiler's
# CPU while the workload ran per switch-out and per captured stack, switch-outs seen and
# captured, peak RSS, the off-CPU seconds in mlprof's profile against the workload's real
# off-CPU time, and how many other sched_switch programs (BPF programs named on_switch,
# e.g. other mlprof instances: they tax every switch, the baseline's included) were loaded.
# Then (DIAG=1, default; first workload only) one run per off-CPU setting with BPF run-time
# statistics on (--off-cpu-rate 50/500/5000, --off-cpu-min-us 0 and 1000): the
# sched_switch program's run time per call, a least-squares split into a fixed cost per
# call and a cost per captured stack, and the mlprof process's CPU per captured stack.
# Usage: bench/offcpu.sh [REPS]      (default 5; 4-6 minutes on 2 vCPUs)
# Environment: MLPROF (default build/mlprof), PAIRS (default nproc), WORKLOADS (target
# switches/s of each workload, 0 = as fast as it goes; default "0 100000"; the work per
# hand-off is calibrated from the least CPU per switch of three short runs at two
# settings), TARGET_S (seconds a run takes on otherwise idle CPUs, default 3), PIN (1: pair
# i on CPU i % ncpu; 0: not pinned), ATTACH_S (seconds given to the profiler to attach;
# for mlprof counted from its "sampling" log line; default 1.5), DIAG (0: no diagnosis
# runs), DIAG_RATES (default "50 500 5000").
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REPS=${1:-5}
MLPROF=${MLPROF:-build/mlprof}
PAIRS=${PAIRS:-$(nproc)}
WORKLOADS=${WORKLOADS:-0 100000}
TARGET_S=${TARGET_S:-3}
PIN=${PIN:-1}
ATTACH_S=${ATTACH_S:-1.5}
DIAG=${DIAG:-1}
DIAG_RATES=${DIAG_RATES:-50 500 5000}
OUT=$(mktemp -d /tmp/mlprof-offcpu.XXXXXX)
[ -x "$MLPROF" ] || { echo "bench/offcpu.sh: $MLPROF not built (scripts/build.sh)"; exit 1; }
command -v perf >/dev/null || { echo "bench/offcpu.sh: perf not installed (apt-get install linux-perf)"; exit 1; }
[ -x /usr/bin/time ] || apt-get install -y -qq time >/dev/null
cc -O2 -pthread -o "$OUT/pingpong" bench/pingpong.c
PINOPT=(); [ "$PIN" = 1 ] && PINOPT=(-c)

# BPF run-time statistics of the sched_switch program: enables them (BPF_ENABLE_STATS, held
# by an fd: off again when this helper exits), takes an fd on the program mlprof PID loaded
# (so its counters outlive mlprof), touches READY_FILE, and prints "name run_time_ns
# run_cnt" after mlprof has exited.
{
	bpfstats_py
	cat <<'PY'
pid, ready = int(sys.argv[1]), sys.argv[2]
fd = prog_fd(pid, "on_switch", time.time() + 30, 0.05)
t0 = info(fd)
open(ready, "w").close()
wait_gone(pid)
t1 = info(fd)
print(t1[0], t1[1] - t0[1], t1[2] - t0[2])
PY
} >"$OUT/bpfstats.py"

# foreign_switch_progs: BPF programs named on_switch loaded now (sched_switch hooks)
foreign_switch_progs() {
	bpftool prog show 2>/dev/null | grep -c ' name on_switch ' || true
}

# run CONFIG TAG [STATS] [EXTRA mlprof ARGS...]: one run of the workload $W (pingpong
# arguments in WARGS); leaves $W/TAG.{json,pp,log,time,cpu,progs[,bpf]}
run() {
	local c=$1 f="$W/$2" stats=${3:-0} w t= m= c0 c1 k
	shift 3 || shift $#
	"$OUT/pingpong" -s "${PINOPT[@]}" "${WARGS[@]}" >"$f.json" 2>"$f.pp" &
	w=$!
	for k in $(seq 200); do grep -qs ready "$f.pp" && break; sleep 0.05; done
	case $c in
	base) ;;
	mlcpu) /usr/bin/time -f "%U %S %M" -o "$f.time" "$MLPROF" record -F 99 -p $w \
		--log-level info -o "$f.pb.gz" "$@" >"$f.log" 2>&1 & ;;
	mloff) /usr/bin/time -f "%U %S %M" -o "$f.time" "$MLPROF" record -F 99 --off-cpu -p $w \
		--log-level info -o "$f.pb.gz" "$@" >"$f.log" 2>&1 & ;;
	perf) /usr/bin/time -f "%U %S %M" -o "$f.time" perf record -e sched:sched_switch -g \
		-p $w -o "$f.data" >"$f.log" 2>&1 & ;;
	esac
	if [ "$c" != base ]; then
		t=$!
		for k in $(seq 100); do
			m=$(cat /proc/$t/task/$t/children 2>/dev/null || true); m=${m%% *}
			[ -n "$m" ] && break; sleep 0.02
		done
		if [ "$stats" = 1 ]; then
			python3 "$OUT/bpfstats.py" "$m" "$f.ready" >"$f.bpf" &
			for k in $(seq 200); do [ -e "$f.ready" ] && break; sleep 0.05; done
		fi
	fi
	# mlprof logs "sampler: sampling N CPUs ..." once its programs are attached (start-up
	# takes longer on a loaded machine); perf is ready once it has an event open for every
	# thread of the workload
	if [ "${c#ml}" != "$c" ]; then
		for k in $(seq 600); do grep -qs 'sampler: sampling' "$f.log" && break; sleep 0.05; done
	elif [ "$c" = perf ]; then
		for k in $(seq 600); do
			[ "$(ls -l /proc/"$m"/fd 2>/dev/null | grep -c 'perf_event')" -ge $((2 * PAIRS + 1)) ] &&
				break
			sleep 0.05
		done
	fi
	sleep "$ATTACH_S"
	foreign_switch_progs >"$f.progs"
	c0=$(cpu_ns "$m")
	kill -USR1 $w
	wait $w || echo "bench/offcpu.sh: pingpong exited with $? ($f)" >&2
	c1=$(cpu_ns "$m")
	echo "$c0 $c1" >"$f.cpu"
	if [ -n "$t" ]; then
		# the profiler stops by itself when its PID exits; Ctrl-C it if it does not
		for k in $(seq 300); do kill -0 $t 2>/dev/null || break; sleep 0.1; done
		kill -0 $t 2>/dev/null && kill -INT "$m" 2>/dev/null || true
		wait $t || echo "bench/offcpu.sh: $c exited with $? ($f.log)" >&2
		[ "$stats" = 1 ] && wait
	fi
	rm -f "$f.data" "$f.data.old"  # perf's raw events: hundreds of MB per run
}

CONFIGS=(base mlcpu mloff perf)
WDIRS=()
# cpu_per_switch ITERS ROUNDS: CPU seconds per switch, the least of 3 short runs alone
# (other load inflates it, never deflates it)
cpu_per_switch() {
	for k in 1 2 3; do "$OUT/pingpong" "${PINOPT[@]}" -w "$1" "$PAIRS" "$2"; done |
		python3 -c 'import json,sys; print(min(json.loads(l)["cpu_s"] / json.loads(l)["switches"] for l in sys.stdin))'
}
c0=$(cpu_per_switch 0 50000)
c1=$(cpu_per_switch 20000 5000)
for rate in $WORKLOADS; do
	W="$OUT/rate$rate"; mkdir -p "$W"; WDIRS+=("$W")
	# CPU per switch = c0 + iters * (c1 - c0) / 20000; with pinned pairs each CPU is always
	# busy, so the rate is CPUs in use / CPU per switch
	read -r iters rounds < <(python3 -c '
import sys
c0, c1, rate, pairs, ncpu, pin, t = (float(x) for x in sys.argv[1:])
cpus = min(pairs, ncpu) if pin else ncpu
k = max((c1 - c0) / 20000, 1e-12)
it = max(0, round((cpus / rate - c0) / k)) if rate > 0 else 0
cps = c0 + it * k
print(it, max(1000, round(t * cpus / pairs / (2 * cps))))' \
		"$c0" "$c1" "$rate" "$PAIRS" "$(nproc)" "$PIN" "$TARGET_S")
	WARGS=(-w "$iters" "$PAIRS" "$rounds")
	echo "$rate $iters $rounds" >"$W/workload"
	echo "bench/offcpu.sh: workload for $rate switches/s (0: no work; $iters loop iterations per hand-off), $PAIRS pairs x $rounds round trips: $REPS reps of ${CONFIGS[*]}; outputs in $W" >&2
	for i in $(seq "$REPS"); do
		for k in "${!CONFIGS[@]}"; do
			c=${CONFIGS[$(((k + i - 1) % ${#CONFIGS[@]}))]}
			run "$c" "$c.$i"
		done
	done
	if [ "$DIAG" = 1 ] && [ "${#WDIRS[@]}" = 1 ]; then
		echo "bench/offcpu.sh: diagnosis runs (BPF run-time statistics on)" >&2
		run mlcpu diag.cpu 0  # no sched_switch program: only the CPU-only reference
		for r in $DIAG_RATES; do
			run mloff "diag.rate$r" 1 --off-cpu-rate "$r"
		done
		run mloff diag.min0 1 --off-cpu-min-us 0
		run mloff diag.min1000 1 --off-cpu-min-us 1000
	fi
done

python3 - "$OUT" "$REPS" "$MLPROF" "$PAIRS" "$PIN" "$DIAG" "$DIAG_RATES" "${WDIRS[@]}" <<'PY'
import json, os, re, statistics, sys
top, reps, mlprof, pairs, pin, diag, rates = sys.argv[1:8]
wdirs = sys.argv[8:]
reps, pairs = int(reps), int(pairs)
CFG = ["base", "mlcpu", "mloff", "perf"]
HDR = {"base": "workload alone", "mlcpu": "`mlprof record -F 99` (CPU only)",
       "mloff": "`mlprof record -F 99 --off-cpu`",
       "perf": "`perf record -e sched:sched_switch -g`"}


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def load(out, tag):
    f = os.path.join(out, tag)
    try:
        j = json.loads(open(f + ".json").read())
    except (OSError, ValueError):
        print("%s: no result (see %s.pp)" % (tag, f))
        return None
    c0, c1 = (float(x) for x in open(f + ".cpu").read().split())
    r = dict(wall=j["wall_s"], sps=j["switches_per_s"], sw=j["switches"], wcpu=j["cpu_s"],
             pcpu=(c1 - c0) / 1e9 if c1 >= c0 else None)
    # off-CPU time the workload really had: every thread (workers and the main thread,
    # which waits in pthread_join) is off the CPU whenever it is not running
    r["offcpu_true"] = (2 * j["pairs"] + 1) * j["wall_s"] - j["cpu_s"]
    try:
        r["progs"] = int(open(f + ".progs").read().split()[0])
    except (OSError, ValueError, IndexError):
        r["progs"] = None
    if os.path.exists(f + ".time"):
        u, s, rss = open(f + ".time").read().split()[-3:]
        r["ptotal"], r["rss"] = float(u) + float(s), int(rss) / 1024
    log = open(f + ".log").read() if os.path.exists(f + ".log") else ""
    m = re.search(r"([0-9.]+) us CPU/sample", log)
    r["us_sample"] = float(m.group(1)) if m else None
    m = re.search(r"off-CPU: ([0-9.]+) s in (\d+) stacks; (\d+) switch-outs, (\d+) captured "
                  r"\(sampled, weighted\), (\d+) shorter", log)
    if m:
        r["off_s"], r["off_stacks"], r["swout"], r["capt"], r["short"] = (
            float(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
    m = re.search(r"lost: (\d+) over the rate cap, (\d+) ends, (\d+) unmatched, (\d+) over", log)
    r["lost"] = tuple(int(x) for x in m.groups()) if m else (0, 0, 0, 0)
    m = re.search(r"Captured and wrote ([0-9.]+) MB .*\((\d+) samples\)", log)
    if m:
        r["perf_mb"], r["swout"], r["capt"] = float(m.group(1)), int(m.group(2)), int(m.group(2))
    if os.path.exists(f + ".bpf"):
        try:
            name, ns, cnt = open(f + ".bpf").read().split()
            r["bpf_ns"], r["bpf_cnt"] = int(ns), int(cnt)
        except ValueError:
            pass
    return r


def report(out, first):
    target, iters, rounds = open(os.path.join(out, "workload")).read().split()
    R = {c: [load(out, "%s.%d" % (c, i)) for i in range(1, reps + 1)] for c in CFG}
    ok = {c: [x for x in R[c] if x] for c in CFG}
    if not ok["base"]:
        print("%s: no baseline runs" % out)
        return

    def col(c, k):
        return [x[k] for x in ok[c] if x.get(k) is not None]

    b = med(col("base", "wall"))
    # per-rep ratios (the configurations of one rep ran back to back): robust to drift
    pr = {c: [x["wall"] / y["wall"] for x, y in zip(R[c], R["base"]) if x and y] for c in CFG}
    bcpu_sw = med([x["wcpu"] / x["sw"] for x in ok["base"]])
    cps = {c: [x["wcpu"] / x["sw"] for x in ok[c]] for c in CFG}
    pc = {c: [x["wcpu"] / x["sw"] / (y["wcpu"] / y["sw"]) for x, y in zip(R[c], R["base"])
              if x and y] for c in CFG}
    print()
    print("#### Workload: %d pairs x %s round trips, %s; %s loop iterations of work per "
          "hand-off%s; %d reps, medians" % (
              pairs, rounds, "as fast as it goes" if target == "0" else
              "aimed at %s switches/s" % target, iters,
              ", pair i pinned to CPU i" if pin == "1" else ", not pinned", reps))
    print()
    print("| metric | " + " | ".join(HDR[c] for c in CFG) + " |")
    print("|---|" + "---|" * len(CFG))

    def row(label, fmt):
        cells = []
        for c in CFG:
            try:
                cells.append(fmt(c))
            except (KeyError, TypeError, ValueError, ZeroDivisionError,
                    statistics.StatisticsError):
                cells.append("-")
        print("| %s | %s |" % (label, " | ".join("-" if "nan" in x else x for x in cells)))

    def dash(c, f):
        return "-" if c == "base" else f(c)

    def only(c, want, f):
        return f(c) if c == want else "-"

    row("wall time (median, s)", lambda c: "%.3f" % med(col(c, "wall")))
    row("slowdown vs baseline (ratio of medians)", lambda c: "1.000" if c == "base" else
        "%.3f (%+.1f%%)" % (med(col(c, "wall")) / b, (med(col(c, "wall")) / b - 1) * 100))
    row("slowdown vs baseline (median of per-rep ratios; min..max)", lambda c: dash(
        c, lambda c: "%+.1f%% (%+.1f..%+.1f%%)" % (
            (med(pr[c]) - 1) * 100, (min(pr[c]) - 1) * 100, (max(pr[c]) - 1) * 100)))
    row("spread of the runs' wall times ((max-min)/median)", lambda c: "%.1f%%" % (
        (max(col(c, "wall")) - min(col(c, "wall"))) / med(col(c, "wall")) * 100))
    row("CPU-time slowdown: workload CPU per switch vs baseline (ratio of medians)",
        lambda c: "1.000" if c == "base" else "%.3f (%+.1f%%)" % (
            med(cps[c]) / bcpu_sw, (med(cps[c]) / bcpu_sw - 1) * 100))
    row("CPU-time slowdown (median of per-rep ratios; min..max)", lambda c: dash(
        c, lambda c: "%+.1f%% (%+.1f..%+.1f%%)" % (
            (med(pc[c]) - 1) * 100, (min(pc[c]) - 1) * 100, (max(pc[c]) - 1) * 100)))
    row("spread of the runs' CPU per switch ((max-min)/median)", lambda c: "%.1f%%" % (
        (max(cps[c]) - min(cps[c])) / med(cps[c]) * 100))
    # other load only ever adds time: the best run of each configuration is the least
    # disturbed estimate
    row("best run: wall time (s) and slowdown vs the best baseline run",
        lambda c: "%.3f" % min(col(c, "wall")) if c == "base" else "%.3f (%+.1f%%)" % (
            min(col(c, "wall")), (min(col(c, "wall")) / min(col("base", "wall")) - 1) * 100))
    row("best run: CPU per switch (ns) and CPU-time slowdown vs the best baseline run",
        lambda c: "%.0f" % (min(cps[c]) * 1e9) if c == "base" else "%.0f (%+.1f%%)" % (
            min(cps[c]) * 1e9, (min(cps[c]) / min(cps["base"]) - 1) * 100))
    row("context switches/s achieved (median)", lambda c: "%.0f" % med(col(c, "sps")))
    row("workload CPU per switch (user+sys of its threads, ns; median)",
        lambda c: "%.0f" % (med(cps[c]) * 1e9))
    row("... added vs baseline (ns; in-kernel work at each switch lands here)", lambda c: dash(
        c, lambda c: "%+.0f" % ((med(cps[c]) - bcpu_sw) * 1e9)))
    row("switch-outs seen by the profiler (median)", lambda c: dash(
        c, lambda c: "%d" % med(col(c, "swout")) if col(c, "swout") else "-"))
    row("switch-outs captured with a stack (median)", lambda c: dash(
        c, lambda c: "%d" % med(col(c, "capt")) if col(c, "capt") else "-"))
    row("profiler process CPU while the workload ran (s; median)",
        lambda c: dash(c, lambda c: "%.3f" % med(col(c, "pcpu"))))
    row("... per switch-out (ns)", lambda c: dash(c, lambda c: "%.0f" % (
        med([x["pcpu"] / x["swout"] for x in ok[c] if x.get("swout")]) * 1e9)))
    row("... per captured stack (us)", lambda c: dash(c, lambda c: "%.1f" % (
        med([x["pcpu"] / x["capt"] for x in ok[c] if x.get("capt")]) * 1e6)))
    row("... above CPU-only mlprof, per captured stack (us)", lambda c: only(
        c, "mloff", lambda c: "%.1f" % (
            (med(col(c, "pcpu")) - med(col("mlcpu", "pcpu"))) / med(col(c, "capt")) * 1e6)))
    row("mlprof summary `us CPU/sample` (median)", lambda c: dash(
        c, lambda c: "%.1f" % med(col(c, "us_sample")) if col(c, "us_sample") else "-"))
    row("profiler process CPU for the whole run incl. start-up and exit (s; median)",
        lambda c: dash(c, lambda c: "%.3f" % med(col(c, "ptotal"))))
    row("profiler peak RSS (MB; max)", lambda c: dash(c, lambda c: "%.1f" % max(col(c, "rss"))))
    row("perf.data written (MB; median)", lambda c: only(
        c, "perf", lambda c: "%.0f" % med(col(c, "perf_mb"))))
    row("off-CPU s in the profile / the workload's real off-CPU s (median)", lambda c: only(
        c, "mloff", lambda c: "%.2f / %.2f" % (med(col(c, "off_s")), med(col(c, "offcpu_true")))))
    row("captured intervals shorter than --off-cpu-min-us 10 (median)",
        lambda c: only(c, "mloff", lambda c: "%d" % med(col(c, "short"))))
    row("switch-outs lost over the per-window cap (median)", lambda c: only(
        c, "mloff", lambda c: "%d" % med([x["lost"][0] for x in ok[c]])))
    row("other tools' sched_switch programs (`on_switch`) loaded during the runs (min..max)",
        lambda c: "%d..%d" % (min(col(c, "progs")) - (c == "mloff"),
                              max(col(c, "progs")) - (c == "mloff")))
    print()
    for c in CFG:
        print("raw %s: wall %s; CPU/switch (ns) %s; switches/s %s" % (
            c, " ".join("%.3f" % x for x in col(c, "wall")),
            " ".join("%.0f" % (x * 1e9) for x in cps[c]),
            " ".join("%.0f" % x for x in col(c, "sps"))))

    if diag != "1" or not first:
        return
    tags = ["diag.rate%s" % r for r in rates.split()] + ["diag.min0", "diag.min1000"]
    D = {t: load(out, t) for t in tags}
    cpu = load(out, "diag.cpu")
    print()
    print("#### Diagnosis (this workload): one run per setting, BPF run-time statistics on "
          "(they add two clock reads to every program run)")
    print()
    label = {t: ("--off-cpu-rate %s" % t[9:]) if t.startswith("diag.rate") else
             "--off-cpu-min-us %s" % t[8:] for t in tags}
    print("| setting | wall (s) | vs baseline median | workload CPU per switch (ns; vs baseline) | switch-outs | captured | `on_switch` "
          "runs | BPF ns per run | BPF ns per run / baseline CPU per switch | mlprof CPU "
          "while running (s) | mlprof CPU per captured (us) | off-CPU s in profile / real | "
          "shorter than min |")
    print("|---|" + "---|" * 13)
    pts = []
    for t in tags:
        x = D[t]
        if not x or "bpf_ns" not in x:
            print("| %s | (no result) |" % label[t] + " |" * 12)
            continue
        pts.append((x["bpf_cnt"], x.get("capt", 0), x["bpf_ns"]))
        per = x["bpf_ns"] / max(x["bpf_cnt"], 1)
        c = x["wcpu"] / x["sw"]
        print("| %s | %.3f | %+.1f%% | %.0f (%+.0f) | %d | %d | %d | %.0f | %.1f%% | %.3f | %.1f "
              "| %.2f / %.2f | %d |" % (
                  label[t], x["wall"], (x["wall"] / b - 1) * 100, c * 1e9,
                  (c - bcpu_sw) * 1e9, x.get("swout", 0),
                  x.get("capt", 0), x["bpf_cnt"], per, per / (bcpu_sw * 1e9) * 100, x["pcpu"],
                  x["pcpu"] / max(x.get("capt", 1), 1) * 1e6, x.get("off_s", 0),
                  x["offcpu_true"], x.get("short", 0)))
    if cpu:
        c = cpu["wcpu"] / cpu["sw"]
        print("| CPU sampling only | %.3f | %+.1f%% | %.0f (%+.0f) | - | - | - | - | - | %.3f | "
              "- | - | - |" % (cpu["wall"], (cpu["wall"] / b - 1) * 100, c * 1e9,
                               (c - bcpu_sw) * 1e9, cpu["pcpu"]))
    # least squares: bpf_ns = a * runs + k * captured
    if len(pts) >= 2:
        s11 = sum(n * n for n, _, _ in pts)
        s12 = sum(n * c for n, c, _ in pts)
        s22 = sum(c * c for _, c, _ in pts)
        t1 = sum(n * y for n, _, y in pts)
        t2 = sum(c * y for _, c, y in pts)
        det = s11 * s22 - s12 * s12
        if det:
            a = (t1 * s22 - t2 * s12) / det
            k = (s11 * t2 - s12 * t1) / det
            print()
            print("fit over the runs above: on_switch time = %.0f ns per run (every sched_switch) "
                  "+ %.1f us per captured stack" % (a, k / 1000))
            x = D.get("diag.rate500")
            if x and "bpf_ns" in x:
                fixed, capt = a * x["bpf_cnt"], k * x.get("capt", 0)
                print("at the default rate (500/CPU/s): fixed part %.0f ms = %.0f%%, capture part "
                      "%.0f ms = %.0f%% of the program's %.0f ms in a %.2f s run" % (
                          fixed / 1e6, 100 * fixed / (fixed + capt), capt / 1e6,
                          100 * capt / (fixed + capt), x["bpf_ns"] / 1e6, x["wall"]))


for n, w in enumerate(wdirs):
    report(w, n == 0)
print()
print("command: bench/offcpu.sh %d  (MLPROF=%s, PAIRS=%d, PIN=%s; %s; "
      "outputs in %s)" % (reps, mlprof, pairs, pin,
                          os.popen("perf --version").read().strip(), top))
PY
