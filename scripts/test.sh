#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for all tests on a fresh Debian 12 machine, as root: installs what the tests
# need (apt packages, Go toolchain, a real Pyroscope server built from the Go module proxy
# and cached outside the repo), builds mlprof, checks formatting, runs the whole ctest suite
# (unit, BPF, integration, Pyroscope end-to-end) and the unit tests again under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
scripts/install-deps.sh --test
# A real Pyroscope server for the end-to-end tests; when it cannot be built here (the module
# proxy may refuse the server module) those tests report themselves skipped, nothing else.
scripts/pyroscope.sh build || echo "test.sh: no Pyroscope server: its end-to-end tests will be skipped"

scripts/format.sh --check
scripts/build.sh
ctest --test-dir build --output-on-failure -j1 "$@"
BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DMLPROF_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -L unit
