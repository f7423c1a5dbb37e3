#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 20's check on a GPU host: a PyTorch CUDA training loop (bench/gpuloop.py) without
# and with `mlprof record --cuda all --off-cpu`, then the numbers (bench/gpu_report.py):
# launches named, launch weight under the loop's Python frames, sync wait under .item(),
# GPU memory in use at the keeping line, NCCL calls under the all-reduce line, dropped
# samples, steps/s with and without mlprof; issue 23's gpu_wait against the loop's own
# synchronize time (each step sleeps GPU_SLEEP_CYCLES, default 2000000, on the GPU).
#
#   bench/gpu.sh bundle DIR    here: copy build/mlprof and the shared libraries it needs
#                              that a bare GPU machine may lack into DIR (carry DIR there)
#   bench/gpu.sh run [STEPS]   there, as root: PYTHON (default python3) must import torch
#                              with CUDA; MLPROF (default build/mlprof, or DIR/mlprof with
#                              LD_LIBRARY_PATH=DIR); OUT (default /tmp/mlprof-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
bundle)
	dir=${2:?usage: bench/gpu.sh bundle DIR}
	mkdir -p "$dir"
	cp build/mlprof "$dir/"
	# everything but the C library itself: a GPU image may lack libbpf, libunwind, ...
	ldd build/mlprof | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
		while read -r lib; do cp -L "$lib" "$dir/"; done
	echo "bundle: $(ls "$dir" | wc -l) files in $dir; there: LD_LIBRARY_PATH=$dir MLPROF=$dir/mlprof bench/gpu.sh run"
	;;
run)
	steps=${2:-300}
	py=${PYTHON:-python3}
	mlprof=${MLPROF:-build/mlprof}
	out=${OUT:-/tmp/mlprof-gpu}
	export GPU_SLEEP_CYCLES=${GPU_SLEEP_CYCLES:-2000000}
	mkdir -p "$out"
	"$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "no CUDA device for torch")'
	"$mlprof" --version 2>/dev/null || true
	echo "== without mlprof"
	"$py" bench/gpuloop.py "$steps" | tee "$out/base.json"
	echo "== with mlprof record --cuda all --off-cpu"
	"$mlprof" record -F 99 --cuda all --off-cpu -o "$out/gpu.pb.gz" -- \
		"$py" bench/gpuloop.py "$steps" > "$out/prof.json" 2> "$out/record.err" || {
		tail -20 "$out/record.err"
		exit 1
	}
	cat "$out/prof.json"
	echo "== report"
	"$py" bench/gpu_report.py "$out"
	;;
*)
	sed -n '3,15p' "$0"
	exit 2
	;;
esac
