#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Churn soak of `mlprof agent` (run as root): the agent samples at 199 Hz, follows only the
# storm's pid and its children (--pid), with its process and label caches bounded to 64
# entries, while tests/workloads/churn.c
# runs a fork/exec storm (short-lived churn_a/churn_b processes), creates and joins
# threads, and reuses pids (churn_a at pid P, then churn_b at the same P via clone3
# set_tid) for MINUTES. It is tests/integration/test_churn.py (ctest it.churn, 45 s) run
# longer: the same checks (no crash, caches within bounds, anonymous RSS flat, no sample
# named after the other binary of a reused pid), then a table of RSS and cache sizes from
# the agent's /metrics over time and the RSS trend (least-squares slope).
# Usage: bench/churn.sh [MINUTES]       (default 5; BUILD_DIR defaults to build)
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-5}
BUILD_DIR=${BUILD_DIR:-build}
cmake --build "$BUILD_DIR" --target mlprof churn churn_a churn_b -j"$(nproc)" >/dev/null
WL=$BUILD_DIR/tests/workloads
mkdir -p "$BUILD_DIR/tests/tmp"
exec env MLPROF="$BUILD_DIR/mlprof" CHURN="$WL/churn" CHURN_A="$WL/churn_a" CHURN_B="$WL/churn_b" \
	TEST_TMP="$BUILD_DIR/tests/tmp" CHURN_SECONDS=$((MINUTES * 60)) CHURN_REPORT=1 \
	python3 tests/integration/test_churn.py
