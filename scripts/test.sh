#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for all tests on a fresh Debian 12 machine, as root: installs what the tests
# need (apt packages, Go toolchain, a real Pyroscope server built from the Go module proxy
# and cached outside the repo), builds mlprof, checks formatting, runs the whole ctest suite
# (unit, BPF, integration, Pyroscope end-to-end), the unit tests again under ASan+UBSan and
# the fuzz targets for a short bounded time; ends with what was skipped and why.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
scripts/install-deps.sh --test
# A real Pyroscope server for the end-to-end tests; when it cannot be built here (the module
# proxy may refuse the server module) those tests report themselves skipped, nothing else.
scripts/pyroscope.sh build || echo "test.sh: no Pyroscope server: its end-to-end tests will be skipped"

# CUDA 13 nvcc + runtime and the CUDA 12 runtime from PyPI for the CUDA tests (no GPU
# needed); without them those cases report themselves skipped.
scripts/cuda-toolchain.sh >/dev/null || echo "test.sh: no CUDA toolchain: the nvcc-built CUDA cases will be skipped"

# What ctest skipped and why, for the summary at the end: ctest's "(Skipped)" list (exit 77)
# and each test's lines saying "SKIP..." / "skipped" / "skipping" (the reasons; a test that
# ran also lists the cases it skipped). LastTest.log holds every test's output.
skip_summary() { # BUILD_DIR
	awk -v out="$1/ctest.out" '
	BEGIN {
		while ((getline l < out) > 0)
			if (l ~ / - .* \(Skipped\)/) {
				sub(/^.* - /, "", l)
				sub(/ +\(Skipped\).*$/, "", l)
				skipped[l] = 1
			}
	}
	/^[0-9]+\/[0-9]+ Testing: / { name = $3; inout = 0; next }
	/^Output:$/ { inout = 1; next }
	/^<end of output>$/ { inout = 0; next }
	# not mlprof'"'"'s own log lines ("skipping unreadable spool file") nor a passed case
	# whose description says "skipped"
	inout && tolower($0) ~ /(^|[^_a-z])skip(ped|ping)?([^_a-z]|$)/ &&
	    $0 !~ /^mlprof[: ]/ && $0 !~ /\.\.\. ok$/ {
		if (++n[name] <= 6)
			why[name] = why[name] "      " substr($0, 1, 160) "\n"
		else if (n[name] == 7)
			why[name] = why[name] "      ...\n"
	}
	END {
		for (t in skipped)
			printf "  SKIPPED  %s\n%s", t, (t in why) ? why[t] : "      (no reason printed)\n"
		for (t in why)
			if (!(t in skipped))
				printf "  ran, with skipped cases: %s\n%s", t, why[t]
	}' "$1/Testing/Temporary/LastTest.log"
}
failed=()
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
run_ctest() { # BUILD_DIR CTEST_ARGS...: runs on after a failure; the status is kept
	local dir=$1
	shift
	if ! ctest --test-dir "$dir" "$@" 2>&1 | tee "$dir/ctest.out"; then
		failed+=("$dir")
	fi
	{ echo "$dir:"; skip_summary "$dir"; } >>"$summary"
}

scripts/format.sh --check
scripts/build.sh
run_ctest build --output-on-failure -j1 "$@"
BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DMLPROF_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1 run_ctest build-asan --output-on-failure -L unit
# The libFuzzer targets (clang, tests/fuzz), 20 s each over the checked-in seed corpus;
# scripts/fuzz.sh runs them for long.
CC=clang BUILD_DIR=build-fuzz scripts/build.sh -DMLPROF_FUZZ=ON -DMLPROF_TESTS=OFF
run_ctest build-fuzz --output-on-failure -L fuzz

echo
echo "=== test.sh: skipped tests and cases, and why ==="
cat "$summary"
if [ ${#failed[@]} -gt 0 ]; then
	echo "test.sh: FAILED tests in: ${failed[*]}"
	exit 1
fi
echo "test.sh: all tests passed (skips listed above)"
