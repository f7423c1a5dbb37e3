#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs mlprof's build and test dependencies on Debian 12 (run as root).
# Usage: scripts/install-deps.sh [--test]   (--test adds what the test suite needs)
set -euo pipefail

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (apt-get needs it)" >&2
	exit 1
fi

pkgs=(build-essential cmake pkg-config clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
	libunwind-dev libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev libzstd-dev
	liblzma-dev binutils python3 python3-numpy libc6-dbg python3.11-dbg libdw-dev libdebuginfod-dev
	libiberty-dev systemtap-sdt-dev)
if [ "$want_test" = 1 ]; then
	# Tests: fixture builds (objcopy/xz/strip), perf for the bench peer, Go for Pyroscope
	# and `go tool pprof`, clang-format for the style check, libpython (embedding test) and
	# Debian's CPU PyTorch (training-loop test), clang's runtimes (fuzz targets).
	pkgs+=(xz-utils elfutils linux-perf clang-format curl ca-certificates git util-linux
		procps iproute2 file libpython3-dev python3-torch python3-venv
		libclang-rt-14-dev) # libFuzzer + ASan/UBSan runtimes for the fuzz targets
	# debuginfod server (it.debuginfod); Debian's rustc where none is on PATH (rustup), for
	# the Rust test program (it.record_rust)
	pkgs+=(debuginfod)
	# the allocators the heap profile probes when a process maps them (it.record_heap)
	pkgs+=(libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0)
	# a test certificate for the HTTPS backend of it.signals
	pkgs+=(openssl)
	# a freezable file system for the spool (it.agent_spool_stall: mkfs.ext4, fsfreeze)
	pkgs+=(e2fsprogs mount)
	# a FUSE file system whose server the test stops (it.hostile: FuseStall)
	pkgs+=(bindfs fuse3)
	command -v rustc >/dev/null 2>&1 || pkgs+=(rustc)
fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$want_test" = 1 ] && ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
	# Debian 12's golang-go (1.19) is too old to build Pyroscope, but it can download a
	# current toolchain, which the module proxy serves as an ordinary module.
	apt-get install -y -qq --no-install-recommends golang-go >/dev/null
	tc=golang.org/toolchain@v0.0.1-go1.25.12.linux-amd64
	dir=$(GOFLAGS=-mod=mod go mod download -json "$tc" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
	ln -sf "$dir/bin/go" /usr/local/bin/go
fi
echo "install-deps: ok"
