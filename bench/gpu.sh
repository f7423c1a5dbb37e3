#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 20's check on a GPU host: a PyTorch CUDA training loop (bench/gpuloop.py) without
# and with `mlprof record --cuda all --off-cpu`, then the numbers (bench/gpu_report.py):
# launches named, launch weight under the loop's Python frames, sync wait under .item(),
# GPU memory in use at the keeping line, NCCL calls under the all-reduce line, dropped
# samples, steps/s with and without mlprof; issue 23's gpu_wait against the loop's own
# synchronize time (each step sleeps GPU_SLEEP_CYCLES, default 2000000, on the GPU); then
# the same loop launch-bound (no GPU sleep, LAUNCH_STEPS steps) without and with `mlprof
# record` (defaults, and each flag set of LAUNCH_VARIANTS, '|' between them), twice each,
# for the slowdown on a launch-bound loop. Every profiled run is stopped after RUN_TIMEOUT
# seconds (default 180).
#
#   bench/gpu.sh bundle DIR    here: copy build/mlprof and the shared libraries it needs
#                              that a bare GPU machine may lack into DIR, the binary's
#                              RUNPATH set to them (needs patchelf; nothing else sees them)
#   bench/gpu.sh run [STEPS]   there, as root: PYTHON (default python3) must import torch
#                              with CUDA; MLPROF (default build/mlprof, or DIR/mlprof);
#                              RESULTS (default /tmp/mlprof-gpu) receives every file
set -euo pipefail
cd "$(dirname "$0")/.."

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

case "${1:-}" in
bundle)
	dir=${2:?usage: bench/gpu.sh bundle DIR}
	command -v patchelf > /dev/null || {
		echo "bench/gpu.sh bundle: needs patchelf (apt-get install patchelf)" >&2
		exit 1
	}
	mkdir -p "$dir"
	cp build/mlprof "$dir/"
	# everything but the C library itself: a GPU image may lack libbpf, libunwind, ...
	ldd build/mlprof | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
		while read -r lib; do cp -L "$lib" "$dir/"; done
	# a RUNPATH, not LD_LIBRARY_PATH: the profiled command must not load these
	for f in "$dir"/*; do patchelf --set-rpath '$ORIGIN' "$f"; done
	echo "bundle: $(ls "$dir" | wc -l) files in $dir; there: MLPROF=$dir/mlprof bench/gpu.sh run"
	;;
run)
	steps=${2:-300}
	py=${PYTHON:-python3}
	mlprof=${MLPROF:-build/mlprof}
	out=${RESULTS:-/tmp/mlprof-gpu}
	launch_steps=${LAUNCH_STEPS:-3000}
	mkdir -p "$out"
	echo "== host: $(uname -r); BTF: $(test -e /sys/kernel/btf/vmlinux && echo yes || echo no)"
	nvidia-smi -L || true
	"$py" -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0]); sys.exit(0 if torch.cuda.is_available() else "no CUDA device for torch")'
	"$mlprof" --version
	lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
	{
		readelf -n "$lib/libc10_cuda.so" | grep -A4 stapsdt || true
		nm "$lib/libc10_cuda.so" 2> /dev/null | c++filt | grep -E 'NativeCachingAllocator::(malloc|free|allocate)|local_raw_delete' || true
		nm "$lib/libtorch_cpu.so" 2> /dev/null | c++filt | grep -E 'profiler::record_function_(enter|exit)' || true
	} > "$out/torch_symbols.txt" 2>&1
	# each profiled run ends within RUN_TIMEOUT s (SIGTERM: mlprof writes what it has)
	tmo=${RUN_TIMEOUT:-180}
	echo "== without mlprof (GPU sleep per step)"
	t0=$(now)
	GPU_SLEEP_CYCLES=${GPU_SLEEP_CYCLES:-2000000} "$py" bench/gpuloop.py "$steps" | tee "$out/base.json"
	echo "base wall (import included): $(since "$t0") s"
	echo "== with mlprof record --cuda all --off-cpu"
	t0=$(now)
	GPU_SLEEP_CYCLES=${GPU_SLEEP_CYCLES:-2000000} timeout "$tmo" "$mlprof" record --log-level info -F 99 \
		--cuda all --off-cpu -o "$out/gpu.pb.gz" -o "$out/gpu.html" -- \
		"$py" bench/gpuloop.py "$steps" > "$out/prof.json" 2> "$out/record.err" || {
		tail -40 "$out/record.err"
		exit 1
	}
	echo "record wall: $(since "$t0") s"
	cat "$out/prof.json"
	grep -v '^   ' "$out/record.err" | grep -v ': dwarf: ' || true
	echo "== report"
	"$py" bench/gpu_report.py "$out"
	[ "$launch_steps" -gt 0 ] || exit 0
	# LAUNCH_VARIANTS: more mlprof flag sets to compare, '|' between them
	IFS='|' read -r -a variants <<< "${LAUNCH_VARIANTS:-}"
	echo "== launch-bound: $launch_steps steps, no GPU sleep; without, with mlprof record" \
		"(defaults${LAUNCH_VARIANTS:+, then |$LAUNCH_VARIANTS}), twice"
	for i in 1 2; do
		t0=$(now)
		GPU_SLEEP_CYCLES=0 "$py" bench/gpuloop.py "$launch_steps" > "$out/lb_base$i.json"
		echo "base $i: wall $(since "$t0") s; $(cut -c1-80 "$out/lb_base$i.json")"
		v=0
		for flags in "" "${variants[@]}"; do
			t0=$(now)
			# shellcheck disable=SC2086 # flags: words on purpose
			GPU_SLEEP_CYCLES=0 timeout "$tmo" "$mlprof" record -o "$out/lb$i.v$v.pb.gz" $flags -- "$py" \
				bench/gpuloop.py "$launch_steps" > "$out/lb_prof$i.v$v.json" \
				2> "$out/lb_record$i.v$v.err" || tail -20 "$out/lb_record$i.v$v.err"
			echo "mlprof $i [${flags:-defaults}]: wall $(since "$t0") s; $(cut -c1-80 "$out/lb_prof$i.v$v.json")"
			grep -E '^mlprof: ([0-9]+ samples|cuda:|steps:)' "$out/lb_record$i.v$v.err" || true
			v=$((v + 1))
		done
	done
	"$py" - "$out" "$v" "defaults|${LAUNCH_VARIANTS:-}" << 'PY'
import json, sys
d, nv, names = sys.argv[1], int(sys.argv[2]), sys.argv[3].split("|")
sb = [json.load(open("%s/lb_base%d.json" % (d, i))) for i in (1, 2)]
sb = [x["steps"] / x["seconds"] for x in sb]
for v in range(nv):
    p = [json.load(open("%s/lb_prof%d.v%d.json" % (d, i, v))) for i in (1, 2)]
    sp = [x["steps"] / x["seconds"] for x in p]
    print("launch-bound steps/s [%s]: without %s, with %s; with/without %.3f (paired: %s)" % (
        names[v], ["%.0f" % s for s in sb], ["%.0f" % s for s in sp], sum(sp) / sum(sb),
        ["%.3f" % (q / s) for q, s in zip(sp, sb)]))
PY
	;;
*)
	sed -n '3,20p' "$0"
	exit 2
	;;
esac
