#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the OpenTelemetry eBPF profiler that bench/torch.sh compares against (the version
# /work/shared/docs/peers.md describes), outside this repository: its source goes to
# ~/.cache/mlprof/otel-src, the binary to ~/.cache/mlprof/otel/ebpf-profiler. Its BPF
# object is committed upstream, so only Go is needed (the module proxy must be reachable).
# Without CAP_SYS_RESOURCE (a container) raising RLIMIT_MEMLOCK fails with EPERM and the
# profiler exits; the local change below ignores EPERM (kernels >= 5.11 charge BPF memory
# to the cgroup, not to the memlock limit).
# Usage: bench/otel-profiler.sh [GIT_URL_OR_DIR]
#   (default https://github.com/open-telemetry/opentelemetry-ebpf-profiler)
# Environment: OTEL_COMMIT (default 0d228017e8f64d68e2fe68b78ac6db0297f04b22, tag
#   v0.0.202633), GO (go binary; default: PATH, then /usr/local/go/bin/go).
set -euo pipefail
SRC_URL=${1:-https://github.com/open-telemetry/opentelemetry-ebpf-profiler}
COMMIT=${OTEL_COMMIT:-0d228017e8f64d68e2fe68b78ac6db0297f04b22}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
SRC=$HOME/.cache/mlprof/otel-src
BIN=$HOME/.cache/mlprof/otel/ebpf-profiler
[ -x "$GO" ] || { echo "bench/otel-profiler.sh: no go ($GO; set GO)"; exit 1; }

[ -d "$SRC/.git" ] || git clone -q --no-checkout "$SRC_URL" "$SRC"
git -C "$SRC" cat-file -e "$COMMIT^{commit}" 2>/dev/null || git -C "$SRC" fetch -q origin
git -C "$SRC" -c advice.detachedHead=false checkout -q -f "$COMMIT"

# The EPERM change (idempotent: the file is reset by the checkout above).
python3 - "$SRC/rlimit/rlimit.go" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = '''	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &tmpLimit, &oldLimit); err != nil {
		return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)
	}
'''
new = '''	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &tmpLimit, &oldLimit); err != nil {
		// mlprof bench: without CAP_SYS_RESOURCE (container) raising it fails with EPERM;
		// kernels >= 5.11 charge BPF memory to the memcg instead, so go on without it.
		if errors.Is(err, unix.EPERM) {
			return func() {}, nil
		}
		return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)
	}
'''
if old not in s:
    sys.exit("bench/otel-profiler.sh: %s is not the expected version; patch it by hand" % p)
s = s.replace(old, new).replace('import (\n\t"fmt"', 'import (\n\t"errors"\n\t"fmt"', 1)
open(p, "w").write(s)
PY
mkdir -p "$(dirname "$BIN")"
(cd "$SRC" && "$GO" build -p 1 -tags osusergo,netgo -o "$BIN" .)
echo "bench/otel-profiler.sh: built $BIN" \
	"($(git -C "$SRC" describe --tags 2>/dev/null || echo "$COMMIT"))"
