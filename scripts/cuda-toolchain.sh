#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the CUDA toolchain that it.record_cuda builds its workloads with, from PyPI (no
# GPU or driver needed): a venv with nvcc and the CUDA 13 runtime (nvidia-cuda-nvcc,
# nvidia-cuda-runtime, nvidia-cuda-crt), and the CUDA 12 runtime (nvidia-cuda-runtime-cu12)
# unpacked beside it. Idempotent: what is there already is not fetched again.
#
#   MLPROF_CUDA_HOME   where (default ~/.cache/mlprof/cuda-venv); tests/cuda.cmake looks
#                      there too. Re-run cmake after installing.
# Prints the paths it set up, as KEY=VALUE lines.
set -euo pipefail

HOME_DIR=${MLPROF_CUDA_HOME:-$HOME/.cache/mlprof/cuda-venv}
CACHE_DIR=$HOME/.cache/mlprof
PYTHON=${PYTHON:-python3}
CU13_SPEC=(nvidia-cuda-nvcc'>=13,<14' nvidia-cuda-runtime'>=13,<14' nvidia-cuda-crt'>=13,<14')
CU12_SPEC=nvidia-cuda-runtime-cu12'>=12,<13'

log() { echo "cuda-toolchain: $*" >&2; }

find_nvcc() {
	local c
	for c in "$HOME_DIR"/bin/nvcc "$HOME_DIR"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc; do
		[ -x "$c" ] && { echo "$c"; return 0; }
	done
	return 1
}

# --- CUDA 13: venv + nvcc + runtime ---
if ! nvcc=$(find_nvcc); then
	if [ ! -x "$HOME_DIR/bin/pip" ]; then
		log "creating venv $HOME_DIR"
		mkdir -p "$(dirname "$HOME_DIR")"
		"$PYTHON" -m venv "$HOME_DIR"
	fi
	log "installing ${CU13_SPEC[*]} (a few hundred MB)"
	"$HOME_DIR/bin/pip" install --quiet --disable-pip-version-check "${CU13_SPEC[@]}"
	nvcc=$(find_nvcc) || { log "nvcc not found after installing"; exit 1; }
fi
cu13_lib=$(dirname "$(dirname "$nvcc")")/lib/libcudart.so.13
[ -e "$cu13_lib" ] || { log "no $cu13_lib"; exit 1; }

# --- CUDA 12 runtime: the wheel (kept in $CACHE_DIR/cu12), unpacked into $HOME_DIR/cu12 ---
cu12_lib=$HOME_DIR/cu12/nvidia/cuda_runtime/lib/libcudart.so.12
if [ ! -e "$cu12_lib" ]; then
	mkdir -p "$CACHE_DIR/cu12"
	shopt -s nullglob
	whl=("$CACHE_DIR"/cu12/nvidia_cuda_runtime_cu12-*.whl)
	if [ ${#whl[@]} -eq 0 ]; then
		log "downloading $CU12_SPEC"
		"$HOME_DIR/bin/pip" download --quiet --disable-pip-version-check --no-deps \
			--only-binary=:all: -d "$CACHE_DIR/cu12" "$CU12_SPEC"
		whl=("$CACHE_DIR"/cu12/nvidia_cuda_runtime_cu12-*.whl)
	fi
	[ ${#whl[@]} -gt 0 ] || { log "no nvidia-cuda-runtime-cu12 wheel"; exit 1; }
	log "unpacking ${whl[-1]##*/}"
	rm -rf "$HOME_DIR/cu12.tmp"
	"$HOME_DIR/bin/python" -m zipfile -e "${whl[-1]}" "$HOME_DIR/cu12.tmp"
	rm -rf "$HOME_DIR/cu12"
	mv "$HOME_DIR/cu12.tmp" "$HOME_DIR/cu12"
	[ -e "$cu12_lib" ] || { log "no libcudart.so.12 in ${whl[-1]}"; exit 1; }
fi

echo "MLPROF_CUDA_HOME=$HOME_DIR"
echo "NVCC=$nvcc"
echo "CUDA13_LIB=$cu13_lib"
echo "CUDA12_LIB=$cu12_lib"
