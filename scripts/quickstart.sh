#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for newcomers: installs dependencies, builds mlprof and profiles the bundled
# ML training-loop example, writing out/train.pb.gz (pprof) and out/train.html (flame graph).
# No backend needed. Run as root on Debian 12:  sudo scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p out
build/mlprof record -F 99 -o out/train.pb.gz -o out/train.html -o out/train.folded \
	--title "examples/train.py (mlprof)" -- /usr/bin/python3 examples/train.py "$@"
echo
echo "Open out/train.html in a browser for the flame graph; inspect the pprof with e.g."
echo "  go tool pprof -top out/train.pb.gz     or     go tool pprof -http=: out/train.pb.gz"
