#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds (cached), starts and stops a real Grafana Pyroscope v2.2.1 on loopback for tests.
#
#   scripts/pyroscope.sh build            -> prints the binary path (built once, then cached)
#   scripts/pyroscope.sh start DATA_DIR [PORT_BASE]  -> prints the PID once /ready is 200
#   scripts/pyroscope.sh stop DATA_DIR    -> stops the server started on DATA_DIR
#   scripts/pyroscope.sh path             -> prints the binary path if built (exit 1 if not)
#
# Env: PYROSCOPE_BIN (use this binary), PYROSCOPE_CACHE (cache dir), PYROSCOPE_MODE=v2|v1,
#      PYROSCOPE_ARGS (extra flags), PYROSCOPE_READY_TIMEOUT (s, default 120).
#
# Build: the documented recipe (../shared/docs/pyroscope.md) downloads
# github.com/grafana/pyroscope/v2@v2.2.1 and its api/lidia submodules from the Go module
# proxy. Where the proxy refuses the module (seen here: 403 "not available"), `build` fails
# with that reason and the Pyroscope tests skip (exit 77) unless a binary is already cached
# or PYROSCOPE_BIN names one.
#
# Storage mode: v2 (segment writer + metastore + raft) in single-binary mode is the default
# and is what the tests use; PYROSCOPE_MODE=v1 runs the documented v1 fallback (ingester).
set -euo pipefail

VERSION=v2.2.1
CACHE=${PYROSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mlprof/pyroscope-$VERSION}
BIN=${PYROSCOPE_BIN:-$CACHE/pyroscope}
die() { echo "pyroscope.sh: $*" >&2; exit 1; }

moddir() { go mod download -json "$1" 2>/dev/null | sed -n 's/.*"Dir": "\(.*\)",*/\1/p'; }

build() {
	if [ -x "$BIN" ]; then echo "$BIN"; return 0; fi
	command -v go >/dev/null || die "go not found (Go >= 1.25 needed)"
	export GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod
	# go.mod asks for go 1.25.8; a local Go 1.26 satisfies it, an older one fetches one
	export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
	mkdir -p "$CACHE"
	local src=$CACHE/src work
	rm -rf "$src"
	work=$(moddir "github.com/grafana/pyroscope/v2@$VERSION" || true)
	[ -n "$work" ] || die "the Go module proxy refused github.com/grafana/pyroscope/v2@$VERSION: cannot build a server here (set PYROSCOPE_BIN to an existing binary)"
	cp -r "$work" "$src"; chmod -R u+w "$src"
	cp -r "$(moddir github.com/grafana/pyroscope/api@v1.5.1-0.20260806111011-df3c0391b7df)" "$src/api"
	cp -r "$(moddir github.com/grafana/pyroscope/lidia@v0.0.3-0.20260806111011-df3c0391b7df)" "$src/lidia"
	chmod -R u+w "$src"
	(cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -tags netgo -ldflags "-s -w" \
		-o "$BIN.tmp" ./cmd/pyroscope) >&2 || die "go build failed"
	mv "$BIN.tmp" "$BIN"
	rm -rf "$src"
	echo "$BIN"
}

start() {
	local d=${1:?usage: start DATA_DIR [PORT_BASE]} base=${2:-4040}
	[ -x "$BIN" ] || die "not built: run '$0 build' first"
	mkdir -p "$d"
	d=$(cd "$d" && pwd)
	local http=$base grpc=$((base + 1)) ml=$((base + 2)) raft=$((base + 3))
	local mode=${PYROSCOPE_MODE:-v2} args
	args=(-server.http-listen-address=127.0.0.1 -server.http-listen-port=$http
		-server.grpc-listen-address=127.0.0.1 -server.grpc-listen-port=$grpc
		-memberlist.bind-addr=127.0.0.1 -memberlist.bind-port=$ml
		-memberlist.advertise-addr=127.0.0.1 -memberlist.advertise-port=$ml
		-memberlist.join=127.0.0.1:$ml
		-distributor.ring.instance-addr=127.0.0.1
		-query-frontend.instance-addr=127.0.0.1 -overrides-exporter.ring.instance-addr=127.0.0.1
		-storage.backend=filesystem -storage.filesystem.dir="$d/shared"
		-self-profiling.disable-push=true -usage-stats.enabled=false)
	if [ "$mode" = v2 ]; then
		args+=(-architecture.storage=v2 -segment-writer.lifecycler.addr=127.0.0.1
			-metastore.address=127.0.0.1:$grpc -query-backend.address=127.0.0.1:$grpc
			-metastore.raft.server-id=127.0.0.1:$raft -metastore.raft.bind-address=127.0.0.1:$raft
			-metastore.raft.advertise-address=127.0.0.1:$raft -metastore.raft.dir="$d/raft"
			-metastore.raft.snapshots-dir="$d/raft" -metastore.data-dir="$d/meta"
			-segment-writer.min-ready-duration=0s -metastore.min-ready-duration=0s)
	else
		args+=(-architecture.storage=v1 -write-path=ingester -ingester.min-ready-duration=0s
			-ingester.lifecycler.addr=127.0.0.1 -pyroscopedb.data-path="$d/data")
	fi
	# shellcheck disable=SC2086
	(cd "$d" && exec "$BIN" "${args[@]}" ${PYROSCOPE_ARGS:-} >"$d/pyroscope.log" 2>&1) &
	local pid=$!
	echo "$pid" >"$d/pyroscope.pid"
	local t=0 limit=${PYROSCOPE_READY_TIMEOUT:-120}
	while [ $t -lt $((limit * 4)) ]; do
		kill -0 "$pid" 2>/dev/null || { tail -20 "$d/pyroscope.log" >&2; die "pyroscope exited"; }
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http/ready")" = 200 ]; then
			echo "$pid"; return 0
		fi
		sleep 0.25; t=$((t + 1))
	done
	kill "$pid" 2>/dev/null || true
	tail -20 "$d/pyroscope.log" >&2
	die "not ready after ${limit}s"
}

stop() {
	local d=${1:?usage: stop DATA_DIR} pid
	[ -f "$d/pyroscope.pid" ] || return 0
	pid=$(cat "$d/pyroscope.pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$d/pyroscope.pid"
}

case "${1:-}" in
build) build ;;
path) [ -x "$BIN" ] && echo "$BIN" ;;
start) shift; start "$@" ;;
stop) shift; stop "$@" ;;
*) echo "usage: $0 build | path | start DATA_DIR [PORT_BASE] | stop DATA_DIR" >&2; exit 2 ;;
esac
