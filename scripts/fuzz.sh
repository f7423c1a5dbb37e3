#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the libFuzzer targets (tests/fuzz) for long, one after the other, and prints one table
# row per target: executions, seconds, executions/s, crashes (crash, leak, timeout and
# out-of-memory inputs saved). Exits 1 when any target found one.
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   SECONDS  wall-clock bound per target (default 3600); a target also stops after RUNS
#            executions (default 10000000).
#   TARGET   elf unwind_table maps cgroup json spool pprof_limits (default: all).
# Environment: BUILD_DIR (default build-fuzz), RUNS, JOBS (parallel fuzzing processes per
# target, default 1: the executions of all of them are added up).
# New inputs go to BUILD_DIR/tests/fuzz/corpus/TARGET (seeded from tests/fuzz/corpus/TARGET),
# findings to BUILD_DIR/tests/fuzz/artifacts/TARGET-*; reproduce one with
#   BUILD_DIR/tests/fuzz/fuzz_TARGET ARTIFACT
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-fuzz}
SECONDS_PER=${1:-3600}
shift || true
RUNS=${RUNS:-10000000}
JOBS=${JOBS:-1}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(elf unwind_table maps cgroup json spool pprof_limits)

CC=clang cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLPROF_FUZZ=ON \
	-DMLPROF_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j2 --target $(printf 'fuzz_%s ' "${targets[@]}") >&2

fz=$BUILD_DIR/tests/fuzz
# Largest input per target (bigger ones only slow the fuzzer down): real cgroup files are
# under 4 KiB; ELF images and unwind sections get the most room.
max_len() {
	case $1 in
	cgroup) echo 4096 ;;
	maps | json | spool | pprof_limits) echo 16384 ;;
	*) echo 65536 ;;
	esac
}
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1
failed=0
rows=()
for t in "${targets[@]}"; do
	work=$fz/corpus/$t logs=$fz/logs/$t
	mkdir -p "$work" "$logs" "$fz/artifacts"
	rm -f "$logs"/*.log
	before=$(ls "$fz/artifacts" | grep -c "^$t-" || true)
	start=$(date +%s)
	# per job: -runs bounds its share; fuzz-N.log per job (-jobs), else one log
	if [ "$JOBS" -gt 1 ]; then
		(cd "$logs" && "$OLDPWD/$fz/fuzz_$t" -jobs="$JOBS" -workers="$JOBS" \
			-runs=$((RUNS / JOBS)) -max_total_time="$SECONDS_PER" -timeout=10 \
			-rss_limit_mb=2048 -max_len="$(max_len "$t")" -print_final_stats=1 \
			-artifact_prefix="$OLDPWD/$fz/artifacts/$t-" "$OLDPWD/$work" \
			"$OLDPWD/tests/fuzz/corpus/$t" >/dev/null 2>&1) || true
	else
		"$fz/fuzz_$t" -runs="$RUNS" -max_total_time="$SECONDS_PER" -timeout=10 \
			-rss_limit_mb=2048 -max_len="$(max_len "$t")" -print_final_stats=1 \
			-artifact_prefix="$fz/artifacts/$t-" "$work" "tests/fuzz/corpus/$t" \
			>"$logs/fuzz-0.log" 2>&1 || true
	fi
	secs=$(($(date +%s) - start))
	execs=$(cat "$logs"/fuzz-*.log | awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}')
	crashes=$(($(ls "$fz/artifacts" | grep -c "^$t-" || true) - before))
	[ "$crashes" -eq 0 ] || failed=1
	rows+=("$(printf '| %-12s | %12s | %6s | %8s | %7s |' "$t" "$execs" "$secs" \
		"$((execs / (secs > 0 ? secs : 1)))" "$crashes")")
	echo "fuzz.sh: $t: $execs executions in ${secs}s, $crashes crashes" >&2
done
echo "| target       |   executions |      s |   exec/s | crashes |"
echo "|--------------|--------------|--------|----------|---------|"
printf '%s\n' "${rows[@]}"
[ "$failed" = 0 ] || echo "fuzz.sh: findings in $fz/artifacts (reproduce: $fz/fuzz_TARGET FILE)" >&2
exit "$failed"
